//! Lexical path handling and project-name derivation. Nothing here touches
//! the filesystem except [`absolute`], which may ask for the process cwd.

use std::path::{Component, Path, PathBuf};

use crate::names::{is_valid_name, MAX_NAME_LEN};

/// The name used when a directory name has nothing usable in it (`/`, `é`).
pub const EMPTY_NAME_FALLBACK: &str = "default";

/// Normalise `path` lexically: drop `.`, let `..` remove the previous normal
/// component (a `..` at the root is dropped), never resolve symlinks.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for comp in path.components() {
        match comp {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(out.components().next_back(), Some(Component::Normal(_))) {
                    out.pop();
                } else if !out.has_root() {
                    out.push("..");
                }
            }
            Component::Normal(n) => out.push(n),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// Make `path` absolute against `base` (the process's logical cwd when
/// `None`) and normalise it lexically.
pub fn absolute(path: &Path, base: Option<&Path>) -> std::io::Result<PathBuf> {
    if path.is_absolute() {
        return Ok(normalize(path));
    }
    let base = match base {
        Some(b) => b.to_path_buf(),
        None => logical_current_dir()?,
    };
    Ok(normalize(&base.join(path)))
}

/// The process cwd as the shell spells it: `$PWD` when it is absolute and
/// names the same directory as `getcwd()` (so a symlinked cwd keeps its
/// logical spelling, like the cwd an agent reports), else `getcwd()`.
pub fn logical_current_dir() -> std::io::Result<PathBuf> {
    let physical = std::env::current_dir()?;
    if let Some(pwd) = std::env::var_os("PWD").map(PathBuf::from) {
        if pwd.is_absolute() && same_file(&pwd, &physical) {
            return Ok(normalize(&pwd));
        }
    }
    Ok(physical)
}

#[cfg(unix)]
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(a: &Path, b: &Path) -> bool {
    a == b
}

/// Turn a directory name into a valid scope name: ASCII letters are
/// lowercased, every run of other characters outside `[a-z0-9._-]` becomes a
/// single `-`, leading characters that cannot start a name and trailing `-`
/// are trimmed, and the result is cut to [`MAX_NAME_LEN`]. A name with
/// nothing usable left becomes [`EMPTY_NAME_FALLBACK`]. Valid names are
/// returned unchanged.
pub fn name_from_dir(raw: &str) -> String {
    if is_valid_name(raw) {
        return raw.to_string();
    }
    let mut out = String::with_capacity(raw.len());
    let mut dash = false;
    for ch in raw.chars() {
        let c = ch.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-') {
            out.push(c);
            dash = c == '-';
        } else if !dash {
            out.push('-');
            dash = true;
        }
    }
    let trimmed = out
        .trim_start_matches(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .trim_end_matches('-');
    let mut name: String = trimmed.chars().take(MAX_NAME_LEN).collect();
    while name.ends_with('-') {
        name.pop();
    }
    if name.is_empty() {
        EMPTY_NAME_FALLBACK.to_string()
    } else {
        name
    }
}

/// The project name `basename` derives for `dir` (already absolute and normal).
pub fn basename_name(dir: &Path) -> String {
    name_from_dir(
        &dir.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_is_lexical() {
        let cases = [
            ("/a/b/../c", "/a/c"),
            ("/a/./b/", "/a/b"),
            ("/../x", "/x"),
            ("/a/b/../../..", "/"),
            ("//a//b", "/a/b"),
            ("/", "/"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(Path::new(input)), PathBuf::from(want), "{input}");
        }
    }

    #[test]
    fn absolute_joins_relative_paths_onto_base() {
        let got = absolute(Path::new("x/../y"), Some(Path::new("/base/dir"))).unwrap();
        assert_eq!(got, PathBuf::from("/base/dir/y"));
        let got = absolute(Path::new("/abs/./p"), Some(Path::new("/ignored"))).unwrap();
        assert_eq!(got, PathBuf::from("/abs/p"));
    }

    #[test]
    fn name_from_dir_always_yields_a_valid_name() {
        let cases = [
            ("api", "api"),
            ("My App", "my-app"),
            ("My  App!!", "my-app"),
            ("_private", "private"),
            (".dotfiles", "dotfiles"),
            ("-x-", "x"),
            ("café", "caf"),
            ("é", EMPTY_NAME_FALLBACK),
            ("", EMPTY_NAME_FALLBACK),
            ("API.v2_final", "api.v2_final"),
        ];
        for (raw, want) in cases {
            let got = name_from_dir(raw);
            assert_eq!(got, want, "{raw:?}");
            assert!(is_valid_name(&got), "{got:?}");
        }
        let long = "A".repeat(MAX_NAME_LEN + 50);
        let got = name_from_dir(&long);
        assert_eq!(got.len(), MAX_NAME_LEN);
        assert!(is_valid_name(&got));
        let long_dashes = format!("{}-{}", "a".repeat(MAX_NAME_LEN - 1), "b".repeat(10));
        assert!(is_valid_name(&name_from_dir(&format!("X{long_dashes}"))));
    }

    #[test]
    fn basename_of_root_is_the_fallback() {
        assert_eq!(basename_name(Path::new("/")), EMPTY_NAME_FALLBACK);
        assert_eq!(basename_name(Path::new("/srv/Web Site")), "web-site");
    }
}
