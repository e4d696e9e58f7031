//! File history at the moment it matters (docs/memory.md, "File history"):
//! when the agent is about to read or edit a file that an earlier session
//! of the project changed, its pre-tool-use context carries one line saying
//! when and in which session, with that session's goal and a failure it
//! left standing.
//!
//! The lean hook has no store, so the drainer writes, per project, a small
//! file of ready-made lines (`<data>/history/<project key>.json`, at most
//! [`MAX_FILES`] paths and [`MAX_HISTORY_BYTES`]) after each delivery into
//! the embedded store, and the hook only looks a path up in it. The lines
//! are built from stored records, which already passed every filter; forget
//! removes the files (the next delivery writes them again from what is
//! left).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::data_dir::{ensure_private_dir, read_private_file, write_private_file};

/// The directory in the data dir.
pub const HISTORY_DIR: &str = "history";
/// Most paths one project's file keeps (the most recently changed).
pub const MAX_FILES: usize = 256;
/// Largest history file written or read.
pub const MAX_HISTORY_BYTES: usize = 64 * 1024;
/// Longest line kept per path.
pub const MAX_LINE_BYTES: usize = 400;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Book {
    version: u32,
    files: BTreeMap<String, String>,
}

/// The history file of `workspace/project` in `data_dir`.
pub fn file_of(data_dir: &Path, workspace: &str, project: &str) -> PathBuf {
    let mut h = Sha256::new();
    h.update(workspace.as_bytes());
    h.update([0]);
    h.update(project.as_bytes());
    let key = crate::hex::encode(&h.finalize()[..16]);
    data_dir.join(HISTORY_DIR).join(format!("{key}.json"))
}

/// Write the history of `workspace/project`: `(relative path, line)`, the
/// most recent first; kept within [`MAX_FILES`] and [`MAX_HISTORY_BYTES`]
/// (older paths are left out). An empty list removes the file.
pub fn write(
    data_dir: &Path,
    workspace: &str,
    project: &str,
    lines: &[(String, String)],
) -> std::io::Result<()> {
    let path = file_of(data_dir, workspace, project);
    if lines.is_empty() {
        return match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
    }
    let mut book = Book {
        version: 1,
        files: BTreeMap::new(),
    };
    let mut size = 32;
    for (file, line) in lines.iter().take(MAX_FILES) {
        let line = crate::record::clean_capped(line, MAX_LINE_BYTES);
        let cost = file.len() + line.len() + 8;
        if size + cost > MAX_HISTORY_BYTES || book.files.contains_key(file) {
            continue;
        }
        size += cost;
        book.files.insert(file.clone(), line);
    }
    let dir = data_dir.join(HISTORY_DIR);
    ensure_private_dir(&dir).map_err(std::io::Error::other)?;
    let body = serde_json::to_vec(&book).map_err(std::io::Error::other)?;
    write_private_file(&path, &body)
}

/// One project's history as read by the hook.
#[derive(Debug)]
pub struct History(Book);

impl History {
    /// The history of `workspace/project`, if it has one. Any problem
    /// reading the file is no history.
    pub fn load(data_dir: &Path, workspace: &str, project: &str) -> Option<History> {
        let bytes = read_private_file(
            &file_of(data_dir, workspace, project),
            MAX_HISTORY_BYTES as u64,
        )
        .ok()?;
        serde_json::from_slice(&bytes).ok().map(History)
    }

    /// The line for `file` (as the records store its path), if any.
    pub fn line(&self, file: &str) -> Option<String> {
        let line = self.0.files.get(file)?;
        Some(crate::record::clean_capped(line, MAX_LINE_BYTES))
    }
}

/// Remove every project's history (forget: the next delivery writes what is
/// left).
pub fn remove_all(data_dir: &Path) -> std::io::Result<()> {
    let dir = data_dir.join(HISTORY_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().ends_with(".json") {
            std::fs::remove_file(e.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(data_dir: &Path, workspace: &str, project: &str, file: &str) -> Option<String> {
        History::load(data_dir, workspace, project)?.line(file)
    }

    #[test]
    fn written_lines_are_found_by_path_and_project() {
        let t = tempfile::tempdir().unwrap();
        let lines = vec![
            ("src/a.py".to_string(), "changed in session 1".to_string()),
            ("src/b.py".to_string(), "changed in session 2".to_string()),
        ];
        write(t.path(), "w", "p", &lines).unwrap();
        assert_eq!(
            lookup(t.path(), "w", "p", "src/a.py").as_deref(),
            Some("changed in session 1")
        );
        assert_eq!(lookup(t.path(), "w", "p", "src/c.py"), None);
        assert_eq!(lookup(t.path(), "w", "other", "src/a.py"), None);
        assert_ne!(file_of(t.path(), "w", "p"), file_of(t.path(), "wp", ""));
        write(t.path(), "w", "p", &[]).unwrap();
        assert_eq!(lookup(t.path(), "w", "p", "src/a.py"), None);
        write(t.path(), "w", "p", &lines).unwrap();
        remove_all(t.path()).unwrap();
        assert_eq!(lookup(t.path(), "w", "p", "src/a.py"), None);
    }

    #[test]
    fn the_file_is_bounded_and_lines_are_clean() {
        let t = tempfile::tempdir().unwrap();
        let lines: Vec<(String, String)> = (0..MAX_FILES + 50)
            .map(|i| {
                (
                    format!("f{i:04}.rs"),
                    format!("x\u{1b}[2J{}", "y".repeat(MAX_LINE_BYTES)),
                )
            })
            .collect();
        write(t.path(), "w", "p", &lines).unwrap();
        let len = std::fs::metadata(file_of(t.path(), "w", "p"))
            .unwrap()
            .len();
        assert!(len <= MAX_HISTORY_BYTES as u64, "{len}");
        let first = lookup(t.path(), "w", "p", "f0000.rs").unwrap();
        assert!(first.len() <= MAX_LINE_BYTES && !first.contains('\u{1b}'));
        assert_eq!(
            lookup(t.path(), "w", "p", &format!("f{:04}.rs", MAX_FILES)),
            None
        );
    }
}
