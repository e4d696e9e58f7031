//! The last problem of each marker the hook could not use, kept in the data
//! dir so that `memhook status` shows it where the user looks. The hook's
//! own warning goes to the agent's stderr, which most agents hide; meanwhile
//! that project's events are filed under the fallback scope and its file and
//! shell tool events keep metadata only (DESIGN §2, §3).
//!
//! The hook writes [`FILE`] only when a marker's problem is new or changed,
//! so a broken marker costs one small read per event, not a write. Status
//! re-reads each listed marker and shows only the problems that are still
//! there: fixing the file is enough to clear it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{marker, CaptureConfig};
use crate::data_dir::{read_private_file, write_private_file};
use crate::record::clean_capped;

/// The file in the data dir.
pub const FILE: &str = "marker-problems.json";
/// Markers remembered at most (the most recent first).
pub const MAX_PROBLEMS: usize = 16;
/// Longest problem sentence kept (and read back).
pub const MAX_PROBLEM_BYTES: usize = 1024;
/// Longest marker path kept.
pub const MAX_PATH_BYTES: usize = 4096;
/// Largest file read back; anything larger counts as no problems.
const MAX_FILE_BYTES: u64 = (MAX_PROBLEMS * (MAX_PROBLEM_BYTES + MAX_PATH_BYTES + 512) * 2) as u64;

/// One marker the hook could not use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkerProblem {
    /// The marker file (absolute).
    pub marker: String,
    /// What is wrong with it, with its line where known.
    pub problem: String,
    /// `workspace/project` the events were filed under meanwhile.
    pub scope: String,
    /// When the hook first met this problem (ms since the epoch).
    pub since_ms: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Book {
    problems: Vec<MarkerProblem>,
}

/// The problem the resolved capture policy carries, if its marker could not
/// be used: (marker, problem).
pub fn of(capture: &CaptureConfig) -> Option<(&Path, &str)> {
    match capture {
        CaptureConfig::Invalid { marker, reason } => Some((marker, reason)),
        _ => None,
    }
}

/// Remember that the hook met `problem` in `marker` while filing events under
/// `scope`. Best effort (the hook never fails for it); writes only when the
/// marker's problem is new or changed.
pub fn remember(data_dir: &Path, marker: &Path, problem: &str, scope: &str, now_ms: u64) {
    let marker = clean_capped(&marker.to_string_lossy(), MAX_PATH_BYTES);
    let problem = clean_capped(problem, MAX_PROBLEM_BYTES);
    let mut book = read(data_dir);
    if book
        .problems
        .iter()
        .any(|p| p.marker == marker && p.problem == problem && p.scope == scope)
    {
        return;
    }
    book.problems.retain(|p| p.marker != marker);
    book.problems.insert(
        0,
        MarkerProblem {
            marker,
            problem,
            scope: clean_capped(scope, MAX_PATH_BYTES),
            since_ms: now_ms,
        },
    );
    book.problems.truncate(MAX_PROBLEMS);
    if let Ok(body) = serde_json::to_vec(&book) {
        let _ = write_private_file(&data_dir.join(FILE), &body);
    }
}

/// The remembered problems that are still there: each marker is read again
/// and kept only while it still cannot be used (or its `[capture]` is still
/// invalid). A fixed or removed marker is not shown.
pub fn current(data_dir: &Path) -> Vec<MarkerProblem> {
    read(data_dir)
        .problems
        .into_iter()
        .filter_map(|mut p| {
            let path = PathBuf::from(&p.marker);
            std::fs::symlink_metadata(&path).ok()?;
            let now = marker::read(&path, true);
            let (_, problem) = of(&now.capture)?;
            let problem = clean_capped(problem, MAX_PROBLEM_BYTES);
            if problem != p.problem {
                p.problem = problem;
            }
            Some(p)
        })
        .collect()
}

/// What [`FILE`] holds; a file that is missing, not ours, too large or not
/// valid counts as none.
fn read(data_dir: &Path) -> Book {
    read_private_file(&data_dir.join(FILE), MAX_FILE_BYTES)
        .ok()
        .and_then(|b| serde_json::from_slice::<Book>(&b).ok())
        .map(|mut b| {
            b.problems.truncate(MAX_PROBLEMS);
            for p in &mut b.problems {
                p.marker = clean_capped(&p.marker, MAX_PATH_BYTES);
                p.problem = clean_capped(&p.problem, MAX_PROBLEM_BYTES);
                p.scope = clean_capped(&p.scope, MAX_PATH_BYTES);
            }
            b
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(dir: &Path, text: &str) -> PathBuf {
        let m = dir.join(".ai-memory.toml");
        std::fs::write(&m, text).unwrap();
        m
    }

    fn problem_of(m: &Path) -> String {
        let read = marker::read(m, true);
        of(&read.capture).unwrap().1.to_string()
    }

    #[test]
    fn a_problem_is_shown_until_the_marker_is_fixed() {
        let data = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let m = marker(repo.path(), "workspace = 'acme'\nproject = 'Bad Name'\n");
        remember(data.path(), &m, &problem_of(&m), "acme/repo", 7);
        let now = current(data.path());
        assert_eq!(now.len(), 1);
        assert_eq!(now[0].marker, m.to_string_lossy());
        assert!(now[0].problem.starts_with("line 2: `project`"), "{now:?}");
        assert_eq!((now[0].scope.as_str(), now[0].since_ms), ("acme/repo", 7));

        std::fs::write(&m, "workspace = 'acme'\nproject = 'good'\n").unwrap();
        assert!(
            current(data.path()).is_empty(),
            "a fixed marker is not shown"
        );
        std::fs::remove_file(&m).unwrap();
        assert!(
            current(data.path()).is_empty(),
            "a removed marker is not shown"
        );
    }

    #[test]
    fn the_same_problem_is_not_written_again() {
        let data = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let m = marker(repo.path(), "project = 'Bad Name'\n");
        let p = problem_of(&m);
        remember(data.path(), &m, &p, "default/repo", 1);
        let file = data.path().join(FILE);
        let first = std::fs::read(&file).unwrap();
        remember(data.path(), &m, &p, "default/repo", 2);
        assert_eq!(
            std::fs::read(&file).unwrap(),
            first,
            "since stays the first sighting"
        );
        remember(data.path(), &m, "a different problem", "default/repo", 3);
        let b = read(data.path());
        assert_eq!(b.problems.len(), 1, "one entry per marker");
        assert_eq!(b.problems[0].since_ms, 3);
    }

    #[test]
    fn the_book_is_bounded_newest_first() {
        let data = tempfile::tempdir().unwrap();
        for i in 0..MAX_PROBLEMS + 3 {
            let m = PathBuf::from(format!("/nowhere/{i}/.ai-memory.toml"));
            remember(data.path(), &m, "p", "default/x", i as u64);
        }
        let b = read(data.path());
        assert_eq!(b.problems.len(), MAX_PROBLEMS);
        assert_eq!(b.problems[0].since_ms, (MAX_PROBLEMS + 2) as u64);
        assert_eq!(b.problems[MAX_PROBLEMS - 1].since_ms, 3);
    }

    #[test]
    fn hostile_text_is_cleaned_and_capped() {
        let data = tempfile::tempdir().unwrap();
        let long = "x".repeat(MAX_PROBLEM_BYTES * 3);
        let m = Path::new("/r/\u{1b}[2J\u{202e}/.ai-memory.toml");
        remember(
            data.path(),
            m,
            &format!("bad\u{1b}]0;title\u{7}{long}"),
            "d/p",
            0,
        );
        let b = read(data.path());
        let p = &b.problems[0];
        assert!(p.problem.len() <= MAX_PROBLEM_BYTES, "{}", p.problem.len());
        for s in [&p.problem, &p.marker] {
            assert!(!s.contains('\u{1b}') && !s.contains('\u{202e}'), "{s:?}");
        }
    }
}
