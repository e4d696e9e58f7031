//! Retention policy (docs/retention.md), the same for both stores: how
//! many days each class of record is kept, per data dir and per project,
//! read from the data dir's [`RETENTION_FILE`]. Applying it is each
//! store's job (`sqlite/retention.rs`, and the PostgreSQL store's
//! `retention.rs`), with the same cursors and books.

use std::fmt;
use std::path::{Path, PathBuf};

use memhook_core::names::{is_valid_name, name_problem};

/// The retention settings file in the data dir (`key = days` lines, and
/// `[workspace/project]` sections).
pub const RETENTION_FILE: &str = "retention.conf";
/// Milliseconds in a day.
pub const DAY_MS: i64 = 86_400_000;
/// Longest age a setting may give, in days (100 years); 0 keeps forever.
pub const MAX_RETENTION_DAYS: u32 = 36_500;
/// Most projects with a policy of their own (each is scanned on its own
/// in every slice, so their number bounds a slice's work).
pub const MAX_PROJECT_POLICIES: usize = 64;
/// Records of one class one slice looks at, at most (per scope: the data
/// dir's policy, and each project with its own).
pub const RETENTION_SCAN: usize = 2_000;
/// Records one slice removes, at most (all classes and scopes together).
pub const RETENTION_SLICE: usize = 500;
/// Largest settings file read.
pub const MAX_RETENTION_FILE_BYTES: u64 = 64 * 1024;

/// What a record is, for retention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// `pre-tool-use`.
    ToolCalls,
    /// `post-tool-use` (a failed call is `post-tool-use-failure`: other).
    ToolResults,
    /// Every other event.
    Other,
}

impl Class {
    pub const ALL: [Class; 3] = [Class::ToolCalls, Class::ToolResults, Class::Other];

    /// Its key in [`RETENTION_FILE`] and the `retention` table.
    pub fn key(self) -> &'static str {
        match self {
            Class::ToolCalls => "tool-calls",
            Class::ToolResults => "tool-results",
            Class::Other => "everything-else",
        }
    }

    /// The class of a record of `event`.
    pub fn of(event: &str) -> Class {
        match event {
            "pre-tool-use" => Class::ToolCalls,
            "post-tool-use" => Class::ToolResults,
            _ => Class::Other,
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }

    /// The key of this class's cursor and books in the `retention` table:
    /// the class for the data dir's policy, the class and the project
    /// (`tool-calls acme/web`; names hold no space) for a project's own.
    pub fn cursor_key(self, project: Option<(&str, &str)>) -> String {
        match project {
            None => self.key().to_string(),
            Some((w, p)) => format!("{} {w}/{p}", self.key()),
        }
    }

    /// The class a `retention` table key counts for.
    pub fn of_cursor_key(key: &str) -> Option<Class> {
        let class = key.split(' ').next()?;
        Class::ALL.into_iter().find(|c| c.key() == class)
    }
}

/// Default days for tool calls.
pub const DEFAULT_TOOL_CALLS_DAYS: u32 = 30;
/// Default days for successful tool results.
pub const DEFAULT_TOOL_RESULTS_DAYS: u32 = 180;
/// Default days for everything else.
pub const DEFAULT_OTHER_DAYS: u32 = 730;

/// How many days each class is kept (0: forever), for the data dir and
/// for the projects that have a policy of their own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    pub days: [u32; 3],
    /// Sorted by workspace and project, each once.
    pub projects: Vec<ProjectRetention>,
}

/// One project's own policy (a key its section does not give is the data
/// dir's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectRetention {
    pub workspace: String,
    pub project: String,
    pub days: [u32; 3],
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            days: [
                DEFAULT_TOOL_CALLS_DAYS,
                DEFAULT_TOOL_RESULTS_DAYS,
                DEFAULT_OTHER_DAYS,
            ],
            projects: Vec::new(),
        }
    }
}

impl Retention {
    /// A policy of the data dir alone, `days` per class.
    pub fn of_days(days: [u32; 3]) -> Retention {
        Retention {
            days,
            projects: Vec::new(),
        }
    }

    /// The days of `workspace/project`: its own, or the data dir's.
    pub fn days_of(&self, workspace: &str, project: &str) -> [u32; 3] {
        self.projects
            .iter()
            .find(|p| p.workspace == workspace && p.project == project)
            .map_or(self.days, |p| p.days)
    }
}

/// A [`RETENTION_FILE`] that cannot be read or understood: the file, the
/// line (0: the whole file) and what to write instead.
#[derive(Debug)]
pub struct RetentionError {
    pub file: PathBuf,
    pub line: usize,
    pub problem: String,
}

impl fmt::Display for RetentionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.problem)
        } else {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.problem)
        }
    }
}

impl std::error::Error for RetentionError {}

impl Retention {
    /// The settings of `data_dir`: its [`RETENTION_FILE`], or the defaults
    /// when there is none.
    pub fn load(data_dir: &Path) -> Result<Retention, RetentionError> {
        let file = data_dir.join(RETENTION_FILE);
        let whole = |problem: String| RetentionError {
            file: file.clone(),
            line: 0,
            problem,
        };
        match std::fs::metadata(&file) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Retention::default()),
            Ok(m) if m.len() > MAX_RETENTION_FILE_BYTES => {
                return Err(whole(format!(
                    "{} bytes, more than a settings file can be ({MAX_RETENTION_FILE_BYTES}); \
                     keep a line per class and a section per project",
                    m.len()
                )))
            }
            _ => {}
        }
        match std::fs::read_to_string(&file) {
            Ok(text) => Retention::parse(&text, &file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Retention::default()),
            Err(e) => Err(whole(format!(
                "cannot read: {e} (fix its permissions or remove it)"
            ))),
        }
    }

    /// `key = days` lines (`#` starts a comment) for the data dir, then
    /// `[workspace/project]` sections of the same lines for one project
    /// each; a key not given keeps the data dir's value (its default when
    /// the data dir's lines do not give it either).
    pub fn parse(text: &str, file: &Path) -> Result<Retention, RetentionError> {
        let mut out = Retention::default();
        // Each section's name, line and keys given (None: the data dir's).
        let mut sections: Vec<(String, String, usize, [Option<u32>; 3])> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |problem: String| RetentionError {
                file: file.to_path_buf(),
                line: i + 1,
                problem,
            };
            if let Some(inner) = line.strip_prefix('[') {
                let name = inner.strip_suffix(']').ok_or_else(|| {
                    bad(format!(
                        "`{line}`: write a project's section as `[workspace/project]`"
                    ))
                })?;
                let (w, p) = name.trim().split_once('/').ok_or_else(|| {
                    bad(format!(
                        "`[{name}]`: name the project as `[workspace/project]`"
                    ))
                })?;
                let (w, p) = (w.trim(), p.trim());
                for n in [w, p] {
                    if !is_valid_name(n) {
                        return Err(bad(format!("`[{name}]`: {}", name_problem(n))));
                    }
                }
                if let Some((_, _, at, _)) = sections.iter().find(|s| s.0 == w && s.1 == p) {
                    return Err(bad(format!(
                        "`[{w}/{p}]` again (first on line {at}); merge the two sections"
                    )));
                }
                if sections.len() == MAX_PROJECT_POLICIES {
                    return Err(bad(format!(
                        "more than {MAX_PROJECT_POLICIES} projects with a policy of their \
                         own; give the most common ages to the data dir (the lines before \
                         the first section)"
                    )));
                }
                sections.push((w.to_string(), p.to_string(), i + 1, [None; 3]));
                continue;
            }
            let keys = Class::ALL.map(Class::key).join(", ");
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| bad(format!("write `key = days` (keys: {keys})")))?;
            let (key, value) = (key.trim(), value.trim());
            let class = Class::ALL
                .into_iter()
                .find(|c| c.key() == key)
                .ok_or_else(|| bad(format!("unknown key `{key}` (keys: {keys})")))?;
            let days = value
                .parse::<u32>()
                .ok()
                .filter(|d| *d <= MAX_RETENTION_DAYS)
                .ok_or_else(|| {
                    bad(format!(
                        "`{key} = {value}`: write a number of days from 1 to \
                         {MAX_RETENTION_DAYS}, or 0 to keep forever"
                    ))
                })?;
            match sections.last_mut() {
                Some(s) => s.3[class.index()] = Some(days),
                None => out.days[class.index()] = days,
            }
        }
        out.projects = sections
            .into_iter()
            .map(|(workspace, project, _, given)| ProjectRetention {
                workspace,
                project,
                days: std::array::from_fn(|i| given[i].unwrap_or(out.days[i])),
            })
            .collect();
        out.projects
            .sort_by(|a, b| (&a.workspace, &a.project).cmp(&(&b.workspace, &b.project)));
        Ok(out)
    }
}

/// What retention removed: records per class, in [`Class::ALL`] order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Removed {
    pub records: [u64; 3],
    /// When it last removed something (Unix ms), if ever.
    pub last_ms: Option<u64>,
}

impl Removed {
    /// Add one row of the `retention` table (`key`, removed, last time).
    pub fn add_row(&mut self, key: &str, removed: i64, last_ms: Option<i64>) {
        if let Some(c) = Class::of_cursor_key(key) {
            self.records[c.index()] += removed.max(0) as u64;
        }
        if let Some(l) = last_ms {
            self.last_ms = Some(self.last_ms.map_or(l as u64, |m| m.max(l as u64)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_sets_each_class_and_names_what_is_wrong() {
        let f = Path::new("/d/retention.conf");
        assert_eq!(Retention::parse("", f).unwrap(), Retention::default());
        let r = Retention::parse(
            "# keep calls a week\ntool-calls = 7\n\neverything-else = 0 # forever\n",
            f,
        )
        .unwrap();
        assert_eq!(r.days, [7, DEFAULT_TOOL_RESULTS_DAYS, 0]);
        let at_edge = format!("tool-results = {MAX_RETENTION_DAYS}");
        assert_eq!(
            Retention::parse(&at_edge, f).unwrap().days[1],
            MAX_RETENTION_DAYS
        );
        let past = format!("tool-results = {}", MAX_RETENTION_DAYS + 1);
        let err = Retention::parse(&past, f).unwrap_err().to_string();
        assert!(
            err.starts_with("/d/retention.conf:1: `tool-results = 36501`"),
            "{err}"
        );
        let err = Retention::parse("\nprompts = 3", f)
            .unwrap_err()
            .to_string();
        assert!(err.contains(":2: unknown key `prompts`"), "{err}");
        assert!(
            err.contains("tool-calls, tool-results, everything-else"),
            "{err}"
        );
        assert!(Retention::parse("tool-calls 3", f).is_err());
        assert!(Retention::parse("tool-calls = -1", f).is_err());
    }

    #[test]
    fn a_project_section_overrides_what_it_gives_and_inherits_the_rest() {
        let f = Path::new("/d/retention.conf");
        let r = Retention::parse(
            "tool-results = 90\n[acme/web]\ntool-calls = 7\n[acme/api] # kept forever\n\
             tool-calls = 0\ntool-results = 0\neverything-else = 0\n",
            f,
        )
        .unwrap();
        assert_eq!(r.days, [DEFAULT_TOOL_CALLS_DAYS, 90, DEFAULT_OTHER_DAYS]);
        // Sorted by name.
        assert_eq!(r.projects[0].project, "api");
        assert_eq!(r.days_of("acme", "api"), [0, 0, 0]);
        assert_eq!(r.days_of("acme", "web"), [7, 90, DEFAULT_OTHER_DAYS]);
        assert_eq!(r.days_of("acme", "other"), r.days);
        // Every line after a section header belongs to that section.
        let r = Retention::parse("[a/b]\ntool-calls = 3\n", f).unwrap();
        assert_eq!(r.days, Retention::default().days);
        assert_eq!(r.days_of("a", "b")[0], 3);
    }

    #[test]
    fn a_bad_section_names_its_line_and_the_fix() {
        let f = Path::new("/d/retention.conf");
        let err = |text: &str| Retention::parse(text, f).unwrap_err().to_string();
        assert!(err("[acme]").contains(":1: `[acme]`: name the project as `[workspace/project]`"));
        assert!(err("\n[acme/web").contains(":2: `[acme/web`: write a project's section"));
        assert!(
            err("[Acme/web]").contains("not a valid name"),
            "{}",
            err("[Acme/web]")
        );
        let twice = err("[a/b]\ntool-calls = 1\n[a/b]\n");
        assert!(
            twice.contains(":3: `[a/b]` again (first on line 1)"),
            "{twice}"
        );
    }

    #[test]
    fn project_policies_stop_at_their_cap() {
        let f = Path::new("/d/retention.conf");
        let sections = |n: usize| -> String {
            (0..n)
                .map(|i| format!("[w/p{i}]\ntool-calls = 1\n"))
                .collect()
        };
        let at_cap = Retention::parse(&sections(MAX_PROJECT_POLICIES), f).unwrap();
        assert_eq!(at_cap.projects.len(), MAX_PROJECT_POLICIES);
        let err = Retention::parse(&sections(MAX_PROJECT_POLICIES + 1), f)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!(
                ":{}: more than {MAX_PROJECT_POLICIES} projects",
                2 * MAX_PROJECT_POLICIES + 1
            )),
            "{err}"
        );
    }

    #[test]
    fn a_missing_file_is_the_default_policy_and_a_huge_one_is_refused() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(Retention::load(t.path()).unwrap(), Retention::default());
        std::fs::write(t.path().join(RETENTION_FILE), "tool-calls = 1\n").unwrap();
        assert_eq!(Retention::load(t.path()).unwrap().days[0], 1);
        let at_cap = format!(
            "tool-calls = 2\n{}",
            "#".repeat(MAX_RETENTION_FILE_BYTES as usize - 15)
        );
        assert_eq!(at_cap.len() as u64, MAX_RETENTION_FILE_BYTES);
        std::fs::write(t.path().join(RETENTION_FILE), &at_cap).unwrap();
        assert_eq!(Retention::load(t.path()).unwrap().days[0], 2);
        std::fs::write(t.path().join(RETENTION_FILE), format!("{at_cap}#")).unwrap();
        let err = Retention::load(t.path()).unwrap_err();
        assert_eq!(err.line, 0);
        assert!(
            err.to_string().contains("more than a settings file can be"),
            "{err}"
        );
    }

    #[test]
    fn cursor_keys_name_the_class_and_the_project() {
        assert_eq!(Class::ToolCalls.cursor_key(None), "tool-calls");
        let k = Class::ToolResults.cursor_key(Some(("acme", "web")));
        assert_eq!(k, "tool-results acme/web");
        assert_eq!(Class::of_cursor_key(&k), Some(Class::ToolResults));
        assert_eq!(Class::of_cursor_key("other"), None);
        let mut r = Removed::default();
        r.add_row("tool-calls", 2, Some(5));
        r.add_row("tool-calls acme/web", 3, Some(9));
        r.add_row("everything-else", 1, None);
        assert_eq!(r.records, [5, 0, 1]);
        assert_eq!(r.last_ms, Some(9));
    }
}
