//! The store model: what every store — the embedded SQLite store
//! (`sqlite.rs`) and PostgreSQL (`memhook-store-pg`) — reads
//! and writes, named without any engine: the rows queries return, the
//! engine-neutral [`StoreError`], what forget and export select, and every
//! store trait:
//!
//! - [`Reads`]: the session-start briefing (`GET /handoff`).
//!   `briefing::compose` is written against this trait only, so the same
//!   input gives the same briefing text from either store.
//! - [`Browse`]: the web view's pages and JSON API (projects, sessions,
//!   records, search with highlights).
//! - [`TokenStore`]: named tokens of a team server.

use std::fmt;
use std::path::{Path, PathBuf};

use memhook_core::data_dir::DirError;

// What both engines' queries share: their bounds and the event sets they
// select by.

/// Most rows any query returns, whatever the caller asks for.
pub const MAX_QUERY_LIMIT: usize = 1_000;

/// Longest search text accepted (longer text is cut on a char boundary).
pub const MAX_QUERY_CHARS: usize = 512;

/// Most words of a search query used (the rest are ignored).
pub const MAX_QUERY_TERMS: usize = 32;

/// Events that mean a session did real work (not only opened and closed).
pub const WORK_EVENTS: &[&str] = &[
    "user-prompt",
    "pre-tool-use",
    "post-tool-use",
    "post-tool-use-failure",
    "pre-compact",
    "post-compact",
];

/// Tool result events.
pub const TOOL_RESULTS: [&str; 2] = ["post-tool-use", "post-tool-use-failure"];

/// Tool result events, as an SQL list.
pub const TOOL_RESULT_EVENTS: &str = "('post-tool-use', 'post-tool-use-failure')";

/// Characters of a record's body kept as its excerpt.
pub const EXCERPT_CHARS: usize = 400;

/// Characters of a session's first prompt kept for its line.
pub const FIRST_PROMPT_CHARS: usize = 200;

/// Tokens of context around the hits in a search snippet.
pub const SNIPPET_TOKENS: usize = 24;

/// The columns of a [`SessionRow`] without its families, for the rows
/// `condition` selects; `failed` is the dialect's test for a failed record
/// (`FAILED` in `sqlite.rs`, its own in memhook-store-pg's `read.rs`). Both stores read
/// sessions with this one query, so their rows cannot drift apart.
pub fn session_select(failed: &str, condition: &str) -> String {
    format!(
        "SELECT s.id, p.workspace, p.project, s.agent, s.session_id, s.first_ms, s.last_ms,
                s.events,
                (SELECT count(*) FROM records r
                  WHERE r.session_row = s.id AND r.event = 'user-prompt'),
                (SELECT count(*) FROM records WHERE session_row = s.id AND {failed}),
                (SELECT substr(coalesce(r.title, r.body), 1, {FIRST_PROMPT_CHARS}) FROM records r
                  WHERE r.session_row = s.id AND r.event = 'user-prompt'
                  ORDER BY r.occurred_ms, r.id LIMIT 1)
         FROM sessions s JOIN projects p ON p.id = s.project_id
         WHERE {condition}"
    )
}

/// Most records read after a session's last prompt.
pub const MAX_TAIL_RECORDS: usize = 2_000;

/// Most distinct files listed per session.
pub const MAX_SESSION_FILES: usize = 500;

/// File tools that only read (lowercase, every agent's spelling). Any other
/// file-family tool changed the file.
pub const READ_ONLY_FILE_TOOLS: &[&str] = &[
    "read",
    "read_file",
    "read_many_files",
    "view",
    "notebookread",
    "beforereadfile",
];

/// Why the store cannot be used.
#[derive(Debug)]
pub enum StoreError {
    Dir(DirError),
    /// The database engine failed. `db` names the database (the SQLite
    /// file's path; empty when the engine's own error names it, as
    /// PostgreSQL's does without its password).
    Engine {
        db: String,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The database was written by a newer memhook: its schema `version`
    /// is past the `supported` one.
    TooNew {
        path: PathBuf,
        version: u32,
        supported: u32,
    },
    /// The store file exists but is not a regular file owned by us.
    Unsafe {
        path: PathBuf,
        problem: String,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Dir(e) => write!(f, "store directory unusable: {e}"),
            StoreError::Engine { db, source } if db.is_empty() => write!(f, "{source}"),
            StoreError::Engine { db, source } => write!(f, "{db}: {source}"),
            StoreError::TooNew {
                path,
                version,
                supported,
            } => write!(
                f,
                "{}: schema version {version} is newer than this memhook understands \
                 ({supported}); upgrade memhook",
                path.display()
            ),
            StoreError::Unsafe { path, problem } => write!(
                f,
                "{}: {problem}; memhook refuses to use it (move it away)",
                path.display()
            ),
        }
    }
}

impl std::error::Error for StoreError {}

impl From<DirError> for StoreError {
    fn from(e: DirError) -> Self {
        StoreError::Dir(e)
    }
}

/// One stored record as the query API returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRecord {
    pub key: String,
    pub occurred_ms: u64,
    pub agent: String,
    pub event: String,
    pub native_event: String,
    pub workspace: String,
    pub project: String,
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub subagent: bool,
    pub tool_family: Option<String>,
    pub tool_name: Option<String>,
    pub tool_call_id: Option<String>,
    pub outcome: Option<String>,
    pub disposition: String,
    pub title: Option<String>,
    pub body: Option<String>,
    pub files: Vec<String>,
    /// The named token that delivered it to `memhook serve` (`owner` for
    /// the server's own token); `None` when it was written without one.
    pub token_name: Option<String>,
    /// Why a search found it: a few words of the record around its matches,
    /// each match between [`MATCH_MARK`]s (`None` outside searches).
    pub matched: Option<String>,
    /// How many other records of identical text a search row stands for
    /// (`crate::collapse`; 0 outside searches).
    pub identical: u64,
}

/// What marks a match in [`StoredRecord::matched`], before and after it.
pub const MATCH_MARK: &str = "**";
/// Words of [`StoredRecord::matched`], about.
pub const MATCH_WORDS: usize = 12;

impl StoredRecord {
    /// The `--json` line shape of `recent` and `search` (one object; a
    /// search's records also have `matched`).
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "key": self.key,
            "occurred_at": memhook_core::timefmt::rfc3339_ms(self.occurred_ms),
            "agent": self.agent,
            "event": self.event,
            "native_event": self.native_event,
            "workspace": self.workspace,
            "project": self.project,
            "session_id": self.session_id,
            "cwd": self.cwd,
            "subagent": self.subagent,
            "tool_family": self.tool_family,
            "tool_name": self.tool_name,
            "tool_call_id": self.tool_call_id,
            "outcome": self.outcome,
            "disposition": self.disposition,
            "title": self.title,
            "body": self.body,
            "files": self.files,
            "token_name": self.token_name,
        });
        if let Some(m) = &self.matched {
            v["matched"] = m.as_str().into();
        }
        if self.identical > 0 {
            v["identical"] = self.identical.into();
        }
        v
    }
}

/// One session of a scope, as the briefing sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    pub row: i64,
    pub agent: String,
    pub session_id: String,
    pub first_ms: u64,
    pub last_ms: u64,
    pub events: u64,
    pub work: u64,
}

/// What a set of sessions did, aggregated in SQL (the briefing's input).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Activity {
    /// Tool results per family: (family, calls, failed), most used first.
    pub families: Vec<(String, u64, u64)>,
    /// Tool results per tool name (family when unnamed), most used first.
    pub tools: Vec<(String, u64)>,
    /// Failures grouped by (tool, first line of the excerpt), most frequent first.
    pub failures: Vec<(String, Option<String>, u64)>,
    /// Files touched with counts, most touched first.
    pub files: Vec<(String, u64)>,
    /// Distinct files touched.
    pub file_count: u64,
}

/// Marks the start of a highlighted hit in [`SearchHit::snippet`].
pub const HIT_START: char = '\u{2}';

/// Marks the end of a highlighted hit in [`SearchHit::snippet`].
pub const HIT_END: char = '\u{3}';

/// What a stored record holds besides [`StoredRecord`]'s members (the
/// record fields `tool.exit_code`, `command` and `plan`, SQLite schema 4 /
/// PostgreSQL schema 3): what `memhook export` writes with each record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordExtras {
    pub exit_code: Option<i64>,
    pub command: Option<String>,
    pub plan: Option<memhook_core::record::RecordPlan>,
}

/// The columns of [`RecordExtras`], after a query's other columns.
pub const EXTRA_COLUMNS: &str = "r.exit_code, r.command, r.plan";

/// One project: its names, time span and how much it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectRow {
    pub workspace: String,
    pub project: String,
    pub first_ms: u64,
    pub last_ms: u64,
    pub sessions: u64,
    pub records: u64,
}

/// Tool results of one family in a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyCount {
    pub family: String,
    pub calls: u64,
    pub failed: u64,
}

/// One session, summarised for a timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    /// The session's row id (what pages and the API name it by).
    pub row: i64,
    pub workspace: String,
    pub project: String,
    pub agent: String,
    pub session_id: String,
    pub first_ms: u64,
    pub last_ms: u64,
    pub events: u64,
    pub prompts: u64,
    pub failures: u64,
    /// Tool results per family, most used first.
    pub families: Vec<FamilyCount>,
    /// The first [`FIRST_PROMPT_CHARS`] of its first prompt.
    pub first_prompt: Option<String>,
}

/// One record as a session page lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRow {
    pub key: String,
    pub occurred_ms: u64,
    pub agent: String,
    pub event: String,
    pub tool_family: Option<String>,
    pub tool_name: Option<String>,
    pub outcome: Option<String>,
    pub failed: bool,
    pub files: Vec<String>,
    pub title: Option<String>,
    /// The first [`EXCERPT_CHARS`] of the body.
    pub excerpt: Option<String>,
    /// Whether the body is longer than the excerpt.
    pub cut: bool,
    /// The agent's id of the tool call (what folds a call into its result).
    pub tool_call_id: Option<String>,
    /// A tool result's exit status, where the agent gives one.
    pub exit_code: Option<i64>,
    /// A shell tool's command line (redacted, capped; DESIGN §4).
    pub command: Option<String>,
}

/// One search hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    pub key: String,
    pub occurred_ms: u64,
    pub workspace: String,
    pub project: String,
    /// The session's row id (`None` for a record without a session).
    pub session_row: Option<i64>,
    pub session_id: Option<String>,
    pub agent: String,
    pub event: String,
    pub tool_family: Option<String>,
    /// The best matching text, hits between [`HIT_START`] and [`HIT_END`].
    pub snippet: String,
}

/// Characters of a prompt's text [`Reads::session_prompts`] returns: the
/// handoff shows the last goal whole (DESIGN §6), not its 80-character title.
pub const PROMPT_TEXT_CHARS: usize = 2_000;

/// One prompt of a session: its text (the start of the body, else the
/// title), when, and its record key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    pub text: String,
    pub ms: u64,
    pub key: String,
}

/// What one record says about the end of a session: only the fields the
/// handoff's "after it" line reads (no text).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TailEvent {
    pub event: String,
    pub tool_name: Option<String>,
    pub tool_family: Option<String>,
    pub tool_call_id: Option<String>,
    pub outcome: Option<String>,
}

/// Most records [`Reads::session_notes`] returns (the newest).
pub const MAX_NOTES: usize = 400;
/// Characters of a failure's output a [`Note`] carries.
pub const NOTE_LINE_CHARS: usize = 400;

/// What the handoff reads of one record of a session besides counts: the
/// agent's final message (a stop), a plan a todo tool set, a tool result
/// with its command line and outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Note {
    pub key: String,
    pub ms: u64,
    pub event: String,
    /// The tool's name, else its family (tool results).
    pub tool: Option<String>,
    pub failed: bool,
    /// The outcome is `success` (an `unknown` one is neither).
    pub succeeded: bool,
    pub exit_code: Option<i64>,
    pub command: Option<String>,
    pub files: Vec<String>,
    /// A stop's final message; the start of a failure's output.
    pub text: Option<String>,
    pub plan: Option<memhook_core::record::RecordPlan>,
}

/// The conclusion of the session whose `notes` these are: the newest
/// stop with a final message that is not blank, as (text, record key).
pub fn conclusion(notes: &[Note]) -> Option<(String, String)> {
    notes
        .iter()
        .rev()
        .find(|n| n.event == "stop" && n.text.as_deref().is_some_and(|t| !t.trim().is_empty()))
        .map(|n| (n.text.clone().unwrap_or_default(), n.key.clone()))
}

/// A file a session touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TouchedFile {
    pub path: String,
    pub last_ms: u64,
    /// Changed (written, edited, patched) at least once, not only read.
    pub changed: bool,
}

/// Which records to forget. Every given field must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    /// A record's key, or a prefix of at least [`MIN_KEY_PREFIX`] characters
    /// that names exactly one record.
    pub record: Option<String>,
    /// The agent's session id.
    pub session: Option<String>,
    /// `(workspace, project)`.
    pub project: Option<(String, String)>,
    /// Only records that occurred before this instant (Unix ms).
    pub before_ms: Option<u64>,
}

/// The shortest key prefix accepted (what `memhook recent` prints).
pub const MIN_KEY_PREFIX: usize = 8;

impl Selector {
    /// The selector of the four fields as a person writes them (`memhook
    /// forget`'s options, the web view's form): `project` as
    /// `WORKSPACE/PROJECT`, `before` as a UTC date or time. A usage error
    /// names the option to fix.
    pub fn parse(
        record: Option<&str>,
        session: Option<&str>,
        project: Option<&str>,
        before: Option<&str>,
    ) -> Result<Selector, String> {
        let project = match project {
            None => None,
            Some(wp) => {
                let (w, p) = wp.split_once('/').ok_or_else(|| {
                    format!("--project {wp:?}: write it as WORKSPACE/PROJECT, e.g. default/api")
                })?;
                for n in [w, p] {
                    if !memhook_core::names::is_valid_name(n) {
                        return Err(format!(
                            "--project: {}",
                            memhook_core::names::name_problem(n)
                        ));
                    }
                }
                Some((w.to_string(), p.to_string()))
            }
        };
        let before_ms = match before {
            None => None,
            Some(d) => Some(memhook_core::timefmt::parse_utc_ms(d).ok_or_else(|| {
                format!(
                "--before {d:?}: write a UTC date or time, e.g. 2026-11-30 or 2026-11-30T18:00Z"
            )
            })?),
        };
        let sel = Selector {
            record: record.map(str::to_string),
            session: session.map(str::to_string),
            project,
            before_ms,
        };
        if sel == Selector::default() {
            return Err(
                "say what to forget: --record KEY, --session ID, --project W/P \
                    and/or --before DATE"
                    .into(),
            );
        }
        Ok(sel)
    }

    /// Words for the forget log and the command's output: ids and names,
    /// never stored text.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(k) = &self.record {
            parts.push(format!("record {k}"));
        }
        if let Some(s) = &self.session {
            parts.push(format!("session {s}"));
        }
        if let Some((w, p)) = &self.project {
            parts.push(format!("project {w}/{p}"));
        }
        if let Some(ms) = self.before_ms {
            parts.push(format!("before {}", memhook_core::timefmt::rfc3339_ms(ms)));
        }
        if parts.is_empty() {
            "everything".to_string()
        } else {
            parts.join(", ")
        }
    }

    /// Whether a record with these fields is selected (the spool side of
    /// forgetting uses the same rule as the SQL below).
    pub fn matches(
        &self,
        key: &str,
        session: Option<&str>,
        scope: (&str, &str),
        occurred_ms: u64,
    ) -> bool {
        self.record.as_deref().is_none_or(|k| key.starts_with(k))
            && self.session.as_deref().is_none_or(|s| session == Some(s))
            && self
                .project
                .as_ref()
                .is_none_or(|(w, p)| (w.as_str(), p.as_str()) == scope)
            && self.before_ms.is_none_or(|b| occurred_ms < b)
    }
}

/// What forgetting removed (or, in a dry run, would remove).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Forgotten {
    pub records: u64,
    /// Sessions left with no record, removed.
    pub sessions: u64,
    /// Projects left with no record, removed.
    pub projects: u64,
    /// False when a reader kept the WAL from being emptied: the forgotten
    /// text may stay in the WAL file until the next checkpoint.
    pub wal_emptied: bool,
}

/// One line of the forget log: when, which selector, how many went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    pub at_ms: u64,
    pub selector: String,
    pub records: u64,
    pub sessions: u64,
    pub projects: u64,
}

/// Why forgetting refused to start.
#[derive(Debug)]
pub enum ForgetError {
    Store(StoreError),
    /// A key prefix that is too short or names several records.
    Key(String),
}

impl std::fmt::Display for ForgetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ForgetError::Store(e) => e.fmt(f),
            ForgetError::Key(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ForgetError {}

impl From<StoreError> for ForgetError {
    fn from(e: StoreError) -> Self {
        ForgetError::Store(e)
    }
}

/// A `--record` key prefix must be at least [`MIN_KEY_PREFIX`] letters and
/// digits (both stores check it before any SQL).
pub fn check_forget_key(sel: &Selector) -> Result<(), ForgetError> {
    if let Some(k) = &sel.record {
        if k.len() < MIN_KEY_PREFIX || !k.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(ForgetError::Key(format!(
                "--record {k:?}: give the record's key, or at least its first \
                 {MIN_KEY_PREFIX} characters as `memhook recent` prints them"
            )));
        }
    }
    Ok(())
}

/// Which records [`crate::sqlite::Store::export_each`] visits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportFilter {
    /// Only this `(workspace, project)`.
    pub project: Option<(String, String)>,
    /// Only records that occurred at or after this time (Unix ms).
    pub since_ms: Option<u64>,
}

impl ExportFilter {
    /// The query parameters both stores bind: whether a project is chosen,
    /// its workspace and name (`""` when not), and the earliest time.
    pub fn params(&self) -> (bool, &str, &str, i64) {
        let (w, p) = self
            .project
            .as_ref()
            .map_or(("", ""), |(w, p)| (w.as_str(), p.as_str()));
        (
            self.project.is_some(),
            w,
            p,
            self.since_ms.unwrap_or(0) as i64,
        )
    }
}

/// One named token as listed (never the token or its hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInfo {
    pub name: String,
    /// RFC 3339 UTC.
    pub created: String,
    /// RFC 3339 UTC, when revoked.
    pub revoked: Option<String>,
}

/// What a store does for named tokens. Table `tokens(name TEXT PRIMARY KEY,
/// hash TEXT NOT NULL, created TEXT NOT NULL, revoked TEXT)`; `hash` is
/// [`crate::tokens::hash`] of the token.
pub trait TokenStore {
    type Error: fmt::Display;
    /// Add a token; `Ok(false)` when the name is taken (revoked or not).
    fn add_token(&mut self, name: &str, hash: &str, created: &str) -> Result<bool, Self::Error>;
    /// Every token, by name.
    fn list_tokens(&self) -> Result<Vec<TokenInfo>, Self::Error>;
    /// Mark `name` revoked at `at` (a revoked token stays revoked, its first
    /// time kept). `Ok(None)` when there is no such token.
    fn revoke_token(&mut self, name: &str, at: &str) -> Result<Option<TokenInfo>, Self::Error>;
    /// `(name, hash)` of every token not revoked: read on each request that
    /// needs it, never cached, so a revocation holds at once.
    fn active_tokens(&self) -> Result<Vec<(String, String)>, Self::Error>;
}

/// One consistent view of a store for composing a briefing.
pub trait Reads {
    /// The data dir whose project memory (`MEMORY.md`) the briefing shows.
    fn data_dir(&self) -> &Path;
    /// Sessions of a scope that did work, newest activity first, leaving out
    /// `exclude_session`.
    fn sessions(
        &self,
        scope: (&str, &str),
        exclude_session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SessionSummary>, StoreError>;
    /// Tool families and failures of the sessions `rows`.
    fn outcomes(&self, rows: &[i64], max_list: usize) -> Result<Activity, StoreError>;
    /// Everything [`Activity`] holds for the sessions `rows`.
    fn activity(&self, rows: &[i64], max_list: usize) -> Result<Activity, StoreError>;
    /// (prompts, tool results, first prompt) of one session.
    fn session_outline(&self, row: i64) -> Result<(u64, u64, Option<String>), StoreError>;
    /// First prompt, the last `last` prompts and the prompt count of a session.
    #[allow(clippy::type_complexity)]
    fn session_prompts(
        &self,
        row: i64,
        last: usize,
    ) -> Result<(Option<Prompt>, Vec<Prompt>, u64), StoreError>;
    /// The session's records from `from_ms` on, oldest first.
    fn session_tail(&self, row: i64, from_ms: u64) -> Result<Vec<TailEvent>, StoreError>;
    /// The first working directory the session reported.
    fn session_root(&self, row: i64) -> Result<Option<String>, StoreError>;
    /// The files the session touched, changed ones first.
    fn session_files(&self, row: i64) -> Result<Vec<TouchedFile>, StoreError>;
    /// The session's stops and tool results, oldest first (at most
    /// [`MAX_NOTES`], the newest kept), as [`Note`]s.
    fn session_notes(&self, row: i64) -> Result<Vec<Note>, StoreError>;
    /// The [`conclusion`] of the session's [`Reads::session_notes`]: what
    /// a briefing's line about an earlier session quotes. A store may find
    /// it without reading every note (the embedded store does).
    fn session_conclusion(&self, row: i64) -> Result<Option<(String, String)>, StoreError> {
        Ok(conclusion(&self.session_notes(row)?))
    }
}

/// One consistent view of a store for the web view (DESIGN §12). The SQLite
/// queries are in `sink/store/browse.rs`, their PostgreSQL mirror in
/// `sink/pg/browse.rs`.
pub trait Browse {
    /// Every project, most recently active first.
    fn browse_projects(&self) -> Result<Vec<ProjectRow>, StoreError>;
    /// The sessions of one project, newest activity first, at most `limit`.
    fn browse_sessions(
        &self,
        scope: (&str, &str),
        limit: usize,
    ) -> Result<Vec<SessionRow>, StoreError>;
    /// One session by its row id.
    fn browse_session(&self, row: i64) -> Result<Option<SessionRow>, StoreError>;
    /// The records of one session, oldest first, at most `limit`.
    fn browse_records(&self, row: i64, limit: usize) -> Result<Vec<RecordRow>, StoreError>;
    /// Records matching every word of `query` (user text, never syntax) in
    /// `scope` (`None`: every project), best match first, each with a
    /// highlighted snippet.
    fn browse_search(
        &self,
        scope: Option<(&str, &str)>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError>;
}

/// What `memhook serve` needs of a store, whichever engine holds it: the
/// embedded SQLite store (`sqlite/database.rs`) or
/// PostgreSQL (`memhook_store_pg::PgStore`). The server holds a `dyn
/// Database` and names no engine; [`browse`] and [`read`] give its callers
/// typed answers over the object-safe methods.
pub trait Database: Send + Sync {
    /// Where the records go, for the start-up line (never a password).
    fn describe(&self) -> String;
    /// The data dir whose spool and memory documents go with this store.
    fn data_dir(&self) -> &Path;
    /// Store `records`, each with the name of the token that delivered it,
    /// in one transaction; for each, whether it was new. A replay keeps the
    /// record's first token name. Called from one writer thread.
    fn insert_each(
        &self,
        records: &[(&memhook_core::record::Record, Option<&str>)],
    ) -> Result<Vec<bool>, StoreError>;
    /// The name of the live named token `given` is: one query per call, no
    /// cache, so a revocation holds at once.
    fn named_token(&self, given: &str) -> Result<Option<String>, StoreError>;
    /// Run `f` on one consistent snapshot for the briefing.
    fn with_reads(
        &self,
        f: &mut dyn FnMut(&dyn Reads) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;
    /// Run `f` on one consistent snapshot for the web view (`f` may run
    /// again when a pooled connection was stale).
    fn with_browse(
        &self,
        f: &mut dyn FnMut(&dyn Browse) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;
    /// Forget (`apply`) or count what `sel` names in the store; `None` when
    /// the store holds nothing yet. The spool is the caller's (it is not
    /// the store's): `memhook_sinks::forget`.
    fn forget(
        &self,
        sel: &Selector,
        apply: bool,
    ) -> Result<Option<Forgotten>, Box<dyn std::error::Error + Send + Sync>>;
    /// What forgetting promises about the text on this engine, for the web
    /// view's confirmation page.
    fn forget_promise(&self) -> &'static str;
    /// Whether this is the data dir's own SQLite store, whose forget can
    /// leave a WAL cleanup owed to a reader (`memhook_sinks::forget`).
    fn is_embedded(&self) -> bool {
        false
    }
}

/// [`Database::with_browse`] with a typed answer.
pub fn browse<T>(
    db: &dyn Database,
    mut f: impl FnMut(&dyn Browse) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let mut out = None;
    db.with_browse(&mut |b| {
        out = Some(f(b)?);
        Ok(())
    })?;
    Ok(out.expect("with_browse runs f once it succeeds"))
}

/// [`Database::with_reads`] with a typed answer.
pub fn read<T>(
    db: &dyn Database,
    mut f: impl FnMut(&dyn Reads) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let mut out = None;
    db.with_reads(&mut |r| {
        out = Some(f(r)?);
        Ok(())
    })?;
    Ok(out.expect("with_reads runs f once it succeeds"))
}
