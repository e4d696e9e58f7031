//! The lexical marker walk (DESIGN §2): from the cwd upward to a boundary,
//! yielding each directory's `.ai-memory.toml` that is not a directory. Plain
//! `std::fs` checks only; no git, no symlink resolution of the path itself.

use std::path::{Path, PathBuf};

use super::MARKER_FILE;

/// Where the walk stops (inclusive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Boundary {
    /// Stop after checking this directory (`$HOME`, the checkout root, or
    /// the cwd itself).
    At(PathBuf),
    /// No `$HOME`: walk up to and including `/`.
    Root,
}

/// Decide the boundary for `start` (absolute, normalised) and `home`
/// (absolute, normalised; `None` when unset or empty).
pub fn boundary(start: &Path, home: Option<&Path>) -> Boundary {
    let Some(home) = home else {
        return Boundary::Root;
    };
    if start.starts_with(home) {
        return Boundary::At(home.to_path_buf());
    }
    let checkout = start.ancestors().find(|dir| has_dot_git(dir));
    Boundary::At(checkout.unwrap_or(start).to_path_buf())
}

/// Whether `dir` holds a `.git` directory or file (a dangling symlink does not count).
fn has_dot_git(dir: &Path) -> bool {
    std::fs::metadata(dir.join(".git")).is_ok_and(|m| m.is_dir() || m.is_file())
}

/// `dir`'s marker, if it has one. A regular file (symlinks followed) is a
/// marker; a directory of that name is ignored (DESIGN §2). Anything else
/// of that name — a dangling or looping symlink, a FIFO, a socket, a
/// device — is a marker that cannot be read: it fails closed
/// (`marker::read`), it never counts as no marker.
pub fn marker_in(dir: &Path) -> Option<PathBuf> {
    let candidate = dir.join(MARKER_FILE);
    let lmeta = std::fs::symlink_metadata(&candidate).ok()?;
    if lmeta.is_dir()
        || (lmeta.file_type().is_symlink()
            && std::fs::metadata(&candidate).is_ok_and(|m| m.is_dir()))
    {
        return None;
    }
    Some(candidate)
}

/// Iterator over the markers on the walk, nearest first.
pub struct Walk<'a> {
    next: Option<&'a Path>,
    boundary: Boundary,
}

impl<'a> Walk<'a> {
    pub fn new(start: &'a Path, home: Option<&Path>) -> Walk<'a> {
        Walk {
            next: Some(start),
            boundary: boundary(start, home),
        }
    }
}

impl Iterator for Walk<'_> {
    type Item = PathBuf;

    fn next(&mut self) -> Option<PathBuf> {
        while let Some(dir) = self.next {
            self.next = match &self.boundary {
                Boundary::At(stop) if dir == stop.as_path() => None,
                _ => dir.parent(),
            };
            if let Some(marker) = marker_in(dir) {
                return Some(marker);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        let home = root.join("home");
        std::fs::create_dir_all(home.join("a/b")).unwrap();
        std::fs::create_dir_all(root.join("srv/repo/.git")).unwrap();
        std::fs::create_dir_all(root.join("srv/repo/x/y")).unwrap();
        std::fs::create_dir_all(root.join("srv/plain/x")).unwrap();

        assert_eq!(
            boundary(&home.join("a/b"), Some(&home)),
            Boundary::At(home.clone())
        );
        assert_eq!(boundary(&home, Some(&home)), Boundary::At(home.clone()));
        assert_eq!(
            boundary(&root.join("srv/repo/x/y"), Some(&home)),
            Boundary::At(root.join("srv/repo"))
        );
        assert_eq!(
            boundary(&root.join("srv/plain/x"), Some(&home)),
            Boundary::At(root.join("srv/plain/x"))
        );
        assert_eq!(boundary(&root.join("srv/plain/x"), None), Boundary::Root);
        // `/home/al` is not inside `/home/alice`.
        assert_eq!(
            boundary(&root.join("homework"), Some(&home)),
            Boundary::At(root.join("homework"))
        );
    }

    #[test]
    fn walk_yields_nearest_first_and_stops_at_the_boundary() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        std::fs::create_dir_all(home.join("a/b/c")).unwrap();
        std::fs::create_dir_all(home.join("a/b/.ai-memory.toml")).unwrap(); // a directory: ignored
        std::fs::write(home.join("a/.ai-memory.toml"), "").unwrap();
        std::fs::write(home.join(".ai-memory.toml"), "").unwrap();
        std::fs::write(t.path().join(".ai-memory.toml"), "").unwrap(); // above HOME: never read
        let start = home.join("a/b/c");
        let found: Vec<PathBuf> = Walk::new(&start, Some(&home)).collect();
        assert_eq!(
            found,
            vec![home.join("a/.ai-memory.toml"), home.join(".ai-memory.toml")]
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_named_like_the_marker_fails_closed_without_blocking() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        std::fs::create_dir_all(home.join("a")).unwrap();
        let fifo = home.join("a/.ai-memory.toml");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let found: Vec<PathBuf> = Walk::new(&home.join("a"), Some(&home)).collect();
        assert_eq!(found, vec![fifo.clone()]);
        let m = super::super::marker::read(&fifo, true);
        assert!(
            matches!(m.capture, super::super::CaptureConfig::Invalid { .. }),
            "{:?}",
            m.capture
        );
    }
}
