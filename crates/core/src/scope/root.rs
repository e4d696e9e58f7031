//! The root that claims a scope, and what makes two roots the same
//! repository (DESIGN §11).
//!
//! A root is the checkout's top level — for a linked worktree, the main
//! work tree — or, outside git, the marker's own directory. Finding it costs
//! one `lstat` per directory level plus, for a `.git` file, two small reads;
//! nothing here runs git. The identity of a root (its first commits and its
//! remote URLs) costs a `git rev-list` child process, so the binding ledger
//! computes it once per root and keeps it (see `binding.rs`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::git::common_dir;
use super::paths::normalize;

/// How long the one `git rev-list` that finds a root's first commits may
/// take. A history too long to walk in this time is identified by its
/// remote URLs alone.
pub const FIRST_COMMIT_TIMEOUT: Duration = Duration::from_millis(500);
/// At most this many first commits and this many remote URLs are kept.
pub const MAX_IDENTITY_ITEMS: usize = 8;
/// A remote URL longer than this is ignored.
pub const MAX_REMOTE_LEN: usize = 1024;
/// `<common dir>/config` larger than this is not read for remotes.
const MAX_CONFIG_BYTES: u64 = 256 * 1024;

/// The root of a checkout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// The main work tree (or the marker's directory outside git).
    pub path: PathBuf,
    /// Device, inode and birth time of the repository's common git
    /// directory (or of the directory outside git): a checkout replaced by
    /// another one at the same path has another stamp, so a verdict kept
    /// for the path is not reused for it.
    pub stamp: String,
    /// The repository's common git directory; `None` outside git.
    pub git_dir: Option<PathBuf>,
}

/// What makes two roots the same repository: a shared first (parentless)
/// commit, or a shared remote URL (normalised).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Identity {
    #[serde(default)]
    pub first_commits: Vec<String>,
    #[serde(default)]
    pub remotes: Vec<String>,
}

impl Identity {
    /// Whether `self` and `other` name the same repository. Two empty
    /// identities (directories outside git, repositories without commits or
    /// remotes) are never the same: only their paths can match.
    pub fn same_repository(&self, other: &Identity) -> bool {
        self.first_commits
            .iter()
            .any(|c| other.first_commits.contains(c))
            || self.remotes.iter().any(|r| other.remotes.contains(r))
    }
}

/// The root of the checkout that holds `dir` (the marker's directory).
/// `None` only when `dir` itself cannot be inspected.
pub fn find(dir: &Path) -> Option<Root> {
    let dir = normalize(dir);
    for d in dir.ancestors() {
        let dot_git = d.join(gix_discover::DOT_GIT_DIR);
        let Ok(mut meta) = fs::symlink_metadata(&dot_git) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            // Rare: `.git` linked to the real one; git follows it, so do we.
            match fs::metadata(&dot_git) {
                Ok(m) => meta = m,
                Err(_) => continue,
            }
        }
        if meta.is_dir() {
            // The common case, and the hot path: a main work tree (a `.git`
            // directory has no `commondir`). No further syscall.
            return Some(Root {
                path: d.to_path_buf(),
                stamp: stamp_of(&meta),
                git_dir: Some(dot_git),
            });
        }
        let git_dir = match gix_discover::path::from_gitdir_file(&dot_git) {
            Ok(p) => normalize(&p),
            // A `.git` file (or link) that names no git dir: treat the
            // directory as a plain directory.
            Err(_) => break,
        };
        let common = common_dir(&git_dir);
        let path = if common == git_dir {
            // The main work tree, a submodule or a separate-git-dir checkout:
            // its own top level.
            d.to_path_buf()
        } else if common
            .file_name()
            .is_some_and(|n| n == gix_discover::DOT_GIT_DIR)
        {
            common.parent()?.to_path_buf()
        } else {
            // A worktree of a bare repository: the repository itself.
            common.clone()
        };
        let stamp = stamp(&common)?;
        return Some(Root {
            path,
            stamp,
            git_dir: Some(common),
        });
    }
    Some(Root {
        stamp: stamp(&dir)?,
        path: dir,
        git_dir: None,
    })
}

fn stamp(p: &Path) -> Option<String> {
    fs::metadata(p).ok().map(|m| stamp_of(&m))
}

/// Device, inode and (where the file system keeps it) birth time: a
/// directory deleted and made again can reuse the inode number, not the
/// birth time. A rename keeps all three.
fn stamp_of(m: &fs::Metadata) -> String {
    let born = m
        .created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        format!("{}:{}:{born}", m.dev(), m.ino())
    }
    // Windows: volume and file index need an open handle (unstable in
    // std); the creation time survives a rename and changes when the
    // directory is deleted and made again, which is what the stamp is for.
    #[cfg(not(unix))]
    {
        format!("0:0:{born}")
    }
}

/// The identity of `root`: its first commits (one `git rev-list` bounded
/// by [`FIRST_COMMIT_TIMEOUT`]) and the URLs of its remotes.
pub fn identity(root: &Root) -> Identity {
    let Some(git_dir) = &root.git_dir else {
        return Identity::default();
    };
    Identity {
        first_commits: first_commits(&root.path, FIRST_COMMIT_TIMEOUT),
        remotes: remotes(git_dir),
    }
}

/// `git rev-list --max-parents=0 HEAD`, without the caller's `GIT_*`
/// environment and without replace refs (a replace ref is local and could
/// rewrite history). Empty on any failure or past `timeout`.
fn first_commits(work_tree: &Path, timeout: Duration) -> Vec<String> {
    let mut cmd = Command::new("git");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("GIT_TERMINAL_PROMPT", "0")
        .arg("--no-replace-objects")
        .arg("-C")
        .arg(work_tree)
        .args(["rev-list", "--max-parents=0", "HEAD"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let Ok(mut child) = cmd.spawn() else {
        return Vec::new();
    };
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let mut out = String::new();
    if status.is_some_and(|s| s.success()) {
        use std::io::Read;
        if let Some(so) = child.stdout.take() {
            let _ = so.take(64 * 1024).read_to_string(&mut out);
        }
    }
    let mut commits: Vec<String> = out
        .lines()
        .map(str::trim)
        .filter(|l| (40..=64).contains(&l.len()) && l.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(str::to_ascii_lowercase)
        .collect();
    commits.sort();
    commits.dedup();
    commits.truncate(MAX_IDENTITY_ITEMS);
    commits
}

/// The normalised URLs of every `[remote "…"] url` in `<git_dir>/config`.
/// A deliberately small reader: section headers and `url = value` lines.
fn remotes(git_dir: &Path) -> Vec<String> {
    let path = git_dir.join("config");
    if fs::metadata(&path).map_or(true, |m| m.len() > MAX_CONFIG_BYTES) {
        return Vec::new();
    }
    let Ok(text) = fs::read_to_string(&path) else {
        return Vec::new();
    };
    let mut in_remote = false;
    let mut urls = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            let head = line.trim_start_matches('[').trim_end_matches(']').trim();
            in_remote = head
                .split_whitespace()
                .next()
                .is_some_and(|s| s.eq_ignore_ascii_case("remote"));
            continue;
        }
        if !in_remote {
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            if k.trim().eq_ignore_ascii_case("url") {
                if let Some(u) = normalize_url(v.trim().trim_matches('"')) {
                    urls.push(u);
                }
            }
        }
    }
    urls.sort();
    urls.dedup();
    urls.truncate(MAX_IDENTITY_ITEMS);
    urls
}

/// One spelling per repository: `https://User@GitHub.com/a/b.git/`,
/// `ssh://git@github.com/a/b` and `git@github.com:a/b.git` all become
/// `github.com/a/b`. The host is lowercased; the path keeps its case. A
/// local path stays a path (without a trailing `/` or `.git`).
pub fn normalize_url(url: &str) -> Option<String> {
    let url = url.trim();
    if url.is_empty() || url.len() > MAX_REMOTE_LEN || url.chars().any(char::is_control) {
        return None;
    }
    let (host, path) = if let Some((_, rest)) = url.split_once("://") {
        let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
        match rest.split_once('/') {
            Some((h, p)) => (Some(h), p),
            None => (Some(rest), ""),
        }
    } else if !url.starts_with('/') && url.contains(':') {
        // scp-like `user@host:path` (a `/` before the `:` would make it a path).
        let (h, p) = url.split_once(':')?;
        if h.contains('/') {
            (None, url)
        } else {
            (Some(h.rsplit_once('@').map_or(h, |(_, h)| h)), p)
        }
    } else {
        (None, url)
    };
    let mut path = path.trim_end_matches('/');
    path = path
        .strip_suffix(".git")
        .unwrap_or(path)
        .trim_end_matches('/');
    Some(match host {
        Some(h) => {
            let h = h.to_ascii_lowercase();
            format!("{h}/{}", path.trim_start_matches('/'))
        }
        None => path.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_have_one_spelling() {
        for u in [
            "https://User@GitHub.com/acme/api.git/",
            "ssh://git@github.com/acme/api",
            "git@github.com:acme/api.git",
            "github.com:acme/api",
        ] {
            assert_eq!(
                normalize_url(u).as_deref(),
                Some("github.com/acme/api"),
                "{u}"
            );
        }
        assert_eq!(
            normalize_url("/srv/repo.git/").as_deref(),
            Some("/srv/repo")
        );
        assert_eq!(normalize_url("./a:b").as_deref(), Some("./a:b"));
        assert_eq!(normalize_url(""), None);
        assert_eq!(normalize_url("https://h/\u{1b}[2J"), None);
        assert_eq!(normalize_url(&"x".repeat(MAX_REMOTE_LEN + 1)), None);
        assert!(normalize_url(&"x".repeat(MAX_REMOTE_LEN)).is_some());
    }

    #[test]
    fn identities_match_on_a_shared_commit_or_remote_and_empty_never_matches() {
        let a = Identity {
            first_commits: vec!["a".repeat(40)],
            remotes: vec!["github.com/acme/api".into()],
        };
        let clone = Identity {
            first_commits: vec!["a".repeat(40)],
            remotes: vec![],
        };
        let mirror = Identity {
            first_commits: vec![],
            remotes: vec!["github.com/acme/api".into()],
        };
        let other = Identity {
            first_commits: vec!["b".repeat(40)],
            remotes: vec!["github.com/evil/api".into()],
        };
        assert!(a.same_repository(&clone) && a.same_repository(&mirror));
        assert!(!a.same_repository(&other));
        assert!(!Identity::default().same_repository(&Identity::default()));
    }

    #[test]
    fn remotes_are_read_from_remote_sections_only() {
        let t = tempfile::tempdir().unwrap();
        fs::write(
            t.path().join("config"),
            "[core]\n\turl = nope\n[remote \"origin\"]\n\turl = git@GitHub.com:acme/api.git\n\
             [remote \"up\"]\n\turl = \"https://github.com/acme/api\"\n[branch \"main\"]\n\turl = x\n",
        )
        .unwrap();
        assert_eq!(remotes(t.path()), vec!["github.com/acme/api".to_string()]);
    }

    #[test]
    fn outside_git_the_root_is_the_directory() {
        let t = tempfile::tempdir().unwrap();
        if gix_discover::upwards(t.path()).is_ok() {
            return; // the temp dir sits inside a repository
        }
        let r = find(t.path()).unwrap();
        assert_eq!(r.path, t.path());
        assert_eq!(r.git_dir, None);
        assert_eq!(identity(&r), Identity::default());
    }
}
