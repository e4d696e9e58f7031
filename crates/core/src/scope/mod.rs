//! Scope: which memory (workspace, project) an event or command belongs to.
//!
//! Discovery walks up from the cwd to the nearest `.ai-memory.toml` (see
//! `marker.rs`); resolution applies flag > env > marker > fallback per field
//! (see `resolve.rs`); the repo-root strategy asks git (see `git.rs`).
//! The contract is pinned by `fixtures/scope/cases.json`.

use std::fmt;
use std::path::PathBuf;

/// Where a resolved field came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    Flag,
    Env,
    Marker,
    RepoRoot,
    Fallback,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::Env => "env",
            Source::Marker => "marker",
            Source::RepoRoot => "repo-root",
            Source::Fallback => "fallback",
        }
    }
}

/// How the project name is derived when nothing names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    #[default]
    Basename,
    RepoRoot,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Basename => "basename",
            Strategy::RepoRoot => "repo-root",
        }
    }
}

/// Who is asking: hooks never fail and always read the marker; client
/// commands report problems as errors and honour `AI_MEMORY_IGNORE_MARKER`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Hook,
    Client,
}

/// `[briefing] max_chars` bounds and default.
pub const MAX_CHARS_MIN: usize = 500;
pub const MAX_CHARS_MAX: usize = 20_000;
pub const MAX_CHARS_DEFAULT: usize = 4_000;
/// A marker larger than this is unusable.
pub const MAX_MARKER_BYTES: u64 = 64 * 1024;
/// The marker's file name.
pub const MARKER_FILE: &str = ".ai-memory.toml";

/// Settings a marker can declare besides names.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Settings {
    pub drop_subagent_captures: bool,
    pub default_global: bool,
    pub inject_on_session_start: bool,
    pub max_chars: usize,
    /// `enabled = false`: memhook captures and briefs nothing for this tree
    /// (`memhook disable --marker` writes it).
    pub enabled: bool,
    /// `[briefing] file_history` (default true): a file tool's pre-tool-use
    /// context says when an earlier session changed the file (history.rs).
    #[serde(default = "default_true")]
    pub file_history: bool,
}

fn default_true() -> bool {
    true
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            drop_subagent_captures: false,
            default_global: false,
            inject_on_session_start: false,
            max_chars: MAX_CHARS_DEFAULT,
            enabled: true,
            file_history: true,
        }
    }
}

/// The `[capture]` section of the nearest marker, validated (structure,
/// bounds and pattern syntax) but not compiled. Matching is `capture`'s job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureConfig {
    /// No marker at all.
    Absent,
    /// A marker without `[capture]`, or with an empty `ignore_paths`.
    /// `assistant_text`: the marker's `[capture] assistant_text` (default
    /// true): keep the agent's own words (final messages, plan items).
    Inactive {
        marker: PathBuf,
        assistant_text: bool,
    },
    /// A usable, non-empty `ignore_paths`; `patterns` are as written.
    Active {
        marker: PathBuf,
        patterns: Vec<String>,
        assistant_text: bool,
    },
    /// The marker or its `[capture]` cannot be used: fail closed.
    Invalid { marker: PathBuf, reason: String },
}

impl CaptureConfig {
    /// Whether the agent's own words (final messages, plan items) are kept
    /// (DESIGN §4): on unless the marker's `[capture] assistant_text` is
    /// false; off under an invalid policy, whose exclusions cannot be applied
    /// to free text (fail closed).
    pub fn keeps_assistant_text(&self) -> bool {
        match self {
            CaptureConfig::Absent => true,
            CaptureConfig::Inactive { assistant_text, .. }
            | CaptureConfig::Active { assistant_text, .. } => *assistant_text,
            CaptureConfig::Invalid { .. } => false,
        }
    }

    /// `absent` | `inactive` | `active` | `invalid`.
    pub fn state_str(&self) -> &'static str {
        match self {
            CaptureConfig::Absent => "absent",
            CaptureConfig::Inactive { .. } => "inactive",
            CaptureConfig::Active { .. } => "active",
            CaptureConfig::Invalid { .. } => "invalid",
        }
    }
}

/// Everything resolution needs, gathered once so tests can pass it directly.
#[derive(Debug, Clone, Default)]
pub struct ScopeInput {
    /// The directory to resolve, as given (made absolute and normalised lexically).
    pub cwd: PathBuf,
    /// `$HOME`; `None` when unset or empty.
    pub home: Option<PathBuf>,
    pub workspace_flag: Option<String>,
    pub project_flag: Option<String>,
    /// `AI_MEMORY_WORKSPACE` / `AI_MEMORY_PROJECT` (blank already treated as unset).
    pub env_workspace: Option<String>,
    pub env_project: Option<String>,
    /// `AI_MEMORY_IGNORE_MARKER` is truthy (client commands only).
    pub ignore_marker: bool,
    /// `--project-strategy` baked into the hook command at install time.
    pub install_strategy: Option<Strategy>,
    pub mode: Option<Mode>,
}

/// A resolved scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub workspace: String,
    pub project: String,
    pub workspace_source: Source,
    pub project_source: Source,
    /// The marker that decided the scope settings (absolute path), if any.
    pub marker: Option<PathBuf>,
    pub strategy: Strategy,
    pub settings: Settings,
    /// The nearest marker's capture section (the nearest marker of any content).
    pub capture: CaptureConfig,
    pub warnings: Vec<String>,
}

/// Why a client command cannot resolve a scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeError {
    /// An environment variable holds an invalid value.
    Env { var: &'static str, problem: String },
    /// A command-line flag holds an invalid value.
    Flag { flag: &'static str, problem: String },
    /// A marker cannot be used.
    Marker { path: PathBuf, problem: String },
    /// The cwd cannot be used.
    Cwd { path: PathBuf, problem: String },
}

impl fmt::Display for ScopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScopeError::Env { var, problem } => {
                write!(f, "{var}: {problem} (unset it or fix the value)")
            }
            ScopeError::Flag { flag, problem } => write!(f, "{flag}: {problem}"),
            ScopeError::Marker { path, problem } => write!(f, "{}: {problem}", path.display()),
            ScopeError::Cwd { path, problem } => write!(f, "{}: {problem}", path.display()),
        }
    }
}

impl std::error::Error for ScopeError {}

pub mod binding;
pub mod capture_config;
pub mod env;
pub mod git;
pub mod marker;
mod note;
pub mod paths;
pub mod problems;
mod resolve;
pub mod root;
pub mod session;
pub mod walk;

pub use env::is_truthy;
pub use note::{report, scope_note};
pub use resolve::{resolve, DEFAULT_WORKSPACE};
