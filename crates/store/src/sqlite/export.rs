//! Every stored record, oldest first, for `memhook export`: streamed row
//! by row (a store of any size is written without holding it in memory).

use rusqlite::params;

use crate::model::*;

use super::{row_to_record, Store, StoreError, StoredRecord, RECORD_COLUMNS};

impl Store {
    /// Call `each` with every record `filter` selects, by time then key (a
    /// stable order: two stores holding the same records visit them alike),
    /// inside one read snapshot. Stops at the first error `each` returns.
    pub fn export_each<E: From<StoreError>>(
        &self,
        filter: &ExportFilter,
        mut each: impl FnMut(StoredRecord, RecordExtras) -> Result<(), E>,
    ) -> Result<u64, E> {
        let (scoped, w, p, since) = filter.params();
        self.read(|s| {
            let mut st = s
                .conn
                .prepare(&format!(
                    "SELECT {RECORD_COLUMNS}, {EXTRA_COLUMNS} FROM records r JOIN projects p ON p.id = r.project_id
                     WHERE (?1 = 0 OR (p.workspace = ?2 AND p.project = ?3))
                       AND r.occurred_ms >= ?4
                     ORDER BY r.occurred_ms, r.key"
                ))
                .map_err(|e| s.err(e))?;
            let mut rows = st
                .query(params![scoped, w, p, since])
                .map_err(|e| s.err(e))?;
            let mut n = 0;
            while let Some(row) = rows.next().map_err(|e| s.err(e))? {
                let record = row_to_record(row).map_err(|e| s.err(e))?;
                let plan: Option<String> = row.get(21).map_err(|e| s.err(e))?;
                let extras = RecordExtras {
                    exit_code: row.get(19).map_err(|e| s.err(e))?,
                    command: row.get(20).map_err(|e| s.err(e))?,
                    plan: plan.and_then(|p| serde_json::from_str(&p).ok()),
                };
                each(record, extras)?;
                n += 1;
            }
            Ok(n)
        })
    }
}
