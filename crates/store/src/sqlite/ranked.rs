//! Search that does not rank every match (issue 29): the best `limit`
//! records by [`SEARCH_RANK`](super::SEARCH_RANK), found newest rows first,
//! window by window, stopping as soon as no older row can rank among them.
//!
//! FTS5 computes `bm25` for every row it ranks (its term frequencies and
//! the row's length), so `ORDER BY rank LIMIT k` over a word that a third
//! of a year holds costs hundreds of milliseconds. But the rank is bounded:
//! FTS5's `bm25` of a row is `-Σ idf(phrase) · f·(k1+1) / (f + k1·(1-b+b·D/avgD))`
//! with `k1 = 1.2`, `b = 0.75`, so its magnitude is below
//! `Σ idf(phrase) · (k1 + 1)` for any row, and `idf` grows with the number
//! of rows, which is at most the largest record id. The recency weight of a
//! row is at most that of the newest row left. So the search ranks the
//! matches of the newest rowid window (rowids follow arrival, which is
//! nearly time order), then of a window twice as large before it, and so on;
//! after each window, when the `limit`-th best so far outranks the best any
//! older row could reach, it stops. The answer is exactly that of ranking
//! every match (same order, same ties: score, then newer); only the work
//! follows what it had to look at. A word in few records costs one or two
//! windows of few matches; a common word costs the windows of its newest
//! matches. The bound is loose (the best real matches reach about three
//! quarters of it), so a word whose best matches are spread over the year
//! still ranks every window (docs/benchmarks.md, "A year of heavy use").
//!
//! A search within a small project (at most 1/[`SMALL_PROJECT_PARTS`] of
//! the rowids) ranks all its matches in one window instead: its matches are
//! few, and every window would start the FTS query and read the project's
//! rowids again.
//!
//! Each match is ranked from the small covering index `records_rank` (id,
//! time, project), never from the record's own pages: a scoped search
//! scores only its project's matches and reads no other record, and a cold
//! search reads megabytes, not the records of every match.

use rusqlite::{params, ToSql};

use super::{row_to_record, Store, StoreError, StoredRecord, RECORD_COLUMNS};

/// Rowids in the first (newest) window, at the least.
pub const FIRST_WINDOW_MIN: i64 = 4096;
/// The first window is the newest 1/`FIRST_WINDOW_PARTS` of the rowids
/// (when that is more than [`FIRST_WINDOW_MIN`]); each next one is twice
/// the one before.
pub const FIRST_WINDOW_PARTS: i64 = 64;
/// FTS5's `bm25` parameter `k1` (its default, which `bm25(records_fts)` uses).
const BM25_K1: f64 = 1.2;
/// FTS5's floor for an inverse document frequency (`fts5_aux.c`).
const MIN_IDF: f64 = 1e-6;
/// Slack on the stopping test, against rounding in the rank arithmetic.
const BOUND_SLACK: f64 = 1e-9;
/// Milliseconds in which the recency weight halves its lift (30 days), as
/// in [`SEARCH_RANK`](super::SEARCH_RANK).
const RECENCY_MS: f64 = 2_592_000_000.0;

/// The recency weight of a row `age_ms` old, as [`SEARCH_RANK`](super::SEARCH_RANK) computes it.
fn recency(age_ms: i64) -> f64 {
    1.0 + 0.5 / (1.0 + age_ms.max(0) as f64 / RECENCY_MS)
}

/// The inverse document frequency FTS5's `bm25` gives a phrase found in
/// `hits` of `rows` rows.
fn idf(rows: i64, hits: i64) -> f64 {
    let idf = ((rows - hits) as f64 + 0.5) / (hits as f64 + 0.5);
    let idf = memhook_core::mathlog::ln(idf);
    if idf <= 0.0 {
        MIN_IDF
    } else {
        idf
    }
}

/// The largest magnitude `bm25` can give any row for phrases found in
/// `hits` rows each, in an index of at most `rows` rows.
pub fn bm25_bound(rows: i64, hits: &[i64]) -> f64 {
    hits.iter().map(|&h| idf(rows, h) * (BM25_K1 + 1.0)).sum()
}

/// The phrases of an FTS query [`super::fts_query`] wrote (`"a" "b c"`),
/// each quoted as a query of its own.
fn phrases(q: &str) -> Vec<String> {
    q.split('"')
        .skip(1)
        .step_by(2)
        .map(|t| format!("\"{t}\""))
        .collect()
}

/// The best `limit` matches of `?1` among rowids `(?lo, ?hi]` that meet
/// `filter` (whose parameters are `?2` to `?{lo - 1}`), by `rank`, with
/// their rank and time: read from the covering index `records_rank`, not
/// from the records.
fn window_sql(rank: &str, filter: &str, lo: usize, limit: usize) -> String {
    let hi = lo + 1;
    format!(
        "SELECT r.id, {rank} AS score, r.occurred_ms AS ms
         FROM records_fts f
         JOIN record_rows r INDEXED BY records_rank ON r.id = f.rowid
         JOIN projects p ON p.id = r.project_id
         WHERE records_fts MATCH ?1 AND f.rowid > ?{lo} AND f.rowid <= ?{hi}
           AND ({filter})
         ORDER BY score, ms DESC LIMIT {limit}"
    )
}

/// A project holding at most 1/`SMALL_PROJECT_PARTS` of the rowids is
/// searched through its own rowids ([`Store::project_filter`]); a larger
/// one like the whole store (its rows are everywhere anyway, and reading
/// its rowids for every window would cost more than it saves).
pub const SMALL_PROJECT_PARTS: i64 = 16;

/// One ranked match: rowid, rank (lower is better), time.
type Hit = (i64, f64, i64);

impl Store {
    /// The best `candidates` records matching the FTS query `q` (built by
    /// [`super::fts_query`]) that meet `filter` (SQL over `r` and `p`
    /// whose parameters are `?2`… , given in `args`), best
    /// [`SEARCH_RANK`](super::SEARCH_RANK) first, with identical texts
    /// made one row (`crate::collapse`, at most `limit` rows), each with
    /// why it matched. `within`: a project (workspace, name) that `filter`
    /// keeps only rows of, so that a small project's matches are told
    /// apart by rowid before any record is looked up, instead of looking
    /// up every match ([`Store::project_filter`]); the answer is the same.
    ///
    /// Why each matched is made for the rows kept only: `snippet()` reads
    /// a row's every column again (FTS5 asks the view, which inflates the
    /// body and computes the identifier words), and a search reads several
    /// times the rows it keeps (docs/benchmarks.md, sixth pass).
    pub(crate) fn ranked_collapsed(
        &self,
        q: &str,
        filter: &str,
        args: &[&dyn ToSql],
        candidates: usize,
        within: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        let rows = self.ranked_rows(q, filter, args, candidates, within)?;
        let ids: std::collections::HashMap<String, i64> =
            rows.iter().map(|(id, r)| (r.key.clone(), *id)).collect();
        let mut kept = crate::collapse::collapse(rows.into_iter().map(|(_, r)| r).collect(), limit);
        for r in &mut kept {
            if let Some(&id) = ids.get(&r.key) {
                r.matched = self.matched(q, id)?;
            }
        }
        Ok(kept)
    }

    /// [`Store::ranked_collapsed`]'s candidates and their rowids, without
    /// why they matched.
    fn ranked_rows(
        &self,
        q: &str,
        filter: &str,
        args: &[&dyn ToSql],
        limit: usize,
        within: Option<(&str, &str)>,
    ) -> Result<Vec<(i64, StoredRecord)>, StoreError> {
        let ids = self.ranked_ids(q, filter, args, limit, within)?;
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT {RECORD_COLUMNS} FROM records r JOIN projects p ON p.id = r.project_id
                 WHERE r.id = ?1"
            ))
            .map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let rows = st.query_map(params![id], row_to_record);
            out.extend(
                super::collect(rows)
                    .map_err(|e| self.err(e))?
                    .into_iter()
                    .map(|r| (id, r)),
            );
        }
        Ok(out)
    }

    /// Why the record `id` matched the full-text query `q`
    /// ([`StoredRecord::matched`]).
    fn matched(&self, q: &str, id: i64) -> Result<Option<String>, StoreError> {
        use rusqlite::OptionalExtension;
        self.conn
            .prepare_cached(&format!(
                "SELECT {} FROM records_fts WHERE records_fts MATCH ?1 AND rowid = ?2",
                super::matched_column()
            ))
            .and_then(|mut st| st.query_row(params![q, id], |r| r.get(0)).optional())
            .map(Option::flatten)
            .map_err(|e| self.err(e))
    }

    /// The rowids of [`Store::ranked_collapsed`]'s candidates, in order.
    pub(crate) fn ranked_ids(
        &self,
        q: &str,
        filter: &str,
        args: &[&dyn ToSql],
        limit: usize,
        within: Option<(&str, &str)>,
    ) -> Result<Vec<i64>, StoreError> {
        let (hits, _, _) = self.ranked_steps(q, filter, args, limit, within)?;
        Ok(hits.into_iter().map(|h| h.0).collect())
    }

    /// The rowids, ranks and times of [`Store::ranked_collapsed`]'s candidates, in
    /// order, how many windows were ranked to find them, and how many
    /// virtual machine steps its window statement took (what the tests
    /// compare).
    fn ranked_steps(
        &self,
        q: &str,
        filter: &str,
        args: &[&dyn ToSql],
        limit: usize,
        within: Option<(&str, &str)>,
    ) -> Result<(Vec<Hit>, usize, i32), StoreError> {
        let e = |x| self.err(x);
        let limit = limit.min(super::MAX_QUERY_LIMIT);
        if limit == 0 {
            return Ok((Vec::new(), 0, 0));
        }
        let (max_id, now_ms): (Option<i64>, i64) = self
            .conn
            .query_row(
                "SELECT (SELECT max(id) FROM records), unixepoch() * 1000",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(e)?;
        let Some(max_id) = max_id else {
            return Ok((Vec::new(), 0, 0));
        };
        // A small project's matches are ranked in one window, all of them:
        // each window starts the FTS query inside the word's doclist again
        // and reads the project's rowids again, which costs more than
        // ranking the few matches a small project holds (issue 29, fourth
        // pass), and then no bound (a second read of each doclist) is needed.
        let (filter, one_window) = match within {
            Some((w, p)) => match self.project_filter(w, p, max_id)? {
                Some(Some(own)) => (format!("({filter}) AND {own}"), true),
                Some(None) => (filter.to_string(), false),
                None => return Ok((Vec::new(), 0, 0)),
            },
            None => (filter.to_string(), false),
        };
        let rank = super::SEARCH_RANK.replace("unixepoch() * 1000", &now_ms.to_string());
        let mut st = self
            .conn
            .prepare(&window_sql(&rank, &filter, args.len() + 2, limit))
            .map_err(e)?;
        let mut best: Vec<Hit> = Vec::new();
        let mut bound: Option<f64> = None;
        let mut hi = max_id;
        let mut size = if one_window {
            max_id
        } else {
            (max_id / FIRST_WINDOW_PARTS).max(FIRST_WINDOW_MIN)
        };
        let mut windows = 0;
        loop {
            windows += 1;
            let lo = hi.saturating_sub(size).max(0);
            let mut all: Vec<&dyn ToSql> = vec![&q];
            all.extend_from_slice(args);
            all.push(&lo);
            all.push(&hi);
            let rows = st.query_map(&*all, |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)));
            best.extend(super::collect(rows).map_err(e)?);
            best.sort_by(|a, b| a.1.total_cmp(&b.1).then(b.2.cmp(&a.2)));
            best.truncate(limit);
            let steps = || st.get_status(rusqlite::StatementStatus::VmStep);
            if lo == 0 {
                return Ok((best, windows, steps()));
            }
            if best.len() == limit {
                let b = match bound {
                    Some(b) => b,
                    None => {
                        let b = bm25_bound(max_id, &self.phrase_hits(q)?);
                        bound = Some(b);
                        b
                    }
                };
                let kth = best[limit - 1].1;
                // No row weighs less than 1: unless the `limit`-th best
                // beats the bound itself, no older row can be ruled out,
                // and the newest row left need not be looked up.
                if kth < -b {
                    // The newest row left: its weight is the most any can get.
                    let newest_left: Option<i64> = self
                        .conn
                        .prepare_cached(
                            "SELECT occurred_ms FROM record_rows INDEXED BY records_time
                             WHERE id <= ?1 ORDER BY occurred_ms DESC LIMIT 1",
                        )
                        .and_then(|mut st| {
                            st.query_row([lo], |r| r.get(0))
                                .map(Some)
                                .or_else(|x| match x {
                                    rusqlite::Error::QueryReturnedNoRows => Ok(None),
                                    x => Err(x),
                                })
                        })
                        .map_err(e)?;
                    let Some(newest_left) = newest_left else {
                        return Ok((best, windows, steps()));
                    };
                    let reach = -b * recency(now_ms - newest_left);
                    if kth < reach - BOUND_SLACK * reach.abs() {
                        return Ok((best, windows, steps()));
                    }
                }
            }
            hi = lo;
            size = size.saturating_mul(2);
        }
    }

    /// The condition that keeps a match of the full-text index only when
    /// its rowid is one of project `w/p`'s, tested before its record is
    /// looked up (`+f.rowid IN (…)`: the project's rowids, read once per
    /// window from `records_scope_time` into a temporary index, instead of
    /// a lookup of `records_rank` and `projects` for every match of the
    /// store). `Some(None)` when the project holds more than
    /// 1/[`SMALL_PROJECT_PARTS`] of the `max_id` rowids (then the lookup is
    /// cheaper); `None` when it does not exist (nothing can match).
    fn project_filter(
        &self,
        w: &str,
        p: &str,
        max_id: i64,
    ) -> Result<Option<Option<String>>, StoreError> {
        let project: Option<(i64, i64)> = self
            .conn
            .prepare_cached(
                "SELECT id, records FROM projects WHERE workspace = ?1 AND project = ?2",
            )
            .and_then(|mut st| {
                st.query_row(params![w, p], |r| Ok((r.get(0)?, r.get(1)?)))
                    .map(Some)
                    .or_else(|x| match x {
                        rusqlite::Error::QueryReturnedNoRows => Ok(None),
                        x => Err(x),
                    })
            })
            .map_err(|x| self.err(x))?;
        Ok(project.map(|(id, records)| {
            (records <= max_id / SMALL_PROJECT_PARTS).then(|| {
                format!(
                    "+f.rowid IN (SELECT id FROM record_rows INDEXED BY records_scope_time \
                     WHERE project_id = {id})"
                )
            })
        }))
    }

    /// How many rows each phrase of the FTS query `q` is found in.
    fn phrase_hits(&self, q: &str) -> Result<Vec<i64>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached("SELECT count(*) FROM records_fts WHERE records_fts MATCH ?1")
            .map_err(|e| self.err(e))?;
        let mut hits = Vec::new();
        for term in phrases(q) {
            hits.push(
                st.query_row([term], |r| r.get::<_, i64>(0))
                    .map_err(|e| self.err(e))?,
            );
        }
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::{fts_query, samples::rec};

    const DAY_MS: u64 = 86_400_000;

    /// `n` records over the year before now in three projects, of words
    /// drawn (seeded) from a small vocabulary: `common` in most, `rare` in
    /// few. The first tenth arrives last (old records imported late: high
    /// rowids, old times) and the next tenth first with the newest times.
    fn year(n: u64) -> (tempfile::TempDir, Store) {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let now = memhook_core::timefmt::now_ms();
        let words = [
            "common", "common", "common", "error", "parser", "cache", "build", "test", "rare",
            "date", "config", "retry",
        ];
        let mut seed: u64 = 29;
        let mut next = |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        let mut all = Vec::new();
        for i in 0..n {
            let ms = now - 365 * DAY_MS + i * (365 * DAY_MS / n);
            let project = ["a", "b", "c"][next(3) as usize];
            let mut r = rec(&format!("{i:032x}"), ms, project, "s", "post-tool-use");
            let len = 1 + next(12);
            let mut body: Vec<&str> = (0..len).map(|_| words[next(12) as usize]).collect();
            if next(40) != 0 {
                body.retain(|w| *w != "rare");
            }
            r.body = Some(body.join(" "));
            r.title = None;
            r.files.clear();
            all.push(r);
        }
        let tenth = (n / 10) as usize;
        let (old, rest) = all.split_at(tenth);
        let (newest, middle) = rest.split_at(rest.len() - tenth);
        for part in [newest, middle, old] {
            for chunk in part.chunks(1000) {
                s.insert_all(chunk.iter()).unwrap();
            }
        }
        (t, s)
    }

    /// The ranking of every match, as search did before windows.
    fn every_match(
        s: &Store,
        q: &str,
        filter: &str,
        args: &[&dyn ToSql],
        limit: usize,
    ) -> Vec<i64> {
        let mut st = s
            .conn
            .prepare(&format!(
                "SELECT r.id, {} AS score, r.occurred_ms AS ms FROM records_fts f
                 JOIN records r ON r.id = f.rowid JOIN projects p ON p.id = r.project_id
                 WHERE records_fts MATCH ?1 AND ({filter}) ORDER BY score, ms DESC LIMIT {limit}",
                super::super::SEARCH_RANK
            ))
            .unwrap();
        let mut all: Vec<&dyn ToSql> = vec![&q];
        all.extend_from_slice(args);
        st.query_map(&*all, |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    /// A store like `year`, and a small project `tiny` whose records
    /// arrive in a few sessions (runs of rowids) and now and then one by
    /// one between the others.
    fn year_with_a_small_project(n: u64) -> (tempfile::TempDir, Store) {
        let (t, mut s) = year(n);
        let now = memhook_core::timefmt::now_ms();
        let mut id = n;
        for burst in 0..6u64 {
            let mut recs = Vec::new();
            let len = if burst % 2 == 0 { 60 } else { 1 };
            for j in 0..len {
                id += 1;
                let ms = now - (200 - burst * 30) * DAY_MS + j * 1000;
                let mut r = rec(&format!("{id:032x}"), ms, "tiny", "t", "post-tool-use");
                r.body = Some(
                    ["common error", "error parser", "rare cache", "common"][(j % 4) as usize]
                        .into(),
                );
                r.title = None;
                r.files.clear();
                recs.push(r);
            }
            for i in 0..500u64 {
                id += 1;
                let mut r = rec(
                    &format!("{id:032x}"),
                    now - i * 1000,
                    "a",
                    "s",
                    "post-tool-use",
                );
                r.body = Some("common error cache".into());
                recs.push(r);
            }
            s.insert_all(recs.iter()).unwrap();
        }
        (t, s)
    }

    #[test]
    fn a_small_project_is_searched_through_its_own_rowids_with_the_same_answer() {
        let (_t, s) = year_with_a_small_project(3 * FIRST_WINDOW_MIN as u64 * 2);
        let filter = "p.workspace = ?2 AND p.project = ?3";
        let args: Vec<&dyn ToSql> = vec![&"default", &"tiny"];
        let mut fewer = 0;
        for query in ["common", "error", "rare", "parser cache", "nothing"] {
            let q = fts_query(query).unwrap();
            for limit in [1, 5, 20, 200] {
                let want = every_match(&s, &q, filter, &args, limit);
                let (all, _, all_steps) = s.ranked_steps(&q, filter, &args, limit, None).unwrap();
                let (runs, windows, run_steps) = s
                    .ranked_steps(&q, filter, &args, limit, Some(("default", "tiny")))
                    .unwrap();
                // All its matches ranked at once: one FTS query, no bound.
                assert_eq!(windows, 1, "{query} {limit}");
                let ids = |h: &[Hit]| h.iter().map(|h| h.0).collect::<Vec<_>>();
                assert_eq!(ids(&all), want, "{query} {limit}");
                assert_eq!(ids(&runs), want, "{query} {limit} by its rowids");
                if run_steps * 3 < all_steps * 2 {
                    fewer += 1;
                }
            }
        }
        // The words of many records: two thirds of the work or less (a
        // match outside the project is dropped before its record is looked
        // up; the index's doclists are still read whole).
        assert!(fewer >= 12, "{fewer}");
        // A project that does not exist finds nothing, at once.
        let none: Vec<&dyn ToSql> = vec![&"default", &"nope"];
        let (hits, windows, _) = s
            .ranked_steps("\"common\"", filter, &none, 20, Some(("default", "nope")))
            .unwrap();
        assert!(hits.is_empty() && windows == 0);
    }

    #[test]
    fn windows_give_exactly_the_ranking_of_every_match_and_stop_early_for_common_words() {
        let n = 3 * FIRST_WINDOW_MIN as u64 * 2;
        let (_t, s) = year(n);
        let mut stopped_early = 0;
        for query in [
            "common",
            "error",
            "rare",
            "parser cache",
            "retry date config",
            "nothing",
        ] {
            let q = fts_query(query).unwrap();
            for limit in [1, 5, 20] {
                for (filter, args) in [
                    ("1", vec![]),
                    ("p.workspace = ?2 AND p.project = ?3", vec!["default", "b"]),
                ] {
                    let args: Vec<&dyn ToSql> = args.iter().map(|a| a as &dyn ToSql).collect();
                    let within = (filter != "1").then_some(("default", "b"));
                    let (hits, windows, _) =
                        s.ranked_steps(&q, filter, &args, limit, within).unwrap();
                    let ids: Vec<i64> = hits.iter().map(|h| h.0).collect();
                    assert_eq!(
                        ids,
                        every_match(&s, &q, filter, &args, limit),
                        "{query} {filter} {limit}"
                    );
                    if windows < 4 {
                        stopped_early += 1;
                    }
                }
            }
        }
        // The common words stop after the newest windows (of six or more).
        assert!(stopped_early >= 6, "{stopped_early}");
        let (_, windows, _) = s.ranked_steps("\"common\"", "1", &[], 20, None).unwrap();
        assert!(windows <= 2, "{windows}");
    }

    #[test]
    fn the_bound_is_above_any_rank_fts5_gives() {
        // A row that is all one word, as short as can be, among rows that
        // mostly lack it: the largest bm25 there is for that word.
        let t = tempfile::tempdir().unwrap();
        let s = Store::open(t.path()).unwrap();
        s.conn
            .execute_batch(
                "INSERT INTO records_fts (rowid, body) VALUES (1, 'zz zz zz zz zz zz zz zz');
                 INSERT INTO records_fts (rowid, body) VALUES (2, 'zz');
                 WITH RECURSIVE n(i) AS (SELECT 3 UNION ALL SELECT i + 1 FROM n WHERE i < 400)
                 INSERT INTO records_fts (rowid, body)
                 SELECT i, 'other words of a long ordinary row ' || i FROM n;",
            )
            .unwrap();
        let best: f64 = s
            .conn
            .query_row(
                "SELECT bm25(records_fts) AS b FROM records_fts WHERE records_fts MATCH 'zz'
                 ORDER BY b LIMIT 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let b = bm25_bound(400, &[2]);
        assert!(-best < b, "{best} vs {b}");
        // Not loose by orders of magnitude: within the (k1 + 1) saturation.
        assert!(-best > b / 3.0, "{best} vs {b}");
        // Every row is a hit: FTS5's floor, not a negative idf.
        assert_eq!(bm25_bound(10, &[10]), MIN_IDF * (BM25_K1 + 1.0));
        assert_eq!(idf(10, 9), MIN_IDF);
        assert!(idf(10, 4) > MIN_IDF);
    }

    #[test]
    fn a_window_ranks_from_the_covering_index_not_the_records() {
        let t = tempfile::tempdir().unwrap();
        let s = Store::open(t.path()).unwrap();
        let sql = window_sql(super::super::SEARCH_RANK, "p.project = ?2", 3, 20);
        let plan: Vec<String> = s
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap()
            .query_map(params!["\"x\"", "p", 0, 10], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(
            plan.iter()
                .any(|l| l.contains("COVERING INDEX records_rank")),
            "{plan:?}"
        );
    }

    #[test]
    fn the_first_window_holds_at_least_first_window_min_rowids() {
        let t = tempfile::tempdir().unwrap();
        let s = Store::open(t.path()).unwrap();
        let add = |from: i64, to: i64| {
            s.conn
                .execute_batch(&format!(
                    "INSERT OR IGNORE INTO projects (id, workspace, project, first_ms, last_ms)
                        VALUES (1, 'default', 'p', 1, 1);
                     WITH RECURSIVE n(i) AS (SELECT {from} UNION ALL SELECT i + 1 FROM n WHERE i < {to})
                     INSERT INTO record_rows (id, key, occurred_ms, project_id, agent, event,
                        native_event, disposition)
                     SELECT i, 'k' || i, i, 1, 1, 2, 3, 4 FROM n;"
                ))
                .unwrap();
        };
        add(1, FIRST_WINDOW_MIN);
        s.conn
            .execute_batch("INSERT INTO records_fts (rowid, body) VALUES (1, 'zz');")
            .unwrap();
        let windows = |s: &Store| s.ranked_steps("\"zz\"", "1", &[], 20, None).unwrap().1;
        assert_eq!(windows(&s), 1);
        add(FIRST_WINDOW_MIN + 1, FIRST_WINDOW_MIN + 1);
        assert_eq!(windows(&s), 2);
    }

    #[test]
    fn the_phrases_are_those_fts_query_wrote() {
        let q = super::super::fts_query("parse-date retries").unwrap();
        assert_eq!(phrases(&q), ["\"parse-date\"", "\"retries\""]);
    }

    #[test]
    fn recency_is_the_weight_of_the_search_rank() {
        assert_eq!(recency(0), 1.5);
        assert_eq!(recency(-5), 1.5, "a row from the future counts as new");
        assert_eq!(recency(RECENCY_MS as i64), 1.25);
    }
}
