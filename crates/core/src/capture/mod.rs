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

mod excluder;
mod nested;
mod output;
mod path;
mod policy;
mod shell;
mod tools;

pub use excluder::Excluder;
pub use output::{filter_output, filter_text};
pub use path::MAX_CANDIDATE_CHARS;
pub use policy::{MAX_MATCH_WORK, MAX_OUTPUT_MATCH_WORK, MAX_PATTERNS, MAX_PATTERN_CHARS};
pub use shell::MAX_SHELL_DEPTH;

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

/// `$HOME` as scope resolution reads it (unset or empty: none), normalised.
fn env_home() -> Option<NormPath> {
    crate::scope::env::home_env()
        .and_then(|h| h.into_string().ok())
        .and_then(|h| norm_abs(&h))
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
    // The candidates a kept call was decided on, so they are not collected twice.
    let mut kept = None;
    let here = decide_here(config, home, event, &mut kept);
    if here.disposition != Disposition::Keep || !event.kind.is_tool_event() {
        return here;
    }
    let home = home_path(home);
    let Some(paths) = kept.or_else(|| candidates_of(event, home.as_ref())) else {
        return here;
    };
    nested::decide(&paths, home.as_ref(), event).unwrap_or(here)
}

/// The candidates of a file, shell or unknown tool event (`None` for other
/// tools, or when they cannot be collected).
fn candidates_of(event: &Event, home: Option<&NormPath>) -> Option<Vec<NormPath>> {
    let spec = event
        .tool_name
        .as_deref()
        .and_then(|n| spec_of(&event.agent, n))
        .map(|(s, _)| s);
    let cwd = event.cwd.as_deref().and_then(norm_abs);
    let input = event.tool_input.as_ref();
    let c = match (spec.map_or(ToolFamily::Unknown, |s| s.family), spec) {
        (ToolFamily::File, Some(spec)) => file_candidates(spec, input, cwd.as_ref(), home),
        (ToolFamily::Shell, Some(spec)) => shell_candidates(spec, input, cwd.as_ref(), home),
        (ToolFamily::Unknown, _) if event.tool_name.is_some() => {
            unknown_candidates(input, cwd.as_ref(), home)
        }
        _ => return None,
    };
    c.ok().map(|c| c.paths)
}

/// The decision under the policy of the markers on the walk from the
/// event's working directory. A call kept after its candidates were checked
/// hands them out in `kept`.
fn decide_here(
    config: &CaptureConfig,
    home: Option<&Path>,
    event: &Event,
    kept: &mut Option<Vec<NormPath>>,
) -> Decision {
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
        CaptureConfig::Active {
            marker, patterns, ..
        } => (marker, patterns),
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
        // A family comes from a spec: a File or Shell family has one.
        (ToolFamily::File | ToolFamily::Shell, None) => {
            return Decision::new(state, family, 0, Keep, NotApplicable)
        }
        // Unknown tools (MCP tools, plugins' tools, BashOutput, Task):
        // every path-like token of their input, like interpreter code.
        (ToolFamily::Unknown, _) => unknown_candidates(input, cwd.as_ref(), home.as_ref()),
    };
    let md = |n| Decision::new(state, family, n, MetadataOnly, MissingOrMalformed);
    let c = match collected {
        Ok(c) => c,
        Err(count) => return md(count),
    };
    let mut outcome = match_all(&mut policy, &c.paths);
    if outcome == MatchOutcome::NoMatch {
        // Other roads to the same file: a symlink in the path (`link/key.txt`
        // with `link -> secret`) is resolved and checked again.
        let linked = resolved_links(&c.paths, marker_dir.as_ref());
        if !linked.is_empty() {
            outcome = match_all(&mut policy, &linked);
        }
    }
    match outcome {
        MatchOutcome::Match => Decision::new(state, family, c.count, Drop, Extracted),
        MatchOutcome::OverBudget => md(c.count),
        MatchOutcome::NoMatch => {
            let reduced = c.reduced.or_else(|| {
                // A file or unknown tool given a directory that holds an
                // excluded path (`read_many_files` of `.`) reads what the
                // path rules exclude: metadata-only.
                let reads_dirs = matches!(family, ToolFamily::File | ToolFamily::Unknown);
                (reads_dirs && c.paths.iter().any(|p| holds_excluded(&mut policy, p)))
                    .then_some(Extracted)
            });
            match reduced {
                Some(ext) => Decision::new(state, family, c.count, MetadataOnly, ext),
                None => {
                    let d = Decision::new(state, family, c.count, Keep, Extracted);
                    *kept = Some(c.paths);
                    d
                }
            }
        }
    }
}

/// The candidates whose path goes through a symlink, resolved: each one
/// that exists and whose real path differs from its written path. A real
/// path inside the marker's real directory is written back under the
/// marker's directory as the patterns know it (so a project reached through
/// a symlinked parent still matches). Only candidates holding a `/` after
/// the root are looked at (shell words such as `ls` are not paths).
fn resolved_links(paths: &[NormPath], marker_dir: Option<&NormPath>) -> Vec<NormPath> {
    let mut out = Vec::new();
    let mut real_marker: Option<Option<std::path::PathBuf>> = None;
    for p in paths {
        if p.flavour != path::Flavour::Posix || !p.text[p.root_len..].contains('/') {
            continue;
        }
        if !through_a_link(Path::new(&p.text), marker_dir) {
            continue;
        }
        let Ok(real) = std::fs::canonicalize(&p.text) else {
            continue;
        };
        let real_marker = real_marker
            .get_or_insert_with(|| marker_dir.and_then(|d| std::fs::canonicalize(&d.text).ok()));
        let mut text = real.to_string_lossy().into_owned();
        if let (Some(rm), Some(md)) = (&real_marker, marker_dir) {
            if let Ok(rest) = real.strip_prefix(rm) {
                text = Path::new(&md.text)
                    .join(rest)
                    .to_string_lossy()
                    .into_owned();
            }
        }
        if text != p.text {
            if let Ok(n) = path::normalize(&text, None, None, MAX_CANDIDATE_CHARS) {
                out.push(n);
            }
        }
    }
    out
}

/// Does `p` go through a symlink? One `lstat` per component below the
/// marker's directory (whose own ancestors the walk already took as
/// written), or per component of a path outside it; a component that does
/// not exist ends the look (nothing there to resolve).
fn through_a_link(p: &Path, marker_dir: Option<&NormPath>) -> bool {
    let base = marker_dir
        .map(|d| Path::new(&d.text))
        .filter(|d| p.starts_with(d));
    let mut cur = base.map_or_else(std::path::PathBuf::new, Path::to_path_buf);
    let rest = base.map_or(p, |b| p.strip_prefix(b).unwrap_or(p));
    for c in rest.components() {
        cur.push(c);
        if matches!(c, std::path::Component::RootDir) {
            continue;
        }
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

/// Could the directory at `p` hold an excluded path? An ancestor of a
/// pattern's literal part always could (`.` under `secret/**`, whether or
/// not it exists here); below that, only an existing directory under a
/// pattern with a wildcard (`src` under `**/.env`).
fn holds_excluded(policy: &mut Policy, p: &NormPath) -> bool {
    policy.reset_work();
    match policy.contains_prefix(p) {
        MatchOutcome::NoMatch => {}
        _ => return true,
    }
    policy.wild_below(p) && p.flavour == path::Flavour::Posix && Path::new(&p.text).is_dir()
}

/// Most bytes of an unknown tool's input scanned for paths; past it the
/// call is metadata-only.
pub const MAX_UNKNOWN_INPUT_BYTES: usize = 64 * 1024;

/// An unknown tool's candidates: each string of its input (at any depth)
/// that looks like a path, and each path-like token inside its strings.
fn unknown_candidates(
    input: Option<&serde_json::Value>,
    cwd: Option<&NormPath>,
    home: Option<&NormPath>,
) -> Collect {
    let mut strings = Vec::new();
    let mut bytes = 0usize;
    if let Some(v) = input {
        if !collect_strings(v, &mut strings, &mut bytes, 0) {
            return Err(0);
        }
    }
    let mut raw: Vec<&str> = Vec::new();
    for s in &strings {
        let whole = s.trim();
        if shell::path_like(whole) && !whole.contains(char::is_whitespace) {
            raw.push(whole);
        }
        for (t, _) in shell::scan_tokens(s) {
            if shell::path_like(t) {
                raw.push(t);
            }
        }
    }
    raw.sort_unstable();
    raw.dedup();
    if raw.len() > MAX_CANDIDATES {
        return Err(raw.len());
    }
    let mut paths = Vec::with_capacity(raw.len());
    for r in &raw {
        match candidate(r, cwd, home) {
            Ok(p) => paths.push(p),
            Err(Unusable::NoBase | Unusable::TooLong | Unusable::NoHome) => return Err(raw.len()),
            Err(_) => {}
        }
        paths.extend(path::msys_drive(r, cwd, MAX_CANDIDATE_CHARS));
    }
    Ok(Collected {
        paths,
        count: raw.len(),
        reduced: None,
    })
}

/// The strings of `v`, depth-first; `false` past [`MAX_UNKNOWN_INPUT_BYTES`]
/// or a nesting of 32.
fn collect_strings<'v>(
    v: &'v serde_json::Value,
    out: &mut Vec<&'v str>,
    bytes: &mut usize,
    depth: usize,
) -> bool {
    use serde_json::Value;
    if depth > 32 {
        return false;
    }
    match v {
        Value::String(s) => {
            *bytes += s.len();
            out.push(s);
            *bytes <= MAX_UNKNOWN_INPUT_BYTES
        }
        Value::Array(a) => a.iter().all(|x| collect_strings(x, out, bytes, depth + 1)),
        Value::Object(o) => o
            .values()
            .all(|x| collect_strings(x, out, bytes, depth + 1)),
        _ => true,
    }
}

/// Candidates to check and how many were extracted.
struct Collected {
    paths: Vec<NormPath>,
    count: usize,
    /// Kept as metadata-only, with this extraction state, even when nothing
    /// matches (a recursive search; a command nested too deep to split).
    reduced: Option<ExtractionState>,
}

/// `Err(count)` when the candidates cannot all be checked (missing,
/// malformed, past a bound).
type Collect = Result<Collected, usize>;

/// A file tool's paths, from its documented fields only. Every path must be
/// usable.
fn file_candidates(
    spec: &tools::ToolSpec,
    input: Option<&serde_json::Value>,
    cwd: Option<&NormPath>,
    home: Option<&NormPath>,
) -> Collect {
    let mut raw = tools::file_paths(&spec.extract, input).map_err(|_| 0usize)?;
    // Globs with braces (`read_many_files`' `{src,secret}/**`): each expansion.
    if raw.iter().any(|r| r.contains('{')) {
        let mut all = Vec::new();
        for r in raw {
            match shell::expand_braces(&r) {
                Some(x) if r.contains('{') => all.extend(x),
                Some(_) => all.push(r),
                None => return Err(MAX_CANDIDATES + 1),
            }
        }
        raw = all;
    }
    if raw.len() > MAX_CANDIDATES {
        return Err(raw.len());
    }
    let mut paths = raw
        .iter()
        .map(|r| candidate(r, cwd, home))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| raw.len())?;
    paths.extend(
        raw.iter()
            .filter_map(|r| path::msys_drive(r, cwd, MAX_CANDIDATE_CHARS)),
    );
    Ok(Collected {
        paths,
        count: raw.len(),
        reduced: None,
    })
}

/// The directory a shell tool runs in: its `workdir`/`cwd` field (joined to
/// the event's cwd), else the event's cwd. `Err` when the field is unusable.
fn shell_base(
    call: &tools::ShellCall,
    cwd: Option<&NormPath>,
    home: Option<&NormPath>,
) -> Result<Option<NormPath>, Unusable> {
    match call.base.as_deref() {
        Some(b) => path::normalize(b, cwd, home, MAX_CANDIDATE_CHARS).map(Some),
        None => Ok(cwd.cloned()),
    }
}

/// A shell tool's candidates (distinct; see [`shell`]), resolved against its
/// base directory. Words that cannot name a file (`C:foo`) are skipped;
/// words that cannot be checked (no base, too long, `~/` without a home), a
/// command nested too deep and more than [`MAX_CANDIDATES`] candidates make
/// the call uncheckable. Under an active policy a recursive search or
/// listing is metadata-only.
fn shell_candidates(
    spec: &tools::ToolSpec,
    input: Option<&serde_json::Value>,
    cwd: Option<&NormPath>,
    home: Option<&NormPath>,
) -> Collect {
    let call = tools::shell_call(&spec.extract, input).ok_or(0usize)?;
    let base = shell_base(&call, cwd, home).map_err(|_| 0usize)?;
    let scan = shell::scan(&call.command);
    let count = scan.words.len() + usize::from(scan.over);
    if scan.over {
        return Err(count);
    }
    let mut paths = Vec::with_capacity(count);
    for w in &scan.words {
        match candidate(w, base.as_ref(), home) {
            Ok(p) => paths.push(p),
            Err(Unusable::NoBase | Unusable::TooLong | Unusable::NoHome) => return Err(count),
            Err(_) => {}
        }
        paths.extend(path::msys_drive(w, base.as_ref(), MAX_CANDIDATE_CHARS));
    }
    let reduced = if scan.too_deep {
        Some(ExtractionState::MissingOrMalformed)
    } else if scan.recursive {
        Some(ExtractionState::Extracted)
    } else {
        None
    };
    Ok(Collected {
        paths,
        count,
        reduced,
    })
}

/// Placeholder of [`expand_known_vars`] for the repository's top directory.
const TOPLEVEL: &str = "\u{0}toplevel";

/// One shell word or scanned token as a path: known variables expanded
/// (`$HOME`, `$PWD`, `~+`, `$(pwd)`, `$(git rev-parse --show-toplevel)`),
/// normalised against `base`, and `/proc/self/cwd` (or any process's
/// `cwd`) read as `base`, `/proc/self/root` as `/`.
fn candidate(
    w: &str,
    base: Option<&NormPath>,
    home: Option<&NormPath>,
) -> Result<NormPath, Unusable> {
    let expanded = expand_known_vars(w);
    let owned;
    let raw: &str = match expanded.strip_prefix(TOPLEVEL) {
        Some(rest) => {
            let top = base.map(toplevel).ok_or(Unusable::NoBase)?;
            owned = format!("{top}{rest}");
            &owned
        }
        None => &expanded,
    };
    let p = path::normalize(raw, base, home, MAX_CANDIDATE_CHARS)?;
    if p.flavour == path::Flavour::Posix {
        if let Some(rest) = proc_cwd_rest(&p.text) {
            let b = base.ok_or(Unusable::NoBase)?;
            return path::normalize(
                &format!("{}/{rest}", b.text),
                None,
                None,
                MAX_CANDIDATE_CHARS,
            );
        }
        if let Some(rest) = p.text.strip_prefix("/proc/self/root/") {
            return path::normalize(&format!("/{rest}"), None, None, MAX_CANDIDATE_CHARS);
        }
    }
    Ok(p)
}

/// What follows `/proc/<self|thread-self|pid>/cwd/` in `text`.
fn proc_cwd_rest(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("/proc/")?;
    let (who, rest) = rest.split_once('/')?;
    let valid = who == "self" || who == "thread-self" || who.bytes().all(|b| b.is_ascii_digit());
    if !valid {
        return None;
    }
    match rest.strip_prefix("cwd") {
        Some("") => Some(""),
        Some(r) => r.strip_prefix('/'),
        None => None,
    }
}

/// The top of the repository holding `base`: the nearest ancestor with a
/// `.git` entry, else `base` itself.
fn toplevel(base: &NormPath) -> String {
    let mut dir = Path::new(&base.text);
    loop {
        if dir.join(".git").symlink_metadata().is_ok() {
            return dir.to_string_lossy().into_owned();
        }
        match dir.parent() {
            Some(p) => dir = p,
            None => return base.text.clone(),
        }
    }
}

/// Variables known at hook time, at the start of a word: `$HOME` and
/// `${HOME}` are `~`, `$PWD` and `${PWD}` the directory the command runs in.
fn expand_known_vars(w: &str) -> std::borrow::Cow<'_, str> {
    const VARS: &[(&str, &str)] = &[
        ("${HOME}", "~"),
        ("$HOME", "~"),
        ("${PWD}", "."),
        ("$PWD", "."),
        ("~+", "."),
        ("$(pwd)", "."),
        ("$(pwd -P)", "."),
        ("$(pwd -L)", "."),
        ("`pwd`", "."),
        // The repository's top: the marker's tree, checked from the command's
        // directory (see `toplevel`).
        ("$(git rev-parse --show-toplevel)", TOPLEVEL),
        ("`git rev-parse --show-toplevel`", TOPLEVEL),
    ];
    for (var, to) in VARS {
        if let Some(rest) = w.strip_prefix(var) {
            if rest.is_empty() || rest.starts_with(['/', '\\']) {
                return format!("{to}{rest}").into();
            }
        }
    }
    w.into()
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

/// A shell tool's command line as the agent gave it (an argv array joined
/// by spaces), read from the tool's documented command field only; `None`
/// for other tools or when there is none.
pub fn shell_command_line(event: &Event) -> Option<String> {
    let (spec, _) = event
        .tool_name
        .as_deref()
        .and_then(|n| spec_of(&event.agent, n))?;
    if spec.family != ToolFamily::Shell {
        return None;
    }
    match tools::shell_call(&spec.extract, event.tool_input.as_ref())?.command {
        shell::Command::Line(l) => Some(l.to_string()),
        shell::Command::Argv(argv) => Some(argv.join(" ")),
        shell::Command::Lines(lines) => Some(lines.join("\n")),
    }
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
    let home = env_home();
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
