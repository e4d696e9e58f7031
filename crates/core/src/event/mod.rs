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
    QwenCode,
    /// GitHub Copilot CLI (`copilot`).
    Copilot,
    /// Kilo CLI (`kilo`), an OpenCode fork running memhook's OpenCode
    /// plugin: every per-agent table gives it OpenCode's row.
    Kilo,
    /// Factory Droid (`droid`): Claude-shaped payloads, its own tool names.
    Droid,
    /// OpenHands CLI (`openhands`): its own payload, six events.
    OpenHands,
    /// pi coding agent (`pi`), through memhook's generated extension.
    Pi,
    /// Cline CLI (`cline`): one executable per event in `~/.cline/hooks/`,
    /// its own payload (`taskId`, `tool_call`, `tool_result`, …).
    Cline,
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
    /// The command's exit status, where the agent's payload carries it as a
    /// number beside the response (the schema table's `exit_status`).
    pub exit_status: Option<i64>,
    /// The user's prompt text (prompt events), content blocks flattened.
    pub prompt: Option<String>,
    /// A notification's message.
    pub message: Option<String>,
    /// A compaction summary.
    pub summary: Option<String>,
    /// The agent's final message of a turn (a main session's stop event
    /// only; a subagent's is never read).
    pub final_message: Option<String>,
    /// `source` / `trigger` / `reason` of lifecycle events (startup, resume, compact, …).
    pub detail: Option<String>,
    /// The payload marks a subagent's event: `agent_id` / `agent_type` /
    /// `subagentType`, or the agent's own marker (the schema table's
    /// `subagent` row; Cline: a non-null `parent_agent_id`).
    pub subagent: bool,
}

pub mod names;
pub mod payload;
mod schema;
pub mod transcript;
pub use schema::{is_repeat, normalize, valid_call_id, MAX_CALL_ID_CHARS};

/// Longest working directory accepted from a payload (Linux `PATH_MAX`);
/// a longer one is ignored.
pub const MAX_CWD_BYTES: usize = 4096;

/// Longest agent or native event name kept.
pub const MAX_NAME_CHARS: usize = 64;

/// One row of the event-name table: the name with `-`, `_` and `.` removed
/// and lowercased, and the kind it means.
const EVENT_NAMES: &[(&str, EventKind)] = &[
    // Session start (OpenCode: session.created).
    ("sessionstart", EventKind::SessionStart),
    ("sessioncreated", EventKind::SessionStart),
    // The user's prompt (Cursor: beforeSubmitPrompt; Gemini: BeforeAgent;
    // OpenCode: chat.message).
    ("userpromptsubmit", EventKind::UserPrompt),
    ("userprompt", EventKind::UserPrompt),
    // Copilot CLI's camelCase name for it.
    ("userpromptsubmitted", EventKind::UserPrompt),
    ("beforesubmitprompt", EventKind::UserPrompt),
    ("beforeagent", EventKind::UserPrompt),
    ("chatmessage", EventKind::UserPrompt),
    // Before a tool runs (Gemini: BeforeTool; OpenCode: tool.execute.before;
    // Cursor: beforeShellExecution, beforeMCPExecution, beforeReadFile).
    ("pretooluse", EventKind::PreToolUse),
    ("beforetool", EventKind::PreToolUse),
    ("toolexecutebefore", EventKind::PreToolUse),
    ("beforeshellexecution", EventKind::PreToolUse),
    ("beforemcpexecution", EventKind::PreToolUse),
    ("beforereadfile", EventKind::PreToolUse),
    ("beforetabfileread", EventKind::PreToolUse),
    // After a tool ran (Gemini: AfterTool; OpenCode: tool.execute.after;
    // Cursor: afterShellExecution, afterMCPExecution, afterFileEdit).
    ("posttooluse", EventKind::PostToolUse),
    ("aftertool", EventKind::PostToolUse),
    ("toolexecuteafter", EventKind::PostToolUse),
    ("aftershellexecution", EventKind::PostToolUse),
    ("aftermcpexecution", EventKind::PostToolUse),
    ("afterfileedit", EventKind::PostToolUse),
    ("aftertabfileedit", EventKind::PostToolUse),
    ("posttoolusefailure", EventKind::PostToolUseFailure),
    // Compaction (Gemini: PreCompress; OpenCode: experimental.session.compacting
    // before, session.compacted after).
    ("precompact", EventKind::PreCompact),
    ("precompress", EventKind::PreCompact),
    ("experimentalsessioncompacting", EventKind::PreCompact),
    ("postcompact", EventKind::PostCompact),
    ("postcompaction", EventKind::PostCompact),
    ("sessioncompacted", EventKind::PostCompact),
    ("notification", EventKind::Notification),
    // End of a turn (Gemini: AfterAgent; OpenCode: session.idle).
    ("stop", EventKind::Stop),
    ("afteragent", EventKind::Stop),
    ("sessionidle", EventKind::Stop),
    // Copilot CLI's camelCase name for it.
    ("agentstop", EventKind::Stop),
    ("subagentstart", EventKind::SubagentStart),
    ("subagentstop", EventKind::SubagentStop),
    ("subagentend", EventKind::SubagentStop),
    // Session end (OpenCode: session.deleted).
    ("sessionend", EventKind::SessionEnd),
    ("sessiondeleted", EventKind::SessionEnd),
    // pi's extension events (memhook's generated extension passes them).
    ("beforeagentstart", EventKind::UserPrompt),
    ("toolcall", EventKind::PreToolUse),
    ("toolresult", EventKind::PostToolUse),
    ("agentend", EventKind::Stop),
    ("sessionbeforecompact", EventKind::PreCompact),
    ("sessionshutdown", EventKind::SessionEnd),
    // Cline's hook files (TaskStart, TaskResume, TaskComplete, TaskCancel,
    // TaskError; PreToolUse, PostToolUse, UserPromptSubmit, PreCompact and
    // SessionShutdown are spelled above) and its payloads' `hookName`
    // (`agent_start`, `prompt_submit`, `tool_call`, `tool_result`,
    // `agent_end`).
    ("taskstart", EventKind::SessionStart),
    ("taskresume", EventKind::SessionStart),
    ("agentstart", EventKind::SessionStart),
    ("promptsubmit", EventKind::UserPrompt),
    ("taskcomplete", EventKind::Stop),
    ("taskcancel", EventKind::Stop),
    ("taskerror", EventKind::Stop),
];

/// Lowercase `name` and drop `-`, `_`, `.` (and anything else that is not
/// ASCII alphanumeric), so every spelling of a name meets in one table row.
pub fn fold_name(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

impl EventKind {
    /// Parse any spelling an agent uses: kebab, snake, Pascal, camel and the
    /// agents' own names (`BeforeTool`, `AfterAgent`, `tool.execute.after`,
    /// `beforeShellExecution`, …). Anything unknown is [`EventKind::Other`].
    pub fn parse(name: &str) -> EventKind {
        let folded = fold_name(name);
        EVENT_NAMES
            .iter()
            .find(|(n, _)| *n == folded)
            .map(|(_, k)| *k)
            .unwrap_or(EventKind::Other)
    }

    /// The canonical kebab-case name used in records.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::SessionStart => "session-start",
            EventKind::UserPrompt => "user-prompt",
            EventKind::PreToolUse => "pre-tool-use",
            EventKind::PostToolUse => "post-tool-use",
            EventKind::PostToolUseFailure => "post-tool-use-failure",
            EventKind::PreCompact => "pre-compact",
            EventKind::PostCompact => "post-compact",
            EventKind::Notification => "notification",
            EventKind::Stop => "stop",
            EventKind::SubagentStart => "subagent-start",
            EventKind::SubagentStop => "subagent-stop",
            EventKind::SessionEnd => "session-end",
            EventKind::Other => "other",
        }
    }

    /// Pre-tool, post-tool and post-tool-failure events: the ones the
    /// capture policy inspects.
    pub fn is_tool_event(self) -> bool {
        matches!(
            self,
            EventKind::PreToolUse | EventKind::PostToolUse | EventKind::PostToolUseFailure
        )
    }

    /// Post-tool events (success or failure): they carry a result.
    pub fn is_post_tool(self) -> bool {
        matches!(self, EventKind::PostToolUse | EventKind::PostToolUseFailure)
    }
}

/// Agent aliases (folded as in [`fold_name`]) → agent.
const AGENT_NAMES: &[(&str, Agent)] = &[
    ("claudecode", Agent::ClaudeCode),
    ("claude", Agent::ClaudeCode),
    ("codex", Agent::Codex),
    ("codexcli", Agent::Codex),
    ("opencode", Agent::OpenCode),
    ("geminicli", Agent::GeminiCli),
    ("gemini", Agent::GeminiCli),
    ("cursor", Agent::Cursor),
    ("qwencode", Agent::QwenCode),
    ("qwen", Agent::QwenCode),
    ("copilotcli", Agent::Copilot),
    ("copilot", Agent::Copilot),
    ("githubcopilotcli", Agent::Copilot),
    ("kilo", Agent::Kilo),
    ("kilocli", Agent::Kilo),
    ("kilocode", Agent::Kilo),
    ("droid", Agent::Droid),
    ("factorydroid", Agent::Droid),
    ("factory", Agent::Droid),
    ("openhands", Agent::OpenHands),
    ("openhandscli", Agent::OpenHands),
    ("pi", Agent::Pi),
    ("picodingagent", Agent::Pi),
    ("cline", Agent::Cline),
    ("clinecli", Agent::Cline),
];

impl Agent {
    /// Parse an agent name with its usual aliases (`claude-code`,
    /// `claude_code`, `claude`, `codex`, `opencode`, `open-code`,
    /// `gemini-cli`, `gemini`, `cursor`, `qwen-code`, `qwen`, `copilot`,
    /// `copilot-cli`, `kilo`, `kilocode`). Other names become [`Agent::Other`], sanitised.
    pub fn parse(name: &str) -> Agent {
        let folded = fold_name(name);
        if let Some((_, a)) = AGENT_NAMES.iter().find(|(n, _)| *n == folded) {
            return a.clone();
        }
        let clean: String = name
            .chars()
            .map(|c| c.to_ascii_lowercase())
            .filter(|c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
            })
            .take(MAX_NAME_CHARS)
            .collect();
        if clean.is_empty() {
            Agent::Other("generic".to_string())
        } else {
            Agent::Other(clean)
        }
    }

    /// The canonical name used in records.
    pub fn as_str(&self) -> &str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::OpenCode => "opencode",
            Agent::GeminiCli => "gemini-cli",
            Agent::Cursor => "cursor",
            Agent::QwenCode => "qwen-code",
            Agent::Copilot => "copilot",
            Agent::Kilo => "kilo",
            Agent::Droid => "droid",
            Agent::OpenHands => "openhands",
            Agent::Pi => "pi",
            Agent::Cline => "cline",
            Agent::Other(s) => s,
        }
    }
}

/// Keep `[A-Za-z0-9._-]` of a native event name, at most [`MAX_NAME_CHARS`].
pub fn sanitize_native_name(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .take(MAX_NAME_CHARS)
        .collect()
}

#[cfg(test)]
mod tests;
