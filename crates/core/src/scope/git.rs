//! The `repo-root` strategy: the name of the repository's main work tree,
//! found with `gix_discover::upwards` (no config, no environment) plus the
//! linked work tree's `commondir` file.
//!
//! - main checkout (any subdirectory) → its own directory name;
//! - linked worktree → the main work tree's name;
//! - submodule, `--separate-git-dir` checkout → its own work tree's name;
//! - worktree of a bare repository → the bare repository's name without `.git`;
//! - inside a bare repository → its name without `.git`.

use std::path::{Path, PathBuf};

use super::paths::normalize;

/// The raw (unsanitised) name of the main work tree of the repository that
/// contains `dir`, or `None` outside any repository.
pub fn main_worktree_name(dir: &Path) -> Option<String> {
    // Discovery probes every level for a `.git` entry *and* for a bare
    // repository, which costs several syscalls per level. One cheap stat per
    // level finds the nearest `.git` first; discovery then starts there and
    // succeeds on its first probe. Without any `.git` above (a bare
    // repository, or no repository at all) the full discovery runs.
    let start = dir
        .ancestors()
        .find(|d| std::fs::symlink_metadata(d.join(gix_discover::DOT_GIT_DIR)).is_ok())
        .unwrap_or(dir);
    let options = gix_discover::upwards::Options {
        current_dir: Some(dir),
        ..Default::default()
    };
    let (repo, _trust) = gix_discover::upwards_opts(start, options).ok()?;
    let (git_dir, work_dir) = repo.into_repository_and_work_tree_directories();
    let git_dir = normalize(&git_dir);
    let common = common_dir(&git_dir);
    let root: PathBuf = if common == git_dir {
        // Not a linked worktree: the work tree we are in is the main one
        // (submodules and separate git dirs included).
        match work_dir {
            Some(w) => normalize(&w),
            None => bare_or_dot_git_owner(&common),
        }
    } else if common.file_name().is_some_and(|n| n == ".git") {
        common.parent()?.to_path_buf()
    } else {
        // The common dir is not a `.git` directory: a bare repository, a
        // submodule's `modules/<name>`, or a separate git dir. Prefer the
        // work tree it declares (`core.worktree`), else its own name.
        configured_worktree(&common).unwrap_or_else(|| bare_or_dot_git_owner(&common))
    };
    let name = root.file_name()?.to_string_lossy().into_owned();
    Some(name)
}

/// `<git_dir>/commondir` resolved and normalised, or `git_dir` itself.
pub(super) fn common_dir(git_dir: &Path) -> PathBuf {
    match gix_discover::path::from_plain_file_relative_to_file(&git_dir.join("commondir")) {
        Some(Ok(p)) => normalize(&p),
        _ => git_dir.to_path_buf(),
    }
}

/// For a `.git` directory its owner; for `name.git` the path `name`; else itself.
fn bare_or_dot_git_owner(git_dir: &Path) -> PathBuf {
    match git_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
    {
        Some(n) if n == ".git" => git_dir.parent().map(Path::to_path_buf).unwrap_or_default(),
        Some(n) => match n.strip_suffix(".git") {
            Some(stem) if !stem.is_empty() => git_dir.with_file_name(stem),
            _ => git_dir.to_path_buf(),
        },
        None => git_dir.to_path_buf(),
    }
}

/// `core.worktree` from `<common>/config`, resolved against `common`.
/// A deliberately small reader: `[core]` section, `worktree = value` line.
fn configured_worktree(common: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(common.join("config")).ok()?;
    let mut in_core = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_core = line
                .trim_start_matches('[')
                .trim_end_matches(']')
                .trim()
                .eq_ignore_ascii_case("core");
            continue;
        }
        if !in_core {
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            if k.trim().eq_ignore_ascii_case("worktree") {
                let v = v.trim().trim_matches('"');
                if v.is_empty() {
                    return None;
                }
                return Some(normalize(&common.join(v)));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_names() {
        assert_eq!(
            bare_or_dot_git_owner(Path::new("/x/bare.git")),
            PathBuf::from("/x/bare")
        );
        assert_eq!(
            bare_or_dot_git_owner(Path::new("/x/main/.git")),
            PathBuf::from("/x/main")
        );
        assert_eq!(
            bare_or_dot_git_owner(Path::new("/x/plain")),
            PathBuf::from("/x/plain")
        );
    }

    #[test]
    fn reads_core_worktree() {
        let t = tempfile::tempdir().unwrap();
        let common = t.path().join("main/.git/modules/sub");
        std::fs::create_dir_all(&common).unwrap();
        std::fs::write(
            common.join("config"),
            "[core]\n\tbare = false\n\tworktree = ../../../sub\n[remote \"origin\"]\n\turl = x\n",
        )
        .unwrap();
        assert_eq!(
            configured_worktree(&common),
            Some(t.path().join("main/sub"))
        );
    }

    #[test]
    fn outside_a_repository_is_none() {
        let t = tempfile::tempdir().unwrap();
        // A temp dir is normally not inside a repository; if it is, skip.
        if gix_discover::upwards(t.path()).is_err() {
            assert_eq!(main_worktree_name(t.path()), None);
        }
    }
}
