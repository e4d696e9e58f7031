//! Search by meaning in PostgreSQL, as in the embedded store
//! (`memhook_store::meaning`; the SQLite side is `sqlite/meaning.rs`):
//! each record's meaning in `record_meaning` (migration 7; removed with
//! its record by `ON DELETE CASCADE`), the records stored before filled in
//! after each insert, and the records closest to a question.

use memhook_core::record::Record;
use memhook_store::meaning;
use memhook_store::model::{StoredRecord, MAX_QUERY_CHARS};
use postgres::types::ToSql;

use super::read::{to_record, RECORD_COLUMNS};
use super::{Conn, PgError, PgStore};

const KEEP: &str = "INSERT INTO record_meaning (id, project_id, occurred_ms, vector)
     SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bytea[])
     ON CONFLICT (id) DO NOTHING";

/// Keep the meanings of new records: `(id, project id, record)`.
pub(super) fn keep(conn: &mut Conn, new: &[(i64, i64, &Record)]) -> Result<(), postgres::Error> {
    let mut cols: (Vec<i64>, Vec<i64>, Vec<i64>, Vec<Vec<u8>>) = Default::default();
    for (id, project, r) in new {
        let v = meaning::embed(meaning::record_texts(
            &r.event,
            r.title.as_deref(),
            r.body.as_deref(),
            &r.files,
        ));
        if !v.is_empty() {
            cols.0.push(*id);
            cols.1.push(*project);
            cols.2.push(r.occurred_ms as i64);
            cols.3.push(v);
        }
    }
    if cols.0.is_empty() {
        return Ok(());
    }
    let stmt = conn.prepared(KEEP)?;
    conn.client
        .execute(&stmt, &[&cols.0, &cols.1, &cols.2, &cols.3])?;
    Ok(())
}

/// Give up to [`meaning::FILL_BATCH`] records stored before meanings were
/// kept their meaning, newest first, inside the insert's transaction. The
/// cursor row is taken with `SKIP LOCKED`: while another server fills,
/// this one does not wait for it.
pub(super) fn fill(conn: &mut Conn) -> Result<(), postgres::Error> {
    let Some(row) = conn
        .client
        .query_opt("SELECT below FROM meaning_fill FOR UPDATE SKIP LOCKED", &[])?
    else {
        return Ok(());
    };
    let below: i64 = row.get(0);
    if below <= 1 {
        return Ok(());
    }
    let max = meaning::FILL_BATCH as i64;
    let rows = conn.client.query(
        "SELECT id, project_id, occurred_ms, title, body, files::text, event FROM records
         WHERE id < $1 ORDER BY id DESC LIMIT $2",
        &[&below, &max],
    )?;
    let mut cols: (Vec<i64>, Vec<i64>, Vec<i64>, Vec<Vec<u8>>) = Default::default();
    for r in &rows {
        let files: Vec<String> = r
            .get::<_, Option<String>>(5)
            .and_then(|f| serde_json::from_str(&f).ok())
            .unwrap_or_default();
        let v = meaning::embed(meaning::record_texts(r.get(6), r.get(3), r.get(4), &files));
        if !v.is_empty() {
            cols.0.push(r.get(0));
            cols.1.push(r.get(1));
            cols.2.push(r.get(2));
            cols.3.push(v);
        }
    }
    if !cols.0.is_empty() {
        let stmt = conn.prepared(KEEP)?;
        conn.client
            .execute(&stmt, &[&cols.0, &cols.1, &cols.2, &cols.3])?;
    }
    let next: i64 = if (rows.len() as i64) < max {
        0
    } else {
        rows.last().map_or(0, |r| r.get(0))
    };
    conn.client
        .execute("UPDATE meaning_fill SET below = $1", &[&next])?;
    Ok(())
}

impl PgStore {
    /// The records closest in meaning to `query` among the newest
    /// [`meaning::MAX_CANDIDATES`] with a meaning in `scope` (`None`:
    /// every project) and `[from, to)`, closest first, at most `k`.
    pub(crate) fn closest(
        &self,
        scope: Option<(&str, &str)>,
        query: &str,
        from: i64,
        to: i64,
        k: usize,
    ) -> Result<Vec<StoredRecord>, PgError> {
        let ids = self.closest_ids(scope, query, from, to, k)?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let db = self.describe().to_string();
        let params: [&(dyn ToSql + Sync); 1] = [&ids];
        let mut found = self.with_client(|c| {
            c.query(
                &format!(
                    "SELECT {RECORD_COLUMNS}, NULL::text, r.id FROM records r
                     JOIN projects p ON p.id = r.project_id WHERE r.id = ANY($1)"
                ),
                &params,
            )
            .map(|rows| {
                rows.iter()
                    .map(|r| (r.get::<_, i64>(20), to_record(r)))
                    .collect::<Vec<_>>()
            })
            .map_err(|e| PgError::of(&db, &e))
        })?;
        // Closest first, as `best` ranked them.
        found.sort_by_key(|(id, _)| ids.iter().position(|i| i == id));
        Ok(found.into_iter().map(|(_, r)| r).collect())
    }

    /// The ids of [`PgStore::closest`]'s records, closest first.
    pub(crate) fn closest_ids(
        &self,
        scope: Option<(&str, &str)>,
        query: &str,
        from: i64,
        to: i64,
        k: usize,
    ) -> Result<Vec<i64>, PgError> {
        let q = meaning::embed_question(query, MAX_QUERY_CHARS);
        if q.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let (w, p) = scope.unwrap_or(("", ""));
        let db = self.describe().to_string();
        let max = meaning::MAX_CANDIDATES as i64;
        let best = self.with_client(|c| {
            let rows = c
                .query(CANDIDATES, &[&w, &p, &from, &to, &max])
                .map_err(|e| PgError::of(&db, &e))?;
            let cands = rows
                .iter()
                .map(|r| (r.get::<_, i64>(0), r.get::<_, Vec<u8>>(1)));
            Ok(meaning::best(&q, cands, k))
        })?;
        Ok(best.into_iter().map(|b| b.0).collect())
    }
}

/// The newest [`meaning::MAX_CANDIDATES`] meanings of a scope (`$1` = ''
/// for every project) and time range, as `(id, vector)`.
const CANDIDATES: &str = "SELECT r.id, r.vector FROM record_meaning r
     JOIN projects p ON p.id = r.project_id
     WHERE ($1 = '' OR (p.workspace = $1 AND p.project = $2))
       AND r.occurred_ms >= $3 AND r.occurred_ms < $4
     ORDER BY r.id DESC LIMIT $5";

impl super::read::PgRead<'_> {
    /// [`PgStore::closest_ids`] inside this read (every time, `scope`).
    pub(crate) fn closest_ids(
        &self,
        scope: Option<(&str, &str)>,
        query: &str,
        k: usize,
    ) -> Result<Vec<i64>, memhook_store::model::StoreError> {
        let q = meaning::embed_question(query, MAX_QUERY_CHARS);
        if q.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let (w, p) = scope.unwrap_or(("", ""));
        let max = meaning::MAX_CANDIDATES as i64;
        let rows = self.query(CANDIDATES, &[&w, &p, &0i64, &i64::MAX, &max])?;
        let cands = rows
            .iter()
            .map(|r| (r.get::<_, i64>(0), r.get::<_, Vec<u8>>(1)));
        Ok(meaning::best(&q, cands, k)
            .into_iter()
            .map(|b| b.0)
            .collect())
    }
}
