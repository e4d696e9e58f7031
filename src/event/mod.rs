//! Event intake: one parser for event names (every spelling agents use), a
//! parser for agent names, and per-agent payload schemas (a table) that say
//! where session id, cwd, tool name, arguments, call id, response, error and
//! prompt live. Everything downstream sees only [`Event`].

use serde_json::Value;

/// A supported agent, or another name that gets the generic schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Agent {
    ClaudeCode,
    Codex,
    OpenCode,
    GeminiCli,
    Cursor,
    /// Anything else, sanitised to `[a-z0-9._-]`, at most 64 chars (`generic` when empty).
    Other(String),
}

/// Canonical event kinds. Every decision (capture, briefing, drains) uses this,
/// never the raw string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    SessionStart,
    UserPrompt,
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    PreCompact,
    PostCompact,
    Notification,
    Stop,
    SubagentStart,
    SubagentStop,
    SessionEnd,
    Other,
}

/// One event, normalised from the agent's payload. Fields are `None` when the
/// agent's schema does not carry them or the payload does not hold them.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub agent: Agent,
    pub kind: EventKind,
    /// The event name as given (`--event`, else the payload's name), bounded.
    pub native_name: String,
    pub session_id: Option<String>,
    /// The working directory the event happened in (Cursor: `workspace_roots[0]`).
    pub cwd: Option<String>,
    pub tool_name: Option<String>,
    /// The tool's arguments as the agent sent them (never stored).
    pub tool_input: Option<Value>,
    /// A validated call id (1–128 of `[A-Za-z0-9_.-]`).
    pub tool_call_id: Option<String>,
    /// The tool's result (post-tool events).
    pub tool_response: Option<Value>,
    /// The tool's error (failure events).
    pub tool_error: Option<Value>,
    /// The user's prompt text (prompt events), content blocks flattened.
    pub prompt: Option<String>,
    /// A notification's message.
    pub message: Option<String>,
    /// A compaction summary.
    pub summary: Option<String>,
    /// `source` / `trigger` / `reason` of lifecycle events (startup, resume, compact, …).
    pub detail: Option<String>,
    /// The payload carries `agent_id` / `agent_type` / `subagentType`.
    pub subagent: bool,
}
