//! Forgetting: remove records from the store so that their text is in no
//! page of the database file, its WAL or the full-text index (DESIGN §12).
//!
//! One transaction deletes the records' full-text entries (FTS5 `delete` with
//! the indexed values) and rows, recounts or removes the sessions and projects
//! they belonged to, and logs what was forgotten (scope and counts, never the
//! text). The cost follows what is forgotten, not the size of the file:
//!
//! - every connection runs with `secure_delete` (`Store::open_until`), so
//!   every cell and page freed — by this delete, by an index merge, by
//!   retention — is overwritten with zeros, and a page reused from the free
//!   list is zeroed first;
//! - the records' full-text entries leave the index in one of two ways
//!   ([`FtsRemoval`]): a few records' entries are taken out of the segment
//!   pages that hold them (FTS5's `secure-delete`, SQLite 3.44 and later,
//!   for this transaction only), which costs per record forgotten; many
//!   records' are deleted with tombstones and the index is then merged
//!   into one segment ([`Store::merge_index`], in steps that each empty
//!   the WAL), which costs per page of the index (about a third of the
//!   file) and beats the first way from about one record in
//!   [`IN_PLACE_RATIO`];
//! - the WAL is then checkpointed and truncated, so no old page image
//!   survives in it.
//!
//! A store created before migration 10 (not `scrubbed`) may still hold old
//! bytes in free pages and in the free space of pages (FTS merges and page
//! splits made without `secure_delete`, tombstoned index entries): its first
//! forget merges the index (into one segment) and rebuilds the file once
//! (`VACUUM`), as every forget did before, and marks it scrubbed.
//!
//! What `secure_delete` does not cover (docs/operations.md, "Forgetting"):
//! when SQLite rebalances b-tree pages it rewrites a page's cells without
//! zeroing the space between its cell pointers and its cells
//! (`rebuildPage` in btree.c), so an old copy of a cell that moved to a
//! sibling page can stay in that space until the page is written again; if
//! that cell's record is forgotten later, the copy is not. Only a rebuild
//! of the file removes such copies; forget no longer does one each time.
//!
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

/// A store file up to this size is rebuilt by every forget (`VACUUM`, its
/// scratch copy in memory): the rebuild removes every byte of what was
/// forgotten, the old copies in page gaps too (module doc), and on a store
/// this small costs at most this much memory and a few seconds. A larger
/// store is rebuilt only when asked (`memhook forget --rebuild`).
pub const REBUILD_BELOW_BYTES: u64 = 64 << 20;

/// SQLite's page cache during a forget's delete, in KiB (the store's
/// connections keep [`super::STORE_CACHE_KIB`], and so does the index
/// merge or the rebuild after the delete). The delete changes pages all over the
/// file — a forgotten record's key is anywhere in the key's index — and
/// with the usual 2 MiB a transaction that changes more pages than that
/// writes them into the WAL again each time the cache spills (at 100,000
/// records, forgetting 2,000 wrote 33 MB of WAL for 12 MB of pages; issue
/// 29, fourth pass). 64 MiB holds the pages of a forget of a project at
/// 1,000,000 records and keeps the process under 128 MiB.
pub const FORGET_CACHE_KIB: u32 = 64 * 1024;

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
        // Pages read through SQLite's own small cache, not mapped: the
        // index merge reads the whole index once, and mapped pages would
        // all count in the process's memory (issue 29: at most 128 MiB).
        let path = self.path.clone();
        let e = |x| self_err(&path, x);
        self.conn.execute_batch("PRAGMA mmap_size = 0").map_err(e)?;
        let small = std::fs::metadata(&path).is_ok_and(|m| m.len() <= REBUILD_BELOW_BYTES);
        let out = self.forget_with(sel, apply, None, small);
        if apply {
            // A briefing kept ready may quote what was forgotten.
            memhook_core::briefing_cache::clear(&self.data_dir);
        }
        self.conn
            .execute_batch(&format!("PRAGMA mmap_size = {}", super::STORE_MMAP_SIZE))
            .map_err(e)?;
        out
    }

    /// Rebuild the file from what it holds (`VACUUM`, its scratch copy in
    /// memory, so about the database's size in memory and twice its size on
    /// disk for the moment), after merging the full-text index, then empty
    /// the WAL: no byte of anything deleted before stays in either file.
    /// `memhook forget --rebuild`. Returns whether the WAL was emptied (a
    /// reader in the way keeps it).
    pub fn rebuild(&mut self) -> Result<bool, StoreError> {
        let path = self.path.clone();
        let e = |x| self_err(&path, x);
        self.checkpoint();
        self.merge_index().map_err(e)?;
        self.rebuild_file()?;
        memhook_core::briefing_cache::clear(&self.data_dir);
        self.empty_wal(forget_reader_wait())
    }

    /// `VACUUM` with its scratch copy in memory (never in a temporary file
    /// outside the data dir), and the store marked scrubbed.
    fn rebuild_file(&mut self) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |x| self_err(&path, x);
        self.conn
            .execute_batch("PRAGMA temp_store = MEMORY; VACUUM;")
            .map_err(e)?;
        self.conn
            .execute(
                "INSERT INTO scrubbed (at_ms) VALUES (?1)",
                [now_ms() as i64],
            )
            .map_err(e)?;
        Ok(())
    }

    /// [`Store::forget`], the index entries removed as `removal` says
    /// (`None`: as [`removal_for`] chooses), the file rebuilt when `rebuild`
    /// (and always when the store is not yet scrubbed).
    pub(crate) fn forget_with(
        &mut self,
        sel: &Selector,
        apply: bool,
        removal: Option<FtsRemoval>,
        rebuild: bool,
    ) -> Result<Forgotten, ForgetError> {
        check_forget_key(sel)?;
        let e = |x| self_err(&self.path, x);
        self.conn
            .execute_batch(&format!(
                "PRAGMA secure_delete = ON; PRAGMA cache_size = -{FORGET_CACHE_KIB}"
            ))
            .map_err(e)?;
        let out = self.forget_in_cache(sel, apply, removal, rebuild);
        let _ = self
            .conn
            .execute_batch(&format!("PRAGMA cache_size = -{}", super::STORE_CACHE_KIB));
        out
    }

    /// [`Store::forget_with`] once the cache is [`FORGET_CACHE_KIB`].
    fn forget_in_cache(
        &mut self,
        sel: &Selector,
        apply: bool,
        removal: Option<FtsRemoval>,
        rebuild: bool,
    ) -> Result<Forgotten, ForgetError> {
        let e = |x| self_err(&self.path, x);
        let (cond, args) = condition(sel);
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

        let removal = match removal {
            Some(r) => r,
            None => {
                let stored: u64 = tx
                    .query_row("SELECT coalesce(sum(records), 0) FROM projects", [], |r| {
                        r.get(0)
                    })
                    .map_err(e)?;
                removal_for(records, stored)
            }
        };
        let in_place = |on: bool| {
            tx.execute(
                "INSERT INTO records_fts (records_fts, rank) VALUES ('secure-delete', ?1)",
                [on as i64],
            )
        };
        // Set either way: the setting is kept in the index's config table.
        in_place(removal == FtsRemoval::InPlace).map_err(e)?;
        remove_selected(&tx, &sessions, &projects).map_err(e)?;
        in_place(false).map_err(e)?;
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
        // The merge and the rebuild read the index or the whole file once,
        // in order: the large cache would only fill with pages read once
        // (a store of 55 MB rebuilt: 119 MiB instead of 63 MiB of memory).
        self.conn
            .execute_batch(&format!("PRAGMA cache_size = -{}", super::STORE_CACHE_KIB))
            .map_err(e)?;
        let scrubbed = self.scrubbed()?;
        let rebuild = rebuild || !scrubbed;
        if removal == FtsRemoval::Merge || rebuild {
            // The delete's pages into the file first, so that the merge's
            // start the WAL again instead of adding to it (the disk's peak
            // is then the larger of the two, not their sum; a reader in
            // the way only makes it the sum).
            self.checkpoint();
            // Merge the index into one new segment: an external-content
            // FTS5 index keeps a delete as a tombstone beside the old
            // entries (and retention's deletes are such tombstones too)
            // until a merge drops both; the pages of the old segments are
            // freed, so zeroed.
            self.merge_index().map_err(e)?;
        }
        if rebuild {
            // A small store ([`REBUILD_BELOW_BYTES`]), or one written before
            // migration 10, whose free pages and page gaps can hold old
            // bytes written without `secure_delete`: rebuild the file from
            // live content, which leaves no old copy anywhere.
            self.rebuild_file()?;
        }
        out.wal_emptied = self.empty_wal(forget_reader_wait())?;
        Ok(out)
    }

    /// Whether every unused byte of the file is known to be zero (see the
    /// module doc): a store created with migration 10, or one a forget has
    /// rebuilt since.
    pub fn scrubbed(&self) -> Result<bool, StoreError> {
        self.conn
            .query_row("SELECT EXISTS (SELECT 1 FROM scrubbed)", [], |r| r.get(0))
            .map_err(|x| self.err(x))
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

/// The text columns of `record_rows` overwritten before a forgotten row is
/// deleted ([`remove_selected`]); `key` stays (it is in the key's index,
/// which an update would change), and the names are ids of `names`.
const SCRUBBED_COLUMNS: &[&str] = &[
    "session_id",
    "cwd",
    "tool_call_id",
    "title",
    "body",
    "files",
    "token_name",
    "command",
    "plan",
];

/// How a forget takes its records' entries out of the full-text index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FtsRemoval {
    /// FTS5 `secure-delete` for the forget's transaction: each entry is
    /// taken out of the segment page that holds it. About 1.7 ms a record
    /// at 1,000,000 stored (docs/benchmarks.md, issue 29's third pass).
    InPlace,
    /// A tombstone beside each entry, then the whole index merged into one
    /// segment ([`Store::merge_index`]), which drops both. About 2.5 µs a stored
    /// record, whatever is forgotten.
    Merge,
}

/// A step of [`Store::merge_index`] writes about this part of the file:
/// the write-ahead log holds one step at a time.
pub const MERGE_STEP_PARTS: u64 = 40;

/// Steps of [`Store::merge_index`] before it finishes in one: enough to
/// merge an index of a third of the file twelve times over.
const MAX_MERGE_STEPS: usize = 4 * MERGE_STEP_PARTS as usize;

/// FTS5's page (a leaf of the index, a row of `records_fts_data`): 4,050
/// bytes unless the table says otherwise (`pgsz`; memhook never does).
const FTS5_LEAF_BYTES: u64 = 4050;

/// The leaves a step of [`Store::merge_index`] merges in a file of `bytes`.
pub fn merge_step_leaves(bytes: u64) -> i64 {
    (bytes / MERGE_STEP_PARTS / FTS5_LEAF_BYTES).clamp(64, 1 << 20) as i64
}

impl Store {
    /// Merge the full-text index into one segment, which drops every
    /// deleted entry and its tombstone, and clear what retention counted
    /// since the last merge (`fts_debt`): forget's merge, `--rebuild` and
    /// retention's merge ([`Store::settle_fts_debt`]).
    ///
    /// In steps, each its own transaction followed by a checkpoint that
    /// empties the WAL: FTS5's `('merge', -N)` does what `optimize` does,
    /// N leaves at a time, and trims the merged part of its inputs as it
    /// goes, so the file stays about its size and the WAL holds one step
    /// ([`MERGE_STEP_PARTS`]). One `optimize` wrote the whole new index
    /// into the WAL: about a third of the database once records were
    /// compact (issue 29, sixth pass: 1.31 times the database on disk at
    /// 1,000,000 records). A reader in the way keeps the WAL from being
    /// emptied between steps; it then holds more of them, as before.
    pub(super) fn merge_index(&self) -> rusqlite::Result<()> {
        let bytes = std::fs::metadata(&self.path).map_or(0, |m| m.len());
        self.merge_index_by(merge_step_leaves(bytes), &mut || {})
    }

    /// [`Store::merge_index`] `step` leaves at a time, calling `after_step`
    /// after each step's commit, before its checkpoint.
    fn merge_index_by(&self, step: i64, after_step: &mut dyn FnMut()) -> rusqlite::Result<()> {
        // Records stored between steps add segments, which the next step
        // takes in too; should they keep it from ever ending, one
        // `optimize` ends it (the deleted entries must go either way).
        for _ in 0..MAX_MERGE_STEPS {
            let before = self.conn.total_changes();
            self.conn.execute(
                "INSERT INTO records_fts (records_fts, rank) VALUES ('merge', ?1)",
                [-step],
            )?;
            // FTS5 writes its leaves and structure through statements of
            // its own, each counted; a step with nothing left to merge
            // counts at most the command itself.
            let merged = self.conn.total_changes() - before >= 2;
            after_step();
            self.checkpoint();
            if !merged {
                self.conn.execute("UPDATE fts_debt SET removed = 0", [])?;
                return Ok(());
            }
        }
        self.conn.execute_batch(
            "INSERT INTO records_fts (records_fts) VALUES ('optimize');
             UPDATE fts_debt SET removed = 0;",
        )
    }
}

/// A forget of fewer than one record in `IN_PLACE_RATIO` of those stored
/// removes their index entries in place; more merges the index.
pub const IN_PLACE_RATIO: u64 = 512;

/// How to remove the index entries of `forgotten` of `stored` records.
pub fn removal_for(forgotten: u64, stored: u64) -> FtsRemoval {
    if forgotten.saturating_mul(IN_PLACE_RATIO) <= stored {
        FtsRemoval::InPlace
    } else {
        FtsRemoval::Merge
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
    // Then overwrite the rows' text in place, byte for byte (the same
    // length, so the same cell size: SQLite writes over the old cell and
    // moves nothing), before deleting them: a delete can make SQLite merge
    // a page with its neighbours, which copies their cells — rows still to
    // be deleted among them — and leaves old bytes of the copied cells in
    // the page's free space (`rebuildPage`). What it copies is then zeros.
    let scrub = SCRUBBED_COLUMNS
        .iter()
        .map(|c| {
            format!(
                "{c} = CASE typeof({c}) WHEN 'blob' THEN zeroblob(length({c}))
                    WHEN 'text' THEN substr(hex(zeroblob(octet_length({c}))), 1, octet_length({c}))
                    ELSE {c} END"
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    tx.execute(
        &format!("UPDATE record_rows SET {scrub} WHERE id IN (SELECT id FROM forget_ids)"),
        [],
    )?;
    tx.execute(
        "DELETE FROM record_rows WHERE id IN (SELECT id FROM forget_ids)",
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
        // The session's cwd is kept once, for the records that had it
        // (`compact.rs`): when none of those is left, it was the forgotten
        // records' text, and goes with them. A record that arrives later
        // keeps its own cwd.
        tx.execute(
            "UPDATE sessions SET cwd = NULL WHERE id = ?1 AND cwd IS NOT NULL
                   AND NOT EXISTS (SELECT 1 FROM record_rows
                                   WHERE session_row = ?1 AND cwd IS NULL)",
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
    use crate::sqlite::STORE_FILE;

    const SENTINEL: &str = "zqxsentinelword";

    fn raw_files_hold(dir: &std::path::Path, needle: &str) -> Vec<String> {
        raw_files_hold_bytes(dir, needle.as_bytes())
    }

    fn raw_files_hold_bytes(dir: &std::path::Path, needle: &[u8]) -> Vec<String> {
        let mut hits = Vec::new();
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            if bytes.windows(needle.len()).any(|w| w == needle) {
                hits.push(e.file_name().to_string_lossy().into_owned());
            }
        }
        hits
    }

    #[test]
    fn forget_leaves_no_kept_briefing() {
        use memhook_core::briefing_cache::{self, Lookup, CACHE_DIR};
        let (t, mut s) = seeded();
        let text = format!("The agent concluded: {SENTINEL}");
        let key = crate::sqlite::tests::keep_briefing(&s, &text);
        assert_eq!(
            briefing_cache::lookup(t.path(), s.path(), &key, None),
            Lookup::Hit(Some(text))
        );
        let kept = t.path().join(CACHE_DIR);
        assert!(!raw_files_hold(&kept, SENTINEL).is_empty(), "seed");
        let sel = Selector {
            session: Some("secret-s".into()),
            ..Selector::default()
        };
        // A dry run changes nothing.
        s.forget(&sel, false).unwrap();
        assert!(!raw_files_hold(&kept, SENTINEL).is_empty());
        s.forget(&sel, true).unwrap();
        assert_eq!(raw_files_hold(&kept, SENTINEL), Vec::<String>::new());
        assert_eq!(
            briefing_cache::lookup(t.path(), s.path(), &key, None),
            Lookup::Miss
        );
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
                r.body = Some(secret_body());
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

    /// The body of the seeded secret records: long enough to be stored
    /// deflated (`compact.rs`), so a scan for its text proves nothing.
    fn secret_body() -> String {
        format!("output with {SENTINEL} inside, {}", "x".repeat(3000))
    }

    /// Bytes of [`secret_body`] as stored: the start of its deflate stream
    /// (which the sentinel shapes).
    fn secret_body_stored() -> Vec<u8> {
        match crate::sqlite::compact::pack_body(&secret_body()) {
            rusqlite::types::Value::Blob(b) => b[..24].to_vec(),
            v => panic!("a body of 3,000 bytes is stored deflated: {v:?}"),
        }
    }

    /// The index merge in steps: the WAL holds one step, not the whole
    /// new index as one `optimize` did, and the index ends as one merged
    /// segment with what the optimize gives.
    #[test]
    fn the_index_merges_in_steps_and_the_wal_holds_one() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        // Many segments (one per insert batch), then a third deleted.
        let mut n = 0u64;
        for batch in 0..30u64 {
            let rs: Vec<_> = (0..40u64)
                .map(|_| {
                    n += 1;
                    let mut r = rec(&format!("{n:032x}"), 1000 + n, "p", "s", "post-tool-use");
                    r.body = Some(
                        (0..60)
                            .map(|w| format!("w{}x{}", (n * 7 + w) % 997, batch))
                            .collect::<Vec<_>>()
                            .join(" "),
                    );
                    r
                })
                .collect();
            s.insert_all(rs.iter()).unwrap();
        }
        s.conn
            .execute_batch(
                "CREATE TEMP TABLE IF NOT EXISTS forget_ids (id INTEGER PRIMARY KEY);
                 INSERT INTO forget_ids SELECT id FROM record_rows WHERE id % 3 = 0;",
            )
            .unwrap();
        let tx = s.conn.transaction().unwrap();
        remove_selected(&tx, &[], &[]).unwrap();
        tx.commit().unwrap();
        s.checkpoint();
        let copy = tempfile::tempdir().unwrap();
        std::fs::copy(t.path().join(STORE_FILE), copy.path().join(STORE_FILE)).unwrap();
        let wal = |dir: &std::path::Path| {
            std::fs::metadata(dir.join(format!("{STORE_FILE}-wal"))).map_or(0, |m| m.len())
        };
        // One optimize, as before: the WAL after its commit.
        let other = Store::open(copy.path()).unwrap();
        other
            .conn
            .execute_batch("INSERT INTO records_fts (records_fts) VALUES ('optimize')")
            .unwrap();
        let whole = wal(copy.path());
        // In steps.
        let (mut steps, mut most) = (0, 0);
        s.merge_index_by(8, &mut || {
            steps += 1;
            most = most.max(wal(t.path()));
        })
        .unwrap();
        assert!(steps > 3, "{steps} steps");
        assert!(
            most * 3 < whole,
            "the WAL held {most} bytes at most in steps, {whole} in one optimize"
        );
        // Done: nothing is left to merge, and the index answers as the
        // optimized one does.
        let before = s.conn.total_changes();
        s.conn
            .execute(
                "INSERT INTO records_fts (records_fts, rank) VALUES ('merge', -8)",
                [],
            )
            .unwrap();
        assert!(s.conn.total_changes() - before < 2, "merged to one segment");
        let hits = |st: &Store, q: &str| -> Vec<i64> {
            st.conn
                .prepare("SELECT rowid FROM records_fts WHERE records_fts MATCH ?1 ORDER BY rowid")
                .unwrap()
                .query_map([q], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        for q in ["w3x1", "w500x29", "w996x0"] {
            assert_eq!(hits(&s, q), hits(&other, q), "{q}");
        }
        s.conn
            .execute(
                "INSERT INTO records_fts (records_fts, rank) VALUES ('integrity-check', 1)",
                [],
            )
            .unwrap();
    }

    /// A session's cwd is stored once, on the session: forgetting the
    /// records that had it removes it too, though the session lives on.
    #[test]
    fn forgetting_the_records_of_a_cwd_leaves_it_in_no_file() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let secret_cwd = format!("/home/u/{SENTINEL}-project");
        let mut first = rec(&format!("{:032x}", 1), 1000, "p", "s1", "prompt");
        first.cwd = Some(secret_cwd.clone());
        let mut later = rec(&format!("{:032x}", 2), 2000, "p", "s1", "prompt");
        later.cwd = Some("/home/u/elsewhere".into());
        s.insert_all([&first, &later]).unwrap();
        s.checkpoint();
        assert!(!raw_files_hold(t.path(), SENTINEL).is_empty(), "seed");
        let sel = Selector {
            record: Some(format!("{:032x}", 1)),
            ..Selector::default()
        };
        let n = s.forget(&sel, true).unwrap();
        assert_eq!((n.records, n.sessions), (1, 0), "the session lives on");
        assert_eq!(raw_files_hold(t.path(), SENTINEL), Vec::<String>::new());
        let left = s.recent(None, 10).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].cwd.as_deref(), Some("/home/u/elsewhere"));
        // A record of the same session that arrives later keeps its cwd.
        let mut next = rec(&format!("{:032x}", 3), 3000, "p", "s1", "prompt");
        next.cwd = Some("/home/u/third".into());
        s.insert_all([&next]).unwrap();
        let cwds: Vec<_> = s
            .recent(None, 10)
            .unwrap()
            .into_iter()
            .map(|r| r.cwd)
            .collect();
        assert_eq!(
            cwds,
            [
                Some("/home/u/third".to_string()),
                Some("/home/u/elsewhere".to_string())
            ]
        );
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
        let stored = secret_body_stored();
        assert!(
            !raw_files_hold_bytes(t.path(), &stored).is_empty(),
            "seed: the deflated body"
        );
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
        assert_eq!(
            raw_files_hold_bytes(t.path(), &stored),
            Vec::<String>::new(),
            "the forgotten deflated body is still in a file"
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

    fn freelist(s: &Store) -> i64 {
        s.conn
            .query_row("PRAGMA freelist_count", [], |r| r.get(0))
            .unwrap()
    }

    /// The index's terms that start with `prefix` (an `fts5vocab` table).
    fn terms(s: &Store, prefix: &str) -> Vec<String> {
        s.conn
            .execute_batch(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab
                 USING fts5vocab(main, records_fts, 'row')",
            )
            .unwrap();
        let mut st = s
            .conn
            .prepare("SELECT term FROM temp.vocab WHERE term >= ?1 AND term < ?1 || 'zzzz'")
            .unwrap();
        let rows = st.query_map([prefix], |r| r.get(0)).unwrap();
        rows.map(|r| r.unwrap()).collect()
    }

    #[test]
    fn the_scrub_keeps_every_text_its_length_in_bytes() {
        let (_t, s) = seeded();
        for text in ["", "plain", "héllo wörld ✓", "x\0y"] {
            let (before, after, kind): (i64, i64, String) = s
                .conn
                .query_row(
                    "SELECT octet_length(?1),
                            octet_length(substr(hex(zeroblob(octet_length(?1))), 1, octet_length(?1))),
                            typeof(substr(hex(zeroblob(octet_length(?1))), 1, octet_length(?1)))",
                    [text],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .unwrap();
            assert_eq!((before, kind.as_str()), (after, "text"), "{text:?}");
        }
        let null: Option<String> = s
            .conn
            .query_row(
                "SELECT substr(hex(zeroblob(octet_length(NULL))), 1, octet_length(NULL))",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(null, None);
    }

    /// Pages SQLite wrote out of the connection's cache in the middle of a
    /// transaction because the cache was full (`SQLITE_DBSTATUS_CACHE_SPILL`,
    /// cumulative): each may be written into the WAL again at the commit.
    fn cache_spills(s: &Store) -> i32 {
        let (mut cur, mut high) = (0, 0);
        let rc = unsafe {
            rusqlite::ffi::sqlite3_db_status(
                s.conn.handle(),
                rusqlite::ffi::SQLITE_DBSTATUS_CACHE_SPILL,
                &mut cur,
                &mut high,
                0,
            )
        };
        assert_eq!(rc, rusqlite::ffi::SQLITE_OK);
        cur
    }

    /// Set in the child process that runs
    /// [`a_forget_that_changes_pages_all_over_the_file_writes_each_once`]
    /// alone.
    const ALONE: &str = "MEMHOOK_TEST_FORGET_ALONE";

    #[test]
    fn a_forget_that_changes_pages_all_over_the_file_writes_each_once() {
        // SQLite's page caches in one process share one pool (pcache1
        // without SQLITE_ENABLE_MEMORY_MANAGEMENT): the connections of the
        // tests running beside this one lend it their pages, and a forget
        // with the small cache then spilled nothing either (17 pages alone,
        // 0 beside the other forget tests). So the test runs alone, in a
        // child process of this test binary.
        if std::env::var_os(ALONE).is_none() {
            let name = "sqlite::forget::tests::a_forget_that_changes_pages_all_over_the_file_writes_each_once";
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([name, "--exact", "--test-threads=1"])
                .env(ALONE, "1")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success() && text.contains("1 passed"), "{text}");
            return;
        }
        // About 5 MiB of records that deflating does not make small (320
        // pages of 16 KiB, more than SQLite's usual 2 MiB cache), every
        // other one forgotten.
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut word = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("{:x}", x % 0xff_ffff)
        };
        let recs: Vec<_> = (0..1600u64)
            .map(|i| {
                let session = if i % 2 == 0 { "gone" } else { "kept" };
                let mut r = rec(
                    &format!("{:032x}", i * 7919 % 1600),
                    1000 + i,
                    "p",
                    session,
                    "stop",
                );
                let words: Vec<String> = (0..450).map(|_| word()).collect();
                r.body = Some(format!("{i} {}", words.join(" ")));
                r
            })
            .collect();
        for chunk in recs.chunks(200) {
            s.insert_all(chunk.iter()).unwrap();
        }
        s.checkpoint();
        let pages: i64 = s
            .conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .unwrap();
        assert!(pages > 320, "a store of {pages} pages fits the usual cache");
        let before = cache_spills(&s);
        let sel = Selector {
            session: Some("gone".into()),
            ..Selector::default()
        };
        // The delete (the index's entries removed in place, in the same
        // transaction): the merge that may follow reads the index once
        // with the usual cache, on purpose.
        let n = s
            .forget_with(&sel, true, Some(FtsRemoval::InPlace), false)
            .unwrap();
        assert_eq!(n.records, 800);
        assert_eq!(cache_spills(&s) - before, 0, "pages spilled from the cache");
        // The connection's cache is the usual one again.
        let kib: i64 = s
            .conn
            .query_row("PRAGMA cache_size", [], |r| r.get(0))
            .unwrap();
        assert_eq!(kib, -i64::from(crate::sqlite::STORE_CACHE_KIB));
        drop(t);
    }

    #[test]
    fn a_few_records_leave_the_index_in_place_many_by_a_merge() {
        assert_eq!(removal_for(1, 1_000_000), FtsRemoval::InPlace);
        assert_eq!(removal_for(1_953, 1_000_000), FtsRemoval::InPlace);
        assert_eq!(removal_for(1_954, 1_000_000), FtsRemoval::Merge);
        assert_eq!(removal_for(19_600, 1_000_000), FtsRemoval::Merge);
        assert_eq!(removal_for(1, 100), FtsRemoval::Merge);
        assert_eq!(removal_for(0, 0), FtsRemoval::InPlace);
    }

    #[test]
    fn forget_in_a_new_store_frees_what_it_removes_without_rebuilding_the_file() {
        frees_without_rebuilding(FtsRemoval::InPlace);
        frees_without_rebuilding(FtsRemoval::Merge);
    }

    fn frees_without_rebuilding(removal: FtsRemoval) {
        let (t, mut s) = seeded();
        assert!(
            s.scrubbed().unwrap(),
            "a new store is scrubbed from the start"
        );
        let pages: i64 = s
            .conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .unwrap();
        let sel = Selector {
            session: Some("secret-s".into()),
            ..Selector::default()
        };
        let n = s.forget_with(&sel, true, Some(removal), false).unwrap();
        assert_eq!(n.records, 20);
        assert!(n.wal_emptied);
        // Not rebuilt: the file keeps its pages, the freed ones on the free
        // list (a VACUUM leaves none).
        assert!(freelist(&s) > 0, "the file was rebuilt ({removal:?})");
        let after: i64 = s
            .conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .unwrap();
        assert_eq!(after, pages);
        // Gone from the index itself, not only hidden behind a tombstone.
        assert_eq!(terms(&s, "zqx"), Vec::<String>::new(), "{removal:?}");
        assert_eq!(
            raw_files_hold(t.path(), SENTINEL),
            Vec::<String>::new(),
            "the forgotten text is still in a file ({removal:?})"
        );
        s.conn
            .execute(
                "INSERT INTO records_fts (records_fts) VALUES ('integrity-check')",
                [],
            )
            .unwrap();
    }

    #[test]
    fn a_store_from_before_is_rebuilt_by_its_first_forget_only() {
        let (t, mut s) = seeded();
        // As a store migrated from version 9 is.
        s.conn.execute("DELETE FROM scrubbed", []).unwrap();
        assert!(!s.scrubbed().unwrap());
        let sel = Selector {
            session: Some("secret-s".into()),
            ..Selector::default()
        };
        assert_eq!(s.forget(&sel, true).unwrap().records, 20);
        assert!(s.scrubbed().unwrap());
        assert_eq!(freelist(&s), 0, "the first forget rebuilds the file");
        assert_eq!(raw_files_hold(t.path(), SENTINEL), Vec::<String>::new());
        let big: Vec<memhook_core::record::Record> = (0..40u64)
            .map(|i| {
                let mut r = rec(
                    &format!("{:032x}", 2000 + i),
                    9000 + i,
                    "big",
                    "b-s",
                    "stop",
                );
                r.body = Some("y".repeat(3000));
                r
            })
            .collect();
        s.insert_all(big.iter()).unwrap();
        let sel = Selector {
            project: Some(("default".into(), "big".into())),
            ..Selector::default()
        };
        // (A store past REBUILD_BELOW_BYTES: not rebuilt for its size.)
        assert_eq!(s.forget_with(&sel, true, None, false).unwrap().records, 40);
        assert!(freelist(&s) > 0, "the second one does not");
    }

    /// A store up to [`REBUILD_BELOW_BYTES`] is rebuilt by every forget, and
    /// `rebuild` rebuilds any store: no free page is left (so no page gap
    /// of the old file either), and nothing of the forgotten text.
    #[test]
    fn a_small_store_is_rebuilt_by_every_forget_and_rebuild_rebuilds_any() {
        let (t, mut s) = seeded();
        let size = std::fs::metadata(s.path()).unwrap().len();
        assert!(size <= REBUILD_BELOW_BYTES, "{size}");
        let sel = Selector {
            session: Some("secret-s".into()),
            ..Selector::default()
        };
        assert_eq!(s.forget(&sel, true).unwrap().records, 20);
        assert_eq!(freelist(&s), 0, "a small store's forget rebuilds the file");
        assert_eq!(raw_files_hold(t.path(), SENTINEL), Vec::<String>::new());

        let (t, mut s) = seeded();
        assert_eq!(s.forget_with(&sel, true, None, false).unwrap().records, 20);
        assert!(freelist(&s) > 0, "not rebuilt when not asked");
        assert!(s.rebuild().unwrap(), "the WAL is emptied");
        assert_eq!(freelist(&s), 0, "rebuild leaves no free page");
        assert_eq!(raw_files_hold(t.path(), SENTINEL), Vec::<String>::new());
        s.conn
            .execute(
                "INSERT INTO records_fts (records_fts) VALUES ('integrity-check')",
                [],
            )
            .unwrap();
    }

    /// Many records, each with a word of its own, stored in many batches
    /// between others (so the index merges segments and pages split), and
    /// half of them forgotten: no forgotten word is left in the index or in
    /// any byte of the database file or its WAL.
    #[test]
    fn no_forgotten_word_survives_merges_and_page_splits() {
        no_forgotten_word_survives(FtsRemoval::InPlace);
        no_forgotten_word_survives(FtsRemoval::Merge);
    }

    fn no_forgotten_word_survives(removal: FtsRemoval) {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let word = |i: u64| format!("zqxsecret{i:05}w");
        let mut id = 0u64;
        for batch in 0..120u64 {
            let mut recs = Vec::new();
            for j in 0..25u64 {
                id += 1;
                // Runs of 40 (a few pages): forgetting a run empties pages,
                // and SQLite merges the last ones with their neighbours
                // while deleting.
                let session = if ((id - 1) / 40).is_multiple_of(2) {
                    "doomed"
                } else {
                    "kept"
                };
                let mut r = rec(
                    &format!("{id:032x}"),
                    1000 + id,
                    "p",
                    session,
                    "post-tool-use",
                );
                // The word every few dozen bytes: any piece of the body
                // left anywhere holds it.
                r.body = Some(format!(
                    "batch {batch} line {j} {}",
                    format!("{} lorem ipsum ", word(id)).repeat((id % 7 * 10 + 1) as usize)
                ));
                recs.push(r);
            }
            s.insert_all(recs.iter()).unwrap();
        }
        s.checkpoint();
        let doomed: Vec<String> = (1..=id)
            .filter(|i| (i - 1) / 40 % 2 == 0)
            .map(word)
            .collect();
        assert!(raw_files_hold(t.path(), &doomed[0]).len() == 1, "seed");
        let sel = Selector {
            session: Some("doomed".into()),
            ..Selector::default()
        };
        let n = s.forget_with(&sel, true, Some(removal), false).unwrap();
        assert_eq!(n.records, doomed.len() as u64);
        assert!(n.wal_emptied);
        assert_eq!(terms(&s, "zqxsecret").len(), (id as usize) - doomed.len());
        // Every whole word of this shape in the files' raw bytes.
        let mut left = std::collections::BTreeSet::new();
        for e in std::fs::read_dir(t.path()).unwrap().flatten() {
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            let mut at = 0;
            while let Some(i) = bytes[at..].windows(9).position(|w| w == b"zqxsecret") {
                let start = at + i;
                let end = (start + 15).min(bytes.len());
                left.insert(String::from_utf8_lossy(&bytes[start..end]).into_owned());
                at = start + 9;
            }
        }
        let found: Vec<&String> = doomed.iter().filter(|w| left.contains(*w)).collect();
        assert!(
            found.is_empty(),
            "forgotten words still in the files ({removal:?}): {found:?}"
        );
        assert!(left.contains(&word(41)), "the kept words are found");
        assert_eq!(s.search(None, &word(41), 10).unwrap().len(), 1);
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
