//! Search by meaning in the embedded store (`crate::meaning`): each
//! record's meaning in `record_meaning` (migration 9; removed with its
//! record by `ON DELETE CASCADE`, so forget and retention need not know),
//! the records stored before filled in after each insert batch, and the
//! records closest to a question.

use rusqlite::{params, ToSql, Transaction};

use super::{row_to_record, Store, StoreError, StoredRecord, RECORD_COLUMNS};
use crate::meaning;

/// Keep the meaning of the record `id` (nothing when it has none).
pub(super) fn keep(
    tx: &Transaction<'_>,
    id: i64,
    project_id: i64,
    ms: i64,
    texts: &[&str],
) -> rusqlite::Result<()> {
    let v = meaning::embed(texts.iter().copied());
    if v.is_empty() {
        return Ok(());
    }
    tx.prepare_cached(
        "INSERT OR REPLACE INTO record_meaning (id, project_id, occurred_ms, vector)
         VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![id, project_id, ms, v])?;
    Ok(())
}

/// Give up to `max` records stored before meanings were kept their
/// meaning, newest first, and move the cursor (`meaning_fill.below`: the
/// records below it are still to do; 0 when all are done). Returns how
/// many were looked at.
pub(super) fn fill(tx: &Transaction<'_>, max: usize) -> rusqlite::Result<usize> {
    let below: i64 = tx
        .prepare_cached("SELECT below FROM meaning_fill")?
        .query_row([], |r| r.get(0))
        .unwrap_or(0);
    if below <= 1 {
        return Ok(0);
    }
    type Row = (
        i64,
        i64,
        i64,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let rows: Vec<Row> = tx
        .prepare_cached(&format!(
            "SELECT id, project_id, occurred_ms, event, title, body, files FROM records
             WHERE id < ?1 ORDER BY id DESC LIMIT {max}"
        ))?
        .query_map([below], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    for (id, project_id, ms, event, title, body, files) in &rows {
        let files: Vec<String> = files
            .as_deref()
            .and_then(|f| serde_json::from_str(f).ok())
            .unwrap_or_default();
        let texts = meaning::record_texts(event, title.as_deref(), body.as_deref(), &files);
        keep(tx, *id, *project_id, *ms, &texts)?;
    }
    let next = if rows.len() < max {
        0
    } else {
        rows.last().map_or(0, |r| r.0)
    };
    tx.execute("UPDATE meaning_fill SET below = ?1", [next])?;
    Ok(rows.len())
}

impl Store {
    /// The records closest in meaning to `query` among the newest
    /// [`meaning::MAX_CANDIDATES`] with a meaning that meet `filter` (SQL
    /// over `r` — the `record_meaning` row, which has `occurred_ms` — and
    /// `p`, its parameters `?1`… in `args`), closest first, at most `k`.
    pub(crate) fn closest(
        &self,
        query: &str,
        filter: &str,
        args: &[&dyn ToSql],
        k: usize,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        let e = |x| self.err(x);
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT {RECORD_COLUMNS} FROM records r JOIN projects p ON p.id = r.project_id
                 WHERE r.id = ?1"
            ))
            .map_err(e)?;
        let mut out = Vec::new();
        for id in self.closest_ids(query, filter, args, k)? {
            let rows = st.query_map([id], row_to_record);
            out.extend(super::collect(rows).map_err(e)?);
        }
        Ok(out)
    }

    /// The ids of [`Store::closest`]'s records, closest first.
    pub(crate) fn closest_ids(
        &self,
        query: &str,
        filter: &str,
        args: &[&dyn ToSql],
        k: usize,
    ) -> Result<Vec<i64>, StoreError> {
        let q = meaning::embed_question(query, super::MAX_QUERY_CHARS);
        if q.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let e = |x| self.err(x);
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT r.id, r.vector FROM record_meaning r JOIN projects p ON p.id = r.project_id
                 WHERE {filter} ORDER BY r.id DESC LIMIT {}",
                meaning::MAX_CANDIDATES
            ))
            .map_err(e)?;
        let rows = st
            .query_map(args, |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?)))
            .map_err(e)?;
        let mut err = None;
        let cands = rows.map_while(|r| r.map_err(|x| err = Some(x)).ok());
        let best = meaning::best(&q, cands, k);
        if let Some(x) = err {
            return Err(e(x));
        }
        Ok(best.into_iter().map(|b| b.0).collect())
    }
}

#[cfg(test)]
mod tests {
    use crate::meaning::BY_MEANING;
    use crate::sqlite::samples::rec;
    use crate::sqlite::Store;

    fn store(texts: &[&str]) -> (tempfile::TempDir, Store) {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        for (i, text) in texts.iter().enumerate() {
            let mut r = rec(
                &format!("{i:032x}"),
                1000 + i as u64,
                "p",
                "s",
                "post-tool-use",
            );
            r.title = None;
            r.body = Some((*text).into());
            r.files = Vec::new();
            s.insert(&r).unwrap();
        }
        (t, s)
    }

    const TEXTS: &[&str] = &[
        "add a retry with exponential backoff to the download client",
        "cache the price table in memory for an hour",
        "cargo test: 42 passed; 0 failed",
        "git status: nothing to commit, working tree clean",
    ];

    #[test]
    fn a_paraphrase_is_found_by_meaning_and_says_so() {
        let (_t, s) = store(TEXTS);
        let q = "make downloads survive flaky networks";
        // The words find nothing: no record has them all.
        assert!(s.search(None, q, 3).unwrap().is_empty());
        let found = s.search_fused(Some(("default", "p")), q, 3).unwrap();
        assert_eq!(found[0].body.as_deref(), Some(TEXTS[0]), "{found:?}");
        assert_eq!(found[0].matched.as_deref(), Some(BY_MEANING));
        let found = s
            .search_between_fused(None, "speed up repeated lookups", None, None, 3)
            .unwrap();
        assert!(
            found.iter().any(|r| r.body.as_deref() == Some(TEXTS[1])),
            "{found:?}"
        );
        // Rows the words found come first, unmarked; none twice.
        let found = s.search_fused(None, "exponential backoff", 3).unwrap();
        assert_eq!(found[0].body.as_deref(), Some(TEXTS[0]));
        assert_ne!(found[0].matched.as_deref(), Some(BY_MEANING));
        assert!(found[1..].iter().all(|r| r.key != found[0].key));
        // Another scope, or a time range without it, finds nothing.
        assert!(s
            .search_fused(Some(("default", "q")), q, 3)
            .unwrap()
            .is_empty());
        assert!(s
            .search_between_fused(None, q, Some(1), Some(1000), 3)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn records_stored_before_get_their_meaning_in_bounded_batches_and_lose_it_with_them() {
        let (_t, mut s) = store(TEXTS);
        let count = |s: &Store| -> i64 {
            s.conn
                .query_row("SELECT count(*) FROM record_meaning", [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(count(&s), 4);
        // As a store migrated with records and no meanings: all to do.
        s.conn
            .execute_batch("DELETE FROM record_meaning; UPDATE meaning_fill SET below = 5;")
            .unwrap();
        let tx = s.conn.transaction().unwrap();
        assert_eq!(super::fill(&tx, 3).unwrap(), 3);
        tx.commit().unwrap();
        let below: i64 = s
            .conn
            .query_row("SELECT below FROM meaning_fill", [], |r| r.get(0))
            .unwrap();
        assert_eq!((count(&s), below), (3, 2), "the newest three first");
        // The next insert batch fills the rest and the cursor ends.
        let mut r = rec(&format!("{:032x}", 99), 5000, "p", "s", "stop");
        r.body = Some("the download works".into());
        s.insert(&r).unwrap();
        assert_eq!(count(&s), 5);
        let below: i64 = s
            .conn
            .query_row("SELECT below FROM meaning_fill", [], |r| r.get(0))
            .unwrap();
        assert_eq!(below, 0);
        // Forgetting a record removes its meaning.
        s.conn
            .execute(
                "DELETE FROM record_rows WHERE key = memhook_key(?1)",
                [format!("{:032x}", 0)],
            )
            .unwrap();
        assert_eq!(count(&s), 4);
    }

    /// Which records keep a meaning, on insert and when filled in later:
    /// those with text of their own (a body, files, a tool result's
    /// command), not those whose only text is memhook's fixed wording.
    #[test]
    fn only_records_with_text_of_their_own_keep_a_meaning() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let cases: &[(&str, &str, Option<&str>, bool, bool)] = &[
            // event, title, body, files?, keeps a meaning
            ("pre-tool-use", "Bash (shell)", None, false, false),
            (
                "session-start",
                "session start: startup",
                None,
                false,
                false,
            ),
            ("session-end", "session end", None, false, false),
            ("stop", "stop", None, false, false),
            ("pre-tool-use", "Bash (shell)", Some("  \n"), false, false),
            (
                "post-tool-use",
                "Bash: cargo test → exit 0",
                None,
                false,
                true,
            ),
            (
                "post-tool-use-failure",
                "Bash: cargo build → exit 101",
                None,
                false,
                true,
            ),
            ("post-tool-use", "Edit src/download.rs", None, true, true),
            (
                "stop",
                "stop",
                Some("the download retries with backoff now"),
                false,
                true,
            ),
            (
                "user-prompt",
                "make the download retry",
                Some("make the download retry"),
                false,
                true,
            ),
        ];
        for (i, (event, title, body, files)) in
            cases.iter().map(|c| (c.0, c.1, c.2, c.3)).enumerate()
        {
            let mut r = rec(&format!("{i:032x}"), 1000 + i as u64, "p", "s", event);
            r.title = Some(title.to_string());
            r.body = body.map(str::to_string);
            if !files {
                r.files = Vec::new();
            }
            s.insert(&r).unwrap();
        }
        let kept = |s: &Store| -> Vec<bool> {
            (0..cases.len())
                .map(|i| {
                    s.conn
                        .query_row(
                            "SELECT count(*) FROM record_meaning m JOIN record_rows r ON r.id = m.id
                             WHERE r.key = memhook_key(?1)",
                            [format!("{i:032x}")],
                            |r| r.get::<_, i64>(0),
                        )
                        .unwrap()
                        == 1
                })
                .collect()
        };
        let want: Vec<bool> = cases.iter().map(|c| c.4).collect();
        assert_eq!(kept(&s), want, "on insert");
        // The same when a store's records are given their meaning later.
        s.conn
            .execute_batch("DELETE FROM record_meaning; UPDATE meaning_fill SET below = 1000;")
            .unwrap();
        let tx = s.conn.transaction().unwrap();
        super::fill(&tx, 100).unwrap();
        tx.commit().unwrap();
        assert_eq!(kept(&s), want, "filled in");
    }

    /// A store of an earlier version kept a meaning for every record:
    /// migration 13 removes those of records without text of their own,
    /// and keeps the others.
    #[test]
    fn the_migration_removes_the_meanings_of_records_without_text_of_their_own() {
        let t = tempfile::tempdir().unwrap();
        let (pre, post) = (format!("{:032x}", 1), format!("{:032x}", 2));
        {
            let mut s = Store::open(t.path()).unwrap();
            let mut r = rec(&pre, 1000, "p", "s", "pre-tool-use");
            r.title = Some("Bash (shell)".into());
            r.body = None;
            r.files = Vec::new();
            s.insert(&r).unwrap();
            let mut r = rec(&post, 1001, "p", "s", "post-tool-use");
            r.title = Some("Bash: cargo test → exit 0".into());
            r.body = None;
            r.files = Vec::new();
            s.insert(&r).unwrap();
            // As version 12 left it: the old view, and a meaning for both.
            s.conn
                .execute_batch(&format!(
                    "INSERT INTO record_meaning (id, project_id, occurred_ms, vector)
                     SELECT id, project_id, occurred_ms, zeroblob(100) FROM record_rows
                     WHERE id NOT IN (SELECT id FROM record_meaning);
                     DROP VIEW records;
                     {};
                     PRAGMA user_version = 12;",
                    crate::sqlite::compact::RECORDS_VIEW_12
                ))
                .unwrap();
        }
        let s = Store::open(t.path()).unwrap();
        assert_eq!(s.schema_version().unwrap(), crate::sqlite::SCHEMA_VERSION);
        let kept: Vec<String> = s
            .conn
            .prepare("SELECT r.key FROM record_meaning m JOIN records r ON r.id = m.id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(kept, [post]);
        // The view reads every record as before.
        let events: Vec<String> = s
            .conn
            .prepare("SELECT event FROM records ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(events, ["pre-tool-use", "post-tool-use"]);
    }
}
