//! Reading and parsing one `.ai-memory.toml` against the closed schema
//! (DESIGN §2). The whole file is parsed as TOML; a file that cannot be used
//! yields a problem sentence instead of settings, and an invalid capture
//! policy.

use std::io::Read;
use std::path::{Path, PathBuf};

use toml::{Table, Value};

use super::capture_config::capture_config;
use super::{CaptureConfig, Settings, Strategy, MAX_CHARS_MAX, MAX_CHARS_MIN, MAX_MARKER_BYTES};
use crate::names::{is_valid_name, name_problem};

/// What one usable marker declares for scope.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declared {
    pub workspace: Option<String>,
    pub project: Option<String>,
    pub strategy: Option<Strategy>,
    pub settings: Settings,
    /// Whether any scope setting is present (a marker without one is
    /// transparent for scope).
    pub declares_scope: bool,
}

/// One marker file as read from disk.
#[derive(Debug, Clone)]
pub struct Marker {
    pub path: PathBuf,
    /// The declared scope, or why the file cannot be used.
    pub declared: Result<Declared, String>,
    /// The file's capture policy (invalid whenever `declared` is an error).
    pub capture: CaptureConfig,
    /// Unknown keys and similar notes, each naming the file.
    pub warnings: Vec<String>,
}

/// Top-level keys memhook reads (besides the `[recall]`, `[briefing]` and
/// `[capture]` tables).
const SCOPE_KEYS: &[&str] = &[
    "workspace",
    "project",
    "project_strategy",
    "drop_subagent_captures",
    "enabled",
];

/// Read and parse the marker at `path`. Never fails: problems are recorded in
/// the returned value.
pub fn read(path: &Path, home_known: bool) -> Marker {
    from_text(path, load(path), home_known)
}

/// Parse marker bytes as if read from `path` (the fuzz targets and tests
/// feed bytes without a file). Never fails, like [`read`].
pub fn parse(path: &Path, bytes: &[u8], home_known: bool) -> Marker {
    from_text(path, decode(bytes), home_known)
}

fn from_text(path: &Path, text: Result<String, String>, home_known: bool) -> Marker {
    let mut warnings = Vec::new();
    let parsed = text.and_then(|text| match text.parse::<Table>() {
        Ok(table) => Ok((text, table)),
        Err(e) => Err(toml_problem(&text, &e)),
    });
    let (declared, capture) = match parsed {
        Err(problem) => (Err(problem), None),
        Ok((text, table)) => {
            let declared = declare(&table, path, &mut warnings).map_err(|p| p.at_line(&text));
            let capture = capture_config(path, table.get("capture"), home_known);
            (declared, Some(capture))
        }
    };
    let capture = match (&declared, capture) {
        (Err(problem), _) => CaptureConfig::Invalid {
            marker: path.to_path_buf(),
            reason: problem.clone(),
        },
        (Ok(_), Some(c)) => c,
        (Ok(_), None) => unreachable!("a parsed marker always has a capture config"),
    };
    Marker {
        path: path.to_path_buf(),
        declared,
        capture,
        warnings,
    }
}

/// The file's text: at most [`MAX_MARKER_BYTES`], UTF-8, a leading BOM removed.
/// Anything but a regular file (a FIFO, a socket, a device, a symlink that
/// leads nowhere or loops) cannot be read: the marker is unusable and its
/// capture policy invalid (fail closed). A FIFO never blocks the open.
fn load(path: &Path) -> Result<String, String> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = opts
        .open(path)
        .map_err(|e| format!("cannot be read: {e}"))?;
    match file.metadata() {
        Ok(m) if m.is_file() => {}
        Ok(_) => {
            return Err(
                "is not a regular file (a FIFO, socket or device): replace it with a file".into(),
            )
        }
        Err(e) => return Err(format!("cannot be read: {e}")),
    }
    let mut bytes = Vec::with_capacity(1024);
    file.take(MAX_MARKER_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read: {e}"))?;
    decode(&bytes)
}

/// Marker bytes as text: at most [`MAX_MARKER_BYTES`], UTF-8, a leading BOM
/// removed.
fn decode(bytes: &[u8]) -> Result<String, String> {
    if bytes.len() as u64 > MAX_MARKER_BYTES {
        return Err(format!(
            "is larger than {MAX_MARKER_BYTES} bytes; a marker must be small: move bulky content elsewhere"
        ));
    }
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(body) {
        Ok(s) => Ok(s.to_string()),
        Err(e) => Err(format!(
            "is not valid UTF-8 (byte offset {}); save it as UTF-8",
            e.valid_up_to() + (bytes.len() - body.len())
        )),
    }
}

/// A one-line description of a TOML syntax error with its line and column.
fn toml_problem(text: &str, err: &toml::de::Error) -> String {
    let msg = err.message().trim().replace('\n', "; ");
    match err.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("is not valid TOML (line {line}, column {col}): {msg}")
        }
        None => format!("is not valid TOML: {msg}"),
    }
}

/// Why a parsed marker cannot be used, and which key says so (to name its
/// line).
#[derive(Debug, Clone, PartialEq, Eq)]
struct KeyProblem {
    /// The table holding the key (`None` for top level).
    section: Option<&'static str>,
    key: String,
    message: String,
}

impl KeyProblem {
    fn top(key: &str) -> impl FnOnce(String) -> Self + '_ {
        move |message| KeyProblem {
            section: None,
            key: key.to_string(),
            message,
        }
    }

    fn within<'k>(section: &'static str, key: &'k str) -> impl FnOnce(String) -> Self + 'k {
        move |message| KeyProblem {
            section: Some(section),
            key: key.to_string(),
            message,
        }
    }

    /// The problem sentence, naming the key's line in `text` when it can
    /// be found (`memhook status` and the hook's warning point the user at
    /// it).
    fn at_line(self, text: &str) -> String {
        match line_of(text, self.section, &self.key) {
            Some(line) => format!("line {line}: {}", self.message),
            None => self.message,
        }
    }
}

/// The 1-based line where `key` (in table `section`, or at top level) is
/// written in `text`. Only called when the marker has a problem.
fn line_of(text: &str, section: Option<&str>, key: &str) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    fn find<'t, 'i>(
        t: &'t DeTable<'i>,
        name: &str,
    ) -> Option<(std::ops::Range<usize>, &'t DeValue<'i>)> {
        t.iter()
            .find(|(k, _)| k.get_ref().as_ref() == name)
            .map(|(k, v)| (k.span(), v.get_ref()))
    }
    let doc = DeTable::parse(text).ok()?;
    let (span, _) = match section {
        None => find(doc.get_ref(), key)?,
        Some(s) => match find(doc.get_ref(), s)? {
            (_, DeValue::Table(t)) => find(t, key)?,
            found => found,
        },
    };
    Some(text.get(..span.start)?.matches('\n').count() + 1)
}

fn declare(table: &Table, path: &Path, warnings: &mut Vec<String>) -> Result<Declared, KeyProblem> {
    let mut d = Declared::default();
    let file = path.display();
    for (key, value) in table {
        let top = KeyProblem::top(key);
        match key.as_str() {
            "workspace" => d.workspace = Some(name(key, value).map_err(top)?),
            "project" => d.project = Some(name(key, value).map_err(top)?),
            "project_strategy" => d.strategy = Some(strategy(value).map_err(top)?),
            "drop_subagent_captures" => {
                d.settings.drop_subagent_captures = truthy(key, value).map_err(top)?
            }
            "enabled" => d.settings.enabled = truthy(key, value).map_err(top)?,
            "recall" => {
                let t = section(key, value).map_err(top)?;
                for (k, v) in t {
                    match k.as_str() {
                        "default_global" => {
                            d.settings.default_global = truthy("[recall] default_global", v)
                                .map_err(KeyProblem::within("recall", k))?;
                            d.declares_scope = true;
                        }
                        _ => {
                            warnings.push(format!("{file}: unknown key `{k}` in [recall] ignored"))
                        }
                    }
                }
            }
            "briefing" => {
                let t = section(key, value).map_err(top)?;
                for (k, v) in t {
                    let within = KeyProblem::within("briefing", k);
                    match k.as_str() {
                        "inject_on_session_start" => {
                            d.settings.inject_on_session_start =
                                truthy("[briefing] inject_on_session_start", v).map_err(within)?;
                            d.declares_scope = true;
                        }
                        "file_history" => {
                            d.settings.file_history =
                                truthy("[briefing] file_history", v).map_err(within)?;
                            d.declares_scope = true;
                        }
                        "max_chars" => {
                            d.settings.max_chars = max_chars(v).map_err(within)?;
                            d.declares_scope = true;
                        }
                        _ => warnings
                            .push(format!("{file}: unknown key `{k}` in [briefing] ignored")),
                    }
                }
            }
            "capture" => {}
            other => warnings.push(unknown_top_level(&file.to_string(), other)),
        }
        if SCOPE_KEYS.contains(&key.as_str()) {
            d.declares_scope = true;
        }
    }
    Ok(d)
}

fn unknown_top_level(file: &str, key: &str) -> String {
    let hint = match key {
        "default_global" => " (did you mean it under [recall]?)",
        "inject_on_session_start" | "max_chars" => " (did you mean it under [briefing]?)",
        "ignore_paths" => " (did you mean it under [capture]?)",
        _ => "",
    };
    format!("{file}: unknown key `{key}` ignored{hint}")
}

fn section<'a>(key: &str, value: &'a Value) -> Result<&'a Table, String> {
    value.as_table().ok_or_else(|| {
        format!(
            "`{key}` must be a table ([{key}]), found {}",
            value.type_str()
        )
    })
}

fn name(key: &str, value: &Value) -> Result<String, String> {
    let s = value.as_str().ok_or_else(|| {
        format!(
            "`{key}` must be a string such as {key} = \"acme\", found {}",
            value.type_str()
        )
    })?;
    if is_valid_name(s) {
        Ok(s.to_string())
    } else {
        Err(format!("`{key}`: {}", name_problem(s)))
    }
}

fn strategy(value: &Value) -> Result<Strategy, String> {
    match value.as_str() {
        Some("basename") => Ok(Strategy::Basename),
        Some("repo-root" | "repo_root") => Ok(Strategy::RepoRoot),
        Some(other) => Err(format!(
            "`project_strategy` = {other:?} is not a strategy: use \"basename\" or \"repo-root\""
        )),
        None => Err(format!(
            "`project_strategy` must be a string (\"basename\" or \"repo-root\"), found {}",
            value.type_str()
        )),
    }
}

/// `true`/`1`/`yes`/`on` (bare or quoted, case-insensitive) are true; any
/// other boolean, integer or string is false; other types are an error.
fn truthy(key: &str, value: &Value) -> Result<bool, String> {
    match value {
        Value::Boolean(b) => Ok(*b),
        Value::Integer(i) => Ok(*i == 1),
        Value::String(s) => Ok(super::env::is_truthy(s)),
        other => Err(format!(
            "`{key}` must be true/false, 1/0 or a string like \"yes\", found {}",
            other.type_str()
        )),
    }
}

/// An integer or a numeric string, clamped to `[MAX_CHARS_MIN, MAX_CHARS_MAX]`.
fn max_chars(value: &Value) -> Result<usize, String> {
    let n: i128 = match value {
        Value::Integer(i) => i128::from(*i),
        Value::String(s) => parse_int(s.trim()).ok_or_else(|| {
            format!(
                "[briefing] max_chars = {s:?} is not a whole number: write e.g. max_chars = 4000"
            )
        })?,
        other => {
            return Err(format!(
                "[briefing] max_chars must be a whole number, found {}",
                other.type_str()
            ))
        }
    };
    Ok(n.clamp(MAX_CHARS_MIN as i128, MAX_CHARS_MAX as i128) as usize)
}

/// `[+-]?[0-9]+`, saturating far beyond the clamp range.
fn parse_int(s: &str) -> Option<i128> {
    let (neg, digits) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut n: i128 = 0;
    for b in digits.bytes() {
        n = (n * 10 + i128::from(b - b'0')).min(i128::from(u64::MAX));
    }
    Some(if neg { -n } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::MAX_CHARS_DEFAULT;

    fn parse(src: &str) -> (Result<Declared, String>, Vec<String>) {
        let t: Table = src.parse().unwrap();
        let mut w = Vec::new();
        let d = declare(&t, Path::new("/m/.ai-memory.toml"), &mut w).map_err(|p| p.message);
        (d, w)
    }

    #[test]
    fn an_unusable_key_is_named_with_its_line() {
        let at = |src: &str| {
            parse_bytes(src)
                .declared
                .expect_err("the marker must be unusable")
        };
        let p = at("# team marker\nworkspace = 'acme'\nproject = 'Bad Name'\n");
        assert!(p.starts_with("line 3: `project`:"), "{p}");
        let p = at(
            "project = 'api'\n\n[briefing]\ninject_on_session_start = true\nmax_chars = 'lots'\n",
        );
        assert!(p.starts_with("line 5: [briefing] max_chars"), "{p}");
        let p = at("[recall]\ndefault_global = [1]\n");
        assert!(p.starts_with("line 2: `[recall] default_global`"), "{p}");
        // A dotted key is found too; a problem with no key keeps its words.
        let p = at("briefing.max_chars = 'x'\n");
        assert!(p.starts_with("line 1: [briefing] max_chars"), "{p}");
    }

    fn parse_bytes(src: &str) -> Marker {
        super::parse(Path::new("/m/.ai-memory.toml"), src.as_bytes(), true)
    }

    #[test]
    fn full_schema() {
        let (d, w) = parse(
            "workspace = 'acme'\nproject = 'api'\nproject_strategy = 'repo_root'\n\
             drop_subagent_captures = 'YES'\n[recall]\ndefault_global = 1\n\
             [briefing]\ninject_on_session_start = true\nmax_chars = '7000'\n",
        );
        let d = d.unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(d.workspace.as_deref(), Some("acme"));
        assert_eq!(d.project.as_deref(), Some("api"));
        assert_eq!(d.strategy, Some(Strategy::RepoRoot));
        assert!(d.declares_scope);
        assert_eq!(
            d.settings,
            Settings {
                drop_subagent_captures: true,
                default_global: true,
                inject_on_session_start: true,
                max_chars: 7000,
                enabled: true,
                file_history: true,
            }
        );
    }

    #[test]
    fn transparency() {
        for src in [
            "",
            "[capture]\nignore_paths = ['x']",
            "other = 1",
            "[recall]",
            "[briefing]\nnote = 'x'",
        ] {
            assert!(!parse(src).0.unwrap().declares_scope, "{src}");
        }
        for src in [
            "drop_subagent_captures = false",
            "[recall]\ndefault_global = 'no'",
            "[briefing]\nmax_chars = 1",
            "project_strategy = 'basename'",
        ] {
            assert!(parse(src).0.unwrap().declares_scope, "{src}");
        }
    }

    #[test]
    fn enabled_is_a_setting_that_decides_the_scope() {
        assert!(Settings::default().enabled);
        for (src, want) in [
            ("enabled = false", false),
            ("enabled = 'no'", false),
            ("enabled = 'on'", true),
        ] {
            let (d, w) = parse(src);
            let d = d.unwrap();
            assert_eq!(d.settings.enabled, want, "{src}");
            assert!(d.declares_scope && w.is_empty(), "{src}: {w:?}");
        }
        assert!(parse("enabled = 1.5").0.is_err());
    }

    #[test]
    fn truthy_values() {
        for (v, want) in [
            ("true", true),
            ("false", false),
            ("1", true),
            ("0", false),
            ("2", false),
            ("'On'", true),
            ("' yes '", true),
            ("'TRUE'", true),
            ("'off'", false),
            ("''", false),
            ("'y'", false),
        ] {
            let (d, _) = parse(&format!("drop_subagent_captures = {v}"));
            assert_eq!(d.unwrap().settings.drop_subagent_captures, want, "{v}");
        }
        for bad in ["1.0", "[true]", "{a = 1}", "1979-05-27"] {
            assert!(
                parse(&format!("drop_subagent_captures = {bad}")).0.is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn max_chars_clamps_at_edges() {
        for (v, want) in [
            ("499", MAX_CHARS_MIN),
            ("500", 500),
            ("501", 501),
            ("20000", 20000),
            ("20001", MAX_CHARS_MAX),
            ("-5", MAX_CHARS_MIN),
            ("'  900 '", 900),
            ("'+900'", 900),
            ("'99999999999999999999999999'", MAX_CHARS_MAX),
            ("0", MAX_CHARS_MIN),
        ] {
            let (d, _) = parse(&format!("[briefing]\nmax_chars = {v}"));
            assert_eq!(d.unwrap().settings.max_chars, want, "{v}");
        }
        assert_eq!(parse("").0.unwrap().settings.max_chars, MAX_CHARS_DEFAULT);
        for bad in ["'abc'", "''", "4.5", "true", "'4_000'", "'1e4'"] {
            assert!(
                parse(&format!("[briefing]\nmax_chars = {bad}")).0.is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn wrong_types_and_names() {
        for bad in [
            "workspace = 1",
            "workspace = 'Acme'",
            "workspace = ''",
            "project = ['a']",
            "project = '-x'",
            "project_strategy = 'Repo-Root'",
            "project_strategy = true",
            "recall = 1",
            "briefing = 'x'",
        ] {
            let err = parse(bad).0.unwrap_err();
            assert!(!err.is_empty(), "{bad}");
        }
    }

    #[test]
    fn unknown_keys_warn_with_hints() {
        let (d, w) = parse("default_global = true\nfoo = 1\n[recall]\nbar = 2\n[briefing]\nbaz = 3\n[other]\nx = 1");
        assert!(!d.unwrap().declares_scope);
        assert_eq!(w.len(), 5, "{w:?}");
        assert!(
            w.iter()
                .any(|m| m.contains("`default_global` ignored (did you mean it under [recall]?)")),
            "{w:?}"
        );
    }
}
