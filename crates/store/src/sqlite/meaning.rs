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
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let rows: Vec<Row> = tx
        .prepare_cached(&format!(
            "SELECT id, project_id, occurred_ms, title, body, files FROM records
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
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    for (id, project_id, ms, title, body, files) in &rows {
        let files: Vec<String> = files
            .as_deref()
            .and_then(|f| serde_json::from_str(f).ok())
            .unwrap_or_default();
        let mut texts: Vec<&str> = [title.as_deref(), body.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        texts.extend(files.iter().map(String::as_str));
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
}
