//! Agents that run one executable per event, named after the event, from a
//! hooks directory (Cline CLI: `~/.cline/hooks/PreToolUse`, …): profile
//! shape `scripts`. memhook writes one small POSIX shell script per event
//! that execs `memhook hook --event E --agent A`, owner-only (0700).
//!
//! A script is memhook's when it is exactly what memhook would write for
//! that event (three lines: `#!/bin/sh`, the banner naming the agent and
//! the event, `exec <hook command>` whose words parse as a memhook hook
//! command of that agent and event). Anything else in a file of that name —
//! or in another file the agent would take for the same event (its names
//! are case-insensitive and may carry an extension: `pretooluse.sh`) — is
//! the user's: install refuses and names it, uninstall leaves it alone.
//!
//! Uninstall deletes memhook's scripts, then the directories install
//! created for them (the install ledger's `dir:` entries, keyed by the
//! hooks directory) once they are empty.

use super::apply::{self, io_err, InstallError};
use super::command::{parse_hook_command, Baked, OwnedHook};
use super::profile::Profile;
use super::{ledger, plugin, Flags};
use std::path::{Path, PathBuf};

/// The script's first line.
const SHEBANG: &str = "#!/bin/sh";

/// The mode of memhook's scripts: the owner reads, writes and runs them.
const SCRIPT_MODE: u32 = 0o700;

/// The second line of the script for `agent`'s `native` event.
fn banner(p: &Profile, native: &str) -> String {
    format!(
        "# memhook: {} {native} hook, written by `memhook install-hooks --agent {}`; `memhook uninstall-hooks --agent {}` removes it",
        p.name, p.id, p.id
    )
}

/// The script for one event.
pub fn render(p: &Profile, native: &str, ours: &str, baked: &Baked) -> String {
    format!(
        "{SHEBANG}\n{}\nexec {}\n",
        banner(p, native),
        baked.hook_command(ours, &p.id)
    )
}

/// The hook command of `text` when it is exactly memhook's script for
/// `native` (`ours` the `--event` it must name).
pub fn owned(p: &Profile, native: &str, ours: &str, text: &str) -> Option<OwnedHook> {
    let body = text.strip_suffix('\n')?;
    let mut lines = body.split('\n');
    let (Some(shebang), Some(banner_line), Some(exec), None) =
        (lines.next(), lines.next(), lines.next(), lines.next())
    else {
        return None;
    };
    if shebang != SHEBANG || banner_line != banner(p, native) {
        return None;
    }
    let hook = parse_hook_command(exec.strip_prefix("exec ")?)?;
    (hook.agent == p.id && hook.event == ours).then_some(hook)
}

/// One event's script file and what is in it now.
struct Slot<'p> {
    native: &'p str,
    ours: &'p str,
    path: PathBuf,
    current: Option<String>,
}

/// The event files under `dir`, read. One that is not a regular file (a
/// symlink, a directory) or not UTF-8 reads as empty text, which is never
/// memhook's: install refuses it by name, uninstall leaves it alone.
fn slots<'p>(p: &'p Profile, dir: &Path) -> Result<Vec<Slot<'p>>, InstallError> {
    let mut out = Vec::new();
    for [native, ours] in &p.events {
        let path = dir.join(native);
        let current = match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_err(&path)(e)),
            Ok(m) if !m.is_file() => Some(String::new()),
            Ok(_) => match std::fs::read(&path) {
                Ok(b) => Some(String::from_utf8(b).unwrap_or_default()),
                Err(e) => return Err(io_err(&path)(e)),
            },
        };
        out.push(Slot {
            native,
            ours,
            path,
            current,
        });
    }
    Ok(out)
}

/// Files in `dir` the agent would run for `native` besides `exact`: the
/// same name in another case, or with an extension (`PreToolUse.sh`,
/// `pretooluse.py`).
fn other_files_for(dir: &Path, native: &str, exact: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let want = native.to_ascii_lowercase();
    let mut v: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|path| path != exact)
        .filter(|path| {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().to_ascii_lowercase())
                .unwrap_or_default();
            name.split('.').next() == Some(want.as_str())
        })
        .collect();
    v.sort();
    v
}

/// Refuse when a file of the user's stands where memhook's script for an
/// event would go, or beside it for the same event.
fn refuse_users_files(
    p: &Profile,
    dir: &Path,
    slots: &[Slot],
    baked: &Baked,
) -> Result<(), InstallError> {
    for s in slots {
        if let Some(text) = &s.current {
            if owned(p, s.native, s.ours, text).is_none() {
                return Err(InstallError::Refused(format!(
                    "{} exists and was not written by memhook: {} runs one hook file per event, so memhook will not replace it. \
                     Move it away and re-run, or keep it and have it pass its stdin to `{}` and print what that prints",
                    s.path.display(),
                    p.name,
                    baked.hook_command(s.ours, &p.id)
                )));
            }
        }
        if let Some(other) = other_files_for(dir, s.native, &s.path).first() {
            return Err(InstallError::Refused(format!(
                "{} is a {} hook for {} already (its hook names ignore case and extension); memhook will not add a second one. \
                 Move it away and re-run",
                other.display(),
                p.name,
                s.native
            )));
        }
    }
    Ok(())
}

/// The settings to bake: the command line's, else what memhook's scripts
/// already hold.
fn existing_baked(p: &Profile, slots: &[Slot]) -> Option<Baked> {
    slots.iter().find_map(|s| {
        s.current
            .as_deref()
            .and_then(|t| owned(p, s.native, s.ours, t))
            .map(|o| o.baked)
    })
}

/// Whether `path` has the mode memhook gives its scripts.
fn has_script_mode(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o7777 == SCRIPT_MODE)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        true
    }
}

/// `install-hooks` for a `scripts` profile: `dir` is the hooks directory.
pub(super) fn install(
    p: &Profile,
    dir: &Path,
    flags: &Flags,
    write: bool,
) -> Result<(), InstallError> {
    if cfg!(windows) {
        return Err(InstallError::Refused(format!(
            "{}: memhook writes its hooks as POSIX shell scripts, which {} does not run on Windows; wire it on Linux or macOS (docs/install.md, \"Cline CLI\")",
            dir.display(),
            p.name
        )));
    }
    let slots = slots(p, dir)?;
    let baked = flags.baked(existing_baked(p, &slots).as_ref());
    refuse_users_files(p, dir, &slots, &baked)?;
    let next: Vec<String> = slots
        .iter()
        .map(|s| render(p, s.native, s.ours, &baked))
        .collect();
    if !write {
        let mut changed = false;
        for (s, n) in slots.iter().zip(&next) {
            if s.current.as_deref() != Some(n.as_str()) {
                changed = true;
                say_raw!(
                    "{}",
                    super::diff::unified(
                        &s.path.display().to_string(),
                        s.current.as_deref(),
                        Some(n)
                    )
                );
            }
        }
        if changed {
            say!(
                "# dry run: nothing was written; re-run with --apply to write these files (mode 0700) in {} ({})",
                dir.display(),
                p.name
            );
        } else {
            say!("{}: already up to date ({})", dir.display(), p.name);
        }
        return Ok(());
    }
    let new_dirs = plugin::dirs_to_create(&dir.join(".memhook-probe"));
    if !dir.is_dir() {
        let mut b = std::fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            b.mode(0o700);
        }
        b.create(dir).map_err(io_err(dir))?;
    }
    let lock = std::fs::File::open(dir).map_err(io_err(dir))?;
    fs2::FileExt::lock_exclusive(&lock).map_err(io_err(dir))?;
    // Read again under the lock: another install may have run meanwhile.
    let slots = self::slots(p, dir)?;
    refuse_users_files(p, dir, &slots, &baked)?;
    let mut changed = false;
    for (s, n) in slots.iter().zip(&next) {
        let same = s.current.as_deref() == Some(n.as_str());
        if same && has_script_mode(&s.path) {
            say!("{}: already up to date ({})", s.path.display(), p.name);
            continue;
        }
        changed = true;
        apply::write_atomic(&s.path, n.as_bytes(), SCRIPT_MODE, &|| Ok(()))?;
        let verb = if s.current.is_none() {
            "created"
        } else {
            "updated"
        };
        say!(
            "{verb} {} ({}: memhook installed)",
            s.path.display(),
            p.name
        );
    }
    drop(lock);
    if !new_dirs.is_empty() {
        if let Err(e) = ledger::record(baked.data_dir.as_deref(), dir, &new_dirs) {
            eprintln!("memhook: warning: could not record which directories were created: {e}");
        }
    }
    if changed && !p.notice.is_empty() {
        say!("note: {}", p.notice.replace('\n', "\n      "));
    }
    Ok(())
}

/// `uninstall-hooks` for a `scripts` profile.
pub(super) fn uninstall(p: &Profile, dir: &Path, write: bool) -> Result<(), InstallError> {
    if !dir.is_dir() {
        say!("{}: nothing to remove for {}", dir.display(), p.name);
        return Ok(());
    }
    let slots = slots(p, dir)?;
    let mut data_dir = None;
    let mut ours = Vec::new();
    for s in &slots {
        match s
            .current
            .as_deref()
            .map(|t| (t, owned(p, s.native, s.ours, t)))
        {
            Some((t, Some(o))) => {
                data_dir = data_dir.or(o.baked.data_dir);
                ours.push((s, t));
            }
            Some((_, None)) => eprintln!(
                "memhook: {} was not written by memhook; leaving it alone",
                s.path.display()
            ),
            None => {}
        }
    }
    if ours.is_empty() {
        say!("{}: nothing to remove for {}", dir.display(), p.name);
        return Ok(());
    }
    let created = ledger::created(data_dir.as_deref(), dir).unwrap_or_default();
    let mut dirs: Vec<PathBuf> = created
        .iter()
        .filter_map(|e| e.strip_prefix("dir:").map(PathBuf::from))
        .collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    if !write {
        for (s, t) in &ours {
            say_raw!(
                "{}",
                super::diff::unified(&s.path.display().to_string(), Some(t), None)
            );
        }
        for d in &dirs {
            say!(
                "# and remove {} (created by install-hooks) if nothing else is in it",
                d.display()
            );
        }
        say!(
            "# dry run: nothing was written; re-run with --apply to remove memhook from {}",
            dir.display()
        );
        return Ok(());
    }
    for (s, _) in &ours {
        std::fs::remove_file(&s.path).map_err(io_err(&s.path))?;
        say!("deleted {} ({}: memhook removed)", s.path.display(), p.name);
    }
    for d in &dirs {
        if std::fs::remove_dir(d).is_ok() {
            say!(
                "removed {} (created by install-hooks, now empty)",
                d.display()
            );
        }
    }
    ledger::forget(data_dir.as_deref(), dir);
    Ok(())
}

/// memhook's hooks among `dir`'s event files (for doctor).
pub fn owned_hooks(p: &Profile, dir: &Path) -> Vec<OwnedHook> {
    let Ok(slots) = slots(p, dir) else {
        return Vec::new();
    };
    slots
        .iter()
        .filter_map(|s| {
            s.current
                .as_deref()
                .and_then(|t| owned(p, s.native, s.ours, t))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cline() -> &'static Profile {
        super::super::profile::get("cline").unwrap()
    }

    fn baked() -> Baked {
        Baked {
            exe: PathBuf::from("/opt/my tools/memhook"),
            data_dir: Some(PathBuf::from("/d d")),
            ..Baked::default()
        }
    }

    #[test]
    fn a_script_is_ours_by_its_exact_shape_only() {
        let p = cline();
        let s = render(p, "PreToolUse", "pre-tool-use", &baked());
        assert!(s.starts_with("#!/bin/sh\n# memhook: Cline CLI PreToolUse hook"));
        assert!(s.ends_with(
            "\nexec '/opt/my tools/memhook' --data-dir '/d d' hook --event pre-tool-use --agent cline\n"
        ));
        let o = owned(p, "PreToolUse", "pre-tool-use", &s).unwrap();
        assert_eq!(o.baked, baked());
        // Another event's script, or one more line, or another agent: not ours.
        assert!(owned(p, "PostToolUse", "post-tool-use", &s).is_none());
        assert!(owned(p, "PreToolUse", "pre-tool-use", &format!("{s}echo hi\n")).is_none());
        assert!(owned(
            p,
            "PreToolUse",
            "pre-tool-use",
            &s.replace("--agent cline", "--agent pi")
        )
        .is_none());
        assert!(owned(
            p,
            "PreToolUse",
            "pre-tool-use",
            &s.replace("exec ", "exec env ")
        )
        .is_none());
        assert!(owned(p, "PreToolUse", "pre-tool-use", s.trim_end()).is_none());
        assert!(owned(p, "PreToolUse", "pre-tool-use", "#!/bin/sh\necho mine\n").is_none());
    }

    #[test]
    fn the_agents_other_spellings_of_an_event_file_are_found() {
        let t = tempfile::tempdir().unwrap();
        let exact = t.path().join("PreToolUse");
        for f in ["pretooluse.sh", "PreToolUseX", "PostToolUse"] {
            std::fs::write(t.path().join(f), "x").unwrap();
        }
        assert_eq!(
            other_files_for(t.path(), "PreToolUse", &exact),
            [t.path().join("pretooluse.sh")]
        );
    }
}
