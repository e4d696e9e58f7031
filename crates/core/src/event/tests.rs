use super::*;
use serde_json::json;
use std::path::Path;

#[test]
fn every_spelling_meets_in_one_kind() {
    let cases: &[(&[&str], EventKind)] = &[
        (
            &[
                "session-start",
                "session_start",
                "SessionStart",
                "sessionStart",
                "session.created",
            ],
            EventKind::SessionStart,
        ),
        (
            &[
                "user-prompt-submit",
                "UserPromptSubmit",
                "user_prompt",
                "beforeSubmitPrompt",
                "BeforeAgent",
                "chat.message",
            ],
            EventKind::UserPrompt,
        ),
        (
            &[
                "pre-tool-use",
                "PreToolUse",
                "preToolUse",
                "pre_tool_use",
                "BeforeTool",
                "tool.execute.before",
                "beforeShellExecution",
                "beforeMCPExecution",
                "beforeReadFile",
            ],
            EventKind::PreToolUse,
        ),
        (
            &[
                "post-tool-use",
                "PostToolUse",
                "postToolUse",
                "AfterTool",
                "tool.execute.after",
                "afterShellExecution",
                "afterFileEdit",
                "afterMCPExecution",
            ],
            EventKind::PostToolUse,
        ),
        (
            &[
                "PostToolUseFailure",
                "postToolUseFailure",
                "post-tool-use-failure",
            ],
            EventKind::PostToolUseFailure,
        ),
        (
            &[
                "PreCompact",
                "pre-compact",
                "preCompact",
                "PreCompress",
                "experimental.session.compacting",
            ],
            EventKind::PreCompact,
        ),
        (
            &["PostCompact", "post_compact", "session.compacted"],
            EventKind::PostCompact,
        ),
        (&["Notification", "notification"], EventKind::Notification),
        (
            &["Stop", "stop", "AfterAgent", "session.idle"],
            EventKind::Stop,
        ),
        (
            &["SubagentStart", "subagent-start"],
            EventKind::SubagentStart,
        ),
        (
            &["SubagentStop", "subagent_stop", "SubagentEnd"],
            EventKind::SubagentStop,
        ),
        (
            &["SessionEnd", "session-end", "sessionEnd", "session.deleted"],
            EventKind::SessionEnd,
        ),
        (
            &[
                "PostToolBatch",
                "BeforeModel",
                "afterAgentResponse",
                "",
                "💥",
            ],
            EventKind::Other,
        ),
    ];
    for (names, kind) in cases {
        for n in *names {
            assert_eq!(EventKind::parse(n), *kind, "{n}");
        }
    }
    assert_eq!(
        EventKind::PostToolUseFailure.as_str(),
        "post-tool-use-failure"
    );
    assert_eq!(
        EventKind::parse(EventKind::UserPrompt.as_str()),
        EventKind::UserPrompt
    );
}

#[test]
fn every_kind_round_trips_through_its_canonical_name() {
    for (_, k) in EVENT_NAMES {
        assert_eq!(EventKind::parse(k.as_str()), *k);
    }
}

#[test]
fn agent_aliases_and_sanitised_others() {
    for (name, want) in [
        ("claude-code", "claude-code"),
        ("claude_code", "claude-code"),
        ("claude", "claude-code"),
        ("Codex", "codex"),
        ("opencode", "opencode"),
        ("open-code", "opencode"),
        ("gemini-cli", "gemini-cli"),
        ("gemini", "gemini-cli"),
        ("cursor", "cursor"),
        ("kilo", "kilo"),
        ("kilo-cli", "kilo"),
        ("kilocode", "kilo"),
        ("My Agent!", "myagent"),
        ("", "generic"),
        ("/$%", "generic"),
    ] {
        assert_eq!(Agent::parse(name).as_str(), want, "{name}");
    }
    let long = "a".repeat(MAX_NAME_CHARS + 1);
    assert_eq!(Agent::parse(&long).as_str().len(), MAX_NAME_CHARS);
}

#[test]
fn call_ids_are_validated_at_the_edge() {
    assert!(valid_call_id("toolu_01.A-b"));
    assert!(valid_call_id(&"x".repeat(MAX_CALL_ID_CHARS)));
    assert!(!valid_call_id(&"x".repeat(MAX_CALL_ID_CHARS + 1)));
    assert!(!valid_call_id(""));
    assert!(!valid_call_id("a b"));
    assert!(!valid_call_id("a/b"));
    let ev = normalize(
        "claude-code",
        Some("PreToolUse"),
        &json!({"tool_name": "Read", "tool_use_id": "bad id!", "tool_input": {}}),
    );
    assert_eq!(ev.tool_call_id, None);
}

fn fixture(rel: &str) -> serde_json::Value {
    let p = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("fixtures/agents")
        .join(rel);
    serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()
}

#[test]
fn claude_post_tool_use_from_the_real_payload() {
    let ev = normalize(
        "claude-code",
        None,
        &fixture("claude-code/2.1.328/PostToolUse-Edit.json"),
    );
    assert_eq!(ev.kind, EventKind::PostToolUse);
    assert_eq!(ev.native_name, "PostToolUse");
    assert_eq!(
        ev.session_id.as_deref(),
        Some("4c3ac1bf-95d6-487f-a6bc-140cd0de6f2b")
    );
    assert_eq!(ev.cwd.as_deref(), Some("/home/dev/projects/demo"));
    assert_eq!(ev.tool_name.as_deref(), Some("Edit"));
    assert_eq!(ev.tool_call_id.as_deref(), Some("toolu_0003_0"));
    assert!(ev.tool_response.is_some());
    assert!(!ev.subagent);
}

#[test]
fn claude_failure_carries_the_error_and_subagents_are_marked() {
    let ev = normalize(
        "claude-code",
        None,
        &fixture("claude-code/2.1.328/PostToolUseFailure-Bash-exit1.json"),
    );
    assert_eq!(ev.kind, EventKind::PostToolUseFailure);
    assert_eq!(ev.tool_error, Some(json!("Exit code 1\nfailing")));
    let sub = normalize(
        "claude",
        None,
        &fixture("claude-code/2.1.328/PreToolUse-Read-subagent.json"),
    );
    assert!(sub.subagent);
}

#[test]
fn stop_carries_the_final_message_and_prompt_only_on_prompt_events() {
    // Where each agent's turn-end event gives its final message (docs/record.md).
    for (agent, path, want) in [
        (
            "claude-code",
            "claude-code/2.1.328/Stop.json",
            Some("All done."),
        ),
        ("codex", "codex/0.171.0/Stop.json", Some("All done.")),
        (
            "gemini-cli",
            "gemini-cli/0.61.0/AfterAgent.json",
            Some("All done."),
        ),
        ("qwen-code", "qwen-code/0.24.4/Stop.json", Some("All done.")),
        // Copilot CLI's Stop and OpenCode's session.idle carry no text.
        ("copilot", "copilot/1.0.102/Stop.json", None),
        ("opencode", "opencode/1.18.33/event-session.idle.json", None),
        // A subagent's final message is never read (metadata only).
        (
            "claude-code",
            "claude-code/2.1.328/SubagentStop-subagent.json",
            None,
        ),
        ("copilot", "copilot/1.0.102/Stop-subagent.json", None),
    ] {
        let ev = normalize(agent, None, &fixture(path));
        assert!(
            matches!(ev.kind, EventKind::Stop | EventKind::SubagentStop),
            "{path}"
        );
        assert_eq!(ev.final_message.as_deref(), want, "{path}");
        assert_eq!(
            (&ev.prompt, &ev.message, &ev.summary),
            (&None, &None, &None)
        );
    }
    // Other events never carry it, even when the payload holds the field.
    let ev = normalize(
        "claude-code",
        None,
        &json!({"hook_event_name": "UserPromptSubmit", "prompt": "p",
                "last_assistant_message": "leak"}),
    );
    assert_eq!(ev.final_message, None);
    // Gemini's AfterAgent repeats the prompt: it is a Stop, so no prompt.
    let ev = normalize(
        "gemini-cli",
        None,
        &fixture("gemini-cli/0.61.0/AfterAgent.json"),
    );
    assert_eq!(ev.kind, EventKind::Stop);
    assert_eq!(ev.prompt, None);
    let ev = normalize(
        "gemini-cli",
        None,
        &fixture("gemini-cli/0.61.0/BeforeAgent.json"),
    );
    assert_eq!(ev.kind, EventKind::UserPrompt);
    assert_eq!(ev.prompt.as_deref(), Some("exercise the tools"));
}

#[test]
fn codex_and_gemini_tool_events() {
    let ev = normalize(
        "codex",
        Some("pre-tool-use"),
        &fixture("codex/0.171.0/PreToolUse-apply_patch.json"),
    );
    assert_eq!(ev.kind, EventKind::PreToolUse);
    assert_eq!(ev.native_name, "pre-tool-use");
    assert_eq!(ev.tool_name.as_deref(), Some("apply_patch"));
    assert!(ev.tool_input.as_ref().unwrap()["command"].is_string());
    let ev = normalize(
        "gemini",
        None,
        &fixture("gemini-cli/0.61.0/AfterTool-read_file-missing-file.json"),
    );
    assert_eq!(ev.kind, EventKind::PostToolUse);
    assert_eq!(ev.tool_error.as_ref().unwrap()["type"], "file_not_found");
    let ev = normalize(
        "gemini-cli",
        None,
        &fixture("gemini-cli/0.61.0/PreCompress-auto.json"),
    );
    assert_eq!(
        (ev.kind, ev.detail.as_deref()),
        (EventKind::PreCompact, Some("auto"))
    );
}

#[test]
fn opencode_plugin_shape() {
    let mut p = fixture("opencode/1.18.33/tool.execute.before-edit.json");
    p["directory"] = json!("/home/dev/projects/demo");
    let ev = normalize("opencode", Some("tool.execute.before"), &p);
    assert_eq!(ev.kind, EventKind::PreToolUse);
    assert_eq!(ev.tool_name.as_deref(), Some("edit"));
    assert_eq!(ev.tool_call_id.as_deref(), Some("call_0004_0"));
    assert_eq!(
        ev.session_id.as_deref(),
        Some("ses_dd8166b86ffepiwUVgEY6pxYpk")
    );
    assert_eq!(ev.cwd.as_deref(), Some("/home/dev/projects/demo"));
    assert_eq!(
        ev.tool_input.as_ref().unwrap()["filePath"],
        "/home/dev/projects/demo/src/app.py"
    );

    let ev = normalize(
        "opencode",
        Some("tool.execute.after"),
        &fixture("opencode/1.18.33/tool.execute.after-bash.json"),
    );
    assert_eq!(ev.kind, EventKind::PostToolUse);
    assert_eq!(ev.tool_input.as_ref().unwrap()["command"], "ls -la");
    assert!(ev.tool_response.as_ref().unwrap().is_string());

    // The `event` hook names its real event in input.type.
    let ev = normalize(
        "opencode",
        Some("event"),
        &fixture("opencode/1.18.33/event-session.created.json"),
    );
    assert_eq!(ev.kind, EventKind::SessionStart);
    assert_eq!(ev.native_name, "session.created");
    assert_eq!(ev.cwd.as_deref(), Some("/home/dev/projects/demo"));
    let ev = normalize(
        "opencode",
        None,
        &fixture("opencode/1.18.33/event-session.idle.json"),
    );
    assert_eq!(ev.kind, EventKind::Stop);

    let ev = normalize(
        "opencode",
        Some("chat.message"),
        &fixture("opencode/1.18.33/chat.message.json"),
    );
    assert_eq!(ev.kind, EventKind::UserPrompt);
    assert_eq!(ev.prompt.as_deref(), Some("\"exercise the tools\""));
}

/// Kilo CLI runs memhook's OpenCode plugin, so its payloads are OpenCode's:
/// every OpenCode fixture reads the same as `kilo` (only the agent differs),
/// where the generic schema would miss the tool and its arguments.
#[test]
fn kilo_reads_opencode_payloads() {
    for (event, file) in [
        ("tool.execute.before", "tool.execute.before-edit.json"),
        ("tool.execute.after", "tool.execute.after-bash.json"),
        ("event", "event-session.created.json"),
        ("chat.message", "chat.message.json"),
    ] {
        let p = fixture(&format!("opencode/1.18.33/{file}"));
        let oc = normalize("opencode", Some(event), &p);
        let kilo = normalize("kilo", Some(event), &p);
        assert_eq!(kilo.agent, Agent::Kilo, "{file}");
        assert_eq!(
            (
                &kilo.kind,
                &kilo.tool_name,
                &kilo.tool_input,
                &kilo.session_id
            ),
            (&oc.kind, &oc.tool_name, &oc.tool_input, &oc.session_id),
            "{file}"
        );
        assert_eq!(
            (&kilo.cwd, &kilo.prompt, &kilo.tool_response),
            (&oc.cwd, &oc.prompt, &oc.tool_response),
            "{file}"
        );
    }
    let p = fixture("opencode/1.18.33/tool.execute.before-edit.json");
    assert_ne!(
        normalize("kilo", Some("tool.execute.before"), &p).tool_input,
        normalize("some-fork", Some("tool.execute.before"), &p).tool_input
    );
}

#[test]
fn cursor_workspace_roots_and_implied_tools() {
    let p = json!({
        "conversation_id": "c-1", "generation_id": "g-1",
        "hook_event_name": "beforeShellExecution",
        "workspace_roots": ["/home/dev/projects/demo"], "cwd": "",
        "command": "cat secrets/key.pem"
    });
    let ev = normalize("cursor", None, &p);
    assert_eq!(ev.kind, EventKind::PreToolUse);
    assert_eq!(ev.session_id.as_deref(), Some("c-1"));
    assert_eq!(ev.cwd.as_deref(), Some("/home/dev/projects/demo"));
    assert_eq!(ev.tool_name.as_deref(), Some("Shell"));
    assert_eq!(
        ev.tool_input.as_ref().unwrap()["command"],
        "cat secrets/key.pem"
    );
    let p = json!({"hook_event_name": "afterFileEdit", "workspace_roots": ["/w"],
                   "file_path": "/w/a.rs", "edits": []});
    let ev = normalize("cursor", None, &p);
    assert_eq!(
        (ev.kind, ev.tool_name.as_deref()),
        (EventKind::PostToolUse, Some("Edit"))
    );
}

#[test]
fn generic_schema_reads_common_spellings() {
    let p = json!({"event": "PostToolUse", "sessionId": "s", "working_dir": "/w",
                   "toolName": "Read", "toolInput": {"path": "/w/x"}, "callId": "c1",
                   "agent_type": "helper"});
    let ev = normalize("some-new-agent", None, &p);
    assert_eq!(ev.agent, Agent::Other("some-new-agent".into()));
    assert_eq!(ev.kind, EventKind::PostToolUse);
    assert_eq!(ev.session_id.as_deref(), Some("s"));
    assert_eq!(ev.cwd.as_deref(), Some("/w"));
    assert_eq!(ev.tool_name.as_deref(), Some("Read"));
    assert_eq!(ev.tool_call_id.as_deref(), Some("c1"));
    assert!(ev.subagent);
}

#[test]
fn native_names_are_sanitised_and_bounded() {
    let ev = normalize("claude", Some("Pre Tool/Use\u{202e}"), &json!({}));
    assert_eq!(ev.native_name, "PreToolUse");
    assert_eq!(ev.kind, EventKind::PreToolUse);
    let long = "x".repeat(500);
    let ev = normalize("claude", Some(&long), &json!(null));
    assert_eq!(ev.native_name.len(), MAX_NAME_CHARS);
    assert_eq!(ev.kind, EventKind::Other);
}

#[test]
fn a_cwd_longer_than_a_path_can_be_is_ignored() {
    let at_edge = format!("/{}", "a".repeat(MAX_CWD_BYTES - 1));
    let ev = normalize("claude", None, &json!({"cwd": at_edge}));
    assert_eq!(ev.cwd.as_deref(), Some(at_edge.as_str()));
    let past = format!("/{}", "a/".repeat(MAX_CWD_BYTES / 2));
    assert_eq!(normalize("claude", None, &json!({"cwd": past})).cwd, None);
    assert_eq!(
        normalize("claude", None, &json!({"cwd": "/w\0x"})).cwd,
        None
    );
}

#[test]
fn qwen_code_tool_events_from_the_real_payloads() {
    let ev = normalize(
        "qwen-code",
        None,
        &fixture("qwen-code/0.24.4/PostToolUse-run_shell_command.json"),
    );
    assert_eq!(ev.agent, Agent::QwenCode);
    assert_eq!(ev.kind, EventKind::PostToolUse);
    assert_eq!(ev.cwd.as_deref(), Some("/home/dev/projects/demo"));
    assert_eq!(ev.tool_name.as_deref(), Some("run_shell_command"));
    assert_eq!(ev.tool_input.as_ref().unwrap()["command"], "echo CAP-OUT");
    // The id Pre and Post share, not the model's `call_3`.
    assert_eq!(
        ev.tool_call_id.as_deref(),
        Some("toolu_1796142144228_g1zhpg4l8")
    );
    let pre = normalize(
        "qwen",
        None,
        &fixture("qwen-code/0.24.4/PreToolUse-run_shell_command.json"),
    );
    assert_eq!(pre.tool_call_id, ev.tool_call_id);
    assert!(ev.tool_response.as_ref().unwrap()["llmContent"]
        .as_str()
        .unwrap()
        .contains("Output: CAP-OUT"));
    let fail = normalize(
        "qwen-code",
        None,
        &fixture("qwen-code/0.24.4/PostToolUseFailure-read_file-missing-file.json"),
    );
    assert_eq!(fail.kind, EventKind::PostToolUseFailure);
    assert_eq!(
        fail.tool_error,
        Some(json!("File not found: /home/dev/projects/demo/missing.txt"))
    );
    let start = normalize(
        "qwen-code",
        None,
        &fixture("qwen-code/0.24.4/SessionStart-startup.json"),
    );
    assert_eq!(
        (start.kind, start.detail.as_deref()),
        (EventKind::SessionStart, Some("startup"))
    );
}

/// Qwen Code fires UserPromptSubmit again with `"prompt": ""` after every
/// tool batch: those are repeats, the user's own prompt is not.
#[test]
fn qwen_code_blank_prompt_repeats_are_not_prompts() {
    let first = normalize(
        "qwen-code",
        None,
        &fixture("qwen-code/0.24.4/UserPromptSubmit.json"),
    );
    assert_eq!(first.prompt.as_deref(), Some("CAP-PROMPT exercise tools"));
    assert!(!is_repeat(&first));
    for n in ["", "-2", "-9"] {
        let again = normalize(
            "qwen-code",
            Some("user-prompt-submit"),
            &fixture(&format!(
                "qwen-code/0.24.4/UserPromptSubmit-after-tool-batch{n}.json"
            )),
        );
        assert_eq!(again.kind, EventKind::UserPrompt);
        assert!(is_repeat(&again), "{n}");
    }
    // Another agent's blank prompt is still that agent's prompt event.
    let claude = normalize(
        "claude-code",
        Some("UserPromptSubmit"),
        &json!({"prompt": ""}),
    );
    assert!(!is_repeat(&claude));
    // A tool event is never a repeat.
    let tool = normalize(
        "qwen-code",
        None,
        &fixture("qwen-code/0.24.4/PreToolUse-glob.json"),
    );
    assert!(!is_repeat(&tool));
}

/// Copilot CLI, from its real payloads: the PascalCase events memhook wires
/// (Claude tool names, Copilot's `path`, `tool_result`) and the camelCase
/// ones (`sessionId`, `toolArgs`, `toolResult`) give the same event.
#[test]
fn copilot_events_from_the_real_payloads() {
    let dir = "copilot/1.0.102";
    let ev = normalize(
        "copilot",
        None,
        &fixture(&format!("{dir}/PostToolUse-Bash.json")),
    );
    assert_eq!(ev.kind, EventKind::PostToolUse);
    assert_eq!(ev.agent, Agent::Copilot);
    assert_eq!(ev.cwd.as_deref(), Some("/home/dev/projects/demo"));
    assert_eq!(ev.tool_name.as_deref(), Some("Bash"));
    assert_eq!(
        ev.tool_input.as_ref().unwrap()["command"],
        "echo E2E-BASH-OUT"
    );
    assert_eq!(
        ev.tool_response,
        Some(json!(
            "E2E-BASH-OUT\n<shellId: 0 completed with exit code 0>"
        ))
    );
    let camel = normalize(
        "copilot",
        Some("postToolUse"),
        &fixture(&format!("{dir}/camelCase/postToolUse-bash.json")),
    );
    assert_eq!(camel.kind, EventKind::PostToolUse);
    assert_eq!(camel.session_id, ev.session_id);
    assert_eq!(camel.tool_name.as_deref(), Some("bash"));
    assert_eq!(camel.tool_input, ev.tool_input);
    assert_eq!(camel.tool_response, ev.tool_response);

    let fail = normalize(
        "copilot",
        None,
        &fixture(&format!("{dir}/PostToolUseFailure-Read-missing-file.json")),
    );
    assert_eq!(fail.kind, EventKind::PostToolUseFailure);
    assert_eq!(fail.tool_error, Some(json!("Path does not exist")));
    assert_eq!(
        fail.tool_input.as_ref().unwrap()["path"],
        "/home/dev/projects/demo/missing.txt"
    );
    let prompt = normalize(
        "copilot",
        None,
        &fixture(&format!("{dir}/UserPromptSubmit.json")),
    );
    assert_eq!(prompt.kind, EventKind::UserPrompt);
    assert_eq!(prompt.prompt.as_deref(), Some("E2E-PROMPT exercise tools"));
    let camel = normalize(
        "copilot",
        Some("userPromptSubmitted"),
        &fixture(&format!("{dir}/camelCase/userPromptSubmitted.json")),
    );
    assert_eq!((camel.kind, camel.prompt), (prompt.kind, prompt.prompt));
    let stop = normalize(
        "copilot",
        Some("agentStop"),
        &fixture(&format!("{dir}/camelCase/agentStop.json")),
    );
    assert_eq!(stop.kind, EventKind::Stop);
    let start = normalize(
        "copilot",
        None,
        &fixture(&format!("{dir}/SessionStart-resume.json")),
    );
    assert_eq!(
        (start.kind, start.detail.as_deref()),
        (EventKind::SessionStart, Some("resume"))
    );
    // A subagent's events are marked in both spellings; the main session's are not.
    for f in [
        "PreToolUse-Read-subagent.json",
        "camelCase/preToolUse-view-subagent.json",
    ] {
        assert!(
            normalize(
                "copilot",
                Some("PreToolUse"),
                &fixture(&format!("{dir}/{f}"))
            )
            .subagent,
            "{f}"
        );
    }
    assert!(!ev.subagent);
    // ... and belong to the session that started the subagent.
    let main = normalize(
        "copilot",
        None,
        &fixture(&format!("{dir}/PreToolUse-Agent.json")),
    );
    let sub = normalize(
        "copilot",
        None,
        &fixture(&format!("{dir}/PostToolUse-Read-subagent.json")),
    );
    assert_eq!(
        sub.session_id.as_deref(),
        Some("a93158ba-303f-483f-a003-876b3b59f95d")
    );
    assert_eq!(sub.session_id, main.session_id);
}

/// A folder of payloads captured from a real run by the end-to-end test's
/// shim (scripts/agent-fixtures.py): each is read as `agent` with the
/// `--event` its hook was called with, and returns the events, by file.
/// Every one parses to its event's kind, names its session and its
/// directory (the test project), and every tool event names one of the
/// agent's own documented tools, with its input.
fn captured_run(agent: &str, dir: &str) -> Vec<(String, Event)> {
    let index = fixture(&format!("{dir}/index.json"));
    let rows = index.as_array().unwrap();
    assert!(!rows.is_empty());
    let mut out = Vec::new();
    for row in rows {
        let file = row["file"].as_str().unwrap();
        let event = row["event"].as_str().unwrap();
        let ev = normalize(agent, Some(event), &fixture(&format!("{dir}/{file}")));
        assert_eq!(ev.agent, Agent::parse(agent), "{file}");
        assert_eq!(ev.kind, EventKind::parse(event), "{file}");
        assert_ne!(ev.kind, EventKind::Other, "{file}");
        assert!(ev.session_id.is_some(), "{file}: no session id");
        assert_eq!(ev.cwd.as_deref(), Some("/home/dev/proj"), "{file}");
        if ev.kind.is_tool_event() {
            let tool = ev.tool_name.as_deref().unwrap_or_else(|| panic!("{file}"));
            let (_, documented) = crate::capture::classify_tool(&ev.agent, tool);
            assert!(documented, "{file}: {tool} is not in {agent}'s tool table");
            assert!(ev.tool_input.is_some(), "{file}: no tool input");
        }
        out.push((file.to_string(), ev));
    }
    out
}

/// The event of `file` in a [`captured_run`].
fn captured<'a>(run: &'a [(String, Event)], file: &str) -> &'a Event {
    &run.iter().find(|(f, _)| f == file).unwrap().1
}

#[test]
fn claude_agent_sdk_runs_claude_codes_hooks_with_its_payloads() {
    let run = captured_run("claude-code", "claude-agent-sdk/0.2.184");
    let start = captured(&run, "session-start.json");
    assert_eq!(start.detail.as_deref(), Some("startup"));
    let bash = captured(&run, "post-tool-use-Bash.json");
    assert_eq!(
        bash.tool_input.as_ref().unwrap()["command"],
        "echo E2E-BASH-OUTPUT"
    );
    assert_eq!(bash.tool_call_id.as_deref(), Some("toolu_mock02"));
    let fail = captured(&run, "post-tool-use-failure-Bash.json");
    assert!(fail.tool_error.is_some());
    let prompt = captured(&run, "user-prompt-submit.json");
    assert!(prompt
        .prompt
        .as_deref()
        .unwrap()
        .starts_with("E2E-SDK-PROMPT"));
    let stop = captured(&run, "stop.json");
    assert_eq!(stop.final_message.as_deref(), Some("All done."));
}

#[test]
fn droid_events_from_the_real_payloads() {
    let run = captured_run("droid", "droid/0.225.2");
    let exec = captured(&run, "post-tool-use-Execute.json");
    assert_eq!(
        exec.tool_input.as_ref().unwrap()["command"],
        "echo E2E-DROID-OUT"
    );
    assert_eq!(
        exec.tool_response,
        Some(json!("E2E-DROID-OUT\n\n\n[Process exited with code 0]"))
    );
    // Droid's payloads carry no call id.
    assert_eq!(exec.tool_call_id, None);
    assert_eq!(crate::record::exit_status(exec), Some(0));
    let create = captured(&run, "post-tool-use-Create.json");
    assert_eq!(
        crate::capture::kept_file_paths(create),
        ["/home/dev/proj/notes.md"]
    );
    let start = captured(&run, "session-start.json");
    assert_eq!(start.detail.as_deref(), Some("startup"));
    // `droid exec` fires no UserPromptSubmit.
    assert!(run.iter().all(|(_, e)| e.kind != EventKind::UserPrompt));
}

#[test]
fn openhands_events_from_the_real_payloads() {
    let run = captured_run("openhands", "openhands/1.16.0");
    let prompt = captured(&run, "user-prompt-submit.json");
    assert_eq!(
        prompt.prompt.as_deref(),
        Some("E2E-OH-PROMPT write, read, run")
    );
    let term = captured(&run, "post-tool-use-terminal.json");
    assert_eq!(
        term.tool_input.as_ref().unwrap()["command"],
        "echo E2E-OH-OUT"
    );
    assert_eq!(term.exit_status, Some(0));
    assert_eq!(term.tool_error, None);
    let create = captured(&run, "post-tool-use-file_editor.json");
    assert_eq!(
        crate::capture::kept_file_paths(create),
        ["/home/dev/proj/notes.md"]
    );
    let stop = captured(&run, "stop.json");
    assert_eq!(stop.detail.as_deref(), Some("agent_finished"));
    // A stop carries no final text (the finish tool's message is its input).
    assert_eq!(stop.final_message, None);
    // No `source`: a resumed conversation looks like a new start.
    assert_eq!(captured(&run, "session-start.json").detail, None);
}

#[test]
fn pi_events_from_memhooks_extension() {
    let run = captured_run("pi", "pi/0.73.1");
    let prompt = captured(&run, "before_agent_start.json");
    assert_eq!(
        prompt.prompt.as_deref(),
        Some("E2E-PI-PROMPT write, read, run")
    );
    let bash = captured(&run, "tool_result-bash.json");
    assert_eq!(
        bash.tool_input.as_ref().unwrap()["command"],
        "echo E2E-PI-OUT"
    );
    assert_eq!(bash.tool_response, Some(json!("E2E-PI-OUT\n")));
    assert_eq!(bash.tool_call_id.as_deref(), Some("call_mock0"));
    let write = captured(&run, "tool_result-write.json");
    assert_eq!(
        crate::capture::kept_file_paths(write),
        ["/home/dev/proj/notes.md"]
    );
    let stop = captured(&run, "agent_end.json");
    assert_eq!(stop.final_message.as_deref(), Some("All done."));
    assert_eq!(
        captured(&run, "session_shutdown.json").kind,
        EventKind::SessionEnd
    );
}

#[test]
fn cline_events_from_the_real_payloads() {
    let run = captured_run("cline", "cline/3.0.65");
    // The real input object, never preToolUse.parameters (JSON-stringified).
    let cmd = captured(&run, "pre-tool-use-run_commands.json");
    assert_eq!(
        cmd.tool_input.as_ref().unwrap()["commands"],
        json!(["echo E2E-CLINE-OUT"])
    );
    assert_eq!(cmd.tool_call_id.as_deref(), Some("call_mock0"));
    assert_eq!(
        crate::capture::shell_command_line(cmd).as_deref(),
        Some("echo E2E-CLINE-OUT")
    );
    let out = captured(&run, "post-tool-use-run_commands.json");
    assert!(out.tool_response.as_ref().unwrap()[0]["result"]
        .as_str()
        .unwrap()
        .contains("E2E-CLINE-OUT"));
    let edit = captured(&run, "post-tool-use-editor.json");
    assert_eq!(
        crate::capture::kept_file_paths(edit),
        ["/home/dev/proj/notes.md"]
    );
    let read = captured(&run, "pre-tool-use-read_files.json");
    assert_eq!(
        read.tool_input.as_ref().unwrap()["files"][0]["path"],
        "/home/dev/proj/secret/key.txt"
    );
    // Every payload carries `agent_id`: not a subagent (parent_agent_id null).
    assert!(run.iter().all(|(_, e)| !e.subagent));
    // The session is the root session, the same for every event of a run.
    let start = captured(&run, "session-start.json");
    assert!(run[..9]
        .iter()
        .all(|(_, e)| e.session_id == start.session_id));
    // One-shot mode: UserPromptSubmit carries Cline's nudge, not a prompt.
    let nudge = captured(&run, "user-prompt-submit.json");
    assert!(nudge.prompt.as_deref().unwrap().starts_with("[SYSTEM] "));
    assert!(is_repeat(nudge));
    let stop = captured(&run, "stop.json");
    assert_eq!(
        stop.final_message.as_deref(),
        Some("Submission recorded (verified): All done, the notes are written.")
    );
    assert_eq!(stop.detail.as_deref(), Some("completed"));
}

#[test]
fn cline_marks_a_subagent_by_its_parent_only() {
    let p = json!({"taskId": "t", "agent_id": "agent_1", "parent_agent_id": null,
                   "sessionContext": {"rootSessionId": "root"}});
    let ev = normalize("cline", Some("stop"), &p);
    assert!(!ev.subagent);
    assert_eq!(ev.session_id.as_deref(), Some("root"));
    let mut sub = p.clone();
    sub["parent_agent_id"] = json!("agent_0");
    let ev = normalize("cline", Some("stop"), &sub);
    assert!(ev.subagent);
    // Elsewhere `agent_id` still marks a subagent.
    assert!(normalize("claude-code", Some("stop"), &p).subagent);
    // A user's own prompt is one; another agent's "[SYSTEM]" text too.
    let prompt = |agent: &str, text: &str| {
        normalize(
            agent,
            Some("user-prompt-submit"),
            &json!({"userPromptSubmit": {"prompt": text}, "prompt": text}),
        )
    };
    assert!(!is_repeat(&prompt("cline", "fix the tests")));
    assert!(is_repeat(&prompt(
        "cline",
        "[SYSTEM] This run is not complete until you call submit_and_exit."
    )));
    assert!(!is_repeat(&prompt(
        "claude-code",
        "[SYSTEM] This run is not complete until you call submit_and_exit."
    )));
}
