//! After every commit, a new store generation
//! ([`memhook_core::briefing_cache::bump`]): a briefing kept ready from an
//! older snapshot is never used again. SQLite calls a WAL hook once per
//! commit, after the commit took place and its write lock was released
//! (<https://sqlite.org/c3ref/wal_hook.html>); a read-only transaction
//! calls nothing.
//!
//! Registering a WAL hook replaces SQLite's own automatic checkpoint, which
//! is the same hook: so this one also checkpoints (passively) once the WAL
//! holds [`AUTOCHECKPOINT_PAGES`], as SQLite's default would.

use std::ffi::{c_char, c_int, c_void};
use std::path::PathBuf;

use rusqlite::{ffi, Connection};

/// WAL pages after which a commit also checkpoints: SQLite's default
/// (`SQLITE_DEFAULT_WAL_AUTOCHECKPOINT`).
pub const AUTOCHECKPOINT_PAGES: c_int = 1000;

/// The data dir the hook writes the generation in, owned by the store and
/// dropped after its connection.
pub(crate) struct Generation {
    _dir: Box<PathBuf>,
}

impl Generation {
    /// Register the hook on `conn` for `data_dir`. The returned value must
    /// outlive `conn` (the `Store` declares it after its connection, so it
    /// is dropped after).
    pub(crate) fn register(conn: &Connection, data_dir: PathBuf) -> Generation {
        let dir = Box::new(data_dir);
        let ptr: *const PathBuf = &*dir;
        // SAFETY: the handle is valid while `conn` lives; `ptr` points into a
        // box that the store keeps until after `conn` is closed.
        unsafe {
            ffi::sqlite3_wal_hook(conn.handle(), Some(committed), ptr as *mut c_void);
        }
        Generation { _dir: dir }
    }
}

unsafe extern "C" fn committed(
    dir: *mut c_void,
    db: *mut ffi::sqlite3,
    name: *const c_char,
    pages: c_int,
) -> c_int {
    // SAFETY: `dir` is the `PathBuf` registered above, alive while the
    // connection is.
    let dir = unsafe { &*(dir as *const PathBuf) };
    // A failure here cannot undo the commit; `bump` removes what could be
    // stale instead, and a panic must not cross into C.
    let _ = std::panic::catch_unwind(|| memhook_core::briefing_cache::bump(dir));
    if pages >= AUTOCHECKPOINT_PAGES {
        // SAFETY: SQLite passes its own handle and the database's name.
        unsafe { ffi::sqlite3_wal_checkpoint(db, name) };
    }
    ffi::SQLITE_OK
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::samples::rec;
    use crate::sqlite::Store;
    use memhook_core::briefing_cache::generation;

    #[test]
    fn a_commit_writes_a_new_generation_and_a_read_does_not() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        // Creating the store committed.
        let g0 = generation(t.path()).expect("a generation after the first commit");
        s.read(|s| s.sessions(("default", "p"), None, 3)).unwrap();
        assert_eq!(generation(t.path()).as_deref(), Some(g0.as_str()));
        s.insert_all([rec(&format!("{:032x}", 1), 1000, "p", "s1", "stop")].iter())
            .unwrap();
        let g1 = generation(t.path()).unwrap();
        assert_ne!(g1, g0);
        // A write from another connection (a server, `memhook import`) too.
        let mut other = Store::open(t.path()).unwrap();
        other
            .insert_all([rec(&format!("{:032x}", 2), 1001, "p", "s1", "stop")].iter())
            .unwrap();
        assert_ne!(generation(t.path()).unwrap(), g1);
    }

    #[test]
    fn the_wal_is_still_checkpointed_as_it_fills() {
        let t = tempfile::tempdir().unwrap();
        let s = Store::open(t.path()).unwrap();
        let page: i64 = s
            .conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap();
        s.conn
            .execute_batch("CREATE TABLE filler (b BLOB)")
            .unwrap();
        // Three times the pages after which SQLite checkpoints, one commit
        // of sixteen pages at a time: without a checkpoint in the hook the
        // WAL would hold them all.
        let commits = 3 * AUTOCHECKPOINT_PAGES as i64 / 16;
        for _ in 0..commits {
            s.conn
                .execute(
                    "INSERT INTO filler VALUES (zeroblob(?1))",
                    [16 * page - 200],
                )
                .unwrap();
        }
        let wal = std::fs::metadata(t.path().join("store.sqlite3-wal"))
            .unwrap()
            .len() as i64;
        assert!(
            wal < (AUTOCHECKPOINT_PAGES as i64 + 64) * (page + 24),
            "the WAL grew to {wal} bytes ({} pages)",
            wal / page
        );
    }
}
