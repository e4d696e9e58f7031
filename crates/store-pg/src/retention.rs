//! Retention (docs/retention.md) on PostgreSQL: the SQLite store's rule
//! (`memhook_store::sqlite::retention`) on the team server's database, with
//! the same scopes, cursors, slices and books (the `retention` table of
//! PostgreSQL migration 6, keyed by [`Class::cursor_key`]). `memhook serve
//! --database` applies it in the background (`memhook_server::retention`).
//!
//! One slice is one transaction: it reads the cursors, picks the records
//! past their age, locks the roll-up rows of their projects then sessions
//! (in id order, as ingest and forget lock them, so a concurrent ingest
//! either committed before and is recounted, or waits), removes them as
//! forget does (`forget::remove_ids`) and moves the cursors. Like
//! forget, the deleted rows leave every query and the full-text index at
//! once; their bytes leave the files when PostgreSQL reuses the space
//! (autovacuum; `docs/postgres.md`).

use std::collections::HashSet;

use postgres::Client;

use super::{PgError, PgStore};
use memhook_store::retention::{
    Class, ProjectRetention, Removed, Retention, DAY_MS, RETENTION_SCAN, RETENTION_SLICE,
};

/// One slice (see the module).
fn slice(
    client: &mut Client,
    policy: &Retention,
    now_ms: u64,
) -> Result<[u64; 3], postgres::Error> {
    let mut tx = client.transaction()?;
    let mut own: Vec<(i64, &ProjectRetention)> = Vec::new();
    for p in &policy.projects {
        let row = tx.query_opt(
            "SELECT id FROM projects WHERE workspace = $1 AND project = $2",
            &[&p.workspace, &p.project],
        )?;
        if let Some(row) = row {
            own.push((row.get(0), p));
        }
    }
    let own_ids: HashSet<i64> = own.iter().map(|(id, _)| *id).collect();
    let scopes = std::iter::once((None, policy.days))
        .chain(own.iter().map(|(id, p)| (Some((*id, *p)), p.days)));
    let mut removed = [0u64; 3];
    let mut budget = RETENTION_SLICE;
    let mut going: Vec<i64> = Vec::new();
    let scan = RETENTION_SCAN as i64;
    for (scope, days) in scopes {
        for class in Class::ALL {
            let days = days[class.index()];
            if days == 0 || budget == 0 {
                continue;
            }
            let key =
                class.cursor_key(scope.map(|(_, p)| (p.workspace.as_str(), p.project.as_str())));
            let cutoff = now_ms as i64 - i64::from(days) * DAY_MS;
            let (cursor_ms, cursor_id): (i64, i64) = tx
                .query_opt(
                    "SELECT cursor_ms, cursor_id FROM retention WHERE class = $1",
                    &[&key],
                )?
                .map_or((i64::MIN, 0), |r| (r.get(0), r.get(1)));
            let rows = match scope {
                None => tx.query(
                    "SELECT id, occurred_ms, event, project_id FROM records
                     WHERE (occurred_ms, id) > ($1, $2) AND occurred_ms < $3
                     ORDER BY occurred_ms, id LIMIT $4",
                    &[&cursor_ms, &cursor_id, &cutoff, &scan],
                )?,
                Some((project, _)) => tx.query(
                    "SELECT id, occurred_ms, event, project_id FROM records
                     WHERE project_id = $5 AND (occurred_ms, id) > ($1, $2)
                       AND occurred_ms < $3
                     ORDER BY occurred_ms, id LIMIT $4",
                    &[&cursor_ms, &cursor_id, &cutoff, &scan, &project],
                )?,
            };
            let mut last = (cursor_ms, cursor_id);
            let mut n = 0u64;
            for r in rows {
                let (id, ms, event, project_id): (i64, i64, String, i64) =
                    (r.get(0), r.get(1), r.get(2), r.get(3));
                let ours = scope.is_some() || !own_ids.contains(&project_id);
                if ours && Class::of(&event) == class {
                    if budget == 0 {
                        break;
                    }
                    going.push(id);
                    budget -= 1;
                    n += 1;
                }
                last = (ms, id);
            }
            removed[class.index()] += n;
            let n = n as i64;
            let now = now_ms as i64;
            tx.execute(
                "INSERT INTO retention (class, cursor_ms, cursor_id, removed, last_ms)
                 VALUES ($1, $2, $3, $4::bigint, CASE WHEN $4::bigint > 0 THEN $5::bigint END)
                 ON CONFLICT (class) DO UPDATE SET cursor_ms = $2, cursor_id = $3,
                    removed = retention.removed + $4::bigint,
                    last_ms = CASE WHEN $4::bigint > 0 THEN $5::bigint
                                   ELSE retention.last_ms END",
                &[&key, &last.0, &last.1, &n, &now],
            )?;
        }
    }
    if !going.is_empty() {
        let scope = tx.query(
            "SELECT DISTINCT project_id, session_row FROM records WHERE id = ANY($1)",
            &[&going],
        )?;
        let mut projects: Vec<i64> = scope.iter().map(|r| r.get(0)).collect();
        let mut sessions: Vec<i64> = scope
            .iter()
            .filter_map(|r| r.get::<_, Option<i64>>(1))
            .collect();
        projects.sort_unstable();
        projects.dedup();
        sessions.sort_unstable();
        sessions.dedup();
        tx.execute(
            "SELECT 1 FROM projects WHERE id = ANY($1) ORDER BY id FOR UPDATE",
            &[&projects],
        )?;
        tx.execute(
            "SELECT 1 FROM sessions WHERE id = ANY($1) ORDER BY id FOR UPDATE",
            &[&sessions],
        )?;
        crate::forget::remove_ids(&mut tx, &going, &sessions, &projects)?;
    }
    tx.commit()?;
    Ok(removed)
}

impl PgStore {
    /// One slice of retention under `policy` at `now_ms` (see the module):
    /// how many records it removed per class, in [`Class::ALL`] order.
    pub fn retention_slice(&self, policy: &Retention, now_ms: u64) -> Result<[u64; 3], PgError> {
        let db = self.describe().to_string();
        self.with_client(|c| slice(c, policy, now_ms).map_err(|e| PgError::of(&db, &e)))
    }

    /// What retention removed so far, per class, and when it last did.
    pub fn retention_removed(&self) -> Result<Removed, PgError> {
        let db = self.describe().to_string();
        self.with_client(|c| {
            let rows = c
                .query("SELECT class, removed, last_ms FROM retention", &[])
                .map_err(|e| PgError::of(&db, &e))?;
            let mut out = Removed::default();
            for r in rows {
                out.add_row(r.get::<_, &str>(0), r.get(1), r.get(2));
            }
            Ok(out)
        })
    }
}
