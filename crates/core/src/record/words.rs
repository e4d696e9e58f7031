//! The agent's own words (DESIGN §4): the final message of a turn and the
//! plan it keeps with its todo/plan tools. Both are free text written by
//! the model, so both pass the filters tool output passes (`<private>`
//! spans, control characters and secrets by `redact::clean`; lines naming
//! an excluded path by `capture::filter_text`) before their caps.
//!
//! Where each agent gives them is a table (`plan_sources`); the
//! fixtures that show each row are listed in docs/record.md.

use serde_json::Value;

use super::{cap, clean_capped, window, PlanItem, RecordPlan, WINDOW_FACTOR};
use crate::event::{fold_name, Agent, Event};
use crate::redact;
use crate::scope::CaptureConfig;

/// The final message of a turn, in bytes.
pub const MAX_FINAL_MESSAGE_BYTES: usize = 4 * 1024;
/// A shell tool's command line, in bytes.
pub const MAX_COMMAND_BYTES: usize = 1024;
/// Plan items kept from one tool call.
pub const MAX_PLAN_ITEMS: usize = 32;
/// One plan item's text, in bytes.
pub const MAX_PLAN_TEXT_BYTES: usize = 300;
/// One plan item's id, in bytes (`[A-Za-z0-9_.-]` only).
pub const MAX_PLAN_ID_BYTES: usize = 64;

/// How one todo/plan tool states its items.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// The whole list, replacing the plan: an array at `list` in the tool's
    /// input, each item's text at the first of `text`, its status at
    /// `status`, its id (if any) at `id`.
    List {
        list: &'static str,
        text: &'static [&'static str],
        id: Option<&'static str>,
    },
    /// One new, pending item: its text at `text` in the input, its id at
    /// `id` in the response (Claude Code `TaskCreate`).
    Create {
        text: &'static str,
        id: &'static str,
    },
    /// One item changed by id: id, status and (optional) new text in the
    /// input (Claude Code `TaskUpdate`).
    Update {
        id: &'static str,
        text: &'static str,
    },
}

struct PlanSource {
    tool: &'static str,
    shape: Shape,
}

const fn list(
    tool: &'static str,
    list: &'static str,
    text: &'static [&'static str],
    id: Option<&'static str>,
) -> PlanSource {
    PlanSource {
        tool,
        shape: Shape::List { list, text, id },
    }
}

const CLAUDE: &[PlanSource] = &[
    list("TodoWrite", "/todos", &["/content"], None),
    PlanSource {
        tool: "TaskCreate",
        shape: Shape::Create {
            text: "/subject",
            id: "/task/id",
        },
    },
    PlanSource {
        tool: "TaskUpdate",
        shape: Shape::Update {
            id: "/taskId",
            text: "/subject",
        },
    },
];
const CODEX: &[PlanSource] = &[list("update_plan", "/plan", &["/step"], None)];
const GEMINI: &[PlanSource] = &[list("write_todos", "/todos", &["/description"], None)];
const OPENCODE: &[PlanSource] = &[list("todowrite", "/todos", &["/content"], Some("/id"))];
const QWEN: &[PlanSource] = &[list("todo_write", "/todos", &["/content"], Some("/id"))];

/// Each agent's plan tools; an unknown agent gets every row.
fn plan_sources(agent: &Agent) -> &'static [&'static [PlanSource]] {
    const ALL: &[&[PlanSource]] = &[CLAUDE, CODEX, GEMINI, OPENCODE, QWEN];
    match agent {
        Agent::ClaudeCode => &ALL[0..1],
        Agent::Codex => &ALL[1..2],
        Agent::GeminiCli => &ALL[2..3],
        Agent::OpenCode | Agent::Kilo => &ALL[3..4],
        Agent::QwenCode => &ALL[4..5],
        // No plan tool seen in their payloads (docs/record.md).
        Agent::Copilot | Agent::Cursor => &[],
        // Not verified from its payloads yet: no plan rows.
        Agent::Droid | Agent::OpenHands | Agent::Pi | Agent::Cline => &[],
        Agent::Other(_) => ALL,
    }
}

/// Every spelling of a status (folded as event names are) → the one the
/// record keeps. Anything else is `unknown` (counted as open).
const STATUSES: &[(&str, &str)] = &[
    ("pending", "pending"),
    ("todo", "pending"),
    ("notstarted", "pending"),
    ("open", "pending"),
    ("inprogress", "in-progress"),
    ("active", "in-progress"),
    ("completed", "done"),
    ("complete", "done"),
    ("done", "done"),
    ("cancelled", "cancelled"),
    ("canceled", "cancelled"),
    ("deleted", "deleted"),
];

/// The statuses a record keeps; `done`, `cancelled` and `deleted` close an item.
pub const PLAN_STATUSES: &[&str] = &[
    "pending",
    "in-progress",
    "done",
    "cancelled",
    "deleted",
    "unknown",
];

/// Whether an item of this status is still open.
pub fn is_open(status: &str) -> bool {
    !matches!(status, "done" | "cancelled" | "deleted")
}

fn status(v: Option<&Value>) -> String {
    let folded = v.and_then(Value::as_str).map(fold_name).unwrap_or_default();
    STATUSES
        .iter()
        .find(|(s, _)| *s == folded)
        .map_or("unknown", |(_, to)| to)
        .to_string()
}

/// An id kept only when it is 1–[`MAX_PLAN_ID_BYTES`] of `[A-Za-z0-9_.-]`
/// (a number is written as text).
fn item_id(v: Option<&Value>) -> Option<String> {
    let id = match v? {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    valid_plan_id(&id).then_some(id)
}

/// Whether `id` is a plan item id a record may hold.
pub fn valid_plan_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_PLAN_ID_BYTES
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Free text of the agent cleaned, its lines naming an excluded path
/// removed, then capped; `None` when nothing is left or it cannot be
/// checked.
pub fn filtered(
    config: &CaptureConfig,
    cwd: Option<&str>,
    text: &str,
    max: usize,
) -> Option<String> {
    let cleaned = redact::clean(window(text, max.saturating_mul(WINDOW_FACTOR)));
    let kept = crate::capture::filter_text(config, cwd, &cleaned)?;
    let out = cap(kept.trim(), max);
    (!out.is_empty()).then_some(out)
}

/// The final message of a main session's turn, filtered and capped at
/// [`MAX_FINAL_MESSAGE_BYTES`].
pub fn final_message(event: &Event, config: &CaptureConfig) -> Option<String> {
    let text = event.final_message.as_deref()?;
    filtered(config, event.cwd.as_deref(), text, MAX_FINAL_MESSAGE_BYTES)
}

/// A shell tool's command line, redacted and capped at
/// [`MAX_COMMAND_BYTES`] (a command naming an excluded path never gets
/// here: the event was dropped).
pub fn command_line(event: &Event) -> Option<String> {
    let line = crate::capture::shell_command_line(event)?;
    let out = clean_capped(line.trim(), MAX_COMMAND_BYTES);
    (!out.trim().is_empty()).then_some(out)
}

/// The plan a kept post-tool event of a todo/plan tool sets; `None` for
/// any other tool.
pub fn plan(event: &Event, config: &CaptureConfig) -> Option<RecordPlan> {
    let name = event.tool_name.as_deref()?;
    let source = plan_sources(&event.agent)
        .iter()
        .flat_map(|t| t.iter())
        .find(|s| s.tool.eq_ignore_ascii_case(name))?;
    let input = event.tool_input.as_ref()?;
    let text = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .and_then(|t| filtered(config, event.cwd.as_deref(), t, MAX_PLAN_TEXT_BYTES))
            .map(|t| t.replace(['\n', '\r'], " "))
    };
    let (full, items) = match source.shape {
        Shape::List {
            list,
            text: texts,
            id,
        } => {
            let items = input
                .pointer(list)?
                .as_array()?
                .iter()
                .take(MAX_PLAN_ITEMS)
                .filter_map(|it| {
                    let item = PlanItem {
                        id: id.and_then(|p| item_id(it.pointer(p))),
                        text: text(texts.iter().find_map(|p| it.pointer(p))),
                        status: status(it.get("status")),
                    };
                    (item.id.is_some() || item.text.is_some()).then_some(item)
                })
                .collect();
            (true, items)
        }
        Shape::Create { text: t, id } => {
            let item = PlanItem {
                id: item_id(event.tool_response.as_ref().and_then(|r| r.pointer(id))),
                text: text(input.pointer(t)),
                status: "pending".to_string(),
            };
            (false, vec![item])
        }
        Shape::Update { id, text: t } => {
            let item = PlanItem {
                id: Some(item_id(input.pointer(id))?),
                text: text(input.pointer(t)),
                status: match input.get("status") {
                    Some(s) => status(Some(s)),
                    // An update of its text only: the status is unchanged.
                    None => String::new(),
                },
            };
            (false, vec![item])
        }
    };
    Some(RecordPlan { full, items })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::normalize;
    use serde_json::json;
    use std::path::Path;

    fn fixture(rel: &str) -> Value {
        let p = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("fixtures/agents")
            .join(rel);
        serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()
    }

    fn item(id: Option<&str>, text: Option<&str>, status: &str) -> PlanItem {
        PlanItem {
            id: id.map(str::to_string),
            text: text.map(str::to_string),
            status: status.into(),
        }
    }

    #[test]
    fn plans_from_real_payloads() {
        let a = CaptureConfig::Absent;
        let ev = normalize(
            "claude-code",
            None,
            &fixture("claude-code/2.1.328/PostToolUse-TaskCreate.json"),
        );
        let p = plan(&ev, &a).unwrap();
        assert!(!p.full);
        assert_eq!(p.items, [item(Some("1"), Some("Check readme"), "pending")]);
        let ev = normalize(
            "claude-code",
            None,
            &fixture("claude-code/2.1.328/PostToolUse-TaskUpdate.json"),
        );
        assert_eq!(
            plan(&ev, &a).unwrap().items,
            [item(Some("1"), None, "done")]
        );
        let ev = normalize(
            "opencode",
            None,
            &fixture("opencode/1.18.33/tool.execute.after-todowrite.json"),
        );
        let p = plan(&ev, &a).unwrap();
        assert!(p.full);
        assert_eq!(p.items, [item(Some("1"), Some("Check readme"), "done")]);
        // Not a plan tool.
        let ev = normalize(
            "claude-code",
            None,
            &fixture("claude-code/2.1.328/PostToolUse-Bash.json"),
        );
        assert_eq!(plan(&ev, &a), None);
    }

    /// The documented shapes of the plan tools no fixture shows yet (Codex
    /// `update_plan` is not declared in `exec` mode; Claude Code's
    /// `TodoWrite` and Gemini CLI's `write_todos` need a model that calls them).
    #[test]
    fn documented_list_shapes() {
        let a = CaptureConfig::Absent;
        for (agent, tool, input, want) in [
            (
                "codex",
                "update_plan",
                json!({"plan": [{"step": "Fix leap year", "status": "completed"},
                                 {"step": "Add CLI", "status": "in_progress"}]}),
                vec![
                    item(None, Some("Fix leap year"), "done"),
                    item(None, Some("Add CLI"), "in-progress"),
                ],
            ),
            (
                "claude-code",
                "TodoWrite",
                json!({"todos": [{"content": "Write docs", "status": "pending",
                                  "activeForm": "Writing docs"}]}),
                vec![item(None, Some("Write docs"), "pending")],
            ),
            (
                "gemini-cli",
                "write_todos",
                json!({"todos": [{"description": "Run tests", "status": "cancelled"},
                                  {"description": "x", "status": "weird"}]}),
                vec![
                    item(None, Some("Run tests"), "cancelled"),
                    item(None, Some("x"), "unknown"),
                ],
            ),
        ] {
            let ev = normalize(
                agent,
                None,
                &json!({"hook_event_name": "PostToolUse", "tool_name": tool,
                        "tool_input": input, "cwd": "/w"}),
            );
            assert_eq!(plan(&ev, &a).unwrap().items, want, "{agent}");
        }
    }

    #[test]
    fn plan_items_are_bounded_and_filtered() {
        let todos: Vec<Value> = (0..MAX_PLAN_ITEMS + 3)
            .map(|i| json!({"content": format!("t{i}"), "status": "pending", "id": i}))
            .collect();
        let mut todos = todos;
        todos[0] = json!({"content": format!("use password=hunter2 {}\nnext", "x".repeat(400)),
                          "status": "pending", "id": "../bad"});
        todos[1] = json!({"content": "read /w/secret/k.txt", "status": "pending"});
        let ev = normalize(
            "opencode",
            None,
            &json!({"hook": "tool.execute.after", "input": {"tool": "todowrite",
                    "args": {"todos": todos}}, "cwd": "/w"}),
        );
        let config = CaptureConfig::Active {
            marker: "/w/.ai-memory.toml".into(),
            patterns: vec!["secret/**".into()],
            assistant_text: true,
        };
        let p = plan(&ev, &config).unwrap();
        // The second item lost its text and has no id: it is gone.
        assert_eq!(p.items.len(), MAX_PLAN_ITEMS - 1);
        let first = &p.items[0];
        assert_eq!(first.id, None);
        let t = first.text.as_deref().unwrap();
        assert!(t.len() <= MAX_PLAN_TEXT_BYTES && !t.contains("hunter2") && !t.contains('\n'));
        assert!(p
            .items
            .iter()
            .all(|i| !i.text.as_deref().unwrap_or("").contains("secret")));
    }

    #[test]
    fn final_message_is_filtered_and_capped() {
        let config = CaptureConfig::Active {
            marker: "/w/.ai-memory.toml".into(),
            patterns: vec!["secret/**".into()],
            assistant_text: true,
        };
        let msg = format!(
            "Fixed it <private>my pin</private>.\nsecret/k.txt holds ghp_R7bE3kQ9xZ2mN4pL6vT8wY1cA5sD0fG3hJ2k\nToken ghp_R7bE3kQ9xZ2mN4pL6vT8wY1cA5sD0fG3hJ2k rotated.\n{}",
            "yy ".repeat(MAX_FINAL_MESSAGE_BYTES / 2)
        );
        let ev = normalize(
            "codex",
            None,
            &json!({"hook_event_name": "Stop", "cwd": "/w", "last_assistant_message": msg}),
        );
        let out = final_message(&ev, &config).unwrap();
        assert!(
            out.starts_with("Fixed it .\nToken [REDACTED:github_token] rotated."),
            "{out}"
        );
        assert!(!out.contains("secret") && !out.contains("pin"));
        assert_eq!(out.len(), MAX_FINAL_MESSAGE_BYTES);
        // Exactly at the cap: kept whole (words, as a path too long to
        // check removes its line).
        let at = format!("{}z", "zz ".repeat((MAX_FINAL_MESSAGE_BYTES - 1) / 3));
        assert_eq!(at.len(), MAX_FINAL_MESSAGE_BYTES);
        let ev = normalize(
            "codex",
            None,
            &json!({"hook_event_name": "Stop", "cwd": "/w", "last_assistant_message": at}),
        );
        assert_eq!(final_message(&ev, &config).unwrap(), at);
    }

    #[test]
    fn command_lines_are_redacted_and_capped() {
        let ev = normalize(
            "claude-code",
            None,
            &json!({"hook_event_name": "PostToolUse", "tool_name": "Bash", "cwd": "/w",
                    "tool_input": {"command": "PGPASSWORD=hunter2 psql -c 'select 1'"}}),
        );
        assert_eq!(
            command_line(&ev).as_deref(),
            Some("PGPASSWORD=[REDACTED:password]")
        );
        let long = format!("echo {}", "a".repeat(MAX_COMMAND_BYTES));
        let ev = normalize(
            "codex",
            None,
            &json!({"hook_event_name": "PostToolUse", "tool_name": "exec_command",
                    "tool_input": {"cmd": ["bash", "-lc", long]}}),
        );
        let c = command_line(&ev).unwrap();
        assert_eq!(c.len(), MAX_COMMAND_BYTES);
        assert!(c.starts_with("bash -lc echo aaa"));
        let ev = normalize(
            "claude-code",
            None,
            &json!({"hook_event_name": "PostToolUse", "tool_name": "Read",
                    "tool_input": {"file_path": "/w/a"}}),
        );
        assert_eq!(command_line(&ev), None);
    }
}
