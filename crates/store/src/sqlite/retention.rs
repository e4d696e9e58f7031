//! Retention (docs/retention.md) on the SQLite store: records past their
//! age are removed in bounded slices by the drainer when it is idle, never
//! by the hook. The policy (classes, ages, per data dir and per project)
//! is [`crate::retention`]'s.
//!
//! A slice walks each *scope* — the data dir's policy over every project
//! without one of its own, and each project with its own policy — class by
//! class: it looks at most [`RETENTION_SCAN`] records of a class, oldest
//! first from where the last slice of that class and scope stopped (its
//! cursor, kept in the `retention` table with what it removed; the key is
//! [`Class::cursor_key`]), and removes at most [`RETENTION_SLICE`] records
//! in all, in one transaction, exactly as forget removes them (full-text
//! entries, rows, roll-ups; `secure_delete` zeroes what they held). A
//! record stored later with an older time than a cursor is not looked at
//! again by it; nor is a record a scope passed over (a project's records,
//! while it had a policy of its own, by the data dir's cursor).

use std::collections::HashSet;

use rusqlite::params;

use super::{Store, StoreError};
pub use crate::retention::{
    Class, ProjectRetention, Removed, Retention, RetentionError, DAY_MS, DEFAULT_OTHER_DAYS,
    DEFAULT_TOOL_CALLS_DAYS, DEFAULT_TOOL_RESULTS_DAYS, MAX_PROJECT_POLICIES, MAX_RETENTION_DAYS,
    RETENTION_FILE, RETENTION_SCAN, RETENTION_SLICE,
};

/// The full-text index is merged once retention removed this share
/// (1/16) of what it indexed ([`Store::settle_fts_debt`]).
pub const FTS_DEBT_PARTS: u64 = 16;
/// ... and at least this many records: below it a merge costs more than
/// the entries it would drop.
pub const FTS_DEBT_MIN: u64 = 1_000;

/// Whether `removed` records since the last merge, with `stored` left, make
/// a merge of the full-text index due.
pub fn fts_merge_due(removed: u64, stored: u64) -> bool {
    removed >= FTS_DEBT_MIN && removed.saturating_mul(FTS_DEBT_PARTS) >= stored + removed
}

impl Store {
    /// One slice of retention under `policy` at `now_ms`: for each scope
    /// and class kept for a limited time, look at up to
    /// [`RETENTION_SCAN`] records past its cursor and older than its age,
    /// and remove those of the class (at most [`RETENTION_SLICE`] in all,
    /// one transaction). Returns how many records it removed per class.
    pub fn retention_slice(
        &mut self,
        policy: &Retention,
        now_ms: u64,
    ) -> Result<[u64; 3], StoreError> {
        let path = self.path.clone();
        let e = |x| StoreError::sqlite(&path, x);
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
        // The projects with a policy of their own that hold records.
        let mut own: Vec<(i64, &ProjectRetention)> = Vec::new();
        for p in &policy.projects {
            let id: Option<i64> = tx
                .query_row(
                    "SELECT id FROM projects WHERE workspace = ?1 AND project = ?2",
                    params![p.workspace, p.project],
                    |r| r.get(0),
                )
                .map(Some)
                .or_else(|x| match x {
                    rusqlite::Error::QueryReturnedNoRows => Ok(None),
                    x => Err(x),
                })
                .map_err(e)?;
            if let Some(id) = id {
                own.push((id, p));
            }
        }
        let own_ids: HashSet<i64> = own.iter().map(|(id, _)| *id).collect();
        let scopes = std::iter::once((None, policy.days))
            .chain(own.iter().map(|(id, p)| (Some((*id, *p)), p.days)));
        let mut removed = [0u64; 3];
        let mut budget = RETENTION_SLICE;
        for (scope, days) in scopes {
            for class in Class::ALL {
                let days = days[class.index()];
                if days == 0 || budget == 0 {
                    continue;
                }
                let key = class
                    .cursor_key(scope.map(|(_, p)| (p.workspace.as_str(), p.project.as_str())));
                let cutoff = now_ms as i64 - i64::from(days) * DAY_MS;
                let (cursor_ms, cursor_id): (i64, i64) = tx
                    .query_row(
                        "SELECT cursor_ms, cursor_id FROM retention WHERE class = ?1",
                        [&key],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .or_else(|x| match x {
                        rusqlite::Error::QueryReturnedNoRows => Ok((i64::MIN, 0)),
                        x => Err(x),
                    })
                    .map_err(e)?;
                let scanned: Vec<(i64, i64, String, i64)> = {
                    let (sql, project) = match scope {
                        None => (
                            format!(
                                "SELECT r.id, r.occurred_ms,
                                   (SELECT n.name FROM names n WHERE n.id = r.event), r.project_id
                                 FROM record_rows r INDEXED BY records_time
                                 WHERE (occurred_ms, id) > (?1, ?2) AND occurred_ms < ?3
                                   AND ?4 IS NULL
                                 ORDER BY occurred_ms, id LIMIT {RETENTION_SCAN}"
                            ),
                            None,
                        ),
                        Some((id, _)) => (
                            format!(
                                "SELECT r.id, r.occurred_ms,
                                   (SELECT n.name FROM names n WHERE n.id = r.event), r.project_id
                                 FROM record_rows r INDEXED BY records_scope_time
                                 WHERE project_id = ?4 AND (occurred_ms, id) > (?1, ?2)
                                   AND occurred_ms < ?3
                                 ORDER BY occurred_ms, id LIMIT {RETENTION_SCAN}"
                            ),
                            Some(id),
                        ),
                    };
                    let mut st = tx.prepare_cached(&sql).map_err(e)?;
                    let rows = st
                        .query_map(params![cursor_ms, cursor_id, cutoff, project], |r| {
                            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                        })
                        .map_err(e)?;
                    rows.collect::<rusqlite::Result<_>>().map_err(e)?
                };
                let mut last = (cursor_ms, cursor_id);
                let mut n = 0u64;
                for (id, ms, event, project_id) in scanned {
                    // The data dir's scope passes over the projects that
                    // have a policy of their own.
                    let ours = scope.is_some() || !own_ids.contains(&project_id);
                    if ours && Class::of(&event) == class {
                        if budget == 0 {
                            break;
                        }
                        tx.execute("INSERT INTO forget_ids (id) VALUES (?1)", [id])
                            .map_err(e)?;
                        budget -= 1;
                        n += 1;
                    }
                    last = (ms, id);
                }
                removed[class.index()] += n;
                tx.execute(
                    "INSERT INTO retention (class, cursor_ms, cursor_id, removed, last_ms)
                     VALUES (?1, ?2, ?3, ?4, CASE WHEN ?4 > 0 THEN ?5 END)
                     ON CONFLICT (class) DO UPDATE SET cursor_ms = ?2, cursor_id = ?3,
                        removed = removed + ?4,
                        last_ms = CASE WHEN ?4 > 0 THEN ?5 ELSE last_ms END",
                    params![key, last.0, last.1, n as i64, now_ms as i64],
                )
                .map_err(e)?;
            }
        }
        let total: u64 = removed.iter().sum();
        let mut touched: Vec<(String, String)> = Vec::new();
        if total > 0 {
            let ids = |sql: &str| -> rusqlite::Result<Vec<i64>> {
                let mut st = tx.prepare(sql)?;
                let rows = st.query_map([], |r| r.get(0))?;
                rows.collect()
            };
            let sessions = ids("SELECT DISTINCT session_row FROM records
                 WHERE id IN (SELECT id FROM forget_ids) AND session_row IS NOT NULL")
            .map_err(e)?;
            let projects = ids(
                "SELECT DISTINCT project_id FROM records WHERE id IN (SELECT id FROM forget_ids)",
            )
            .map_err(e)?;
            // Their names, read before a project left without records goes.
            for id in &projects {
                touched.push(
                    tx.query_row(
                        "SELECT workspace, project FROM projects WHERE id = ?1",
                        [id],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .map_err(e)?,
                );
            }
            super::forget::remove_selected(&tx, &sessions, &projects).map_err(e)?;
            tx.execute("UPDATE fts_debt SET removed = removed + ?1", [total as i64])
                .map_err(e)?;
        }
        tx.commit().map_err(e)?;
        if total > 0 {
            // No briefing kept ready, and no file history, may quote what
            // retention removed. A project with no history file gets none
            // (a server's data dir has none).
            memhook_core::briefing_cache::clear(&self.data_dir);
            for (ws, pj) in &touched {
                let file = memhook_core::history::file_of(&self.data_dir, ws, pj);
                if std::fs::symlink_metadata(file).is_ok() {
                    crate::history::rewrite(self, (ws, pj));
                }
            }
        }
        // Only a slice that removed something can make a merge due (an idle
        // drainer's last slice, which finds nothing, asks nothing more).
        if total > 0 {
            self.settle_fts_debt()?;
        }
        Ok(removed)
    }

    /// Merge the full-text index once retention's deletes since the last
    /// merge reach 1/[`FTS_DEBT_PARTS`] of what it indexed (and at least
    /// [`FTS_DEBT_MIN`] records). An external-content FTS5 index keeps a
    /// deleted record's entries, and a tombstone beside them, until a merge
    /// drops both: without one, three years of steady use left the index at
    /// three times the size of what it indexed (docs/benchmarks.md, "What
    /// retention leaves in the full-text index"). The merge rewrites the
    /// index (about 2.5 µs a stored record), so it runs when the deleted
    /// entries are worth it, in the idle drainer, never in a hook. Returns
    /// whether it merged.
    pub fn settle_fts_debt(&mut self) -> Result<bool, StoreError> {
        let path = self.path.clone();
        let e = |x| StoreError::sqlite(&path, x);
        let debt: i64 = self
            .conn
            .query_row("SELECT coalesce(sum(removed), 0) FROM fts_debt", [], |r| {
                r.get(0)
            })
            .map_err(e)?;
        let debt = debt.max(0) as u64;
        let stored = self.record_total()?;
        if !fts_merge_due(debt, stored) {
            return Ok(false);
        }
        self.merge_index().map_err(e)?;
        Ok(true)
    }

    /// What retention removed so far, per class, and when it last did.
    pub fn retention_removed(&self) -> Result<Removed, StoreError> {
        let mut out = Removed::default();
        let mut st = self
            .conn
            .prepare("SELECT class, removed, last_ms FROM retention")
            .map_err(|x| self.err(x))?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, Option<i64>>(2)?,
                ))
            })
            .map_err(|x| self.err(x))?;
        for row in rows {
            let (key, n, last) = row.map_err(|x| self.err(x))?;
            out.add_row(&key, n, last);
        }
        Ok(out)
    }

    /// How many records the store holds, from the projects' roll-ups (no
    /// count of the records themselves).
    pub fn record_total(&self) -> Result<u64, StoreError> {
        self.conn
            .query_row("SELECT coalesce(sum(records), 0) FROM projects", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n as u64)
            .map_err(|x| self.err(x))
    }

    /// The time of the oldest stored record (Unix ms), if any.
    pub fn oldest_ms(&self) -> Result<Option<u64>, StoreError> {
        self.conn
            .query_row("SELECT min(occurred_ms) FROM records", [], |r| {
                r.get::<_, Option<i64>>(0)
            })
            .map(|v| v.map(|ms| ms as u64))
            .map_err(|x| self.err(x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::samples::rec;

    const NOW: u64 = 2_000_000_000_000;

    fn day(d: u64) -> u64 {
        NOW - d * DAY_MS as u64
    }

    #[test]
    fn a_class_goes_the_first_millisecond_past_its_age() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let policy = Retention::default();
        let days = [
            ("pre-tool-use", DEFAULT_TOOL_CALLS_DAYS),
            ("post-tool-use", DEFAULT_TOOL_RESULTS_DAYS),
            ("stop", DEFAULT_OTHER_DAYS),
        ];
        let mut n = 0;
        for (event, d) in days {
            let age = NOW - u64::from(d) * DAY_MS as u64;
            for ms in [age, age - 1] {
                n += 1;
                s.insert(&rec(&format!("{n:032x}"), ms, "p", "s", event))
                    .unwrap();
            }
        }
        assert_eq!(s.retention_slice(&policy, NOW).unwrap(), [1, 1, 1]);
        assert_eq!(s.count().unwrap(), 3, "exactly their age: kept");
    }

    #[test]
    fn a_slice_that_removes_leaves_no_kept_briefing() {
        use memhook_core::briefing_cache::{self, Lookup};
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        s.insert(&rec(
            &format!("{:032x}", 1),
            day(400),
            "p",
            "s",
            "pre-tool-use",
        ))
        .unwrap();
        let key = crate::sqlite::tests::keep_briefing(&s, "old");
        let kept = |s: &Store| briefing_cache::lookup(t.path(), s.path(), &key, None);
        assert_eq!(kept(&s), Lookup::Hit(Some("old".into())));
        let calls = Retention::of_days([30, 0, 0]);
        assert_eq!(s.retention_slice(&calls, NOW).unwrap(), [1, 0, 0]);
        assert!(std::fs::read_dir(t.path().join(briefing_cache::CACHE_DIR))
            .unwrap()
            .next()
            .is_none());
        assert_eq!(kept(&s), Lookup::Miss);
    }

    /// A file history quotes a session's goal (its prompt); once retention
    /// removed the prompt, the line no longer quotes it, and a project
    /// retention did not touch keeps its file as it was.
    #[test]
    fn a_slice_that_removes_writes_its_projects_file_history_again() {
        use memhook_core::history::{file_of, History};
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        for (n, project) in [(1, "p"), (3, "q")] {
            let mut prompt = rec(&format!("{n:032x}"), day(400), project, "s", "user-prompt");
            prompt.body = Some("zqxgoal: make the parser accept ISO dates".into());
            prompt.files.clear();
            let edit = rec(
                &format!("{:032x}", n + 1),
                day(10),
                project,
                "s",
                "post-tool-use",
            );
            s.insert_all([&prompt, &edit]).unwrap();
            crate::history::rewrite(&s, ("default", project));
        }
        let line = |project: &str| {
            History::load(t.path(), "default", project)
                .and_then(|h| h.line("src/main.rs"))
                .unwrap_or_default()
        };
        assert!(line("p").contains("zqxgoal"), "{}", line("p"));
        let q_before = std::fs::read(file_of(t.path(), "default", "q")).unwrap();
        // Only p's prompts go after 30 days.
        let policy = Retention::parse(
            "[default/p]\neverything-else = 30\n",
            std::path::Path::new("retention.conf"),
        )
        .unwrap();
        assert_eq!(s.retention_slice(&policy, NOW).unwrap(), [0, 0, 1]);
        assert!(line("p").contains("src/main.rs: changed"), "{}", line("p"));
        assert!(!line("p").contains("zqxgoal"), "{}", line("p"));
        assert_eq!(
            std::fs::read(file_of(t.path(), "default", "q")).unwrap(),
            q_before
        );
        // A project without a history file (a server's) is given none.
        let mut old = rec(&format!("{:032x}", 9), day(400), "r", "s", "user-prompt");
        old.files.clear();
        let edit = rec(&format!("{:032x}", 10), day(10), "r", "s", "post-tool-use");
        s.insert_all([&old, &edit]).unwrap();
        let policy = Retention::parse(
            "[default/r]\neverything-else = 30\n",
            std::path::Path::new("retention.conf"),
        )
        .unwrap();
        assert_eq!(s.retention_slice(&policy, NOW).unwrap(), [0, 0, 1]);
        assert!(!file_of(t.path(), "default", "r").exists());
    }

    #[test]
    fn a_slice_looks_at_most_at_retention_scan_records_of_a_class() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        // RETENTION_SCAN old prompts (kept 730 days), then one old call.
        let recs: Vec<_> = (0..=RETENTION_SCAN as u64)
            .map(|i| {
                let event = if i < RETENTION_SCAN as u64 {
                    "user-prompt"
                } else {
                    "pre-tool-use"
                };
                rec(&format!("{i:032x}"), day(400) + i, "p", "s", event)
            })
            .collect();
        s.insert_all(recs.iter()).unwrap();
        let calls_only = Retention::of_days([30, 0, 0]);
        assert_eq!(s.retention_slice(&calls_only, NOW).unwrap(), [0, 0, 0]);
        assert_eq!(s.retention_slice(&calls_only, NOW).unwrap(), [1, 0, 0]);
        assert_eq!(s.retention_slice(&calls_only, NOW).unwrap(), [0, 0, 0]);
    }

    #[test]
    fn slices_remove_each_class_past_its_age_in_bounded_steps_and_keep_the_books() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let mut n = 0;
        let mut add = |s: &mut Store, d: u64, event: &str, count: usize| {
            let recs: Vec<_> = (0..count)
                .map(|_| {
                    n += 1;
                    let mut r = rec(&format!("{n:032x}"), day(d), "p", "s", event);
                    r.body = Some(format!("zqxretained{n} body"));
                    r
                })
                .collect();
            s.insert_all(recs.iter()).unwrap();
        };
        // Old calls and results (past 30 and 180 days), an old prompt
        // (younger than 730 days), and recent records of every class.
        add(&mut s, 400, "pre-tool-use", RETENTION_SLICE + 10);
        add(&mut s, 400, "post-tool-use", 20);
        add(&mut s, 400, "post-tool-use-failure", 3);
        add(&mut s, 400, "user-prompt", 2);
        add(&mut s, 10, "pre-tool-use", 4);
        add(&mut s, 10, "post-tool-use", 4);
        let before = s.count().unwrap();
        let policy = Retention::default();
        let first = s.retention_slice(&policy, NOW).unwrap();
        assert_eq!(
            first.iter().sum::<u64>(),
            RETENTION_SLICE as u64,
            "one slice is bounded"
        );
        let mut total = first;
        loop {
            let more = s.retention_slice(&policy, NOW).unwrap();
            if more.iter().sum::<u64>() == 0 {
                break;
            }
            for i in 0..3 {
                total[i] += more[i];
            }
        }
        assert_eq!(total, [RETENTION_SLICE as u64 + 10, 20, 0]);
        assert_eq!(s.count().unwrap(), before - RETENTION_SLICE as u64 - 30);
        // The books: what went, per class, and the roll-ups.
        let removed = s.retention_removed().unwrap();
        assert_eq!(removed.records, total);
        assert_eq!(removed.last_ms, Some(NOW));
        let listed = s.browse_projects().unwrap();
        assert_eq!(listed[0].records, s.count().unwrap());
        assert_eq!(s.record_total().unwrap(), s.count().unwrap());
        let events: i64 = s
            .conn
            .query_row("SELECT events FROM sessions", [], |r| r.get(0))
            .unwrap();
        assert_eq!(events as u64, s.count().unwrap());
        // The failure and the prompt of 400 days ago stay, and search no
        // longer finds what went.
        assert_eq!(s.oldest_ms().unwrap(), Some(day(400)));
        assert!(s.search(None, "zqxretained1", 5).unwrap().is_empty());
        let kept = format!("zqxretained{}", RETENTION_SLICE + 10 + 20 + 1);
        assert_eq!(s.search(None, &kept, 5).unwrap().len(), 1);
        s.conn
            .execute(
                "INSERT INTO records_fts (records_fts) VALUES ('integrity-check')",
                [],
            )
            .unwrap();
        // Everything else past 730 days goes too, with its session.
        let later = NOW + 400 * DAY_MS as u64;
        while s
            .retention_slice(&policy, later)
            .unwrap()
            .iter()
            .sum::<u64>()
            > 0
        {}
        assert_eq!(s.count().unwrap(), 0);
        assert_eq!(s.oldest_ms().unwrap(), None);
        assert!(s.browse_projects().unwrap().is_empty());
        // Keeping forever removes nothing.
        let forever = Retention::of_days([0, 0, 0]);
        assert_eq!(s.retention_slice(&forever, later * 2).unwrap(), [0, 0, 0]);
    }

    #[test]
    fn the_merge_comes_at_a_sixteenth_of_the_index_and_a_thousand_records() {
        assert!(
            !fts_merge_due(FTS_DEBT_MIN - 1, 0),
            "too few to be worth it"
        );
        assert!(fts_merge_due(FTS_DEBT_MIN, 0));
        assert!(fts_merge_due(FTS_DEBT_MIN, 15 * FTS_DEBT_MIN));
        assert!(!fts_merge_due(FTS_DEBT_MIN, 15 * FTS_DEBT_MIN + 1));
        assert!(fts_merge_due(100_000, 1_500_000));
        assert!(!fts_merge_due(100_000, 1_500_001));
    }

    /// Bytes of the full-text index's segments.
    fn fts_bytes(s: &Store) -> i64 {
        s.conn
            .query_row("SELECT sum(length(block)) FROM records_fts_data", [], |r| {
                r.get(0)
            })
            .unwrap()
    }

    /// Retention's deletes leave tombstones and the deleted entries in the
    /// index until it is merged; the merge comes once they are worth it,
    /// so the index stays near the size of what it indexes (without it,
    /// removing 3 of 4 records left the index at 5.3 times a fresh one's).
    #[test]
    fn retention_keeps_the_full_text_index_near_the_size_of_what_it_holds() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let body = |n: u64| {
            Some(format!(
                "record {n} ran cargo test in crate{} and saw error{} in file{}.rs",
                n % 97,
                n % 89,
                n % 83
            ))
        };
        let recs: Vec<_> = (0..4_000u64)
            .map(|n| {
                // Three old tool calls for each recent one.
                let d = if n % 4 == 0 { 1 } else { 400 };
                let mut r = rec(&format!("{n:032x}"), day(d) + n, "p", "s", "pre-tool-use");
                r.body = body(n);
                r
            })
            .collect();
        for chunk in recs.chunks(500) {
            s.insert_all(chunk.iter()).unwrap();
        }
        let policy = Retention::default();
        while s.retention_slice(&policy, NOW).unwrap().iter().sum::<u64>() > 0 {}
        assert_eq!(s.count().unwrap(), 1_000);
        let debt: i64 = s
            .conn
            .query_row("SELECT removed FROM fts_debt", [], |r| r.get(0))
            .unwrap();
        assert_eq!(debt, 0, "the 3,000 removed were merged away");
        // The same survivors indexed afresh.
        let t2 = tempfile::tempdir().unwrap();
        let mut fresh = Store::open(t2.path()).unwrap();
        let kept: Vec<_> = recs
            .iter()
            .filter(|r| r.occurred_ms > day(2))
            .cloned()
            .collect();
        fresh.insert_all(kept.iter()).unwrap();
        fresh
            .conn
            .execute(
                "INSERT INTO records_fts (records_fts) VALUES ('optimize')",
                [],
            )
            .unwrap();
        let (after, want) = (fts_bytes(&s), fts_bytes(&fresh));
        assert!(
            after * 10 <= want * 12,
            "the index holds {after} bytes, a fresh one of the same records {want}"
        );
        s.conn
            .execute(
                "INSERT INTO records_fts (records_fts) VALUES ('integrity-check')",
                [],
            )
            .unwrap();
        // Under the threshold nothing is merged.
        assert!(!s.settle_fts_debt().unwrap());
    }

    /// `[w/short]` keeps calls 7 days, `[w/kept]` keeps everything
    /// forever; every other project has the data dir's 30 days.
    #[test]
    fn a_project_with_its_own_policy_is_kept_by_it_and_only_by_it() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let f = std::path::Path::new("retention.conf");
        let policy = Retention::parse(
            "[w/short]\ntool-calls = 7\n[w/kept]\ntool-calls = 0\ntool-results = 0\n\
             everything-else = 0\n",
            f,
        )
        .unwrap();
        let mut n = 0;
        for project in ["short", "kept", "plain"] {
            for d in [8, 31, 800] {
                n += 1;
                let mut r = rec(&format!("{n:032x}"), day(d), project, "s", "pre-tool-use");
                r.scope.workspace = "w".into();
                s.insert(&r).unwrap();
            }
        }
        let mut removed = [0; 3];
        loop {
            let more = s.retention_slice(&policy, NOW).unwrap();
            if more == [0, 0, 0] {
                break;
            }
            removed[0] += more[0];
        }
        let left = |s: &Store, project: &str| -> Vec<u64> {
            let mut v: Vec<u64> = s
                .recent(Some(("w", project)), 10)
                .unwrap()
                .iter()
                .map(|r| (NOW - r.occurred_ms) / DAY_MS as u64)
                .collect();
            v.sort();
            v
        };
        assert_eq!(left(&s, "short"), Vec::<u64>::new(), "7 days: all three go");
        assert_eq!(left(&s, "kept"), vec![8, 31, 800], "forever");
        assert_eq!(left(&s, "plain"), vec![8], "the data dir's 30 days");
        assert_eq!(removed[0], 5);
        // The books count both scopes under the class.
        assert_eq!(s.retention_removed().unwrap().records, [5, 0, 0]);
        // A project named in the file that holds nothing changes nothing.
        let none = Retention::parse("[w/absent]\ntool-calls = 1\n", f).unwrap();
        assert_eq!(s.retention_slice(&none, NOW).unwrap(), [0, 0, 0]);
    }
}
