//! Loopback stand-ins for model APIs: Anthropic Messages (SSE), OpenAI
//! Responses (SSE, Codex) and OpenAI chat completions (SSE, OpenCode). Each
//! scripts tool calls by counting the assistant turns in the request, and
//! records every request body so tests can look at what the model was sent.
//! Binds 127.0.0.1 only and stops when dropped.

use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// One scripted model turn.
#[derive(Clone, Debug)]
pub enum Step {
    /// Call a tool with these arguments.
    Tool(&'static str, Value),
    /// Answer with text (ends the agent's turn).
    Text(&'static str),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    AnthropicMessages,
    OpenAiResponses,
    OpenAiChat,
    GeminiGenerateContent,
}

pub struct Mock {
    pub port: u16,
    requests: Arc<Mutex<Vec<(String, Value)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Mock {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Mock {
    pub fn start(api: Api, script: Vec<Step>) -> Mock {
        let server = tiny_http::Server::http("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = server.server_addr().to_ip().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s) = (requests.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            // Stops by itself after 10 minutes even if the test forgets to.
            let deadline = std::time::Instant::now() + Duration::from_secs(600);
            while !s.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
                let Ok(Some(mut req)) = server.recv_timeout(Duration::from_millis(50)) else {
                    continue;
                };
                let mut body = String::new();
                let _ = req.as_reader().read_to_string(&mut body);
                let url = req.url().to_string();
                let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                r.lock().unwrap().push((url.clone(), v.clone()));
                let (ctype, text) = respond(api, &url, &v, &script);
                let resp = tiny_http::Response::from_string(text)
                    .with_header(tiny_http::Header::from_bytes("Content-Type", ctype).unwrap());
                let _ = req.respond(resp);
            }
        });
        Mock {
            port,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    /// Every request so far: (url, JSON body).
    pub fn requests(&self) -> Vec<(String, Value)> {
        self.requests.lock().unwrap().clone()
    }
}

fn respond(api: Api, url: &str, body: &Value, script: &[Step]) -> (&'static str, String) {
    match api {
        Api::AnthropicMessages => anthropic(url, body, script),
        Api::OpenAiResponses => responses(body, script),
        Api::OpenAiChat => chat(body, script),
        Api::GeminiGenerateContent => gemini(url, body, script),
    }
}

fn has_tools(body: &Value) -> bool {
    body.get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
}

fn step_for(turns: usize, body: &Value, script: &[Step]) -> Step {
    if !has_tools(body) {
        return Step::Text("ok");
    }
    script.get(turns).cloned().unwrap_or(Step::Text("done"))
}

fn sse(events: &[(&str, Value)]) -> String {
    events
        .iter()
        .map(|(name, data)| {
            if name.is_empty() {
                format!("data: {data}\n\n")
            } else {
                format!("event: {name}\ndata: {data}\n\n")
            }
        })
        .collect()
}

// ---- Anthropic Messages -------------------------------------------------

fn anthropic(url: &str, body: &Value, script: &[Step]) -> (&'static str, String) {
    if url.contains("count_tokens") {
        return ("application/json", json!({"input_tokens": 100}).to_string());
    }
    let turns = body["messages"]
        .as_array()
        .map(|m| m.iter().filter(|x| x["role"] == "assistant").count())
        .unwrap_or(0);
    let step = step_for(turns, body, script);
    let model = body["model"].as_str().unwrap_or("claude-mock");
    let (block, stop) = match &step {
        Step::Tool(name, input) => (
            json!({"type": "tool_use", "id": format!("toolu_mock{turns:02}"), "name": name, "input": input}),
            "tool_use",
        ),
        Step::Text(t) => (json!({"type": "text", "text": t}), "end_turn"),
    };
    let usage = json!({"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    if body["stream"] != true {
        return (
            "application/json",
            json!({"id": format!("msg_mock{turns}"), "type": "message", "role": "assistant", "model": model,
                   "content": [block], "stop_reason": stop, "stop_sequence": null, "usage": usage})
            .to_string(),
        );
    }
    let (start, delta) = match &step {
        Step::Tool(name, input) => (
            json!({"type": "tool_use", "id": format!("toolu_mock{turns:02}"), "name": name, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": input.to_string()}),
        ),
        Step::Text(t) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": t}),
        ),
    };
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": format!("msg_mock{turns}"), "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": start}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 10}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    ("text/event-stream", sse(&events))
}

// ---- OpenAI Responses (Codex) -------------------------------------------

fn responses(body: &Value, script: &[Step]) -> (&'static str, String) {
    let turns = body["input"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|x| {
                    matches!(
                        x["type"].as_str(),
                        Some("function_call" | "custom_tool_call")
                    )
                })
                .count()
        })
        .unwrap_or(0);
    let step = step_for(turns, body, script);
    let id = format!("resp_mock{turns}");
    let item = match &step {
        Step::Tool(name, args) if *name == "apply_patch" => json!({
            "type": "custom_tool_call", "id": format!("ctc_{turns}"), "call_id": format!("call_mock{turns}"),
            "name": name, "input": args.as_str().unwrap_or_default(), "status": "completed"}),
        Step::Tool(name, args) => json!({
            "type": "function_call", "id": format!("fc_{turns}"), "call_id": format!("call_mock{turns}"),
            "name": name, "arguments": args.to_string(), "status": "completed"}),
        Step::Text(t) => json!({
            "type": "message", "id": format!("msg_{turns}"), "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": t, "annotations": []}]}),
    };
    let usage = json!({"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                       "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 110});
    let events = [
        (
            "response.created",
            json!({"type": "response.created", "response": {"id": id, "status": "in_progress", "output": []}}),
        ),
        (
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ),
        (
            "response.completed",
            json!({"type": "response.completed", "response": {"id": id, "status": "completed", "output": [item], "usage": usage}}),
        ),
    ];
    ("text/event-stream", sse(&events))
}

// ---- OpenAI chat completions (OpenCode) ---------------------------------

fn chat(body: &Value, script: &[Step]) -> (&'static str, String) {
    let turns = body["messages"]
        .as_array()
        .map(|m| m.iter().filter(|x| x["role"] == "assistant").count())
        .unwrap_or(0);
    let step = if background_request(body) {
        Step::Text("ok")
    } else {
        step_for(turns, body, script)
    };
    let model = body["model"].as_str().unwrap_or("mock-model");
    let (delta, finish) = match &step {
        Step::Tool(name, args) => (
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": format!("call_mock{turns}"), "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}}]}),
            "tool_calls",
        ),
        Step::Text(t) => (json!({"role": "assistant", "content": t}), "stop"),
    };
    let chunk = |delta: Value, finish: Value| {
        json!({"id": format!("chatcmpl-mock{turns}"), "object": "chat.completion.chunk", "created": 1, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    if body["stream"] != true {
        let msg = match &step {
            Step::Tool(..) => {
                json!({"role": "assistant", "content": null, "tool_calls": delta["tool_calls"]})
            }
            Step::Text(t) => json!({"role": "assistant", "content": t}),
        };
        return (
            "application/json",
            json!({"id": "chatcmpl-mock", "object": "chat.completion", "created": 1, "model": model,
                   "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                   "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
            .to_string(),
        );
    }
    let mut last = chunk(json!({}), json!(finish));
    last["usage"] = json!({"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110});
    let events = [("", chunk(delta, Value::Null)), ("", last)];
    let mut s = sse(&events);
    s.push_str("data: [DONE]\n\n");
    ("text/event-stream", s)
}

/// A request the agent makes on its own, outside the scripted conversation:
/// Qwen Code's managed memory extraction subagent, sent after a turn. It
/// gets a plain answer instead of the script's next step.
fn background_request(body: &Value) -> bool {
    body["messages"].as_array().is_some_and(|m| {
        m.iter().any(|x| {
            x["role"] == "system"
                && x["content"]
                    .to_string()
                    .contains("memory extraction subagent")
        })
    })
}

// ---- Gemini generateContent (Gemini CLI) ---------------------------------

fn gemini(url: &str, body: &Value, script: &[Step]) -> (&'static str, String) {
    let usage =
        json!({"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110});
    if !url.contains(":streamGenerateContent") {
        // Side calls: the router classifier (JSON mode) and the like.
        let text = json!({"complexity_reasoning": "scripted", "complexity_score": 1}).to_string();
        return (
            "application/json",
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
                   "usageMetadata": usage})
            .to_string(),
        );
    }
    // Model turns so far: runs of role "model" in the history.
    let mut turns = 0;
    let mut prev_model = false;
    for c in body["contents"].as_array().into_iter().flatten() {
        let is_model = c["role"] == "model";
        if is_model && !prev_model {
            turns += 1;
        }
        prev_model = is_model;
    }
    let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let step = if has_tools {
        script.get(turns).cloned().unwrap_or(Step::Text("done"))
    } else {
        Step::Text("ok")
    };
    let part = match &step {
        Step::Tool(name, args) => {
            json!({"functionCall": {"name": name, "args": args, "id": format!("call_mock{turns}")}})
        }
        Step::Text(t) => json!({"text": t}),
    };
    let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
                       "usageMetadata": usage});
    ("text/event-stream", sse(&[("", chunk)]))
}
