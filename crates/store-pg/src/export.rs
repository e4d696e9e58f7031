//! Every stored record of the PostgreSQL store, oldest first, for
//! `memhook export --database`: `sink/store/export.rs`'s query, streamed
//! through a cursor [`EXPORT_CHUNK`] rows at a time inside one read-only
//! snapshot (a database of any size is written without holding it).

use super::read::{to_record, RECORD_COLUMNS};
use super::{PgError, PgStore};
use memhook_store::model::{ExportFilter, RecordExtras, StoreError, StoredRecord};

/// Rows fetched from the cursor at a time.
pub const EXPORT_CHUNK: i32 = 1000;

impl PgStore {
    /// Call `each` with every record `filter` selects, by time then key (the
    /// SQLite store's order), inside one snapshot. Stops at the first error
    /// `each` returns.
    pub fn export_each<E: From<StoreError>>(
        &self,
        filter: &ExportFilter,
        mut each: impl FnMut(StoredRecord, RecordExtras) -> Result<(), E>,
    ) -> Result<u64, E> {
        let (scoped, w, p, since) = filter.params();
        let db = self.describe().to_string();
        let sql = format!(
            "SELECT {RECORD_COLUMNS}, r.exit_code, r.command, r.plan::text
             FROM records r JOIN projects p ON p.id = r.project_id
             WHERE (NOT $1 OR (p.workspace = $2 AND p.project = $3)) AND r.occurred_ms >= $4
             ORDER BY r.occurred_ms, r.key"
        );
        let mut stopped: Option<E> = None;
        let n = self.with_client(|c| {
            let e = |x: postgres::Error| PgError::of(&db, &x);
            let mut tx = c
                .build_transaction()
                .isolation_level(postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .map_err(e)?;
            let portal = tx.bind(&sql, &[&scoped, &w, &p, &since]).map_err(e)?;
            let mut n = 0;
            loop {
                let rows = tx.query_portal(&portal, EXPORT_CHUNK).map_err(e)?;
                if rows.is_empty() {
                    break;
                }
                for row in &rows {
                    let plan: Option<String> = row.get(21);
                    let extras = RecordExtras {
                        exit_code: row.get(19),
                        command: row.get(20),
                        plan: plan.and_then(|p| serde_json::from_str(&p).ok()),
                    };
                    if let Err(x) = each(to_record(row), extras) {
                        stopped = Some(x);
                        return Ok(n);
                    }
                    n += 1;
                }
            }
            tx.commit().map_err(e)?;
            Ok(n)
        });
        match (n, stopped) {
            (_, Some(x)) => Err(x),
            (Ok(n), None) => Ok(n),
            (Err(e), None) => Err(StoreError::from(e).into()),
        }
    }
}
