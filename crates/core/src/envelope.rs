//! What the hook prints on stdout, per agent.
//!
//! Every agent gets exactly one JSON object, serialised with serde_json so it
//! is always valid. `{}` means "nothing to say" and is what every event other
//! than the agent's briefing event prints. The briefing event is session
//! start, except for agents that take no context there
//! ([`briefing_event`]: OpenHands from its first prompt, Cline from its
//! first tool call; the hook briefs those once per session). With a
//! briefing to inject, the shape follows the agent's documented contract (a
//! table, below):
//!
//! | agent        | session-start envelope |
//! |--------------|------------------------|
//! | claude-code, codex, gemini-cli, qwen-code, other | `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":…}}` |
//! | cursor       | `{"additional_context":…}` |
//! | opencode     | `{"additionalContext":…}` (read by memhook's own plugin) |
//! | copilot      | `{"additionalContext":…}` (Copilot CLI ignores `hookSpecificOutput`) |
//! | droid        | as claude-code |
//! | openhands    | `{"additionalContext":…}` on its first UserPromptSubmit |
//! | cline        | `{"contextModification":…}` on its first PreToolUse |
//!
//! Details and sources are in `docs/record.md` ("What the hook prints").

use serde_json::{Map, Value};

use crate::event::{Agent, EventKind};

/// How an agent accepts context injected at session start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Injection {
    /// `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":…}}`
    /// (Claude Code, Codex, Gemini CLI).
    HookSpecificOutput,
    /// `{"<key>": …}` at the top level.
    TopLevel(&'static str),
    /// The agent cannot take context here: always `{}`.
    Unsupported,
}

/// The event whose output carries the briefing to the model: session start,
/// or, for an agent that takes no context at session start, the earliest
/// event that does (the hook then briefs once per session).
pub fn briefing_event(agent: &Agent) -> EventKind {
    match agent {
        // OpenHands 1.16 reads context only from UserPromptSubmit (it
        // becomes part of the user message).
        Agent::OpenHands => EventKind::UserPrompt,
        // Cline 3.0 sends TaskStart and UserPromptSubmit output nowhere; a
        // PreToolUse or PostToolUse `contextModification` becomes a user
        // message after the tool's result (`<hook_context
        // source="PreToolUse" …>`): the first tool call is the earliest.
        Agent::Cline => EventKind::PreToolUse,
        _ => EventKind::SessionStart,
    }
}

/// The agent's briefing contract (at [`briefing_event`]).
pub fn session_start_injection(agent: &Agent) -> Injection {
    match agent {
        Agent::ClaudeCode | Agent::Codex | Agent::GeminiCli => Injection::HookSpecificOutput,
        Agent::Cursor => Injection::TopLevel("additional_context"),
        // Qwen Code 0.24 appends it to the system prompt (checked with the
        // real CLI: tests/integration/agents.rs, qwen_code_end_to_end).
        Agent::QwenCode => Injection::HookSpecificOutput,
        // Kilo CLI runs the same generated plugin as OpenCode.
        Agent::OpenCode | Agent::Kilo => Injection::TopLevel("additionalContext"),
        // Checked with Copilot CLI 1.0.102: only a top-level
        // `additionalContext` reaches the model, on every event spelling.
        Agent::Copilot => Injection::TopLevel("additionalContext"),
        // Factory Droid speaks Claude Code's hook protocol (checked with
        // droid 0.225.2: tests/integration/agents.rs, droid_end_to_end).
        Agent::Droid => Injection::HookSpecificOutput,
        Agent::OpenHands => Injection::TopLevel("additionalContext"),
        // memhook's generated pi extension reads it, as the OpenCode plugin.
        Agent::Pi => Injection::TopLevel("additionalContext"),
        // Checked with Cline 3.0.65 (tests/integration/agents.rs,
        // cline_end_to_end).
        Agent::Cline => Injection::TopLevel("contextModification"),
        // Unknown agents most often speak the Claude Code protocol (Cursor,
        // Gemini CLI and others read it); `{}` stays valid for all of them.
        Agent::Other(_) => Injection::HookSpecificOutput,
    }
}

/// The agent's contract for context on a pre-tool-use event (the file
/// history line, history.rs). Only agents whose real CLI was seen to pass
/// it to the model: Claude Code (2.1.328 reads
/// `hookSpecificOutput.additionalContext` on PreToolUse; checked in
/// tests/integration/history.rs). Every other agent gets `{}`.
pub fn pre_tool_injection(agent: &Agent) -> Injection {
    match agent {
        Agent::ClaudeCode => Injection::HookSpecificOutput,
        _ => Injection::Unsupported,
    }
}

/// The hook's stdout for `agent` and `kind`, with an optional briefing.
/// Always one line of valid JSON, without a trailing newline.
pub fn render(agent: &Agent, kind: EventKind, context: Option<&str>) -> String {
    let context = context.filter(|c| !c.trim().is_empty());
    let value = match (kind, context) {
        (k, Some(ctx)) if k == briefing_event(agent) => match session_start_injection(agent) {
            Injection::HookSpecificOutput => hook_specific("SessionStart", ctx),
            Injection::TopLevel(key) => object([(key, Value::from(ctx))]),
            Injection::Unsupported => Value::Object(Map::new()),
        },
        (EventKind::PreToolUse, Some(ctx)) => match pre_tool_injection(agent) {
            Injection::HookSpecificOutput => hook_specific("PreToolUse", ctx),
            Injection::TopLevel(key) => object([(key, Value::from(ctx))]),
            Injection::Unsupported => Value::Object(Map::new()),
        },
        _ => Value::Object(Map::new()),
    };
    value.to_string()
}

/// The envelope for "nothing to say".
pub const EMPTY: &str = "{}";

/// `{"hookSpecificOutput":{"hookEventName":event,"additionalContext":ctx}}`.
fn hook_specific(event: &str, ctx: &str) -> Value {
    let mut inner = Map::new();
    inner.insert("hookEventName".into(), event.into());
    inner.insert("additionalContext".into(), ctx.into());
    object([("hookSpecificOutput", Value::Object(inner))])
}

fn object<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [EventKind; 13] = [
        EventKind::SessionStart,
        EventKind::UserPrompt,
        EventKind::PreToolUse,
        EventKind::PostToolUse,
        EventKind::PostToolUseFailure,
        EventKind::PreCompact,
        EventKind::PostCompact,
        EventKind::Notification,
        EventKind::Stop,
        EventKind::SubagentStart,
        EventKind::SubagentStop,
        EventKind::SessionEnd,
        EventKind::Other,
    ];

    fn agents() -> Vec<Agent> {
        vec![
            Agent::ClaudeCode,
            Agent::Codex,
            Agent::OpenCode,
            Agent::GeminiCli,
            Agent::Cursor,
            Agent::QwenCode,
            Agent::Copilot,
            Agent::Droid,
            Agent::OpenHands,
            Agent::Pi,
            Agent::Cline,
            Agent::Other("kimi".into()),
        ]
    }

    #[test]
    fn claude_codex_gemini_qwen_use_hook_specific_output() {
        for a in [
            Agent::ClaudeCode,
            Agent::Codex,
            Agent::GeminiCli,
            Agent::QwenCode,
            Agent::Droid,
        ] {
            assert_eq!(
                render(&a, EventKind::SessionStart, Some("brief \"q\"\nline")),
                r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"brief \"q\"\nline"}}"#
            );
        }
    }

    #[test]
    fn cursor_and_opencode_shapes() {
        assert_eq!(
            render(&Agent::Cursor, EventKind::SessionStart, Some("b")),
            r#"{"additional_context":"b"}"#
        );
        assert_eq!(
            render(&Agent::OpenCode, EventKind::SessionStart, Some("b")),
            r#"{"additionalContext":"b"}"#
        );
        assert_eq!(
            render(
                &Agent::Other("x".into()),
                EventKind::SessionStart,
                Some("b")
            ),
            r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"b"}}"#
        );
    }

    #[test]
    fn copilot_reads_only_a_top_level_additional_context() {
        assert_eq!(
            render(&Agent::Copilot, EventKind::SessionStart, Some("b")),
            r#"{"additionalContext":"b"}"#
        );
    }

    #[test]
    fn late_briefing_agents_take_it_at_their_event_only() {
        assert_eq!(
            render(&Agent::OpenHands, EventKind::UserPrompt, Some("b")),
            r#"{"additionalContext":"b"}"#
        );
        assert_eq!(
            render(&Agent::OpenHands, EventKind::SessionStart, Some("b")),
            EMPTY
        );
        assert_eq!(
            render(&Agent::ClaudeCode, EventKind::UserPrompt, Some("b")),
            EMPTY
        );
        // Cline: the first tool call carries it, as contextModification;
        // its session start (TaskStart), prompt and PostToolUse print
        // nothing.
        assert_eq!(
            render(&Agent::Cline, EventKind::PreToolUse, Some("b")),
            r#"{"contextModification":"b"}"#
        );
        for k in [
            EventKind::SessionStart,
            EventKind::UserPrompt,
            EventKind::PostToolUse,
        ] {
            assert_eq!(render(&Agent::Cline, k, Some("b")), EMPTY, "{k:?}");
        }
        assert_eq!(pre_tool_injection(&Agent::Cline), Injection::Unsupported);
    }

    #[test]
    fn a_file_history_line_goes_only_to_agents_that_read_pre_tool_context() {
        assert_eq!(
            render(&Agent::ClaudeCode, EventKind::PreToolUse, Some("h")),
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"h"}}"#
        );
        // (Cline's PreToolUse is its briefing event: the hook gives it no
        // history line, pre_tool_injection says so.)
        for a in agents() {
            if pre_tool_injection(&a) == Injection::Unsupported
                && briefing_event(&a) != EventKind::PreToolUse
            {
                assert_eq!(render(&a, EventKind::PreToolUse, Some("h")), EMPTY, "{a:?}");
            }
        }
    }

    #[test]
    fn nothing_to_say_is_empty_object_everywhere() {
        for a in agents() {
            for k in ALL {
                assert_eq!(render(&a, k, None), EMPTY);
                assert_eq!(render(&a, k, Some("  \n")), EMPTY);
                let pre_tool =
                    k == EventKind::PreToolUse && pre_tool_injection(&a) != Injection::Unsupported;
                if k != briefing_event(&a) && !pre_tool {
                    assert_eq!(render(&a, k, Some("briefing")), EMPTY, "{a:?} {k:?}");
                }
            }
        }
    }

    #[test]
    fn always_valid_json_even_with_hostile_text() {
        let nasty = "\u{0}\"}\\\u{202e}</script>\u{1b}[31m\u{10ffff}";
        for a in agents() {
            let out = render(&a, briefing_event(&a), Some(nasty));
            let v: Value = serde_json::from_str(&out).expect("valid JSON");
            let text = v
                .pointer("/hookSpecificOutput/additionalContext")
                .or_else(|| v.get("additional_context"))
                .or_else(|| v.get("additionalContext"))
                .or_else(|| v.get("contextModification"))
                .and_then(Value::as_str);
            assert_eq!(text, Some(nasty), "{a:?}");
            assert!(!out.contains('\n'));
        }
    }
}
