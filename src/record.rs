//! The record: the bounded, redacted form of one kept event. Nothing else
//! about an event ever reaches the spool, a sink or the network.
//! The format is versioned and documented in `docs/record.md`.

use serde::{Deserialize, Serialize};

/// Version of the record format written by this build.
pub const RECORD_VERSION: u32 = 1;

/// The scope a record belongs to, plus the marker settings a server needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordScope {
    pub workspace: String,
    pub project: String,
    pub workspace_source: String,
    pub project_source: String,
    pub project_strategy: String,
    #[serde(default)]
    pub drop_subagent: bool,
    #[serde(default)]
    pub default_global: bool,
    #[serde(default)]
    pub briefing: bool,
    #[serde(default)]
    pub briefing_budget: usize,
}

/// Tool metadata for tool events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordTool {
    /// `file` | `search-list` | `shell` | `unknown`.
    pub family: String,
    /// The tool's name, only when it is one of the agent's documented tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A validated call id (1–128 of `[A-Za-z0-9_.-]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// `success` | `error` | `unknown` (post-tool events only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

/// The capture decision, as reported by `--check-capture` (never paths or patterns).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureMeta {
    pub version: u32,
    pub policy_state: String,
    pub tool_family: String,
    pub path_count: u32,
    pub disposition: String,
    pub extraction_state: String,
}

/// One kept event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Format version ([`RECORD_VERSION`]).
    pub v: u32,
    /// Idempotency key: 32 lowercase hex digits, minted once at enqueue.
    pub key: String,
    /// When the hook saw the event (Unix ms).
    pub occurred_ms: u64,
    /// Canonical agent name (`claude-code`, `codex`, …, or the sanitised given name).
    pub agent: String,
    /// Canonical event kind (`session-start`, `user-prompt`, `pre-tool-use`,
    /// `post-tool-use`, `post-tool-use-failure`, `pre-compact`, `post-compact`,
    /// `notification`, `stop`, `subagent-start`, `subagent-stop`,
    /// `session-end`, `other`).
    pub event: String,
    /// The event name as the agent spelled it (sanitised, bounded).
    pub native_event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    pub scope: RecordScope,
    /// The event came from a subagent.
    #[serde(default)]
    pub subagent: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<RecordTool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<CaptureMeta>,
    /// `keep` | `metadata-only`.
    pub disposition: String,
    /// One-line title (prompt's first line, tool family, …), at most 80 chars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Bounded, redacted excerpt (prompt, tool output, summary, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Files a kept post-tool event touched (never for excluded paths or pre-tool events).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}
