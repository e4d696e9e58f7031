//! Per-agent payload schemas: a table of JSON pointers saying where each
//! field lives in each agent's payload. Agent differences live here and
//! nowhere else; [`normalize`] is the same code for every agent.

use serde_json::Value;

use super::{fold_name, sanitize_native_name, Agent, Event, EventKind, MAX_CWD_BYTES};

/// Longest call id kept (`[A-Za-z0-9_.-]`, at least one character).
pub const MAX_CALL_ID_CHARS: usize = 128;

/// Where one agent's payload keeps each field. Every list is tried in
/// order; the first present, non-blank value wins.
struct Schema {
    /// The payload's own event name (used when `--event` is absent).
    event_name: &'static [&'static str],
    /// A wrapper event whose real name is nested: (folded wrapper name,
    /// pointer to the real name). OpenCode's `event` hook carries
    /// `input.type` = `session.created`, `session.idle`, ….
    nested_event: Option<(&'static str, &'static str)>,
    session_id: &'static [&'static str],
    cwd: &'static [&'static str],
    tool_name: &'static [&'static str],
    tool_input: &'static [&'static str],
    call_id: &'static [&'static str],
    response: &'static [&'static str],
    error: &'static [&'static str],
    /// Where a tool result carries the command's exit status as a number,
    /// beside the response text (OpenCode's `output.metadata.exit`).
    exit_status: &'static [&'static str],
    /// Where the exit status is read when the payload has none: the agent's
    /// own transcript (Codex's rollout, `transcript.rs`), given the payload
    /// and the call id.
    transcript_exit: Option<fn(&Value, &str) -> Option<i64>>,
    prompt: &'static [&'static str],
    message: &'static [&'static str],
    summary: &'static [&'static str],
    /// The agent's final message of a turn, on its turn-end event (Claude
    /// Code and Codex `Stop.last_assistant_message`, Gemini CLI
    /// `AfterAgent.prompt_response`); read only for a main session's stop.
    final_message: &'static [&'static str],
    detail: &'static [&'static str],
    /// Any of these present (and not null) marks a subagent's event.
    subagent: &'static [&'static str],
    /// Events that name no tool but stand for one (Cursor's
    /// `beforeShellExecution`, …): folded event name → tool name. Their
    /// tool input is the payload itself.
    implied_tools: &'static [(&'static str, &'static str)],
}

/// DESIGN §2: payloads carrying any of these come from a subagent.
const SUBAGENT_MARKERS: &[&str] = &["/agent_id", "/agent_type", "/subagentType"];

const CLAUDE: Schema = Schema {
    event_name: &["/hook_event_name"],
    nested_event: None,
    session_id: &["/session_id"],
    cwd: &["/cwd"],
    tool_name: &["/tool_name"],
    tool_input: &["/tool_input"],
    call_id: &["/tool_use_id"],
    response: &["/tool_response"],
    error: &["/error"],
    exit_status: &[],
    transcript_exit: None,
    prompt: &["/prompt"],
    message: &["/message"],
    summary: &["/compact_summary"],
    final_message: &["/last_assistant_message"],
    detail: &["/source", "/trigger", "/reason"],
    subagent: SUBAGENT_MARKERS,
    implied_tools: &[],
};

const CODEX: Schema = Schema {
    event_name: &["/hook_event_name"],
    nested_event: None,
    session_id: &["/session_id"],
    cwd: &["/cwd"],
    tool_name: &["/tool_name"],
    tool_input: &["/tool_input"],
    call_id: &["/tool_use_id"],
    response: &["/tool_response"],
    error: &["/error"],
    exit_status: &[],
    transcript_exit: Some(super::transcript::codex_exit_code),
    prompt: &["/prompt"],
    message: &["/message"],
    summary: &["/compact_summary", "/summary"],
    final_message: &["/last_assistant_message"],
    detail: &["/source", "/trigger", "/reason"],
    subagent: SUBAGENT_MARKERS,
    implied_tools: &[],
};

const GEMINI: Schema = Schema {
    event_name: &["/hook_event_name"],
    nested_event: None,
    session_id: &["/session_id"],
    cwd: &["/cwd"],
    tool_name: &["/tool_name"],
    tool_input: &["/tool_input"],
    call_id: &["/tool_call_id", "/call_id"],
    response: &["/tool_response"],
    error: &["/tool_response/error", "/error"],
    exit_status: &[],
    transcript_exit: None,
    prompt: &["/prompt"],
    message: &["/message"],
    summary: &["/summary"],
    final_message: &["/prompt_response"],
    detail: &["/source", "/trigger", "/reason", "/notification_type"],
    subagent: SUBAGENT_MARKERS,
    implied_tools: &[],
};

/// What memhook's generated OpenCode plugin pipes in:
/// `{"hook", "input", "output", "directory", "session_id"?}` (docs/capture.md).
const OPENCODE: Schema = Schema {
    event_name: &["/hook"],
    nested_event: Some(("event", "/input/type")),
    session_id: &[
        "/session_id",
        "/input/sessionID",
        "/input/properties/sessionID",
        "/input/properties/info/id",
        "/output/message/sessionID",
    ],
    cwd: &["/cwd", "/directory", "/input/properties/info/directory"],
    tool_name: &["/input/tool"],
    tool_input: &["/output/args", "/input/args"],
    call_id: &["/input/callID"],
    response: &["/output/output", "/output/metadata/output"],
    error: &["/output/error", "/output/metadata/error", "/error"],
    exit_status: &["/output/metadata/exit"],
    transcript_exit: None,
    prompt: &["/output/parts", "/prompt"],
    message: &["/message"],
    summary: &["/summary"],
    final_message: &[],
    detail: &["/input/type", "/reason"],
    subagent: SUBAGENT_MARKERS,
    implied_tools: &[],
};

/// Cursor: `conversation_id`, `workspace_roots`, camelCase events; its
/// shell, read and edit events name no tool.
const CURSOR: Schema = Schema {
    event_name: &["/hook_event_name"],
    nested_event: None,
    session_id: &["/conversation_id", "/session_id"],
    cwd: &["/workspace_roots/0", "/cwd"],
    tool_name: &["/tool_name"],
    tool_input: &["/tool_input"],
    call_id: &["/tool_use_id", "/tool_call_id"],
    response: &["/tool_output", "/output", "/result_json"],
    error: &["/error", "/error_message"],
    exit_status: &[],
    transcript_exit: None,
    prompt: &["/prompt"],
    message: &["/message"],
    summary: &["/summary"],
    final_message: &[],
    detail: &["/source", "/trigger", "/reason", "/status"],
    subagent: SUBAGENT_MARKERS,
    implied_tools: &[
        ("beforeshellexecution", "Shell"),
        ("aftershellexecution", "Shell"),
        ("beforereadfile", "Read"),
        ("beforetabfileread", "Read"),
        ("afterfileedit", "Edit"),
        ("aftertabfileedit", "Edit"),
    ],
};

/// Qwen Code 0.24 (fixtures/agents/qwen-code/): Claude-shaped payloads
/// with Qwen's own tool names; `tool_use_id` is the id shared by a call's
/// Pre/PostToolUse (`tool_call_id` is the model's id); a failure's `error`
/// is the tool's text; Notification names its kind in `notification_type`.
const QWEN: Schema = Schema {
    event_name: &["/hook_event_name"],
    nested_event: None,
    session_id: &["/session_id"],
    cwd: &["/cwd"],
    tool_name: &["/tool_name"],
    tool_input: &["/tool_input"],
    call_id: &["/tool_use_id", "/tool_call_id"],
    response: &["/tool_response"],
    error: &["/error"],
    exit_status: &[],
    transcript_exit: None,
    prompt: &["/prompt"],
    message: &["/message"],
    summary: &["/compact_summary", "/summary"],
    final_message: &["/last_assistant_message"],
    detail: &["/source", "/trigger", "/reason", "/notification_type"],
    subagent: SUBAGENT_MARKERS,
    implied_tools: &[],
};

/// GitHub Copilot CLI (fixtures/agents/copilot/). memhook wires its
/// PascalCase events, which send snake_case payloads with Claude tool names
/// (`Bash`, `Read`, `Write`, `Edit`), but file tools keep Copilot's `path`
/// field and the result is `tool_result.text_result_for_llm`; the
/// camelCase events (`sessionId`, `toolName`, `toolArgs`,
/// `toolResult.textResultForLlm`) are read too. No payload carries a call id.
const COPILOT: Schema = Schema {
    event_name: &["/hook_event_name", "/hookName"],
    nested_event: None,
    // A subagent's events carry its own id as `session_id` and the session
    // that started it as `parent_agent_id`: they belong to that session.
    session_id: &[
        "/parent_agent_id",
        "/parentAgentId",
        "/session_id",
        "/sessionId",
    ],
    cwd: &["/cwd"],
    tool_name: &["/tool_name", "/toolName"],
    tool_input: &["/tool_input", "/toolArgs"],
    call_id: &[],
    response: &[
        "/tool_result/text_result_for_llm",
        "/toolResult/textResultForLlm",
    ],
    error: &["/error"],
    exit_status: &[],
    transcript_exit: None,
    prompt: &["/prompt"],
    message: &["/message"],
    summary: &["/compact_summary", "/summary"],
    final_message: &[],
    detail: &["/source", "/trigger", "/reason"],
    // camelCase events mark a subagent's payload with `agentId`/`agentType`.
    subagent: &["/agent_id", "/agent_type", "/agentId", "/agentType"],
    implied_tools: &[],
};

/// Factory Droid 0.225 (fixtures/agents/droid/): Claude Code's payload
/// fields with Droid's own tool names; `tool_response` is a string.
const DROID: Schema = Schema {
    event_name: &["/hook_event_name"],
    nested_event: None,
    session_id: &["/session_id"],
    cwd: &["/cwd"],
    tool_name: &["/tool_name"],
    tool_input: &["/tool_input"],
    call_id: &["/tool_use_id"],
    response: &["/tool_response"],
    error: &["/error"],
    exit_status: &[],
    transcript_exit: None,
    prompt: &["/prompt"],
    message: &["/message"],
    summary: &["/compact_summary", "/summary"],
    final_message: &["/last_assistant_message"],
    detail: &["/source", "/trigger", "/reason"],
    subagent: SUBAGENT_MARKERS,
    implied_tools: &[],
};

/// OpenHands 1.16 (fixtures/agents/openhands/): its own payload,
/// `event_type`, `working_dir`, the prompt and a stop's final text in
/// `message`; no transcript, no `source`, no call id.
const OPENHANDS: Schema = Schema {
    event_name: &["/event_type"],
    nested_event: None,
    session_id: &["/session_id"],
    cwd: &["/working_dir"],
    tool_name: &["/tool_name"],
    tool_input: &["/tool_input"],
    call_id: &["/metadata/tool_call_id", "/tool_call_id"],
    response: &["/tool_response"],
    error: &["/tool_response/error", "/error"],
    exit_status: &["/tool_response/exit_code"],
    transcript_exit: None,
    prompt: &["/message"],
    message: &["/message"],
    summary: &[],
    final_message: &["/message"],
    detail: &["/metadata/reason", "/reason"],
    subagent: SUBAGENT_MARKERS,
    implied_tools: &[],
};

/// What memhook's generated pi extension (hooks/pi/memhook.js) pipes in:
/// the session id and cwd of pi's `ctx`, the tool call's name, input, id
/// and result text (`error` when pi says `isError`), the prompt, the turn's
/// last assistant text.
const PI: Schema = Schema {
    event_name: &["/hook_event_name"],
    nested_event: None,
    session_id: &["/session_id"],
    cwd: &["/cwd"],
    tool_name: &["/tool_name"],
    tool_input: &["/tool_input"],
    call_id: &["/tool_call_id"],
    response: &["/tool_response"],
    error: &["/error"],
    exit_status: &[],
    transcript_exit: None,
    prompt: &["/prompt"],
    message: &["/message"],
    summary: &["/summary"],
    final_message: &["/last_assistant_message"],
    detail: &["/reason"],
    subagent: SUBAGENT_MARKERS,
    implied_tools: &[],
};

/// Cline CLI 3.0 (fixtures/agents/cline/): every event carries `taskId`,
/// `sessionContext.rootSessionId` (the session a subagent's task belongs
/// to), `workspaceRoots` and an `agent_id` — so the common subagent marker
/// is not read: a subagent is a non-null `parent_agent_id`. Tool events
/// carry the real input object in `tool_call` / `tool_result` (besides
/// `preToolUse.parameters`, whose values are JSON-stringified: never read);
/// TaskComplete's `turn.outputText` is the final text. No transcript, no
/// model.
const CLINE: Schema = Schema {
    event_name: &["/hookName"],
    nested_event: None,
    session_id: &["/sessionContext/rootSessionId", "/taskId"],
    cwd: &["/workspaceRoots/0", "/workspaceInfo/rootPath"],
    tool_name: &["/tool_call/name", "/tool_result/name"],
    tool_input: &["/tool_call/input", "/tool_result/input"],
    call_id: &["/tool_call/id", "/tool_result/id"],
    response: &["/tool_result/output", "/postToolUse/result"],
    error: &["/tool_result/error", "/postToolUse/error"],
    exit_status: &[],
    transcript_exit: None,
    prompt: &["/userPromptSubmit/prompt"],
    message: &["/message"],
    summary: &["/preCompact/summary", "/summary"],
    final_message: &["/turn/outputText"],
    detail: &["/turn/status", "/taskCancel/reason", "/reason"],
    subagent: &["/parent_agent_id"],
    implied_tools: &[],
};

/// Agents that fire their prompt event again, with a blank prompt, when no
/// user typed anything: Qwen Code sends `UserPromptSubmit` with
/// `"prompt": ""` after every tool batch. Such an event is not a prompt and
/// is not recorded ([`is_repeat`]).
const BLANK_PROMPT_REPEATS: &[Agent] = &[Agent::QwenCode];

/// Prompt events an agent fires with its own words instead of the user's:
/// (agent, how the text starts). Cline's one-shot mode sends
/// UserPromptSubmit with `[SYSTEM] This run is not complete until you call
/// one of these terminal completion tools: …` nudges and never with the
/// user's prompt. Such an event is not a prompt and is not recorded
/// ([`is_repeat`]).
const SYNTHETIC_PROMPTS: &[(Agent, &str)] = &[(Agent::Cline, "[SYSTEM] This run is not complete")];

/// Whether `ev` is an agent repeating its prompt event without a user's
/// prompt (see `BLANK_PROMPT_REPEATS` and `SYNTHETIC_PROMPTS`): the
/// hook records nothing for it.
pub fn is_repeat(ev: &Event) -> bool {
    if ev.kind != EventKind::UserPrompt {
        return false;
    }
    match ev.prompt.as_deref() {
        None => BLANK_PROMPT_REPEATS.contains(&ev.agent),
        Some(p) => SYNTHETIC_PROMPTS
            .iter()
            .any(|(a, start)| *a == ev.agent && p.trim_start().starts_with(start)),
    }
}

/// Any other agent: the union of the common spellings.
const GENERIC: Schema = Schema {
    event_name: &["/hook_event_name", "/event", "/hook"],
    nested_event: None,
    session_id: &[
        "/session_id",
        "/sessionId",
        "/sessionID",
        "/conversation_id",
        "/conversationId",
    ],
    cwd: &[
        "/cwd",
        "/current_dir",
        "/working_dir",
        "/directory",
        "/workspace_roots/0",
        "/workspacePaths/0",
    ],
    tool_name: &["/tool_name", "/toolName", "/tool"],
    tool_input: &["/tool_input", "/toolInput", "/args", "/input"],
    call_id: &[
        "/tool_use_id",
        "/toolUseId",
        "/tool_call_id",
        "/toolCallId",
        "/call_id",
        "/callId",
        "/callID",
    ],
    response: &["/tool_response", "/tool_output", "/output", "/result"],
    error: &["/error", "/error_message"],
    exit_status: &[],
    transcript_exit: None,
    prompt: &["/prompt"],
    message: &["/message"],
    summary: &["/compact_summary", "/summary"],
    final_message: &["/last_assistant_message", "/prompt_response"],
    detail: &["/source", "/trigger", "/reason"],
    subagent: SUBAGENT_MARKERS,
    implied_tools: &[],
};

fn schema(agent: &Agent) -> &'static Schema {
    match agent {
        Agent::ClaudeCode => &CLAUDE,
        Agent::Codex => &CODEX,
        Agent::GeminiCli => &GEMINI,
        Agent::OpenCode | Agent::Kilo => &OPENCODE,
        Agent::Cursor => &CURSOR,
        Agent::QwenCode => &QWEN,
        Agent::Copilot => &COPILOT,
        Agent::Droid => &DROID,
        Agent::OpenHands => &OPENHANDS,
        Agent::Pi => &PI,
        Agent::Cline => &CLINE,
        Agent::Other(_) => &GENERIC,
    }
}

/// The first pointer that holds a value other than null.
fn first<'a>(payload: &'a Value, paths: &[&str]) -> Option<&'a Value> {
    paths
        .iter()
        .filter_map(|p| payload.pointer(p))
        .find(|v| !v.is_null())
}

/// The first pointer that holds a non-blank string.
fn first_str(payload: &Value, paths: &[&str]) -> Option<String> {
    paths
        .iter()
        .filter_map(|p| payload.pointer(p))
        .filter_map(Value::as_str)
        .find(|s| !s.trim().is_empty())
        .map(str::to_string)
}

/// The first pointer that holds a usable directory path: non-blank, at
/// most [`MAX_CWD_BYTES`], no NUL. A longer one names no directory the
/// agent could be in; resolving scope from it would cost time in
/// proportion to its length (the hook then uses its own working directory).
fn first_path(payload: &Value, paths: &[&str]) -> Option<String> {
    first_str(payload, paths).filter(|p| p.len() <= MAX_CWD_BYTES && !p.contains('\0'))
}

/// Text of a string, or of an array of content blocks (`"text"` strings or
/// objects with a `text` field), joined by newlines.
fn flatten_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let parts: Vec<&str> = items
                .iter()
                .filter_map(|it| match it {
                    Value::String(s) => Some(s.as_str()),
                    Value::Object(o) => match o.get("type").and_then(Value::as_str) {
                        Some("text") | None => o.get("text").and_then(Value::as_str),
                        Some(_) => None,
                    },
                    _ => None,
                })
                .collect();
            if parts.is_empty() {
                None
            } else {
                Some(parts.join("\n"))
            }
        }
        _ => None,
    }
}

fn first_text(payload: &Value, paths: &[&str]) -> Option<String> {
    paths
        .iter()
        .filter_map(|p| payload.pointer(p))
        .filter_map(flatten_text)
        .find(|s| !s.trim().is_empty())
}

/// A call id is kept only when it is 1–[`MAX_CALL_ID_CHARS`] characters of
/// `[A-Za-z0-9_.-]`.
pub fn valid_call_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_CALL_ID_CHARS
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Normalise one agent payload into an [`Event`]. The event name comes from
/// `event_flag` (the hook's `--event`), else from the payload. Fields the
/// event kind does not use are left `None`, so nothing downstream can store
/// them by accident (a subagent's final message, a tool's input on a
/// prompt event, …).
pub fn normalize(agent: &str, event_flag: Option<&str>, payload: &Value) -> Event {
    let agent = Agent::parse(agent);
    let s = schema(&agent);
    let mut name = event_flag
        .map(str::to_string)
        .filter(|n| !n.trim().is_empty())
        .or_else(|| first_str(payload, s.event_name))
        .unwrap_or_default();
    if let Some((wrapper, inner)) = s.nested_event {
        if fold_name(&name) == wrapper {
            if let Some(n) = first_str(payload, &[inner]) {
                name = n;
            }
        }
    }
    let kind = EventKind::parse(&name);
    let folded = fold_name(&name);
    let implied_tool = s
        .implied_tools
        .iter()
        .find(|(n, _)| *n == folded)
        .map(|(_, t)| *t);

    let mut ev = Event {
        agent,
        kind,
        native_name: sanitize_native_name(&name),
        session_id: first_str(payload, s.session_id),
        cwd: first_path(payload, s.cwd),
        tool_name: None,
        tool_input: None,
        tool_call_id: None,
        tool_response: None,
        tool_error: None,
        exit_status: None,
        prompt: None,
        message: None,
        summary: None,
        final_message: None,
        detail: first_str(payload, s.detail),
        subagent: s
            .subagent
            .iter()
            .any(|p| payload.pointer(p).is_some_and(|v| !v.is_null())),
    };

    match kind {
        k if k.is_tool_event() => {
            if let Some(tool) = implied_tool {
                ev.tool_name = Some(tool.to_string());
                ev.tool_input = Some(payload.clone());
            } else {
                ev.tool_name = first_str(payload, s.tool_name);
                ev.tool_input = first(payload, s.tool_input).cloned();
            }
            ev.tool_call_id = first_str(payload, s.call_id).filter(|id| valid_call_id(id));
            if k.is_post_tool() {
                ev.tool_response = first(payload, s.response).cloned();
                ev.tool_error = first(payload, s.error).cloned();
                ev.exit_status = s
                    .exit_status
                    .iter()
                    .find_map(|p| payload.pointer(p).and_then(Value::as_i64))
                    .or_else(|| {
                        let read = s.transcript_exit?;
                        read(payload, ev.tool_call_id.as_deref()?)
                    });
            }
        }
        EventKind::UserPrompt => ev.prompt = first_text(payload, s.prompt),
        EventKind::Notification => ev.message = first_text(payload, s.message),
        EventKind::PreCompact | EventKind::PostCompact => {
            ev.summary = first_text(payload, s.summary)
        }
        // A subagent's final message is metadata only (DESIGN §4): never read.
        EventKind::Stop if !ev.subagent => ev.final_message = first_text(payload, s.final_message),
        _ => {}
    }
    ev
}
