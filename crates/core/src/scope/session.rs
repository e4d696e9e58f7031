//! A session stays in its scope (docs/marker-file.md, "A session stays in
//! its scope"): an agent that runs `cd src` mid-session must not file the
//! rest of the session under a project `src`.
//!
//! The first event of a session notes the scope it resolved to in
//! `<data dir>/sessions/<key>` (`key`: a hash of the agent and the session
//! id). A later event takes the noted scope unless a flag, env or marker
//! names a field differently from the note: a derived field (from the
//! fallback or the strategy) never moves a session, and a named one that
//! agrees with the note does not either. An event whose names differ keeps
//! its own scope, and that becomes the session's scope. The capture policy
//! is never taken from the note: it always comes from the nearest marker
//! of the event's own cwd. A noted scope was checked against the scope
//! bindings when it was noted, so a quarantined session stays
//! quarantined.
//!
//! Each note is one small JSON object (at most [`MAX_NOTE_BYTES`]), 0600,
//! never read or written through a symlink, replaced whole (temp file and
//! rename), and removed [`MAX_NOTE_AGE`] after its last write. A known
//! session costs one small file read per event; the note is written only
//! when the session starts or changes scope.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Scope, Settings, Source};
use crate::data_dir::{check_private_dir, ensure_private_dir, write_private_file};

/// The notes' directory in the data dir.
pub const SESSIONS_DIR: &str = "sessions";
/// Largest note read; a bigger one is ignored (and replaced).
pub const MAX_NOTE_BYTES: u64 = 4 * 1024;
/// A note not written for this long is removed (when a new one is written).
pub const MAX_NOTE_AGE: Duration = Duration::from_secs(7 * 24 * 60 * 60);
/// At most this many stale notes are removed per new note.
pub const MAX_PRUNE: usize = 64;
/// Note format version.
const VERSION: u32 = 1;

/// The scope fields a note keeps (not the capture policy, never sticky).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeFields {
    pub workspace: String,
    pub project: String,
    pub workspace_source: Source,
    pub project_source: Source,
    pub marker: Option<PathBuf>,
    pub settings: Settings,
}

impl ScopeFields {
    pub fn of(scope: &Scope) -> ScopeFields {
        ScopeFields {
            workspace: scope.workspace.clone(),
            project: scope.project.clone(),
            workspace_source: scope.workspace_source,
            project_source: scope.project_source,
            marker: scope.marker.clone(),
            settings: scope.settings.clone(),
        }
    }

    /// Put these fields in place of `scope`'s (the capture policy and the
    /// warnings stay the event's own).
    fn apply(&self, scope: &mut Scope) {
        scope.workspace = self.workspace.clone();
        scope.project = self.project.clone();
        scope.workspace_source = self.workspace_source;
        scope.project_source = self.project_source;
        scope.marker = self.marker.clone();
        scope.settings = self.settings.clone();
    }

    fn valid(&self) -> bool {
        crate::names::is_valid_name(&self.workspace) && crate::names::is_valid_name(&self.project)
    }
}

/// What a session noted: the scope it resolved to (what a marker or env
/// is compared with) and the scope the hook used after the binding check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    v: u32,
    pub claimed: ScopeFields,
    pub used: ScopeFields,
    /// `used` is the quarantine of an untrusted claim (DESIGN §11).
    pub quarantined: bool,
}

impl Note {
    fn new(claimed: ScopeFields, used: &Scope, quarantined: bool) -> Note {
        Note {
            v: VERSION,
            claimed,
            used: ScopeFields::of(used),
            quarantined,
        }
    }

    /// A note this memhook would have written.
    fn valid(&self) -> bool {
        self.v == VERSION && self.claimed.valid() && self.used.valid()
    }
}

/// Whether a flag, the environment or a marker named this field (one from
/// the fallback or the strategy is derived).
fn named(source: Source) -> bool {
    matches!(source, Source::Flag | Source::Env | Source::Marker)
}

/// Whether `scope` (as resolved, before the binding check) stays in the
/// session of `note`: every field it names agrees with the note.
fn stays(note: &Note, scope: &Scope) -> bool {
    let agrees = |source, new: &str, old: &str| !named(source) || new == old;
    agrees(
        scope.workspace_source,
        &scope.workspace,
        &note.claimed.workspace,
    ) && agrees(scope.project_source, &scope.project, &note.claimed.project)
}

/// One session's note.
#[derive(Debug, Clone)]
pub struct Session {
    data_dir: PathBuf,
    path: PathBuf,
}

impl Session {
    /// The note of `session_id` of `agent` in `data_dir` (nothing is read).
    pub fn new(data_dir: &Path, agent: &str, session_id: &str) -> Session {
        let mut h = Sha256::new();
        h.update(agent.as_bytes());
        h.update([0]);
        h.update(session_id.as_bytes());
        let key = crate::hex::encode(&h.finalize()[..16]);
        Session {
            data_dir: data_dir.to_path_buf(),
            path: data_dir.join(SESSIONS_DIR).join(key),
        }
    }

    /// The note, if there is a usable one.
    /// The data dir and `sessions/` must be private directories (never
    /// a symlink).
    pub fn read(&self) -> Option<Note> {
        check_private_dir(&self.data_dir).ok()?;
        check_private_dir(self.path.parent()?).ok()?;
        // A regular file owned by this user, or nothing.
        let bytes = crate::data_dir::read_private_file(&self.path, MAX_NOTE_BYTES + 1).ok()?;
        if bytes.len() as u64 > MAX_NOTE_BYTES {
            return None;
        }
        serde_json::from_slice::<Note>(&bytes)
            .ok()
            .filter(Note::valid)
    }

    /// Decide the event's scope from the session's `note`:
    /// - nothing named (every field derived): the scope the session used,
    ///   as it was bound; returns `Some(quarantined)`, no check needed;
    /// - named fields that agree with the note: the scope the session
    ///   claimed (its derived fields replaced), to be checked again (a
    ///   `memhook trust` since counts); returns `None`;
    /// - names that differ, or no note: `scope` as resolved; `None`.
    ///
    /// After `None` the caller checks the binding and calls
    /// [`Session::remember`].
    pub fn recall(&self, note: Option<&Note>, scope: &mut Scope) -> Option<bool> {
        let note = note.filter(|n| stays(n, scope))?;
        if named(scope.workspace_source) || named(scope.project_source) {
            note.claimed.apply(scope);
            return None;
        }
        note.used.apply(scope);
        Some(note.quarantined)
    }

    /// Note the session's scope: `claimed` as resolved, `used` after the
    /// binding check (`quarantined`), unless `known` says so already. Best
    /// effort: a note that cannot be written only means the next event
    /// decides afresh.
    pub fn remember(
        &self,
        known: Option<&Note>,
        claimed: ScopeFields,
        used: &Scope,
        quarantined: bool,
    ) {
        let note = Note::new(claimed, used, quarantined);
        if known == Some(&note) {
            return;
        }
        let Some(dir) = self.path.parent() else {
            return;
        };
        if ensure_private_dir(&self.data_dir).is_err() || ensure_private_dir(dir).is_err() {
            return;
        }
        if known.is_none() {
            prune(dir, MAX_NOTE_AGE);
        }
        if let Ok(bytes) = serde_json::to_vec(&note) {
            if let Err(e) = write_private_file(&self.path, &bytes) {
                eprintln!(
                    "memhook: cannot note the session's scope in {}: {e}",
                    self.path.display()
                );
            }
        }
    }
}

impl Session {
    /// Claim the session's briefing, for an agent that takes it at a later
    /// event than session start (envelope::briefing_event): true the first
    /// time for this session, false after (and when the claim cannot be
    /// made). The claim is a `<note>.briefed` file created exclusively
    /// (0600, never through a symlink), so two concurrent events cannot
    /// both win; it ages out with the notes.
    pub fn claim_briefing(&self) -> bool {
        let Some(dir) = self.path.parent() else {
            return false;
        };
        if ensure_private_dir(&self.data_dir).is_err() || ensure_private_dir(dir).is_err() {
            return false;
        }
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(".briefed");
        let mut o = fs::OpenOptions::new();
        o.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o600).custom_flags(libc::O_NOFOLLOW);
        }
        o.open(dir.join(name)).is_ok()
    }

    /// Whether the session's briefing was claimed already
    /// ([`Session::claim_briefing`]), without claiming it: the per-event
    /// binary asks this before it runs a late briefing event itself (only
    /// the first such event of a session needs the store). A claim file
    /// that is not a regular file (a symlink planted in the data dir)
    /// counts as no claim: the event then goes where the claim is made, and
    /// that refuses it too.
    pub fn briefing_claimed(&self) -> bool {
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(".briefed");
        self.path
            .with_file_name(name)
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_file())
    }
}

/// Remove notes (and leftover temp files) not written for `max_age`; at
/// most [`MAX_PRUNE`] per call. Symlinks are removed, never followed.
fn prune(dir: &Path, max_age: Duration) -> usize {
    let Ok(rd) = fs::read_dir(dir) else { return 0 };
    let mut n = 0;
    for ent in rd.flatten() {
        let stale = ent
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= max_age);
        if stale && fs::remove_file(ent.path()).is_ok() {
            n += 1;
            if n >= MAX_PRUNE {
                break;
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::{CaptureConfig, Strategy};

    fn scope(project: &str, source: Source) -> Scope {
        Scope {
            workspace: "default".into(),
            project: project.into(),
            workspace_source: Source::Fallback,
            project_source: source,
            marker: None,
            strategy: Strategy::Basename,
            settings: Settings::default(),
            capture: CaptureConfig::Absent,
            warnings: Vec::new(),
        }
    }

    fn fields(project: &str) -> ScopeFields {
        ScopeFields::of(&scope(project, Source::Fallback))
    }

    #[test]
    fn a_briefing_claim_is_seen_without_being_made() {
        let t = tempfile::tempdir().unwrap();
        let s = Session::new(t.path(), "cline", "task-1");
        assert!(!s.briefing_claimed(), "nothing claimed yet");
        assert!(!s.briefing_claimed(), "asking claims nothing");
        assert!(s.claim_briefing());
        assert!(s.briefing_claimed());
        assert!(!s.claim_briefing(), "claimed once");
        // Another session of the same agent is its own.
        assert!(!Session::new(t.path(), "cline", "task-2").briefing_claimed());
        #[cfg(unix)]
        {
            // A claim planted as a symlink is no claim (and cannot be made).
            let planted = Session::new(t.path(), "cline", "task-3");
            let mut name = planted.path.file_name().unwrap().to_os_string();
            name.push(".briefed");
            let target = t.path().join("elsewhere");
            fs::write(&target, b"").unwrap();
            std::os::unix::fs::symlink(&target, planted.path.with_file_name(name)).unwrap();
            assert!(!planted.briefing_claimed());
            assert!(!planted.claim_briefing());
        }
    }

    #[test]
    fn a_derived_scope_follows_the_note_and_a_named_one_replaces_it() {
        let t = tempfile::tempdir().unwrap();
        let s = Session::new(t.path(), "claude-code", "s1");
        assert_eq!(s.read(), None);
        let start = scope("demo", Source::Fallback);
        s.remember(None, fields("demo"), &start, false);
        let note = s.read().unwrap();
        assert_eq!(note.used.project, "demo");
        // `cd src`: derived, so the session's scope.
        let mut moved = scope("src", Source::Fallback);
        moved.capture = CaptureConfig::Inactive {
            marker: PathBuf::from("/x/.ai-memory.toml"),
            assistant_text: true,
        };
        assert_eq!(s.recall(Some(&note), &mut moved), Some(false));
        assert_eq!(moved.project, "demo");
        assert_eq!(
            moved.capture.state_str(),
            "inactive",
            "capture is never sticky"
        );
        // A marker naming the session's own workspace does not move it
        // (but is checked again).
        let mut same = scope("src", Source::Fallback);
        same.workspace_source = Source::Marker;
        assert_eq!(s.recall(Some(&note), &mut same), None);
        assert_eq!(same.project, "demo");
        // A marker naming another scope wins and is noted (here bound to
        // a quarantine: the note keeps what was claimed and what is used).
        let mut named = scope("lib", Source::Marker);
        assert_eq!(s.recall(Some(&note), &mut named), None);
        assert_eq!(named.project, "lib");
        let claimed = ScopeFields::of(&named);
        let mut bound = named.clone();
        bound.workspace = "quarantine".into();
        bound.project = "lib.0123abcd".into();
        s.remember(Some(&note), claimed, &bound, true);
        let note = s.read().unwrap();
        assert_eq!(
            (note.used.project.as_str(), note.quarantined),
            ("lib.0123abcd", true)
        );
        // Then a derived directory: still the quarantine, unchecked.
        let mut away = scope("elsewhere", Source::Fallback);
        assert_eq!(s.recall(Some(&note), &mut away), Some(true));
        assert_eq!(away.workspace, "quarantine");
        // Another session starts fresh.
        assert_eq!(Session::new(t.path(), "claude-code", "s2").read(), None);
        assert_eq!(Session::new(t.path(), "codex", "s1").read(), None);
    }

    #[cfg(unix)]
    #[test]
    fn notes_are_private_bounded_and_never_followed() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let s = Session::new(t.path(), "claude-code", "s1");
        s.remember(
            None,
            fields("demo"),
            &scope("demo", Source::Fallback),
            false,
        );
        let mode = fs::metadata(&s.path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            fs::metadata(t.path().join(SESSIONS_DIR))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o700
        );
        // Too large, a bad name, or a symlink: no note.
        fs::write(&s.path, vec![b' '; MAX_NOTE_BYTES as usize + 1]).unwrap();
        assert_eq!(s.read(), None);
        let mut bad = serde_json::to_value(Note::new(
            fields("demo"),
            &scope("demo", Source::Fallback),
            false,
        ))
        .unwrap();
        bad["used"]["project"] = "../x".into();
        fs::write(&s.path, bad.to_string()).unwrap();
        assert_eq!(s.read(), None);
        let elsewhere = t.path().join("elsewhere");
        fs::write(
            &elsewhere,
            serde_json::to_vec(&Note::new(
                fields("evil"),
                &scope("evil", Source::Fallback),
                false,
            ))
            .unwrap(),
        )
        .unwrap();
        fs::remove_file(&s.path).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &s.path).unwrap();
        assert_eq!(s.read(), None);
    }

    #[cfg(unix)]
    #[test]
    fn nothing_is_read_or_written_through_a_symlinked_data_dir() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        fs::create_dir(&real).unwrap();
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let s = Session::new(&real, "claude-code", "s1");
        s.remember(
            None,
            fields("demo"),
            &scope("demo", Source::Fallback),
            false,
        );
        let through = Session::new(&link, "claude-code", "s1");
        assert_eq!(through.read(), None);
        through.remember(
            None,
            fields("evil"),
            &scope("evil", Source::Fallback),
            false,
        );
        assert_eq!(s.read().unwrap().used.project, "demo");
        let sessions = real.join(SESSIONS_DIR);
        fs::rename(&sessions, real.join("moved")).unwrap();
        std::os::unix::fs::symlink(real.join("moved"), &sessions).unwrap();
        assert_eq!(s.read(), None);
    }

    #[test]
    fn stale_notes_are_pruned() {
        let t = tempfile::tempdir().unwrap();
        let s = Session::new(t.path(), "claude-code", "old");
        s.remember(
            None,
            fields("demo"),
            &scope("demo", Source::Fallback),
            false,
        );
        let dir = t.path().join(SESSIONS_DIR);
        assert_eq!(prune(&dir, MAX_NOTE_AGE), 0, "too young");
        assert_eq!(prune(&dir, Duration::ZERO), 1);
        assert_eq!(s.read(), None);
    }
}
