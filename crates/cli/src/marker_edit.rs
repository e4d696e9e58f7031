//! `memhook enable --marker` / `memhook disable --marker`: set the marker's
//! top-level `enabled` key, keeping every comment, the key order and the
//! formatting of the rest of the file. This is the only place memhook writes
//! a file inside a repository, and only when asked.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use memhook_core::scope::MARKER_FILE;

/// Largest marker this command edits (the resolver reads no bigger one).
pub const MAX_EDIT_BYTES: u64 = memhook_core::scope::MAX_MARKER_BYTES;

/// Mode of a marker this command creates (a repository file, not a secret).
pub const NEW_MARKER_MODE: u32 = 0o644;

#[derive(Debug)]
pub enum EditError {
    /// The marker is a symbolic link, not a regular file, or too big.
    Refused {
        path: PathBuf,
        why: String,
    },
    /// The marker is not valid TOML; editing it would lose what it says.
    Unparsable {
        path: PathBuf,
        why: String,
    },
    Io {
        path: PathBuf,
        err: std::io::Error,
    },
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EditError::Refused { path, why } => {
                write!(
                    f,
                    "{}: {why}; edit it by hand or run without --marker",
                    path.display()
                )
            }
            EditError::Unparsable { path, why } => write!(
                f,
                "{}: not valid TOML ({why}); fix the file first (`memhook show` says where)",
                path.display()
            ),
            EditError::Io { path, err } => write!(f, "{}: {err}", path.display()),
        }
    }
}

impl std::error::Error for EditError {}

/// What [`set_enabled`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Edited {
    Created,
    Changed,
    Unchanged,
}

/// The directory a new marker goes in: the top level of the checkout that
/// holds `cwd` (a linked worktree's own top level, not its main tree), or
/// `cwd` itself outside git.
pub fn new_marker_dir(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|d| d.join(".git").symlink_metadata().is_ok())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// Set `enabled = <on>` at the top level of the marker at `path`, creating
/// the file when it does not exist.
pub fn set_enabled(path: &Path, on: bool) -> Result<Edited, EditError> {
    let io = |err| EditError::Io {
        path: path.to_path_buf(),
        err,
    };
    let existing = match path.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(EditError::Refused {
                path: path.to_path_buf(),
                why: "is a symbolic link".into(),
            })
        }
        Ok(m) if !m.is_file() => {
            return Err(EditError::Refused {
                path: path.to_path_buf(),
                why: "is not a regular file".into(),
            })
        }
        Ok(m) => Some(m),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(e)),
    };
    let (text, mode) = match &existing {
        None => (String::new(), NEW_MARKER_MODE),
        Some(m) => {
            if m.len() > MAX_EDIT_BYTES {
                return Err(EditError::Refused {
                    path: path.to_path_buf(),
                    why: format!("is larger than {MAX_EDIT_BYTES} bytes"),
                });
            }
            let mut f = memhook_core::data_dir::open_nofollow(path).map_err(io)?;
            let mut buf = Vec::new();
            (&mut f)
                .take(MAX_EDIT_BYTES + 1)
                .read_to_end(&mut buf)
                .map_err(io)?;
            let text = String::from_utf8(buf).map_err(|_| EditError::Unparsable {
                path: path.to_path_buf(),
                why: "not UTF-8".into(),
            })?;
            #[cfg(unix)]
            let mode = {
                use std::os::unix::fs::PermissionsExt;
                m.permissions().mode() & 0o7777
            };
            // Windows: no mode bits; the rewritten file keeps the folder's ACL.
            #[cfg(not(unix))]
            let mode = 0o644;
            (text, mode)
        }
    };
    let new = edited_text(&text, on, existing.is_none()).map_err(|why| EditError::Unparsable {
        path: path.to_path_buf(),
        why,
    })?;
    if existing.is_some() && new == text {
        return Ok(Edited::Unchanged);
    }
    memhook_core::data_dir::write_atomic(path, new.as_bytes(), mode, &|| Ok(())).map_err(io)?;
    // Keep the owner of an existing marker (root editing a user's file).
    #[cfg(unix)]
    if let Some(m) = &existing {
        use std::os::unix::fs::MetadataExt;
        if m.uid() != memhook_core::data_dir::current_uid() {
            let _ = std::os::unix::fs::lchown(path, Some(m.uid()), Some(m.gid()));
        }
    }
    Ok(if existing.is_some() {
        Edited::Changed
    } else {
        Edited::Created
    })
}

/// `text` with the top-level `enabled` key set; a new file gets a comment
/// saying what the key is.
fn edited_text(text: &str, on: bool, new_file: bool) -> Result<String, String> {
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut doc: toml_edit::DocumentMut = body
        .parse()
        .map_err(|e: toml_edit::TomlError| e.message().to_string())?;
    let same = doc
        .get("enabled")
        .and_then(|v| v.as_value())
        .map(|v| v.as_bool() == Some(on))
        .unwrap_or(false);
    if same {
        return Ok(text.to_string());
    }
    if let Some(item) = doc.get_mut("enabled").and_then(|i| i.as_value_mut()) {
        // Keep the comment and spacing around the old value.
        let decor = item.decor().clone();
        *item = toml_edit::Value::from(on);
        *item.decor_mut() = decor;
    } else {
        doc.insert("enabled", toml_edit::value(on));
        // A new top-level key goes before the first table, where TOML puts
        // top-level keys anyway; `toml_edit` does that.
    }
    let mut out = String::new();
    if new_file {
        out.push_str(
            "# memhook: `enabled = false` turns capture and the session-start\n\
             # briefing off for this tree (`memhook enable --marker` turns it on).\n",
        );
    }
    if text.starts_with('\u{feff}') {
        out.push('\u{feff}');
    }
    out.push_str(&doc.to_string());
    Ok(out)
}

/// Where `--marker` writes: the marker that decides the scope's settings, or
/// a new one at the checkout's top level.
pub fn target(decided_by: Option<&Path>, cwd: &Path) -> PathBuf {
    decided_by
        .map(Path::to_path_buf)
        .unwrap_or_else(|| new_marker_dir(cwd).join(MARKER_FILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_order_and_spacing_survive() {
        let src = "# team marker\nworkspace = \"acme\"   # ours\n\n[capture]\n# keep out\nignore_paths = [\"secrets/**\"]\n";
        let out = edited_text(src, false, false).unwrap();
        assert!(
            out.starts_with("# team marker\nworkspace = \"acme\"   # ours\n"),
            "{out}"
        );
        assert!(out.contains("enabled = false\n"), "{out}");
        assert!(
            out.ends_with("[capture]\n# keep out\nignore_paths = [\"secrets/**\"]\n"),
            "{out}"
        );
        // The key lands among the top-level keys, before the first table.
        assert!(out.find("enabled").unwrap() < out.find("[capture]").unwrap());
        // Flipping back changes only the value, comment kept.
        let src2 = "enabled = false # paused for the audit\n[briefing]\nmax_chars = 5000\n";
        let back = edited_text(src2, true, false).unwrap();
        assert_eq!(
            back,
            "enabled = true # paused for the audit\n[briefing]\nmax_chars = 5000\n"
        );
        // Already so: byte-identical.
        assert_eq!(edited_text(&back, true, false).unwrap(), back);
    }

    #[test]
    fn a_bom_is_kept_and_bad_toml_refused() {
        let out = edited_text("\u{feff}project = \"p\"\n", false, false).unwrap();
        assert!(
            out.starts_with('\u{feff}') && out.contains("enabled = false"),
            "{out:?}"
        );
        assert!(edited_text("project = \n", false, false).is_err());
    }

    #[test]
    fn files_are_created_and_edited() {
        #[cfg(unix)]
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let m = t.path().join(MARKER_FILE);
        assert_eq!(set_enabled(&m, false).unwrap(), Edited::Created);
        let text = std::fs::read_to_string(&m).unwrap();
        assert!(
            text.starts_with("# memhook:") && text.contains("enabled = false"),
            "{text}"
        );
        // Modes are Unix's (a Windows marker has the directory's ACL).
        #[cfg(unix)]
        assert_eq!(
            std::fs::metadata(&m).unwrap().permissions().mode() & 0o777,
            NEW_MARKER_MODE
        );
        assert_eq!(set_enabled(&m, false).unwrap(), Edited::Unchanged);
        #[cfg(unix)]
        std::fs::set_permissions(&m, std::fs::Permissions::from_mode(0o664)).unwrap();
        assert_eq!(set_enabled(&m, true).unwrap(), Edited::Changed);
        #[cfg(unix)]
        assert_eq!(
            std::fs::metadata(&m).unwrap().permissions().mode() & 0o777,
            0o664
        );
        assert!(std::fs::read_to_string(&m)
            .unwrap()
            .contains("enabled = true"));
    }

    /// Unix symlinks (creating one on Windows needs a privilege or
    /// Developer Mode).
    #[cfg(unix)]
    #[test]
    fn a_linked_marker_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let m = t.path().join(MARKER_FILE);
        assert_eq!(set_enabled(&m, true).unwrap(), Edited::Created);
        let l = t.path().join("linked");
        std::fs::create_dir(&l).unwrap();
        std::os::unix::fs::symlink(&m, l.join(MARKER_FILE)).unwrap();
        assert!(matches!(
            set_enabled(&l.join(MARKER_FILE), false),
            Err(EditError::Refused { .. })
        ));
        assert!(std::fs::read_to_string(&m)
            .unwrap()
            .contains("enabled = true"));
    }

    #[test]
    fn new_markers_go_to_the_checkout_top_level() {
        let t = tempfile::tempdir().unwrap();
        let sub = t.path().join("repo/src/deep");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(new_marker_dir(&sub), sub);
        std::fs::write(t.path().join("repo/.git"), "gitdir: elsewhere\n").unwrap();
        assert_eq!(new_marker_dir(&sub), t.path().join("repo"));
    }
}
