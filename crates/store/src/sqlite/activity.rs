//! Progressive disclosure for the model (DESIGN §6, §8): find records by
//! words and dates, the records around one, and records by id.

use super::{fts_query, row_to_record, Store, StoreError, StoredRecord, RECORD_COLUMNS};

/// Shortest id prefix accepted when fetching records by id.
pub const MIN_ID_PREFIX: usize = 8;

impl Store {
    /// Records matching every word of `query` in `scope` (`None`: every
    /// project) that occurred in `[from_ms, to_ms)`, best match first
    /// (identical texts as one row, `crate::collapse`).
    pub fn search_between(
        &self,
        scope: Option<(&str, &str)>,
        query: &str,
        from_ms: Option<u64>,
        to_ms: Option<u64>,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        let Some(q) = fts_query(query) else {
            return Ok(Vec::new());
        };
        let (w, p) = scope.unwrap_or(("", ""));
        let from = from_ms.unwrap_or(0) as i64;
        let to = to_ms.map_or(i64::MAX, |t| t.min(i64::MAX as u64) as i64);
        let n = crate::collapse::candidates(limit);
        let limit = limit.min(super::MAX_QUERY_LIMIT);
        self.ranked_collapsed(
            &q,
            "(?2 = '' OR (p.workspace = ?2 AND p.project = ?3))
             AND r.occurred_ms >= ?4 AND r.occurred_ms < ?5",
            &[&w, &p, &from, &to],
            n,
            scope,
            limit,
        )
    }

    /// [`Store::search_between`], then the records closest in meaning that
    /// the words did not find (as [`Store::search_fused`]): what
    /// `activity_search` asks.
    pub fn search_between_fused(
        &self,
        scope: Option<(&str, &str)>,
        query: &str,
        from_ms: Option<u64>,
        to_ms: Option<u64>,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        let limit = limit.min(super::MAX_QUERY_LIMIT);
        let found = self.search_between(scope, query, from_ms, to_ms, limit)?;
        if found.len() == limit {
            return Ok(found);
        }
        let (w, p) = scope.unwrap_or(("", ""));
        let from = from_ms.unwrap_or(0) as i64;
        let to = to_ms.map_or(i64::MAX, |t| t.min(i64::MAX as u64) as i64);
        let n = crate::collapse::candidates(limit);
        let near = self.closest(
            query,
            "(?1 = '' OR (p.workspace = ?1 AND p.project = ?2))
             AND r.occurred_ms >= ?3 AND r.occurred_ms < ?4",
            &[&w, &p, &from, &to],
            n,
        )?;
        Ok(crate::meaning::fuse(found, near, limit))
    }

    /// Records whose key starts with one of `ids` (each at least
    /// [`MIN_ID_PREFIX`] hex digits; others are ignored), in the order asked.
    pub fn records_by_id(&self, ids: &[String]) -> Result<Vec<StoredRecord>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT {RECORD_COLUMNS} FROM records r JOIN projects p ON p.id = r.project_id
                 WHERE r.id IN (SELECT id FROM record_rows
                                WHERE (key >= ?1 AND key < ?1 || 'g') OR (key >= ?2 AND key <= ?3)
                                LIMIT 2)
                 ORDER BY r.key LIMIT 2"
            ))
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for id in ids {
            let id = id.to_ascii_lowercase();
            if id.len() < MIN_ID_PREFIX || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            // A minted key is stored as its 16 bytes (`compact.rs`): the
            // prefix is a range of those, or of the keys kept as text.
            let (lo, hi) = super::compact::key_blob_range(&id).unzip();
            let rows = super::collect(st.query_map(rusqlite::params![&id, lo, hi], row_to_record))
                .map_err(|e| self.err(e))?;
            // An ambiguous prefix names no record.
            if rows.len() == 1 {
                out.extend(rows);
            }
        }
        Ok(out)
    }

    /// The record `id` and up to `before` / `after` records of the same
    /// session around it, in time order; `None` when `id` names no record.
    /// The anchor's index in the list comes with it.
    pub fn around(
        &self,
        id: &str,
        before: usize,
        after: usize,
    ) -> Result<Option<(Vec<StoredRecord>, usize)>, StoreError> {
        let Some(anchor) = self.records_by_id(&[id.to_string()])?.pop() else {
            return Ok(None);
        };
        let side = |cmp: &str, order: &str, n: usize| -> Result<Vec<StoredRecord>, StoreError> {
            let mut st = self
                .conn
                .prepare_cached(&format!(
                    "SELECT {RECORD_COLUMNS} FROM records r JOIN projects p ON p.id = r.project_id
                     WHERE r.session_row = (SELECT session_row FROM record_rows WHERE key = memhook_key(?1))
                       AND (r.occurred_ms, r.id) {cmp}
                           (SELECT occurred_ms, id FROM record_rows WHERE key = memhook_key(?1))
                     ORDER BY r.occurred_ms {order}, r.id {order} LIMIT {}",
                    n.min(super::MAX_QUERY_LIMIT)
                ))
                .map_err(|e| self.err(e))?;
            let rows = st.query_map([&anchor.key], row_to_record);
            super::collect(rows).map_err(|e| self.err(e))
        };
        let mut list = side("<", "DESC", before)?;
        list.reverse();
        let at = list.len();
        list.push(anchor.clone());
        list.extend(side(">", "ASC", after)?);
        Ok(Some((list, at)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::tests::rec;

    fn key(i: u64) -> String {
        format!("{:08x}{:024x}", 0x1000_0000 + i * 0x0101_0101, i)
    }

    fn num(r: &StoredRecord) -> u64 {
        u64::from_str_radix(&r.key[8..], 16).unwrap()
    }

    #[test]
    fn search_by_dates_ids_and_neighbours() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        for i in 0..10u64 {
            let mut r = rec(&key(i), 1000 + i, "p", "s1", "post-tool-use");
            r.body = Some(format!("step {i} flaky"));
            s.insert(&r).unwrap();
        }
        let mut other = rec(&key(99), 5000, "q", "s2", "user-prompt");
        other.body = Some("flaky elsewhere".into());
        s.insert(&other).unwrap();
        let hits = s
            .search_between(Some(("default", "p")), "flaky", Some(1003), Some(1006), 50)
            .unwrap();
        let mut keys: Vec<u64> = hits.iter().map(num).collect();
        keys.sort();
        assert_eq!(keys, vec![3, 4, 5]);
        assert_eq!(
            s.search_between(None, "flaky", None, None, 50)
                .unwrap()
                .len(),
            11
        );
        assert!(s
            .search_between(None, "-- *", None, None, 50)
            .unwrap()
            .is_empty());

        let k3 = key(3);
        let got = s
            .records_by_id(&[k3[..12].to_uppercase(), "0000".into(), "zz".repeat(8)])
            .unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].key, k3);
        // An ambiguous prefix names nothing.
        let shared = format!("{:08x}", 0x1000_0000u64);
        let mut twin = rec(&format!("{shared}{}", "f".repeat(24)), 1, "p", "s9", "stop");
        twin.body = None;
        s.insert(&twin).unwrap();
        assert!(s.records_by_id(&[shared]).unwrap().is_empty());

        let (list, at) = s.around(&k3, 2, 3).unwrap().unwrap();
        let ids: Vec<u64> = list.iter().map(num).collect();
        assert_eq!((ids, at), (vec![1, 2, 3, 4, 5, 6], 2));
        assert!(s.around(&"f".repeat(32), 2, 2).unwrap().is_none());
        // A count past any real one is cut, not an error (it is written
        // into the SQL's LIMIT).
        let (all, at) = s.around(&k3, usize::MAX, usize::MAX).unwrap().unwrap();
        assert_eq!(all[at].key, k3);
        assert!(at > 2 && all.len() > 6, "{at} of {}", all.len());
    }
}
