//! Forgetting: remove records from the store so that their text is in no
//! page of the database file, its WAL or the full-text index (DESIGN §12).
//!
//! One transaction deletes the records' full-text entries (FTS5 `delete` with
//! the indexed values) and rows, recounts or removes the sessions and projects
//! they belonged to, and logs what was forgotten (scope and counts, never the
//! text). `secure_delete` zeroes every freed cell and page; afterwards the
//! index is merged into a fresh segment (`optimize`, which drops the deleted
//! entries), the file is rebuilt from live content (`VACUUM`: free space in
//! pages can hold stale bytes from long-ago page splits), and the WAL is
//! checkpointed and truncated. Forgetting costs a copy of the database; it is
//! rare and asked for by the user.
//!
//! Another connection in a read transaction (a `memhook serve`, a search, a
//! `sqlite3` shell) pins the old pages: until it ends, the checkpoint can
//! neither write the rebuilt file over them nor empty the WAL. The
//! checkpoint waits for such readers up to [`FORGET_READER_WAIT`]; if one
//! is still there, `wal_emptied` is false and the caller records the cleanup
//! it owes (`memhook_sinks::forget`), which [`Store::empty_wal`] completes
//! once the reader is gone.

use std::time::Duration;

use rusqlite::params;

use crate::model::*;

use super::{Store, StoreError, WORK_EVENTS};
use memhook_core::timefmt::now_ms;

/// How long forget's final checkpoint waits for other connections' read
/// transactions to end.
pub const FORGET_READER_WAIT: Duration = Duration::from_secs(5);
/// Test knob: a shorter [`FORGET_READER_WAIT`], in milliseconds (never longer).
pub const FORGET_READER_WAIT_ENV: &str = "MEMHOOK_FORGET_READER_WAIT_MS";

/// [`FORGET_READER_WAIT`], or less when [`FORGET_READER_WAIT_ENV`] says so.
pub fn forget_reader_wait() -> Duration {
    std::env::var(FORGET_READER_WAIT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(FORGET_READER_WAIT, |ms| {
            Duration::from_millis(ms).min(FORGET_READER_WAIT)
        })
}

impl Store {
    /// Copy the whole WAL into the database file and truncate it, waiting up
    /// to `wait` for readers of older snapshots to finish. `true` when the
    /// WAL is empty afterwards (every page that a forget rebuilt is in the
    /// file, the old ones overwritten or cut off); `false` when a reader
    /// still holds it.
    pub fn empty_wal(&self, wait: Duration) -> Result<bool, StoreError> {
        let e = |x| self_err(&self.path, x);
        self.conn.busy_timeout(wait).map_err(e)?;
        let busy = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                r.get::<_, i64>(0)
            });
        super::set_wait(&self.conn, self.deadline).map_err(e)?;
        Ok(busy.map_err(e)? == 0)
    }

    /// Forget the records `sel` names. With `apply` false nothing changes and
    /// the counts say what would go (`wal_emptied` is then false).
    pub fn forget(&mut self, sel: &Selector, apply: bool) -> Result<Forgotten, ForgetError> {
        check_forget_key(sel)?;
        let e = |x| self_err(&self.path, x);
        let (cond, args) = condition(sel);
        self.conn
            .execute_batch("PRAGMA secure_delete = ON")
            .map_err(e)?;
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(e)?;
        tx.execute_batch(
            "CREATE TEMP TABLE IF NOT EXISTS forget_ids (id INTEGER PRIMARY KEY);
             DELETE FROM forget_ids;",
        )
        .map_err(e)?;
        tx.execute(
            &format!(
                "INSERT INTO forget_ids SELECT r.id FROM records r \
                 JOIN projects p ON p.id = r.project_id WHERE {cond}"
            ),
            rusqlite::params_from_iter(args.iter()),
        )
        .map_err(e)?;
        let records: u64 = tx
            .query_row("SELECT count(*) FROM forget_ids", [], |r| r.get(0))
            .map_err(e)?;
        if let Some(k) = &sel.record {
            if records > 1 {
                return Err(ForgetError::Key(format!(
                    "--record {k}: {records} records start with it; give more of the key"
                )));
            }
        }
        let sessions: Vec<i64> = collect_ids(
            &tx,
            "SELECT DISTINCT session_row FROM records
             WHERE id IN (SELECT id FROM forget_ids) AND session_row IS NOT NULL",
        )
        .map_err(e)?;
        let projects: Vec<i64> = collect_ids(
            &tx,
            "SELECT DISTINCT project_id FROM records WHERE id IN (SELECT id FROM forget_ids)",
        )
        .map_err(e)?;
        let left = |table_col: &str, id: i64| -> rusqlite::Result<u64> {
            tx.query_row(
                &format!(
                    "SELECT count(*) FROM records WHERE {table_col} = ?1 \
                     AND id NOT IN (SELECT id FROM forget_ids)"
                ),
                [id],
                |r| r.get(0),
            )
        };
        let mut out = Forgotten {
            records,
            ..Forgotten::default()
        };
        for &s in &sessions {
            if left("session_row", s).map_err(e)? == 0 {
                out.sessions += 1;
            }
        }
        for &p in &projects {
            if left("project_id", p).map_err(e)? == 0 {
                out.projects += 1;
            }
        }
        if !apply || records == 0 {
            return Ok(out);
        }

        remove_selected(&tx, &sessions, &projects).map_err(e)?;
        tx.execute(
            "INSERT INTO forget_log (at_ms, selector, records, sessions, projects)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                now_ms() as i64,
                sel.describe(),
                out.records as i64,
                out.sessions as i64,
                out.projects as i64
            ],
        )
        .map_err(e)?;
        tx.commit().map_err(e)?;
        // Merge the index into one new segment: an external-content FTS5
        // index records a delete as a tombstone beside the old entries, and
        // only a merge drops them. Then rebuild the file from live content
        // (VACUUM, its scratch copy in memory, not in a temp file): pages
        // that once held the text can keep stale bytes in their free space
        // (from page splits long before), which no delete ever zeroes.
        // Finally move everything out of the WAL.
        self.conn
            .execute(
                "INSERT INTO records_fts (records_fts) VALUES ('optimize')",
                [],
            )
            .map_err(e)?;
        self.conn
            .execute_batch("PRAGMA temp_store = MEMORY; VACUUM;")
            .map_err(e)?;
        out.wal_emptied = self.empty_wal(forget_reader_wait())?;
        Ok(out)
    }

    /// The forget log, newest first.
    pub fn forget_log(&self) -> Result<Vec<LogEntry>, StoreError> {
        let mut st = self
            .conn
            .prepare(
                "SELECT at_ms, selector, records, sessions, projects FROM forget_log
                 ORDER BY at_ms DESC, rowid DESC",
            )
            .map_err(|x| self.err(x))?;
        let rows = st.query_map([], |r| {
            Ok(LogEntry {
                at_ms: r.get::<_, i64>(0)? as u64,
                selector: r.get(1)?,
                records: r.get::<_, i64>(2)? as u64,
                sessions: r.get::<_, i64>(3)? as u64,
                projects: r.get::<_, i64>(4)? as u64,
            })
        });
        super::collect(rows).map_err(|x| self.err(x))
    }
}

/// Remove the records whose ids are in the temp table `forget_ids` (of the
/// sessions `sessions` and the projects `projects`) inside `tx`: their
/// full-text entries, their rows, the sessions and projects left without
/// records, and the roll-ups of the others (a session recounted, a
/// project's record count lowered by what went). Shared by forget and
/// retention (`super::retention`).
pub(super) fn remove_selected(
    tx: &rusqlite::Transaction<'_>,
    sessions: &[i64],
    projects: &[i64],
) -> rusqlite::Result<()> {
    let mut going: Vec<(i64, i64)> = Vec::new();
    {
        let mut st = tx.prepare(
            "SELECT project_id, count(*) FROM records
             WHERE id IN (SELECT id FROM forget_ids) GROUP BY 1",
        )?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        for row in rows {
            going.push(row?);
        }
    }
    // The full-text entries first: an external-content index forgets a
    // row only when given the exact values it indexed.
    {
        let mut rows = tx
                .prepare("SELECT id, title, body, files, words FROM records WHERE id IN (SELECT id FROM forget_ids)")
                ?;
        let mut del = tx.prepare(
            "INSERT INTO records_fts (records_fts, rowid, title, body, files, words)
                     VALUES ('delete', ?1, ?2, ?3, ?4, ?5)",
        )?;
        let mut q = rows.query([])?;
        while let Some(r) = q.next()? {
            let files: Option<String> = r.get(3)?;
            let files = files
                .and_then(|f| serde_json::from_str::<Vec<String>>(&f).ok())
                .unwrap_or_default()
                .join(" ");
            del.execute(params![
                r.get::<_, i64>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<String>>(2)?,
                files,
                r.get::<_, Option<String>>(4)?
            ])?;
        }
    }
    tx.execute(
        "DELETE FROM records WHERE id IN (SELECT id FROM forget_ids)",
        [],
    )?;
    let work = WORK_EVENTS
        .iter()
        .map(|w| format!("'{w}'"))
        .collect::<Vec<_>>()
        .join(", ");
    for &s in sessions {
        tx.execute(
            "DELETE FROM sessions WHERE id = ?1
                   AND NOT EXISTS (SELECT 1 FROM records WHERE session_row = ?1)",
            [s],
        )?;
        tx.execute(
            &format!(
                "UPDATE sessions SET
                       events = (SELECT count(*) FROM records WHERE session_row = ?1),
                       work = (SELECT count(*) FROM records WHERE session_row = ?1
                                 AND event IN ({work})),
                       first_ms = (SELECT min(occurred_ms) FROM records WHERE session_row = ?1),
                       last_ms = (SELECT max(occurred_ms) FROM records WHERE session_row = ?1)
                     WHERE id = ?1"
            ),
            [s],
        )?;
    }
    for &p in projects {
        tx.execute(
            "DELETE FROM sessions WHERE project_id = ?1
                   AND NOT EXISTS (SELECT 1 FROM records WHERE project_id = ?1)",
            [p],
        )?;
        tx.execute(
            "DELETE FROM projects WHERE id = ?1
                   AND NOT EXISTS (SELECT 1 FROM records WHERE project_id = ?1)",
            [p],
        )?;
        tx.execute(
            "UPDATE projects SET
                   first_ms = (SELECT min(occurred_ms) FROM records WHERE project_id = ?1),
                   last_ms = (SELECT max(occurred_ms) FROM records WHERE project_id = ?1),
                   records = records - ?2
                 WHERE id = ?1",
            params![p, going.iter().find(|g| g.0 == p).map_or(0, |g| g.1)],
        )?;
    }
    Ok(())
}

fn self_err(path: &std::path::Path, source: rusqlite::Error) -> StoreError {
    StoreError::sqlite(path, source)
}

/// The WHERE clause (over `records r JOIN projects p`) and its parameters.
fn condition(sel: &Selector) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value as V;
    let mut conds = vec!["1".to_string()];
    let mut args: Vec<V> = Vec::new();
    // Each `?` of `cond` becomes the numbered parameter of the next value.
    let mut push = |cond: &str, vals: Vec<V>| {
        let mut c = String::new();
        let mut vals = vals.into_iter();
        for (i, part) in cond.split('?').enumerate() {
            if i > 0 {
                args.push(vals.next().expect("one value per placeholder"));
                c.push_str(&format!("?{}", args.len()));
            }
            c.push_str(part);
        }
        conds.push(c);
    };
    if let Some(k) = &sel.record {
        // A prefix of [A-Za-z0-9]: no LIKE wildcard can be in it.
        push("r.key LIKE ? || '%'", vec![V::Text(k.clone())]);
    }
    if let Some(s) = &sel.session {
        push("r.session_id = ?", vec![V::Text(s.clone())]);
    }
    if let Some((w, p)) = &sel.project {
        push(
            "p.workspace = ? AND p.project = ?",
            vec![V::Text(w.clone()), V::Text(p.clone())],
        );
    }
    if let Some(b) = sel.before_ms {
        push("r.occurred_ms < ?", vec![V::Integer(b as i64)]);
    }
    (conds.join(" AND "), args)
}

fn collect_ids(tx: &rusqlite::Transaction<'_>, sql: &str) -> rusqlite::Result<Vec<i64>> {
    let mut st = tx.prepare(sql)?;
    let rows = st.query_map([], |r| r.get(0))?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::tests::rec;

    const SENTINEL: &str = "zqxsentinelword";

    fn raw_files_hold(dir: &std::path::Path, needle: &str) -> Vec<String> {
        let mut hits = Vec::new();
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                hits.push(e.file_name().to_string_lossy().into_owned());
            }
        }
        hits
    }

    fn seeded() -> (tempfile::TempDir, Store) {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        for i in 0..40u64 {
            let session = if i % 2 == 0 { "secret-s" } else { "kept-s" };
            let mut r = rec(
                &format!("{i:032x}"),
                1000 + i,
                "p",
                session,
                "post-tool-use",
            );
            if session == "secret-s" {
                r.body = Some(format!(
                    "output with {SENTINEL} inside, {}",
                    "x".repeat(3000)
                ));
                r.title = Some(format!("title {SENTINEL}"));
                r.files = vec![format!("src/{SENTINEL}.rs")];
            }
            s.insert(&r).unwrap();
        }
        s.insert(&rec(
            &format!("{:032x}", 999),
            5000,
            "other",
            "o-s",
            "user-prompt",
        ))
        .unwrap();
        s.checkpoint();
        (t, s)
    }

    #[test]
    fn a_dry_run_counts_and_changes_nothing() {
        let (_t, mut s) = seeded();
        let sel = Selector {
            session: Some("secret-s".into()),
            ..Selector::default()
        };
        let n = s.forget(&sel, false).unwrap();
        assert_eq!((n.records, n.sessions, n.projects), (20, 1, 0));
        assert_eq!(s.count().unwrap(), 41);
        assert!(s.forget_log().unwrap().is_empty());
    }

    #[test]
    fn forgetting_a_session_leaves_its_text_in_no_file_and_recounts_the_rest() {
        let (t, mut s) = seeded();
        assert!(!raw_files_hold(t.path(), SENTINEL).is_empty(), "seed");
        let sel = Selector {
            session: Some("secret-s".into()),
            ..Selector::default()
        };
        let n = s.forget(&sel, true).unwrap();
        assert_eq!((n.records, n.sessions, n.projects), (20, 1, 0));
        assert!(n.wal_emptied);
        assert_eq!(s.count().unwrap(), 21);
        assert!(s.search(None, SENTINEL, 10).unwrap().is_empty());
        assert!(s.search(None, "output", 10).unwrap().is_empty());
        assert_eq!(s.search(None, "quick", 100).unwrap().len(), 21);
        assert_eq!(
            raw_files_hold(t.path(), SENTINEL),
            Vec::<String>::new(),
            "the forgotten text is still in a file"
        );
        let sessions = s.sessions(("default", "p"), None, 10).unwrap();
        assert_eq!(sessions.len(), 1);
        assert_eq!(
            (
                sessions[0].session_id.as_str(),
                sessions[0].events,
                sessions[0].work
            ),
            ("kept-s", 20, 20)
        );
        assert_eq!((sessions[0].first_ms, sessions[0].last_ms), (1001, 1039));
        let log = s.forget_log().unwrap();
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].selector, "session secret-s");
        assert_eq!(
            (log[0].records, log[0].sessions, log[0].projects),
            (20, 1, 0)
        );
        // The index is consistent after the deletes.
        s.conn
            .execute(
                "INSERT INTO records_fts (records_fts) VALUES ('integrity-check')",
                [],
            )
            .unwrap();
    }

    #[test]
    fn projects_dates_and_key_prefixes() {
        let (_t, mut s) = seeded();
        // Before a date, within one project.
        let sel = Selector {
            project: Some(("default".into(), "p".into())),
            before_ms: Some(1010),
            ..Selector::default()
        };
        assert_eq!(s.forget(&sel, true).unwrap().records, 10);
        assert_eq!(s.count().unwrap(), 31);
        // One record by a prefix of its key; too short or ambiguous refused.
        let key = format!("{:032x}", 20);
        let short = Selector {
            record: Some(key[..7].to_string()),
            ..Selector::default()
        };
        assert!(matches!(s.forget(&short, true), Err(ForgetError::Key(_))));
        let ambiguous = Selector {
            record: Some(key[..8].to_string()),
            ..Selector::default()
        };
        assert!(matches!(
            s.forget(&ambiguous, true),
            Err(ForgetError::Key(_))
        ));
        assert_eq!(s.count().unwrap(), 31);
        let one = Selector {
            record: Some(key.clone()),
            ..Selector::default()
        };
        assert_eq!(s.forget(&one, true).unwrap().records, 1);
        assert!(one.matches(&key, None, ("w", "p"), 0));
        // A whole project: its sessions and the project row go too.
        let other = Selector {
            project: Some(("default".into(), "other".into())),
            ..Selector::default()
        };
        let n = s.forget(&other, true).unwrap();
        assert_eq!((n.records, n.sessions, n.projects), (1, 1, 1));
        assert!(s
            .sessions(("default", "other"), None, 10)
            .unwrap()
            .is_empty());
        assert_eq!(s.forget_log().unwrap().len(), 3);
    }
}
