//! The record: the bounded, redacted form of one kept event. Nothing else
//! about an event ever reaches the spool, a sink or the network.
//! The format is versioned and documented in `docs/record.md`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::capture::{Decision, Disposition, ToolFamily};
use crate::event::{Agent, Event, EventKind};
use crate::redact;
use crate::scope::Scope;

/// Version of the record format written by this build.
pub const RECORD_VERSION: u32 = 1;
/// Characters of a record's key that cite it (the briefing's `[id]`, the MCP
/// activity tools' row ids; any 8 or more are accepted back).
pub const ACTIVITY_ID_CHARS: usize = 12;

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
    /// The command's exit status, where the agent gives one (post-tool
    /// events only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
}

/// The plan a todo/plan tool call set (DESIGN §4: items and their status).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordPlan {
    /// The items are the whole plan (a list tool: `TodoWrite`,
    /// `update_plan`, `todowrite`, `write_todos`); false: they change the
    /// items of the same id (`TaskCreate`, `TaskUpdate`).
    pub full: bool,
    pub items: Vec<PlanItem>,
}

/// One plan item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanItem {
    /// The agent's id for it (1–64 of `[A-Za-z0-9_.-]`), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// What is to be done (one line, cleaned, at most 300 bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `pending` | `in-progress` | `done` | `cancelled` | `deleted` |
    /// `unknown`; empty when an update left it unchanged.
    #[serde(default)]
    pub status: String,
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
    /// A kept shell tool result's command line (redacted, at most 1 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The plan a kept todo/plan tool result set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<RecordPlan>,
}

impl Record {
    /// Every free-text field of the record — title, body, command line and
    /// plan item texts — for a filter that must reach each of them (the
    /// excluded-content fingerprints, `crate::fingerprint`). Names, ids, paths and statuses are
    /// not free text. A new text field must be added here; a unit test
    /// fails when one is forgotten.
    pub fn texts_mut(&mut self) -> Vec<&mut String> {
        let mut out: Vec<&mut String> = Vec::new();
        out.extend(self.title.as_mut());
        out.extend(self.body.as_mut());
        out.extend(self.command.as_mut());
        if let Some(plan) = self.plan.as_mut() {
            out.extend(plan.items.iter_mut().filter_map(|i| i.text.as_mut()));
        }
        out
    }
}

// ---------------------------------------------------------------------------
// Caps. Every text is cleaned by `redact::clean` first, then capped.

/// A post-tool body (response or error excerpt), whole rendered text.
pub const MAX_TOOL_BODY_BYTES: usize = 2_000;
/// A prompt.
pub const MAX_PROMPT_BYTES: usize = 16 * 1024;
/// A notification's message.
pub const MAX_NOTIFICATION_BYTES: usize = 2_000;
/// A compaction summary.
pub const MAX_SUMMARY_BYTES: usize = 16 * 1024;
/// A title, in characters (one line).
pub const MAX_TITLE_CHARS: usize = 80;
/// A session id.
pub const MAX_SESSION_ID_BYTES: usize = 256;
/// A cwd or a file path.
pub const MAX_PATH_BYTES: usize = 4_096;
/// Files listed on one record (the capture policy's candidate bound).
pub const MAX_FILES: usize = 32;
/// A lifecycle detail (`startup`, `manual`, …) shown in titles, in characters.
pub const MAX_DETAIL_CHARS: usize = 32;
/// Raw text looked at before cleaning is at most this many times the final
/// cap (cut back to whitespace, so no secret is split by the cut). It keeps
/// redaction cost bounded on huge payloads; a bigger window could only add
/// text the final cap removes anyway, except where redaction shrinks text.
pub const WINDOW_FACTOR: usize = 4;
/// The truncation marker appended by [`cap`] (3 bytes).
pub const ELLIPSIS: char = '…';

/// A fresh idempotency key: 32 lowercase hex digits (128 random bits).
pub fn new_key() -> String {
    let mut b = [0u8; 16];
    if crate::entropy::fill(&mut b).is_err() {
        // No OS randomness (practically impossible): derive from time, pid and
        // a counter, hashed, so keys stay unique per process and call.
        use sha2::{Digest, Sha256};
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let seed = format!(
            "{t}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        b.copy_from_slice(&Sha256::digest(seed.as_bytes())[..16]);
    }
    crate::hex::encode(&b)
}

/// Whether `key` has the shape [`new_key`] mints: 32 lowercase hex digits.
pub fn valid_key(key: &str) -> bool {
    key.len() == 32 && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Cut `text` to at most `max_bytes` bytes on a UTF-8 character boundary.
/// When it is cut, the last 3 bytes of the budget hold [`ELLIPSIS`] (with a
/// budget under 3 bytes there is no room for it and the text is just cut).
pub fn cap(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let mark = ELLIPSIS.len_utf8();
    if max_bytes < mark {
        return text[..floor_boundary(text, max_bytes)].to_string();
    }
    let mut s = text[..floor_boundary(text, max_bytes - mark)].to_string();
    s.push(ELLIPSIS);
    s
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Bytes a secret can be made of (tokens, keys, base64, URL credentials).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_.~+/=:@%".contains(&b) || !b.is_ascii()
}

/// The raw text window [`clean_capped`] looks at: at most `limit` bytes, cut
/// back to the last byte no secret can contain (whitespace, quotes,
/// punctuation), so a secret straddling the cut is dropped whole rather
/// than leaving a prefix too short to be recognised.
fn window(text: &str, limit: usize) -> &str {
    if text.len() <= limit {
        return text;
    }
    let head = &text.as_bytes()[..floor_boundary(text, limit)];
    let keep = head
        .iter()
        .rposition(|&b| !is_token_byte(b))
        .map_or(0, |i| i + 1);
    &text[..keep]
}

/// Clean (private spans, controls, secrets) then cap: the one way any text
/// enters a record.
pub fn clean_capped(text: &str, max_bytes: usize) -> String {
    let raw = window(text, max_bytes.saturating_mul(WINDOW_FACTOR));
    cap(&redact::clean(raw), max_bytes)
}

/// The first non-blank line of already cleaned text, at most
/// [`MAX_TITLE_CHARS`] characters (79 + `…` when longer).
pub fn title_line(cleaned: &str) -> Option<String> {
    let line = cleaned.lines().map(str::trim).find(|l| !l.is_empty())?;
    let n = line.chars().count();
    if n <= MAX_TITLE_CHARS {
        return Some(line.to_string());
    }
    let mut s: String = line.chars().take(MAX_TITLE_CHARS - 1).collect();
    s.push(ELLIPSIS);
    Some(s)
}

// ---------------------------------------------------------------------------
// Outcome of a tool call, decided per agent (a table).

/// `success` | `error` | `unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Error,
    Unknown,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Error => "error",
            Outcome::Unknown => "unknown",
        }
    }
}

/// Where a string response states its exit code.
#[derive(Debug, Clone, Copy)]
enum ExitLine {
    /// No such line.
    None,
    /// The response's first line is `<prefix><code>` (Codex: `Exit code: 0`).
    First(&'static str),
    /// The last line starting with `<prefix>` (Gemini CLI's shell
    /// `llmContent`: `Exit Code: 1`).
    Last(&'static str),
    /// The last line `<start>…<marker><code><end>` (Copilot CLI's shell
    /// result: `<shellId: 1 completed with exit code 3>`).
    LastWithin {
        start: &'static str,
        marker: &'static str,
        end: &'static str,
    },
}

/// How one agent reports a tool's outcome after the generic signs (failure
/// event, error field, exit status fields) said nothing.
struct OutcomeRules {
    exit_line: ExitLine,
    /// Where a tool error's text states the exit code (Claude Code's
    /// `PostToolUseFailure` `error`: `Exit code 1` before the output).
    error_exit_line: ExitLine,
    /// Outcome without any sign, for shell tools and for the others.
    shell_default: Outcome,
    default: Outcome,
}

/// Per agent, from the real payloads in `fixtures/agents/`:
/// - Claude Code reports failures as `PostToolUseFailure`, so a plain
///   PostToolUse succeeded; a failing shell command's `error` starts with
///   `Exit code N`.
/// - Codex gives a failing command a normal PostToolUse whose response holds
///   only the output; `apply_patch` starts with `Exit code: N`.
/// - Gemini CLI puts `error` in `tool_response` for failed tools and
///   `Exit Code: N` in a failing shell command's `llmContent`; it prints no
///   exit line on success.
/// - OpenCode fires no `tool.execute.after` for a failed tool, but a failing
///   shell command does fire it and its exit status is not in the event.
/// - Qwen Code: as Claude Code, plus Gemini CLI's `Exit Code: N` line (in
///   the response, and in a failure's `error`).
/// - Copilot CLI fires `postToolUseFailure` for a failed tool; a shell
///   command's result ends `<shellId: N completed with exit code K>`, whatever
///   K is, on a normal PostToolUse.
/// - Factory Droid fires no failure event; an Execute result ends
///   `[Process exited with code N]`.
/// - Cursor and unknown agents: no documented sign.
fn outcome_rules(agent: &Agent) -> OutcomeRules {
    use Outcome::*;
    match agent {
        Agent::ClaudeCode => OutcomeRules {
            exit_line: ExitLine::None,
            error_exit_line: ExitLine::First("Exit code "),
            shell_default: Success,
            default: Success,
        },
        Agent::Codex => OutcomeRules {
            exit_line: ExitLine::First("Exit code: "),
            error_exit_line: ExitLine::None,
            shell_default: Unknown,
            default: Unknown,
        },
        // Qwen Code reports failures (a shell exit status other than 0
        // too) as PostToolUseFailure; its shell `llmContent` ends in
        // `Exit Code: N` as Gemini CLI's does.
        Agent::QwenCode => OutcomeRules {
            exit_line: ExitLine::Last("Exit Code: "),
            error_exit_line: ExitLine::Last("Exit Code: "),
            shell_default: Success,
            default: Success,
        },
        Agent::GeminiCli => OutcomeRules {
            exit_line: ExitLine::Last("Exit Code: "),
            error_exit_line: ExitLine::None,
            shell_default: Success,
            default: Success,
        },
        Agent::OpenCode | Agent::Kilo => OutcomeRules {
            exit_line: ExitLine::None,
            error_exit_line: ExitLine::None,
            shell_default: Unknown,
            default: Success,
        },
        Agent::Copilot => OutcomeRules {
            exit_line: ExitLine::LastWithin {
                start: "<shellId: ",
                marker: " with exit code ",
                end: ">",
            },
            error_exit_line: ExitLine::None,
            shell_default: Unknown,
            default: Success,
        },
        // Droid fires no failure event; its `tool_response` is text, an
        // Execute's ending `[Process exited with code N]`.
        Agent::Droid => OutcomeRules {
            exit_line: ExitLine::LastWithin {
                start: "[Process exited",
                marker: " with code ",
                end: "]",
            },
            error_exit_line: ExitLine::None,
            shell_default: Unknown,
            default: Unknown,
        },
        // OpenHands: a terminal result carries `exit_code` (read above);
        // no failure event.
        // pi: the extension sends `error` when pi marks a result isError.
        Agent::Pi => OutcomeRules {
            exit_line: ExitLine::None,
            error_exit_line: ExitLine::None,
            shell_default: Success,
            default: Success,
        },
        Agent::OpenHands => OutcomeRules {
            exit_line: ExitLine::None,
            error_exit_line: ExitLine::None,
            shell_default: Unknown,
            default: Unknown,
        },
        // Cline: no failure event, no exit status; each result item says
        // `success`, which is not read yet.
        Agent::Cline => OutcomeRules {
            exit_line: ExitLine::None,
            error_exit_line: ExitLine::None,
            shell_default: Unknown,
            default: Unknown,
        },
        Agent::Cursor | Agent::Other(_) => OutcomeRules {
            exit_line: ExitLine::None,
            error_exit_line: ExitLine::None,
            shell_default: Unknown,
            default: Unknown,
        },
    }
}

fn is_present(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::String(s) => !s.trim().is_empty(),
        Value::Bool(b) => *b,
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        Value::Number(_) => true,
    }
}

/// The exit status a post-tool event states: a number beside the response
/// (the schema's `exit_status`), an `exit` / `exit_code` / `exitCode` /
/// `metadata.exit` member of the response, or the agent's exit line in
/// the response text or in the tool error's (`OutcomeRules`). `None` where the agent gives none
/// (Codex's failing shell command: only its output).
pub fn exit_status(event: &Event) -> Option<i64> {
    if let Some(code) = event.exit_status {
        return Some(code);
    }
    let resp = event.tool_response.as_ref();
    if let Some(Value::Object(o)) = resp {
        let exit = ["exit", "exit_code", "exitCode"]
            .iter()
            .find_map(|k| o.get(*k))
            .or_else(|| o.get("metadata").and_then(|m| m.get("exit")))
            .and_then(Value::as_i64);
        if exit.is_some() {
            return exit;
        }
    }
    let text = match resp {
        Some(Value::String(s)) => Some(s.as_str()),
        Some(Value::Object(o)) => o.get("llmContent").and_then(Value::as_str),
        _ => None,
    };
    let rules = outcome_rules(&event.agent);
    text.and_then(|t| exit_code(t, rules.exit_line))
        .or_else(|| {
            let err = event.tool_error.as_ref()?.as_str()?;
            exit_code(err, rules.error_exit_line)
        })
}

/// Decide the outcome of a post-tool event.
pub fn outcome(event: &Event, family: ToolFamily) -> Outcome {
    if event.kind == EventKind::PostToolUseFailure {
        return Outcome::Error;
    }
    if event.tool_error.as_ref().is_some_and(is_present) {
        return Outcome::Error;
    }
    if let Some(Value::Object(o)) = event.tool_response.as_ref() {
        if o.get("error").is_some_and(is_present)
            || ["interrupted", "is_error", "isError"]
                .iter()
                .any(|k| o.get(*k) == Some(&Value::Bool(true)))
            || o.get("success") == Some(&Value::Bool(false))
        {
            return Outcome::Error;
        }
    }
    if let Some(code) = exit_status(event) {
        return if code == 0 {
            Outcome::Success
        } else {
            Outcome::Error
        };
    }
    let rules = outcome_rules(&event.agent);
    if family == ToolFamily::Shell {
        rules.shell_default
    } else {
        rules.default
    }
}

fn exit_code(text: &str, how: ExitLine) -> Option<i64> {
    let parse = |line: &str, prefix: &str| line.strip_prefix(prefix)?.trim().parse::<i64>().ok();
    match how {
        ExitLine::None => None,
        ExitLine::First(p) => parse(text.lines().next()?, p),
        ExitLine::Last(p) => text.lines().rev().find_map(|l| parse(l, p)),
        ExitLine::LastWithin { start, marker, end } => text.lines().rev().find_map(|l| {
            let inner = l.trim_end().strip_prefix(start)?.strip_suffix(end)?;
            inner.rsplit_once(marker)?.1.trim().parse::<i64>().ok()
        }),
    }
}

// ---------------------------------------------------------------------------
// Rendering a tool response or error as text.

/// Keys that hold a tool's text output, in the order they are shown.
const TEXT_KEYS: &[&str] = &[
    "stdout",
    "stderr",
    "llmContent",
    "output",
    "content",
    "text",
    "result",
    "message",
    "file",
];
/// Keys never rendered: whole-file copies and diffs that repeat the edit.
const SKIP_KEYS: &[&str] = &[
    "originalFile",
    "original_file",
    "structuredPatch",
    "returnDisplay",
];
/// Deepest nesting rendered.
const MAX_RENDER_DEPTH: usize = 6;

/// Text sink that stops growing once `limit` bytes are reached.
struct Sink {
    out: String,
    limit: usize,
}

impl Sink {
    fn full(&self) -> bool {
        self.out.len() >= self.limit
    }
    fn push(&mut self, s: &str) {
        if self.full() {
            return;
        }
        // Take a little more than the limit (the window cut trims it).
        let room = self.limit + 1 - self.out.len();
        self.out.push_str(&s[..floor_boundary(s, room)]);
    }
    fn line(&mut self) {
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.push("\n");
        }
    }
}

fn render(v: &Value, sink: &mut Sink, depth: usize) {
    if sink.full() || depth > MAX_RENDER_DEPTH {
        return;
    }
    match v {
        Value::Null => {}
        Value::String(s) => sink.push(s),
        Value::Bool(_) | Value::Number(_) => sink.push(&v.to_string()),
        Value::Array(items) => {
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    sink.line();
                }
                render(it, sink, depth + 1);
            }
        }
        Value::Object(o) => {
            let texts: Vec<(&str, &Value)> = TEXT_KEYS
                .iter()
                .filter_map(|k| o.get(*k).filter(|v| is_present(v)).map(|v| (*k, v)))
                .collect();
            if !texts.is_empty() {
                for (i, (k, val)) in texts.into_iter().enumerate() {
                    if i > 0 {
                        sink.line();
                    }
                    if k == "stderr" {
                        sink.push("stderr: ");
                    }
                    render(val, sink, depth + 1);
                }
                return;
            }
            let fields = o
                .iter()
                .filter(|(k, val)| !SKIP_KEYS.contains(&k.as_str()) && is_present(val));
            for (i, (k, val)) in fields.enumerate() {
                if i > 0 {
                    sink.line();
                }
                sink.push(k);
                sink.push(": ");
                render(val, sink, depth + 1);
            }
        }
    }
}

/// The label a post-tool body puts before a tool's error (`error: Exit
/// code 1`); readers of the body that show what the tool said leave it out.
pub const TOOL_ERROR_LABEL: &str = "error: ";

/// The post-tool body before cleaning: the error (if any), then the response.
fn tool_body_raw(event: &Event, limit: usize) -> String {
    let mut sink = Sink {
        out: String::new(),
        limit,
    };
    if let Some(err) = event.tool_error.as_ref().filter(|e| is_present(e)) {
        sink.push(TOOL_ERROR_LABEL);
        render(err, &mut sink, 0);
    }
    if let Some(resp) = event.tool_response.as_ref().filter(|r| is_present(r)) {
        if !sink.out.is_empty() {
            sink.line();
            sink.push("---\n");
        }
        render(resp, &mut sink, 0);
    }
    sink.out
}

// ---------------------------------------------------------------------------
// Building a record.

/// A lifecycle detail reduced to `[A-Za-z0-9._-]`, bounded.
fn detail(event: &Event) -> Option<String> {
    let d: String = event
        .detail
        .as_deref()?
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .take(MAX_DETAIL_CHARS)
        .collect();
    (!d.is_empty()).then_some(d)
}

/// The record's scope from a resolved [`Scope`].
pub fn record_scope(scope: &Scope) -> RecordScope {
    RecordScope {
        workspace: scope.workspace.clone(),
        project: scope.project.clone(),
        workspace_source: scope.workspace_source.as_str().to_string(),
        project_source: scope.project_source.as_str().to_string(),
        project_strategy: scope.strategy.as_str().to_string(),
        drop_subagent: scope.settings.drop_subagent_captures,
        default_global: scope.settings.default_global,
        briefing: scope.settings.inject_on_session_start,
        briefing_budget: scope.settings.max_chars,
    }
}

/// The capture decision as a record carries it.
pub fn capture_meta(d: &Decision) -> CaptureMeta {
    CaptureMeta {
        version: crate::capture::CAPTURE_PROTOCOL_VERSION,
        policy_state: d.policy_state.as_str().to_string(),
        tool_family: d.tool_family.as_str().to_string(),
        path_count: d.path_count,
        disposition: d.disposition.as_str().to_string(),
        extraction_state: d.extraction_state.as_str().to_string(),
    }
}

/// Build the bounded, redacted record of one kept event (DESIGN §4).
///
/// `files` are the candidate paths of a kept post-tool event (the caller
/// passes none for other events). `decision` must not be a drop: a dropped
/// event has no record; if one is passed anyway it is built metadata-only.
pub fn build(
    event: &Event,
    scope: &Scope,
    decision: &Decision,
    files: Vec<String>,
    key: String,
    now_ms: u64,
) -> Record {
    let metadata_only = decision.disposition != Disposition::Keep;
    let tool_event = event.kind.is_tool_event();
    let family = decision.tool_family;
    let call_id = event
        .tool_call_id
        .as_deref()
        .filter(|id| crate::event::valid_call_id(id))
        .map(str::to_string);

    let mut rec = Record {
        v: RECORD_VERSION,
        key,
        occurred_ms: now_ms,
        agent: event.agent.as_str().to_string(),
        event: event.kind.as_str().to_string(),
        native_event: clean_capped(&event.native_name, 64),
        session_id: event
            .session_id
            .as_deref()
            .map(|s| clean_capped(s, MAX_SESSION_ID_BYTES))
            .filter(|s| !s.is_empty()),
        cwd: event
            .cwd
            .as_deref()
            .map(|s| clean_capped(s, MAX_PATH_BYTES))
            .filter(|s| !s.is_empty()),
        scope: record_scope(scope),
        subagent: event.subagent,
        tool: None,
        capture: None,
        disposition: if metadata_only {
            Disposition::MetadataOnly.as_str().to_string()
        } else {
            Disposition::Keep.as_str().to_string()
        },
        title: None,
        body: None,
        files: Vec::new(),
        command: None,
        plan: None,
    };
    if tool_event || metadata_only {
        rec.capture = Some(capture_meta(decision));
    }
    if metadata_only {
        if tool_event {
            rec.tool = Some(RecordTool {
                family: family.as_str().to_string(),
                name: None,
                call_id,
                outcome: None,
                exit_code: None,
            });
        }
        return rec;
    }

    match event.kind {
        EventKind::PreToolUse | EventKind::PostToolUse | EventKind::PostToolUseFailure => {
            let name = event
                .tool_name
                .as_deref()
                .filter(|n| crate::capture::classify_tool(&event.agent, n).1)
                .map(|n| clean_capped(n, 64))
                .filter(|n| !n.is_empty());
            let label = match &name {
                Some(n) => format!("{n} ({})", family.as_str()),
                None => format!("{} tool", family.as_str()),
            };
            let mut tool = RecordTool {
                family: family.as_str().to_string(),
                name,
                call_id,
                outcome: None,
                exit_code: None,
            };
            if event.kind == EventKind::PreToolUse {
                rec.title = Some(label);
            } else {
                let oc = outcome(event, family);
                tool.outcome = Some(oc.as_str().to_string());
                tool.exit_code = exit_status(event);
                rec.command = words::command_line(event);
                if scope.capture.keeps_assistant_text() {
                    rec.plan = words::plan(event, &scope.capture);
                }
                rec.files = bounded_files(files);
                rec.title = tool_title(
                    &label,
                    tool.name.as_deref(),
                    oc,
                    tool.exit_code,
                    rec.command.as_deref(),
                    &rec.files,
                    rec.cwd.as_deref(),
                );
                let raw = tool_body_raw(event, MAX_TOOL_BODY_BYTES * WINDOW_FACTOR);
                // Cleaned first (escapes must not hide a path), then the lines
                // naming an excluded path go (DESIGN §3), then the cap.
                let cleaned = redact::clean(window(&raw, MAX_TOOL_BODY_BYTES * WINDOW_FACTOR));
                rec.body = crate::capture::filter_output(&scope.capture, event, family, &cleaned)
                    .map(|kept| cap(&kept, MAX_TOOL_BODY_BYTES))
                    .filter(|b| !b.is_empty());
            }
            rec.tool = Some(tool);
        }
        EventKind::UserPrompt => text_event(&mut rec, event.prompt.as_deref(), MAX_PROMPT_BYTES),
        EventKind::Notification => {
            text_event(&mut rec, event.message.as_deref(), MAX_NOTIFICATION_BYTES)
        }
        EventKind::PostCompact => {
            text_event(&mut rec, event.summary.as_deref(), MAX_SUMMARY_BYTES);
            if rec.title.is_none() {
                rec.title = Some(lifecycle_title("compaction done", event));
            }
        }
        EventKind::SessionStart => rec.title = Some(lifecycle_title("session start", event)),
        EventKind::SessionEnd => rec.title = Some(lifecycle_title("session end", event)),
        EventKind::PreCompact => rec.title = Some(lifecycle_title("compaction", event)),
        // The agent's final message (a main session's only: a subagent's
        // never reaches the Event), unless the project turned it off.
        EventKind::Stop => {
            rec.title = Some(lifecycle_title("stop", event));
            if scope.capture.keeps_assistant_text() {
                rec.body = words::final_message(event, &scope.capture);
            }
        }
        EventKind::SubagentStart => rec.title = Some(lifecycle_title("subagent start", event)),
        EventKind::SubagentStop => rec.title = Some(lifecycle_title("subagent stop", event)),
        EventKind::Other => {}
    }
    rec
}

/// The title of a tool result, saying what happened (docs/record.md):
/// `Bash: pytest -q → exit 1` for a shell command, `Edit src/dates.py` for
/// a file tool (paths relative to the cwd; `+N more` when it touched more),
/// `WebFetch (web) success` otherwise. Built from the record's own fields,
/// which are already cleaned and redacted; at most [`MAX_TITLE_CHARS`]
/// characters, the command cut (with `…`) before the outcome is.
fn tool_title(
    label: &str,
    name: Option<&str>,
    oc: Outcome,
    exit_code: Option<i64>,
    command: Option<&str>,
    files: &[String],
    cwd: Option<&str>,
) -> Option<String> {
    let outcome = match (exit_code, oc) {
        (Some(code), _) => Some(format!("exit {code}")),
        (None, Outcome::Error) => Some("error".to_string()),
        (None, Outcome::Success) | (None, Outcome::Unknown) => None,
    };
    let suffix = outcome.map(|o| format!(" → {o}")).unwrap_or_default();
    let fit = |head: &str, subject: &str| -> String {
        let room = MAX_TITLE_CHARS.saturating_sub(head.chars().count() + suffix.chars().count());
        let subject = one_line(subject);
        let subject = if subject.chars().count() <= room {
            subject
        } else {
            let mut s: String = subject.chars().take(room.saturating_sub(1)).collect();
            s.push(ELLIPSIS);
            s
        };
        format!("{head}{subject}{suffix}")
    };
    let name = name.unwrap_or(label);
    if let Some(cmd) = command.filter(|c| !c.trim().is_empty()) {
        return title_line(&fit(&format!("{name}: "), cmd));
    }
    if let Some(first) = files.first() {
        let more = match files.len() - 1 {
            0 => String::new(),
            n => format!(" +{n} more"),
        };
        let rel = relative_to(first, cwd);
        let suffix_more = format!("{more}{suffix}");
        let room =
            MAX_TITLE_CHARS.saturating_sub(name.chars().count() + 1 + suffix_more.chars().count());
        let rel = if rel.chars().count() <= room {
            rel.to_string()
        } else {
            // Keep the end of a long path: the file's name says most.
            let skip = rel.chars().count() - room.saturating_sub(1);
            let mut s = String::from(ELLIPSIS);
            s.extend(rel.chars().skip(skip));
            s
        };
        return title_line(&format!("{name} {rel}{suffix_more}"));
    }
    let oc = match (exit_code, oc) {
        (Some(code), _) => format!("exit {code}"),
        (None, oc) => oc.as_str().to_string(),
    };
    title_line(&format!("{label} {oc}"))
}

/// A command's lines joined by ` ⏎ ` and runs of blanks folded, so a
/// multi-line command reads on one title line.
fn one_line(text: &str) -> String {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ⏎ ")
}

/// `path` relative to `cwd` when it lies under it, else as it is.
pub fn relative_to<'a>(path: &'a str, cwd: Option<&str>) -> &'a str {
    let Some(cwd) = cwd
        .map(|c| c.trim_end_matches('/'))
        .filter(|c| !c.is_empty())
    else {
        return path;
    };
    match path.strip_prefix(cwd) {
        Some(rest) if rest.starts_with('/') && rest.len() > 1 => &rest[1..],
        _ => path,
    }
}

fn lifecycle_title(what: &str, event: &Event) -> String {
    match detail(event) {
        Some(d) => format!("{what}: {d}"),
        None => what.to_string(),
    }
}

/// Body and title from one text field.
fn text_event(rec: &mut Record, text: Option<&str>, max: usize) {
    let Some(text) = text else { return };
    let body = clean_capped(text, max);
    rec.title = title_line(&body);
    rec.body = Some(body).filter(|b| !b.trim().is_empty());
}

fn bounded_files(files: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in files {
        if out.len() >= MAX_FILES {
            break;
        }
        let f = clean_capped(&f, MAX_PATH_BYTES);
        if !f.is_empty() && !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

pub mod check;
pub mod words;

/// Test-only builders shared by the unit tests of every module that handles
/// records: one plain record, changed with struct update syntax. Other
/// crates' tests reach it through the `test-support` feature.
#[cfg(any(test, feature = "test-support"))]
pub mod sample {
    use super::*;

    /// The scope `workspace/project`, both from `source`, basename strategy,
    /// no marker settings.
    pub fn scope(workspace: &str, project: &str, source: &str) -> RecordScope {
        RecordScope {
            workspace: workspace.into(),
            project: project.into(),
            workspace_source: source.into(),
            project_source: source.into(),
            project_strategy: "basename".into(),
            drop_subagent: false,
            default_global: false,
            briefing: false,
            briefing_budget: 4000,
        }
    }

    /// A record of `acme/api` (from a marker, cwd `/w/api`): `event` of
    /// `session` at `ms`, otherwise [`record`]'s.
    pub fn in_acme_api(key: &str, ms: u64, session: &str, event: &str) -> Record {
        Record {
            occurred_ms: ms,
            event: event.into(),
            native_event: event.into(),
            session_id: Some(session.into()),
            cwd: Some("/w/api".into()),
            scope: scope("acme", "api", "marker"),
            ..record(key)
        }
    }

    /// A kept claude-code `stop` record of session `s1` in `default/p`.
    pub fn record(key: &str) -> Record {
        Record {
            v: RECORD_VERSION,
            key: key.to_string(),
            occurred_ms: 1_700_000_000_000,
            agent: "claude-code".into(),
            event: "stop".into(),
            native_event: "Stop".into(),
            session_id: Some("s1".into()),
            cwd: Some("/tmp".into()),
            scope: scope("default", "p", "fallback"),
            subagent: false,
            tool: None,
            capture: None,
            disposition: "keep".into(),
            title: None,
            body: None,
            files: vec![],
            command: None,
            plan: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{ExtractionState, PolicyState};
    use crate::scope::{CaptureConfig, Settings, Source, Strategy};
    use serde_json::json;

    const GH: &str = "ghp_R7bE3kQ9xZ2mN4pL6vT8wY1cA5sD0fG3hJ2k";

    fn scope() -> Scope {
        Scope {
            workspace: "acme".into(),
            project: "api".into(),
            workspace_source: Source::Marker,
            project_source: Source::RepoRoot,
            marker: None,
            strategy: Strategy::RepoRoot,
            settings: Settings {
                drop_subagent_captures: true,
                default_global: false,
                inject_on_session_start: true,
                max_chars: 6000,
                enabled: true,
                file_history: true,
            },
            capture: CaptureConfig::Absent,
            warnings: vec![],
        }
    }

    fn fixture(rel: &str) -> Value {
        let p = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("fixtures/agents")
            .join(rel);
        serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()
    }

    fn ev(agent: &str, payload: Value) -> Event {
        crate::event::normalize(agent, None, &payload)
    }

    fn keep(event: &Event) -> Record {
        let d = crate::capture::decide(&CaptureConfig::Absent, None, event);
        build(event, &scope(), &d, vec![], "k".repeat(32), 7)
    }

    fn json_of(r: &Record) -> String {
        serde_json::to_string(r).unwrap()
    }

    #[test]
    fn keys_are_32_lowercase_hex_and_fresh() {
        let a = new_key();
        assert!(valid_key(&a), "{a}");
        assert_ne!(a, new_key());
        for bad in [
            "",
            "../../x",
            &"A".repeat(32),
            &"a".repeat(31),
            &"a".repeat(33),
        ] {
            assert!(!valid_key(bad), "{bad}");
        }
    }

    #[test]
    fn cap_edges() {
        assert_eq!(cap("abcdef", 6), "abcdef");
        assert_eq!(cap("abcdefg", 6), "abc…");
        assert_eq!(cap("abcdefg", 6).len(), 6);
        // 'é' is 2 bytes: never split.
        let s = "ééééé"; // 10 bytes
        assert_eq!(cap(s, 10), s);
        assert_eq!(cap(s, 9), "ééé…");
        assert_eq!(cap(s, 8), "éé…");
        assert_eq!(cap("abc", 2), "ab");
        assert_eq!(cap("é", 1), "");
        assert_eq!(cap("", 0), "");
    }

    /// For each (cap, how to put text in an event): exactly at the cap the
    /// text is kept whole; one byte over it is cut to the cap with `…`.
    #[test]
    fn every_text_cap_at_its_edge() {
        type Make = fn(String) -> Event;
        let cases: [(usize, Make); 3] = [
            (MAX_PROMPT_BYTES, |t| {
                ev(
                    "claude-code",
                    json!({"hook_event_name":"UserPromptSubmit","prompt":t}),
                )
            }),
            (MAX_NOTIFICATION_BYTES, |t| {
                ev(
                    "claude-code",
                    json!({"hook_event_name":"Notification","message":t}),
                )
            }),
            (MAX_SUMMARY_BYTES, |t| {
                ev(
                    "claude-code",
                    json!({"hook_event_name":"PostCompact","compact_summary":t}),
                )
            }),
        ];
        for (max, make) in cases {
            let exact = format!("w{}", "x".repeat(max - 1));
            let r = keep(&make(exact.clone()));
            assert_eq!(r.body.as_deref(), Some(exact.as_str()), "cap {max}");
            let over = format!("w{}", "x".repeat(max));
            let body = keep(&make(over)).body.unwrap();
            assert_eq!(body.len(), max, "cap {max}");
            assert!(body.ends_with(ELLIPSIS));
        }
    }

    #[test]
    fn tool_body_cap_at_its_edge() {
        let post = |out: String| {
            ev(
                "codex",
                json!({"hook_event_name":"PostToolUse","tool_name":"Bash",
                       "tool_input":{"command":"x"},"tool_response":out}),
            )
        };
        let exact = "y".repeat(MAX_TOOL_BODY_BYTES);
        assert_eq!(keep(&post(exact.clone())).body.unwrap(), exact);
        let body = keep(&post("y".repeat(MAX_TOOL_BODY_BYTES + 1)))
            .body
            .unwrap();
        assert_eq!(body.len(), MAX_TOOL_BODY_BYTES);
        assert!(body.ends_with(ELLIPSIS));
    }

    #[test]
    fn id_path_and_detail_caps_at_their_edges() {
        let mk = |sid: String, cwd: String, source: String| {
            ev(
                "claude-code",
                json!({"hook_event_name":"SessionStart","session_id":sid,"cwd":cwd,"source":source}),
            )
        };
        let sid = "s".repeat(MAX_SESSION_ID_BYTES);
        let cwd = format!("/{}", "d".repeat(MAX_PATH_BYTES - 1));
        let det = "x".repeat(MAX_DETAIL_CHARS);
        let r = keep(&mk(sid.clone(), cwd.clone(), det.clone()));
        assert_eq!(r.session_id.as_deref(), Some(sid.as_str()));
        assert_eq!(r.cwd.as_deref(), Some(cwd.as_str()));
        assert_eq!(r.title, Some(format!("session start: {det}")));
        let r = keep(&mk(sid.clone() + "s", cwd.clone() + "d", det.clone() + "x"));
        assert_eq!(r.session_id.unwrap().len(), MAX_SESSION_ID_BYTES);
        // A longer cwd names no directory: intake ignores it (the hook then
        // uses its own), so the record never holds one past the bound.
        assert_eq!(crate::event::MAX_CWD_BYTES, MAX_PATH_BYTES);
        assert_eq!(r.cwd, None);
        assert_eq!(r.title, Some(format!("session start: {det}")));
    }

    #[test]
    fn file_path_cap_and_count_at_their_edges() {
        let post = ev(
            "claude-code",
            fixture("claude-code/2.1.328/PostToolUse-Read.json"),
        );
        let d = crate::capture::decide(&CaptureConfig::Absent, None, &post);
        let at = format!("/{}", "f".repeat(MAX_PATH_BYTES - 1));
        let r = build(
            &post,
            &scope(),
            &d,
            vec![at.clone(), at.clone() + "g"],
            new_key(),
            1,
        );
        assert_eq!(r.files[0], at);
        assert_eq!(r.files[1].len(), MAX_PATH_BYTES);
        assert!(r.files[1].ends_with(ELLIPSIS));
        let exact: Vec<String> = (0..MAX_FILES).map(|i| format!("/f{i}")).collect();
        assert_eq!(
            build(&post, &scope(), &d, exact, new_key(), 1).files.len(),
            MAX_FILES
        );
    }

    #[test]
    fn window_factor_edge() {
        let limit = MAX_TOOL_BODY_BYTES * WINDOW_FACTOR;
        let text = format!("{} {}", "a".repeat(limit - 2), "bb");
        assert_eq!(text.len(), limit + 1);
        assert_eq!(window(&text[..limit], limit), &text[..limit]);
        assert_eq!(window(&text, limit), &text[..limit - 1]);
    }

    #[test]
    fn title_edge() {
        let at = "t".repeat(MAX_TITLE_CHARS);
        assert_eq!(title_line(&at).unwrap(), at);
        let over = "é".repeat(MAX_TITLE_CHARS + 1);
        let t = title_line(&over).unwrap();
        assert_eq!(t.chars().count(), MAX_TITLE_CHARS);
        assert!(t.ends_with(ELLIPSIS));
        assert_eq!(
            title_line("\n  \n  second line \nthird").unwrap(),
            "second line"
        );
        assert_eq!(title_line(" \n "), None);
    }

    #[test]
    fn redaction_happens_before_the_cap() {
        // The secret starts 10 bytes before the cap: cut first, its prefix
        // would escape; redacted first, only part of the marker is cut.
        let text = format!("{} {GH} tail", "a".repeat(MAX_PROMPT_BYTES - 11));
        let e = ev(
            "claude-code",
            json!({"hook_event_name":"UserPromptSubmit","prompt":text}),
        );
        let body = keep(&e).body.unwrap();
        assert!(body.len() <= MAX_PROMPT_BYTES);
        assert!(!body.contains("ghp_"), "secret prefix escaped the cap");
        assert!(body.ends_with(ELLIPSIS));
    }

    #[test]
    fn the_window_cut_never_leaves_a_secret_prefix() {
        let limit = MAX_NOTIFICATION_BYTES * WINDOW_FACTOR;
        // Put a private key block that redaction shrinks, then a token that
        // straddles the window edge, so text past the window could move
        // under the cap once the block is redacted.
        let block = format!(
            "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
            "Q".repeat(limit - 200)
        );
        let pad = limit - block.len() - 10;
        let text = format!("{block}{} {GH}", " ".repeat(pad));
        let e = ev(
            "claude-code",
            json!({"hook_event_name":"Notification","message":text}),
        );
        let body = keep(&e).body.unwrap_or_default();
        assert!(!body.contains("ghp_"), "{body}");
        assert!(!body.contains("QQQQ"));
    }

    #[test]
    fn window_cuts_before_a_straddling_token() {
        let text = format!("{{\"a\":\"{}\",\"b\":\"{GH}\"}}", "x".repeat(100));
        let cut_in_token = text.find("ghp_").unwrap() + 10;
        let w = window(&text, cut_in_token);
        assert!(!w.contains("ghp_"), "{w}");
        assert!(w.ends_with('"') && w.contains("xxx"), "{w}");
        assert_eq!(window(&text, text.len()), text);
        assert_eq!(window("é", 1), "");
    }

    #[test]
    fn pre_tool_use_keeps_family_name_and_call_id_only() {
        let p = fixture("claude-code/2.1.328/PreToolUse-Bash.json");
        let e = ev("claude-code", p.clone());
        let r = keep(&e);
        let tool = r.tool.clone().unwrap();
        assert_eq!(tool.family, "shell");
        assert_eq!(tool.name.as_deref(), Some("Bash"));
        assert_eq!(tool.call_id.as_deref(), p["tool_use_id"].as_str());
        assert_eq!(tool.outcome, None);
        assert_eq!(r.body, None);
        assert!(r.files.is_empty());
        let cmd = p["tool_input"]["command"].as_str().unwrap();
        let desc = p["tool_input"]["description"].as_str().unwrap();
        let out = json_of(&r);
        assert!(!out.contains(cmd) && !out.contains(desc), "{out}");
        assert_eq!(r.title.as_deref(), Some("Bash (shell)"));
    }

    #[test]
    fn undocumented_tool_names_are_not_kept() {
        let e = ev(
            "claude-code",
            json!({"hook_event_name":"PreToolUse","tool_name":"mcp__corp__leak_AKIA",
                   "tool_input":{"q":"x"},"tool_use_id":"toolu_1"}),
        );
        let r = keep(&e);
        assert_eq!(r.tool.as_ref().unwrap().name, None);
        assert!(!json_of(&r).contains("mcp__corp"));
    }

    #[test]
    fn outcomes_from_real_payloads() {
        let cases = [
            (
                "claude-code",
                "claude-code/2.1.328/PostToolUse-Bash.json",
                "success",
            ),
            (
                "claude-code",
                "claude-code/2.1.328/PostToolUseFailure-Bash-exit1.json",
                "error",
            ),
            (
                "claude-code",
                "claude-code/2.1.328/PostToolUseFailure-Read-missing-file.json",
                "error",
            ),
            (
                "codex",
                "codex/0.171.0/PostToolUse-apply_patch.json",
                "success",
            ),
            ("codex", "codex/0.171.0/PostToolUse-Bash.json", "unknown"),
            (
                "codex",
                "codex/0.171.0/PostToolUse-Bash-exit1.json",
                "unknown",
            ),
            (
                "gemini-cli",
                "gemini-cli/0.61.0/AfterTool-read_file.json",
                "success",
            ),
            (
                "gemini-cli",
                "gemini-cli/0.61.0/AfterTool-read_file-missing-file.json",
                "error",
            ),
            (
                "gemini-cli",
                "gemini-cli/0.61.0/AfterTool-run_shell_command-exit1.json",
                "error",
            ),
            (
                "gemini-cli",
                "gemini-cli/0.61.0/AfterTool-run_shell_command.json",
                "success",
            ),
            (
                "opencode",
                "opencode/1.18.33/tool.execute.after-read.json",
                "success",
            ),
            (
                "opencode",
                "opencode/1.18.33/tool.execute.after-bash-2.json",
                "error",
            ),
            (
                "opencode",
                "opencode/1.18.33/tool.execute.after-bash.json",
                "success",
            ),
            (
                "copilot",
                "copilot/1.0.102/PostToolUse-Bash.json",
                "success",
            ),
            (
                "copilot",
                "copilot/1.0.102/PostToolUse-Bash-exit3.json",
                "error",
            ),
            (
                "copilot",
                "copilot/1.0.102/PostToolUse-Write.json",
                "success",
            ),
            (
                "copilot",
                "copilot/1.0.102/PostToolUseFailure-Edit-no-match.json",
                "error",
            ),
        ];
        for (agent, path, want) in cases {
            let e = ev(agent, fixture(path));
            assert!(e.kind.is_post_tool(), "{path}");
            let r = keep(&e);
            assert_eq!(r.tool.unwrap().outcome.as_deref(), Some(want), "{path}");
        }
    }

    /// Qwen Code: a plain PostToolUse succeeded, its failures (a missing
    /// file, a shell exit status 3) are PostToolUseFailure events.
    #[test]
    fn qwen_code_outcomes_from_real_payloads() {
        for (path, want) in [
            ("PostToolUse-run_shell_command.json", "success"),
            ("PostToolUse-read_file.json", "success"),
            ("PostToolUse-write_file.json", "success"),
            ("PostToolUseFailure-run_shell_command-exit3.json", "error"),
            ("PostToolUseFailure-read_file-missing-file.json", "error"),
        ] {
            let r = keep(&ev(
                "qwen-code",
                fixture(&format!("qwen-code/0.24.4/{path}")),
            ));
            assert_eq!(r.tool.unwrap().outcome.as_deref(), Some(want), "{path}");
        }
        let r = keep(&ev(
            "qwen-code",
            fixture("qwen-code/0.24.4/PostToolUse-run_shell_command.json"),
        ));
        assert!(r.body.unwrap().contains("CAP-OUT"));
    }

    /// The exit status a tool error states: Claude Code's `Exit code 1`
    /// first, Qwen Code's `Exit Code: 3` after the output; a failure whose
    /// error states none has none.
    #[test]
    fn a_tool_errors_exit_status_is_kept() {
        for (agent, path, want) in [
            (
                "claude-code",
                "claude-code/2.1.328/PostToolUseFailure-Bash-exit1.json",
                Some(1),
            ),
            (
                "claude-code",
                "claude-code/2.1.328/PostToolUseFailure-Read-missing-file.json",
                None,
            ),
            (
                "qwen-code",
                "qwen-code/0.24.4/PostToolUseFailure-run_shell_command-exit3.json",
                Some(3),
            ),
            (
                "qwen-code",
                "qwen-code/0.24.4/PostToolUseFailure-read_file-missing-file.json",
                None,
            ),
            (
                "copilot",
                "copilot/1.0.102/PostToolUseFailure-Edit-no-match.json",
                None,
            ),
        ] {
            let r = keep(&ev(agent, fixture(path)));
            assert_eq!(r.tool.unwrap().exit_code, want, "{path}");
        }
        // Only where the agent puts it: an output line `Exit code 9` of
        // another agent's error is not read as the status.
        let mut other = fixture("claude-code/2.1.328/PostToolUseFailure-Bash-exit1.json");
        other["error"] = json!("Exit code 9\nfailing");
        let r = keep(&ev("cursor", other));
        assert_eq!(r.body.as_deref(), Some("error: Exit code 9\nfailing"));
        assert_eq!(r.tool.unwrap().exit_code, None);
    }

    #[test]
    fn post_tool_body_is_the_output_or_error() {
        let r = keep(&ev(
            "claude-code",
            fixture("claude-code/2.1.328/PostToolUseFailure-Bash-exit1.json"),
        ));
        assert_eq!(r.body.as_deref(), Some("error: Exit code 1\nfailing"));
        // The command line is kept apart (DESIGN §4), never in the body.
        assert_eq!(r.command.as_deref(), Some("echo failing >&2; exit 1"));
        let r = keep(&ev(
            "claude-code",
            fixture("claude-code/2.1.328/PostToolUse-Read.json"),
        ));
        assert!(r.body.unwrap().starts_with("def greet(name):"));
        let r = keep(&ev(
            "claude-code",
            fixture("claude-code/2.1.328/PostToolUse-Edit.json"),
        ));
        let body = r.body.unwrap();
        assert!(
            body.contains("newString: fixed") && !body.contains("originalFile"),
            "{body}"
        );
        let r = keep(&ev(
            "gemini-cli",
            fixture("gemini-cli/0.61.0/AfterTool-read_file-missing-file.json"),
        ));
        let body = r.body.unwrap();
        assert!(body.starts_with("error: File not found"), "{body}");
    }

    #[test]
    fn files_only_on_kept_post_tool_events() {
        let post = ev(
            "claude-code",
            fixture("claude-code/2.1.328/PostToolUse-Read.json"),
        );
        let d = crate::capture::decide(&CaptureConfig::Absent, None, &post);
        let files = vec![
            "/p/a.rs".to_string(),
            "/p/a.rs".to_string(),
            "/p/\u{1b}[2Jb.rs".into(),
        ];
        let r = build(&post, &scope(), &d, files, new_key(), 1);
        assert_eq!(r.files, vec!["/p/a.rs", "/p/b.rs"]);
        let many: Vec<String> = (0..MAX_FILES + 1).map(|i| format!("/f{i}")).collect();
        assert_eq!(
            build(&post, &scope(), &d, many, new_key(), 1).files.len(),
            MAX_FILES
        );
        let pre = ev(
            "claude-code",
            fixture("claude-code/2.1.328/PreToolUse-Read.json"),
        );
        let d = crate::capture::decide(&CaptureConfig::Absent, None, &pre);
        assert!(
            build(&pre, &scope(), &d, vec!["/p/a.rs".into()], new_key(), 1)
                .files
                .is_empty()
        );
    }

    #[test]
    fn metadata_only_shape() {
        let mut e = ev(
            "claude-code",
            fixture("claude-code/2.1.328/PostToolUse-Read.json"),
        );
        let d = Decision {
            policy_state: PolicyState::Invalid,
            tool_family: ToolFamily::File,
            path_count: 1,
            disposition: Disposition::MetadataOnly,
            extraction_state: ExtractionState::Extracted,
        };
        let r = build(
            &e,
            &scope(),
            &d,
            vec!["/secret/path".into()],
            "a".repeat(32),
            5,
        );
        let v = serde_json::to_value(&r).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "v",
                "key",
                "occurred_ms",
                "agent",
                "event",
                "native_event",
                "session_id",
                "cwd",
                "scope",
                "subagent",
                "tool",
                "capture",
                "disposition"
            ]
        );
        assert_eq!(
            v["tool"],
            json!({"family":"file","call_id":e.tool_call_id.clone().unwrap()})
        );
        assert_eq!(v["disposition"], "metadata-only");
        assert_eq!(v["capture"]["policy_state"], "invalid");
        let out = json_of(&r);
        assert!(!out.contains("greet") && !out.contains("/secret/path") && !out.contains("Read"));
        // A malformed call id is dropped, never stored.
        e.tool_call_id = Some("../../etc/passwd".into());
        assert_eq!(
            build(&e, &scope(), &d, vec![], new_key(), 5)
                .tool
                .unwrap()
                .call_id,
            None
        );
        // A drop handed to build anyway is built metadata-only.
        let drop = Decision {
            disposition: Disposition::Drop,
            ..d
        };
        assert_eq!(build(&e, &scope(), &drop, vec![], new_key(), 5).body, None);
    }

    #[test]
    fn prompts_are_cleaned_and_titled() {
        let e = ev(
            "claude-code",
            json!({"hook_event_name":"UserPromptSubmit","session_id":"s1","cwd":"/w",
                   "prompt":"\u{1b}[1mfix login\u{1b}[0m <private>my pin 1234</private>\nuse password=hunter2"}),
        );
        let r = keep(&e);
        assert_eq!(r.title.as_deref(), Some("fix login"));
        assert_eq!(
            r.body.as_deref(),
            Some("fix login \nuse password=[REDACTED:password]")
        );
        assert_eq!(r.event, "user-prompt");
        assert_eq!(r.capture, None);
    }

    #[test]
    fn stop_keeps_the_final_message_of_a_main_session_only() {
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
            // A subagent's final message is metadata only.
            (
                "claude-code",
                "claude-code/2.1.328/SubagentStop-subagent.json",
                None,
            ),
        ] {
            let p = fixture(path);
            let r = keep(&ev(agent, p.clone()));
            assert_eq!(r.body.as_deref(), want, "{path}");
            assert!(r.title.as_deref().unwrap().starts_with("stop") || r.subagent);
        }
        let p = fixture("claude-code/2.1.328/SubagentStop-subagent.json");
        let msg = p["last_assistant_message"].as_str().unwrap();
        assert!(!json_of(&keep(&ev("claude-code", p.clone()))).contains(msg));
    }

    #[test]
    fn assistant_text_false_keeps_neither_final_message_nor_plan() {
        let stop = ev("codex", fixture("codex/0.171.0/Stop.json"));
        let task = ev(
            "claude-code",
            fixture("claude-code/2.1.328/PostToolUse-TaskCreate.json"),
        );
        for (capture, kept) in [
            (CaptureConfig::Absent, true),
            (
                CaptureConfig::Inactive {
                    marker: "/w/.ai-memory.toml".into(),
                    assistant_text: false,
                },
                false,
            ),
            (
                CaptureConfig::Invalid {
                    marker: "/w/.ai-memory.toml".into(),
                    reason: "x".into(),
                },
                false,
            ),
        ] {
            let s = Scope {
                capture: capture.clone(),
                ..scope()
            };
            let d = crate::capture::decide(&capture, None, &stop);
            let r = build(&stop, &s, &d, vec![], new_key(), 1);
            assert_eq!(r.body.is_some(), kept, "{capture:?}");
            let d = crate::capture::decide(&capture, None, &task);
            let r = build(&task, &s, &d, vec![], new_key(), 1);
            assert_eq!(r.plan.is_some(), kept, "{capture:?}");
        }
    }

    #[test]
    fn post_tool_keeps_command_line_exit_status_and_plan() {
        let r = keep(&ev(
            "claude-code",
            fixture("claude-code/2.1.328/PostToolUse-Bash.json"),
        ));
        let p = fixture("claude-code/2.1.328/PostToolUse-Bash.json");
        assert_eq!(r.command.as_deref(), p["tool_input"]["command"].as_str());
        let r = keep(&ev(
            "gemini-cli",
            fixture("gemini-cli/0.61.0/AfterTool-run_shell_command-exit1.json"),
        ));
        assert_eq!(r.tool.as_ref().unwrap().exit_code, Some(1));
        assert!(r.command.is_some());
        let r = keep(&ev(
            "copilot",
            fixture("copilot/1.0.102/PostToolUse-Bash-exit3.json"),
        ));
        assert_eq!(r.tool.as_ref().unwrap().exit_code, Some(3));
        let r = keep(&ev(
            "opencode",
            fixture("opencode/1.18.33/tool.execute.after-bash-2.json"),
        ));
        assert!(r.tool.as_ref().unwrap().exit_code.is_some_and(|c| c != 0));
        // Codex's failing command states no exit status anywhere.
        let r = keep(&ev(
            "codex",
            fixture("codex/0.171.0/PostToolUse-Bash-exit1.json"),
        ));
        assert_eq!(r.tool.as_ref().unwrap().exit_code, None);
        assert_eq!(r.command.as_deref(), Some("echo failing >&2; exit 1"));
        // File tools have no command line; pre-tool events keep none.
        let r = keep(&ev(
            "claude-code",
            fixture("claude-code/2.1.328/PostToolUse-Read.json"),
        ));
        assert_eq!(r.command, None);
        let r = keep(&ev(
            "claude-code",
            fixture("claude-code/2.1.328/PreToolUse-Bash.json"),
        ));
        assert_eq!((r.command, r.plan), (None, None));
        let r = keep(&ev(
            "claude-code",
            fixture("claude-code/2.1.328/PostToolUse-TaskCreate.json"),
        ));
        assert_eq!(
            r.plan.unwrap().items[0].text.as_deref(),
            Some("Check readme")
        );
    }

    #[test]
    fn tool_result_titles_say_what_happened() {
        let title = |agent: &str, f: &str, files: Vec<String>| {
            let e = ev(agent, fixture(f));
            let d = crate::capture::decide(&CaptureConfig::Absent, None, &e);
            build(&e, &scope(), &d, files, new_key(), 1).title.unwrap()
        };
        // A shell command: its line and its exit status.
        assert_eq!(
            title(
                "gemini-cli",
                "gemini-cli/0.61.0/AfterTool-run_shell_command-exit1.json",
                vec![]
            )
            .rsplit_once(" → ")
            .unwrap()
            .1,
            "exit 1"
        );
        assert_eq!(
            title("codex", "codex/0.171.0/PostToolUse-Bash-exit1.json", vec![]),
            "Bash: echo failing >&2; exit 1"
        );
        let t = title(
            "claude-code",
            "claude-code/2.1.328/PostToolUse-Bash.json",
            vec![],
        );
        assert!(t.starts_with("Bash: ls -la"), "{t}");
        // A file tool: the file, relative to the cwd.
        assert_eq!(
            title(
                "claude-code",
                "claude-code/2.1.328/PostToolUse-Edit.json",
                vec!["/home/dev/projects/demo/src/app.py".into()]
            ),
            "Edit src/app.py"
        );
        assert_eq!(
            title(
                "claude-code",
                "claude-code/2.1.328/PostToolUse-Edit.json",
                vec![
                    "/elsewhere/a.py".into(),
                    "/home/dev/projects/demo/b.py".into()
                ]
            ),
            "Edit /elsewhere/a.py +1 more"
        );
        // Neither: the tool and its outcome, as before.
        let t = title(
            "claude-code",
            "claude-code/2.1.328/PostToolUse-Glob.json",
            vec![],
        );
        assert!(t.starts_with("Glob ("), "{t}");
    }

    #[test]
    fn tool_titles_stay_within_the_cap_and_keep_the_outcome() {
        let long = format!("pytest -q {}\nsecond line", "tests/x.py ".repeat(20));
        let t = tool_title(
            "Bash (shell)",
            Some("Bash"),
            Outcome::Error,
            Some(1),
            Some(&long),
            &[],
            None,
        )
        .unwrap();
        assert_eq!(t.chars().count(), MAX_TITLE_CHARS, "{t}");
        assert!(
            t.starts_with("Bash: pytest -q tests/x.py") && t.ends_with("… → exit 1"),
            "{t}"
        );
        let deep = format!("/p/{}/dates.py", "d".repeat(200));
        let t = tool_title(
            "Edit (file)",
            Some("Edit"),
            Outcome::Error,
            None,
            None,
            &[deep],
            Some("/p"),
        )
        .unwrap();
        assert_eq!(t.chars().count(), MAX_TITLE_CHARS, "{t}");
        assert!(
            t.starts_with("Edit …d") && t.ends_with("/dates.py → error"),
            "{t}"
        );
        // A multi-line command reads on one line.
        let t = tool_title(
            "Bash (shell)",
            Some("Bash"),
            Outcome::Success,
            Some(0),
            Some("cd src\n  make   all"),
            &[],
            None,
        )
        .unwrap();
        assert_eq!(t, "Bash: cd src ⏎ make all → exit 0");
    }

    /// Every free-text field is reached by `texts_mut`: a record with every
    /// field set is serialised, and each string in it is either one of the
    /// structural fields listed here or one of `texts_mut`'s strings. A new
    /// text field that `texts_mut` forgets fails this test.
    #[test]
    fn texts_mut_reaches_every_free_text_field() {
        let mut r = Record {
            title: Some("TEXT title".into()),
            body: Some("TEXT body".into()),
            files: vec!["/w/a.rs".into()],
            command: Some("TEXT command".into()),
            plan: Some(RecordPlan {
                full: true,
                items: vec![PlanItem {
                    id: Some("1".into()),
                    text: Some("TEXT item".into()),
                    status: "pending".into(),
                }],
            }),
            tool: Some(RecordTool {
                family: "shell".into(),
                name: Some("Bash".into()),
                call_id: Some("c1".into()),
                outcome: Some("error".into()),
                exit_code: Some(1),
            }),
            capture: Some(capture_meta(&crate::capture::decide(
                &CaptureConfig::Absent,
                None,
                &ev(
                    "claude-code",
                    fixture("claude-code/2.1.328/PostToolUse-Bash.json"),
                ),
            ))),
            ..sample::record(&"a".repeat(32))
        };
        const STRUCTURAL: &[&str] = &[
            "/key",
            "/agent",
            "/event",
            "/native_event",
            "/session_id",
            "/cwd",
            "/scope/",
            "/tool/",
            "/capture/",
            "/disposition",
            "/files/",
            "/plan/items/0/id",
            "/plan/items/0/status",
        ];
        fn strings(v: &Value, at: String, out: &mut Vec<(String, String)>) {
            match v {
                Value::String(s) => out.push((at, s.clone())),
                Value::Array(a) => {
                    for (i, x) in a.iter().enumerate() {
                        strings(x, format!("{at}/{i}"), out);
                    }
                }
                Value::Object(o) => {
                    for (k, x) in o {
                        strings(x, format!("{at}/{k}"), out);
                    }
                }
                _ => {}
            }
        }
        let mut all = Vec::new();
        strings(&serde_json::to_value(&r).unwrap(), String::new(), &mut all);
        let free: Vec<String> = all
            .into_iter()
            .filter(|(at, _)| {
                !STRUCTURAL
                    .iter()
                    .any(|s| at == s || (s.ends_with('/') && at.starts_with(s)))
            })
            .map(|(_, s)| s)
            .collect();
        let mut reached: Vec<String> = r.texts_mut().into_iter().map(|s| s.clone()).collect();
        let mut free = free;
        free.sort();
        reached.sort();
        assert_eq!(free, reached);
        assert_eq!(reached.len(), 4);
        for t in r.texts_mut() {
            t.clear();
        }
        assert!(!json_of(&r).contains("TEXT"));
    }

    #[test]
    fn lifecycle_titles_and_scope() {
        let r = keep(&ev(
            "claude-code",
            fixture("claude-code/2.1.328/SessionStart-startup.json"),
        ));
        assert_eq!(r.title.as_deref(), Some("session start: startup"));
        assert_eq!(r.event, "session-start");
        assert_eq!(r.agent, "claude-code");
        assert_eq!(
            r.scope,
            RecordScope {
                workspace: "acme".into(),
                project: "api".into(),
                workspace_source: "marker".into(),
                project_source: "repo-root".into(),
                project_strategy: "repo-root".into(),
                drop_subagent: true,
                default_global: false,
                briefing: true,
                briefing_budget: 6000,
            }
        );
        assert_eq!(r.occurred_ms, 7);
        assert_eq!(r.v, RECORD_VERSION);
    }
}
