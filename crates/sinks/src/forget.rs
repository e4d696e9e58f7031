//! Forget in a data dir: the store's records and the pending spool files
//! of the same selector, under the drain lock, so no drainer delivers a
//! forgotten record behind the store's back. `memhook forget` and `memhook
//! serve`'s web view both call it.
//!
//! When another connection's read transaction keeps the SQLite store's
//! final checkpoint from writing the new pages into the file and emptying the WAL
//! (after waiting for it, see `memhook_store::sqlite::FORGET_READER_WAIT`),
//! the forgotten text is still in the files. That debt is written down in
//! [`PENDING_FILE`] (0600, in the data dir, no text in it) and paid by
//! [`finish_pending`], which the next `memhook forget`, `memhook drain` and
//! web-view forget run first.

use std::path::Path;
use std::time::{Duration, Instant};

use memhook_delivery::spool::{SinkTarget, Spool};
use memhook_store::model::{Database, Forgotten, Selector};
use memhook_store::sqlite::database::SqliteDatabase;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// How long `forget --yes` waits for a running drainer to let go of the
/// spool before giving up.
pub const LOCK_WAIT: Duration = Duration::from_secs(10);
/// The data dir's note that a forget's text may still be in the store's
/// files (a reader held them): it names no text, only when and why.
pub const PENDING_FILE: &str = "forget-pending";

/// Write down that the store owes a cleanup (see [`PENDING_FILE`]).
pub fn record_pending(dir: &Path) -> std::io::Result<()> {
    memhook_core::data_dir::write_private_file(
        &dir.join(PENDING_FILE),
        format!(
            "{} a forget could not move its pages into the store's file and empty its write-ahead log: \
             another connection was reading it. `memhook forget` or `memhook drain` finishes \
             the cleanup once that reader is gone.\n",
            memhook_core::timefmt::rfc3339_ms(memhook_core::timefmt::now_ms())
        )
        .as_bytes(),
    )
}

/// Whether a cleanup is owed.
pub fn cleanup_pending(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(PENDING_FILE)).is_ok()
}

/// What [`finish_pending`] found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Cleanup {
    /// Nothing was owed.
    #[default]
    None,
    /// The owed cleanup is done: the WAL is empty, its pages in the file.
    Finished,
    /// A reader still holds the store; the note stays.
    StillPending,
}

/// Pay the cleanup an earlier forget left (see [`PENDING_FILE`]): empty the
/// store's WAL, waiting for readers up to the forget's wait, and remove the
/// note when that worked.
pub fn finish_pending(dir: &Path) -> Result<Cleanup, Error> {
    let note = dir.join(PENDING_FILE);
    if !cleanup_pending(dir) {
        return Ok(Cleanup::None);
    }
    if !dir.join(memhook_store::sqlite::STORE_FILE).exists() {
        std::fs::remove_file(&note)?;
        return Ok(Cleanup::Finished);
    }
    let store = memhook_store::sqlite::Store::open(dir)?;
    if store.empty_wal(memhook_store::sqlite::forget_reader_wait())? {
        std::fs::remove_file(&note)?;
        memhook_core::data_dir::sync_dir(dir);
        Ok(Cleanup::Finished)
    } else {
        Ok(Cleanup::StillPending)
    }
}

/// What is pending in the spool for `sel`: (file, its sink).
fn pending_matches(
    dir: &Path,
    sel: &Selector,
) -> Result<Vec<(std::path::PathBuf, SinkTarget)>, Error> {
    if !dir.join("spool").is_dir() {
        return Ok(Vec::new());
    }
    let spool = Spool::open(dir)?;
    let mut out = Vec::new();
    for path in spool.pending()? {
        // An entry that cannot be read is the drainer's business (it drops
        // it as corrupt); it is not ours to guess about.
        let Ok(e) = Spool::load(&path) else { continue };
        let r = &e.record;
        if sel.matches(
            &r.key,
            r.session_id.as_deref(),
            (&r.scope.workspace, &r.scope.project),
            r.occurred_ms,
        ) {
            out.push((path, e.sink));
        }
    }
    Ok(out)
}

/// What forgetting did (`applied`) or would do (a dry run).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub applied: bool,
    /// The store's counts (`None` when there is no store).
    pub stored: Option<Forgotten>,
    /// Pending spool records of that scope removed (or that would be).
    pub pending: u64,
    /// The cleanup an earlier forget left, run before this one.
    pub earlier: Cleanup,
}

impl Report {
    /// Whether forgotten text may still be in the WAL file (a reader kept
    /// the checkpoint from emptying it).
    pub fn wal_pending(&self) -> bool {
        self.applied
            && self
                .stored
                .as_ref()
                .is_some_and(|f| f.records > 0 && !f.wal_emptied)
    }
}

/// Forget what `sel` names in the data dir `dir`: from the store and from
/// the pending spool files (`apply` false: only count). While applying, the
/// drain lock is held throughout so no drainer delivers a record of this
/// scope into the store behind our back; a drainer that keeps it longer
/// than [`LOCK_WAIT`] is an error that says to try again. The one
/// implementation `memhook forget` and `memhook serve`'s web view share.
pub fn forget_in(dir: &Path, sel: &Selector, apply: bool) -> Result<Report, Error> {
    forget_in_database(&SqliteDatabase::lazy(dir), sel, apply)
}

/// [`forget_in`] for any store a server holds: the store forgets (or
/// counts) in itself, the spool of its data dir is handled here.
///
/// On the embedded store, applying first finishes a cleanup an earlier
/// forget left ([`finish_pending`]), and records a new one when a reader
/// keeps this forget's text in the files ([`record_pending`]).
pub fn forget_in_database(db: &dyn Database, sel: &Selector, apply: bool) -> Result<Report, Error> {
    let dir = db.data_dir();
    let embedded = db.is_embedded();
    let earlier = if apply && embedded {
        finish_pending(dir)?
    } else {
        Cleanup::None
    };
    let mut report = forget_with(dir, sel, apply, || db.forget(sel, apply))?;
    report.earlier = earlier;
    if embedded && report.wal_pending() {
        record_pending(dir)?;
    }
    Ok(report)
}

/// [`forget_in`] with another store: `store` forgets in it (or counts, as
/// `apply` says) and returns its counts (`None`: there is no store), while
/// the spool of `dir` is handled here under the drain lock. `memhook
/// serve --database` uses it with PostgreSQL.
pub fn forget_with(
    dir: &Path,
    sel: &Selector,
    apply: bool,
    store: impl FnOnce() -> Result<Option<Forgotten>, Error>,
) -> Result<Report, Error> {
    let lock = if apply {
        Some(
            memhook_delivery::drain::lock_until(dir, Instant::now() + LOCK_WAIT)?.ok_or(
                "a drainer is delivering right now; run `memhook forget` again in a moment",
            )?,
        )
    } else {
        None
    };
    let pending = pending_matches(dir, sel)?;
    let stored = store()?;
    if apply {
        // The file history's lines may quote what was just forgotten; the
        // next delivery writes each project's again from what is left.
        memhook_core::history::remove_all(dir)
            .map_err(|e| format!("cannot remove the file history in {}: {e}", dir.display()))?;
    }
    let pending = match &lock {
        None => pending.len() as u64,
        Some(lock) => memhook_delivery::drain::drop_pending(
            lock,
            dir,
            &pending,
            memhook_delivery::drain::DROP_FORGOTTEN,
        )? as u64,
    };
    Ok(Report {
        applied: apply,
        stored,
        pending,
        earlier: Cleanup::None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_cleanup_is_private_names_no_text_and_is_finished_once() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(finish_pending(t.path()).unwrap(), Cleanup::None);
        record_pending(t.path()).unwrap();
        assert!(cleanup_pending(t.path()));
        let note = t.path().join(PENDING_FILE);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(&note).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        assert!(std::fs::read_to_string(&note)
            .unwrap()
            .contains("memhook drain"));
        // With the store there and no reader, the cleanup is done at once.
        drop(memhook_store::sqlite::Store::open(t.path()).unwrap());
        assert_eq!(finish_pending(t.path()).unwrap(), Cleanup::Finished);
        assert!(!cleanup_pending(t.path()));
        assert_eq!(finish_pending(t.path()).unwrap(), Cleanup::None);
    }
}
