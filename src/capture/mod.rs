//! Capture policy: which tool activity a project keeps out of capture
//! (DESIGN §3). The marker's `[capture]` section arrives validated as
//! [`crate::scope::CaptureConfig`]; this module compiles it, extracts
//! candidate paths from tool arguments and decides a [`Disposition`].

/// Capture protocol version reported by `--check-capture` and in records.
pub const CAPTURE_PROTOCOL_VERSION: u32 = 1;

/// State of the nearest marker's capture policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyState {
    Absent,
    Inactive,
    Active,
    Invalid,
}

/// Tool families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFamily {
    File,
    SearchList,
    Shell,
    Unknown,
}

/// What happens to the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    Keep,
    Drop,
    MetadataOnly,
}

/// How candidate paths were extracted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtractionState {
    NotApplicable,
    Extracted,
    MissingOrMalformed,
    UnsupportedSchema,
}

/// The decision for one event. Never holds a path, pattern or payload byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub policy_state: PolicyState,
    pub tool_family: ToolFamily,
    pub path_count: u32,
    pub disposition: Disposition,
    pub extraction_state: ExtractionState,
}

impl PolicyState {
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyState::Absent => "absent",
            PolicyState::Inactive => "inactive",
            PolicyState::Active => "active",
            PolicyState::Invalid => "invalid",
        }
    }
}

impl ToolFamily {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolFamily::File => "file",
            ToolFamily::SearchList => "search-list",
            ToolFamily::Shell => "shell",
            ToolFamily::Unknown => "unknown",
        }
    }
}

impl Disposition {
    pub fn as_str(self) -> &'static str {
        match self {
            Disposition::Keep => "keep",
            Disposition::Drop => "drop",
            Disposition::MetadataOnly => "metadata-only",
        }
    }
}

impl ExtractionState {
    pub fn as_str(self) -> &'static str {
        match self {
            ExtractionState::NotApplicable => "not-applicable",
            ExtractionState::Extracted => "extracted",
            ExtractionState::MissingOrMalformed => "missing-or-malformed",
            ExtractionState::UnsupportedSchema => "unsupported-schema",
        }
    }
}

mod path;
mod policy;
mod shell;
mod tools;

pub use path::MAX_CANDIDATE_CHARS;
pub use policy::{MAX_MATCH_WORK, MAX_PATTERNS, MAX_PATTERN_CHARS};

use std::path::Path;

use crate::event::{Agent, Event};
use crate::scope::CaptureConfig;
use path::{NormPath, Unusable};
use policy::{MatchOutcome, Policy};

/// Most candidate paths (file paths or shell words) checked per tool call.
pub const MAX_CANDIDATES: usize = 32;

impl Decision {
    fn new(
        policy_state: PolicyState,
        tool_family: ToolFamily,
        path_count: usize,
        disposition: Disposition,
        extraction_state: ExtractionState,
    ) -> Decision {
        Decision {
            policy_state,
            tool_family,
            path_count: path_count.min(u32::MAX as usize) as u32,
            disposition,
            extraction_state,
        }
    }

    /// The `--check-capture` object: exactly these six keys, in this order.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"version\":{},\"policy_state\":\"{}\",\"tool_family\":\"{}\",\"path_count\":{},\"disposition\":\"{}\",\"extraction_state\":\"{}\"}}",
            CAPTURE_PROTOCOL_VERSION,
            self.policy_state.as_str(),
            self.tool_family.as_str(),
            self.path_count,
            self.disposition.as_str(),
            self.extraction_state.as_str(),
        )
    }
}

/// The policy state of a scope's capture configuration.
pub fn state_of(config: &CaptureConfig) -> PolicyState {
    match config {
        CaptureConfig::Absent => PolicyState::Absent,
        CaptureConfig::Inactive { .. } => PolicyState::Inactive,
        CaptureConfig::Active { .. } => PolicyState::Active,
        CaptureConfig::Invalid { .. } => PolicyState::Invalid,
    }
}

/// The tool's spec: the agent's own table first, else any agent's
/// (`documented` = found in the agent's own table).
fn spec_of(agent: &Agent, name: &str) -> Option<(&'static tools::ToolSpec, bool)> {
    if let Some(s) = tools::lookup(agent, name) {
        return Some((s, true));
    }
    tools::lookup(&Agent::Other(String::new()), name).map(|s| (s, false))
}

/// The family of `tool_name` for `agent`, and whether the name is one of
/// the agent's documented tools (records keep the name only then). Names
/// compare ASCII case-insensitively; a name another agent documents gets
/// that family (so a renamed tool is never less protected).
pub fn classify_tool(agent: &Agent, tool_name: &str) -> (ToolFamily, bool) {
    match spec_of(agent, tool_name) {
        Some((s, documented)) => (s.family, documented),
        None => (ToolFamily::Unknown, false),
    }
}

fn norm_abs(p: &str) -> Option<NormPath> {
    path::normalize(p, None, None, MAX_CANDIDATE_CHARS).ok()
}

fn home_path(home: Option<&Path>) -> Option<NormPath> {
    home.and_then(Path::to_str)
        .filter(|h| !h.is_empty())
        .and_then(norm_abs)
}

/// Decide what happens to `event` under `config` (DESIGN §3). `home`
/// expands `~/` in patterns and shell words. Non-tool events are always
/// kept (`not-applicable`): the policy is about tool activity.
pub fn decide(config: &CaptureConfig, home: Option<&Path>, event: &Event) -> Decision {
    use Disposition::*;
    use ExtractionState::*;
    let state = state_of(config);
    if !event.kind.is_tool_event() {
        return Decision::new(state, ToolFamily::Unknown, 0, Keep, NotApplicable);
    }
    let spec = event
        .tool_name
        .as_deref()
        .and_then(|n| spec_of(&event.agent, n))
        .map(|(s, _)| s);
    let family = spec.map_or(ToolFamily::Unknown, |s| s.family);
    let (marker, patterns) = match config {
        CaptureConfig::Absent | CaptureConfig::Inactive { .. } => {
            return Decision::new(state, family, 0, Keep, NotApplicable)
        }
        CaptureConfig::Invalid { .. } => return invalid(event, family),
        CaptureConfig::Active { marker, patterns } => (marker, patterns),
    };
    if event.tool_name.is_none() {
        // A tool event whose tool we cannot name: fail closed.
        return Decision::new(state, family, 0, MetadataOnly, UnsupportedSchema);
    }
    let home = home_path(home);
    let marker_dir = marker.parent().and_then(Path::to_str).and_then(norm_abs);
    let Some(mut policy) = marker_dir
        .as_ref()
        .and_then(|d| Policy::compile(patterns, d, home.as_ref()).ok())
    else {
        // Patterns the scope check let through but that cannot be rooted
        // here (e.g. `~/` without a home): the policy is invalid.
        return invalid(event, family);
    };
    let cwd = event.cwd.as_deref().and_then(norm_abs);
    let input = event.tool_input.as_ref();
    let collected = match (family, spec) {
        (ToolFamily::SearchList, _) => return Decision::new(state, family, 0, Drop, NotApplicable),
        (ToolFamily::File, Some(spec)) => file_candidates(spec, input, cwd.as_ref(), home.as_ref()),
        (ToolFamily::Shell, Some(spec)) => {
            shell_candidates(spec, input, cwd.as_ref(), home.as_ref())
        }
        _ => return Decision::new(state, family, 0, Keep, NotApplicable),
    };
    let md = |n| Decision::new(state, family, n, MetadataOnly, MissingOrMalformed);
    let (cands, count) = match collected {
        Ok(c) => c,
        Err(count) => return md(count),
    };
    match match_all(&mut policy, &cands) {
        MatchOutcome::Match => Decision::new(state, family, count, Drop, Extracted),
        MatchOutcome::OverBudget => md(count),
        MatchOutcome::NoMatch => Decision::new(state, family, count, Keep, Extracted),
    }
}

/// Candidates to check and how many were extracted; `Err(count)` when they
/// cannot all be checked (missing, malformed, past a bound).
type Collected = Result<(Vec<NormPath>, usize), usize>;

/// A file tool's paths, from its documented fields only. Every path must be
/// usable.
fn file_candidates(
    spec: &tools::ToolSpec,
    input: Option<&serde_json::Value>,
    cwd: Option<&NormPath>,
    home: Option<&NormPath>,
) -> Collected {
    let raw = tools::file_paths(&spec.extract, input).map_err(|_| 0usize)?;
    if raw.len() > MAX_CANDIDATES {
        return Err(raw.len());
    }
    let cands = raw
        .iter()
        .map(|r| path::normalize(r, cwd, home, MAX_CANDIDATE_CHARS))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| raw.len())?;
    Ok((cands, raw.len()))
}

/// A shell tool's words (distinct), resolved against its `workdir`/`cwd`
/// field or the event's cwd. Words that cannot name a file (`C:foo`) are
/// skipped; words that cannot be checked (no base, too long, `~/` without a
/// home) make the call uncheckable.
fn shell_candidates(
    spec: &tools::ToolSpec,
    input: Option<&serde_json::Value>,
    cwd: Option<&NormPath>,
    home: Option<&NormPath>,
) -> Collected {
    let call = tools::shell_call(&spec.extract, input).ok_or(0usize)?;
    let base = match call.base.as_deref() {
        Some(b) => Some(path::normalize(b, cwd, home, MAX_CANDIDATE_CHARS).map_err(|_| 0usize)?),
        None => cwd.cloned(),
    };
    let mut words = shell::candidates(&call.words);
    words.sort_unstable();
    words.dedup();
    if words.len() > MAX_CANDIDATES {
        return Err(words.len());
    }
    let mut cands = Vec::with_capacity(words.len());
    for w in &words {
        match path::normalize(w, base.as_ref(), home, MAX_CANDIDATE_CHARS) {
            Ok(p) => cands.push(p),
            Err(Unusable::NoBase | Unusable::TooLong | Unusable::NoHome) => return Err(words.len()),
            Err(_) => {}
        }
    }
    Ok((cands, words.len()))
}

fn invalid(event: &Event, family: ToolFamily) -> Decision {
    use Disposition::*;
    use ExtractionState::*;
    let (disp, ext) = match family {
        ToolFamily::File | ToolFamily::Shell => (MetadataOnly, NotApplicable),
        _ if event.tool_name.is_none() => (MetadataOnly, UnsupportedSchema),
        _ => (Keep, NotApplicable),
    };
    Decision::new(PolicyState::Invalid, family, 0, disp, ext)
}

fn match_all(policy: &mut Policy, cands: &[NormPath]) -> MatchOutcome {
    policy.reset_work();
    for c in cands {
        match policy.matches(c) {
            MatchOutcome::NoMatch => {}
            other => return other,
        }
    }
    MatchOutcome::NoMatch
}

/// For a KEPT file-family event: the paths it touched, normalised against
/// its cwd (`~/` against `$HOME`), at most [`MAX_CANDIDATES`], each at most
/// [`MAX_CANDIDATE_CHARS`]. Empty for any other family, or when the tool's
/// documented fields hold no usable path.
pub fn kept_file_paths(event: &Event) -> Vec<String> {
    let Some((spec, _)) = event
        .tool_name
        .as_deref()
        .and_then(|n| spec_of(&event.agent, n))
    else {
        return Vec::new();
    };
    if spec.family != ToolFamily::File {
        return Vec::new();
    }
    let Ok(raw) = tools::file_paths(&spec.extract, event.tool_input.as_ref()) else {
        return Vec::new();
    };
    let cwd = event.cwd.as_deref().and_then(norm_abs);
    let home = std::env::var("HOME").ok().and_then(|h| norm_abs(&h));
    let mut out: Vec<String> = Vec::new();
    for r in raw {
        if let Ok(p) = path::normalize(&r, cwd.as_ref(), home.as_ref(), MAX_CANDIDATE_CHARS) {
            if !out.contains(&p.text) {
                out.push(p.text);
            }
        }
        if out.len() == MAX_CANDIDATES {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests;
