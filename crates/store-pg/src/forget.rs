//! Forgetting in PostgreSQL: `sink/store/forget.rs`'s rule on the team
//! server's database (record, session, project, before a date; every given
//! field must match).
//!
//! One transaction locks the sessions and projects the selected records
//! belong to (so a concurrent ingest either committed before — and its
//! records are counted — or waits for this one), deletes the records,
//! removes the sessions and projects left without records, recounts the
//! others' roll-ups, and logs what was forgotten in `forget_log` (scope and
//! counts, never the text). The deleted rows leave every query and the
//! full-text index at once.
//!
//! What PostgreSQL can and cannot promise about the bytes: after the commit
//! memhook runs a plain `VACUUM` on the tables that held something of the
//! records ([`VACUUMED_TABLES`], and so on their TOAST tables and indexes),
//! never on the whole database and never `VACUUM FULL`: it takes no lock
//! that stops reads or writes, reads the table pages changed since the last
//! vacuum (the visibility map skips the rest) and, when there are index
//! entries to remove, each index of those tables once (a B-tree's or GIN's
//! bulk delete reads every page of it: that part grows with the index, not
//! with what was forgotten). It removes the dead rows and frees their space
//! for reuse; the old bytes stay in the data files until PostgreSQL writes
//! over that space, and in the database's write-ahead log, replicas, WAL
//! archives and backups until those expire. SQLite's "no page of the file
//! holds the text" guarantee has no PostgreSQL equivalent short of `VACUUM
//! FULL` (which rewrites each table under an exclusive lock; run it
//! yourself when you need it) and rotating the WAL and backups
//! (`docs/postgres.md`).

use postgres::types::ToSql;
use postgres::Client;

use super::{PgError, PgStore};
use memhook_core::timefmt::now_ms;
use memhook_store::model::{
    check_forget_key, ForgetError, Forgotten, LogEntry, Selector, WORK_EVENTS,
};

/// Most times the roll-up rows are locked and the records selected again
/// while concurrent ingest keeps adding records to new sessions of the
/// selected scope (each round locks what the last one found).
pub const MAX_LOCK_ROUNDS: usize = 4;

/// What forgetting promises about the text on PostgreSQL (the web view's
/// confirmation page, `memhook forget --database --yes`).
pub const PROMISE: &str = "The text leaves every query and the search index of the PostgreSQL \
     database at once, and VACUUM frees its space for reuse; its bytes stay in the database's \
     files until overwritten, and in its write-ahead log and backups until those expire (see \
     docs/postgres.md)";

/// The tables `VACUUM` runs on after a forget: each that held something
/// of the forgotten records (`record_meaning`: their meaning, removed with
/// them by `ON DELETE CASCADE`).
pub const VACUUMED_TABLES: &str = "records, sessions, projects, record_meaning";

/// The WHERE clause (over `records r JOIN projects p`) and its parameters.
fn condition(sel: &Selector) -> (String, Vec<Box<dyn ToSql + Sync>>) {
    let mut conds = vec!["true".to_string()];
    let mut args: Vec<Box<dyn ToSql + Sync>> = Vec::new();
    if let Some(k) = &sel.record {
        // A prefix of [A-Za-z0-9] (checked): no LIKE wildcard can be in it.
        args.push(Box::new(format!("{k}%")));
        conds.push(format!("r.key LIKE ${}", args.len()));
    }
    if let Some(s) = &sel.session {
        args.push(Box::new(s.clone()));
        conds.push(format!("r.session_id = ${}", args.len()));
    }
    if let Some((w, p)) = &sel.project {
        args.push(Box::new(w.clone()));
        args.push(Box::new(p.clone()));
        conds.push(format!(
            "p.workspace = ${} AND p.project = ${}",
            args.len() - 1,
            args.len()
        ));
    }
    if let Some(b) = sel.before_ms {
        args.push(Box::new(b as i64));
        conds.push(format!("r.occurred_ms < ${}", args.len()));
    }
    (conds.join(" AND "), args)
}

/// One try of the forget transaction: `Ok(Err(message))` when the key
/// prefix names several records (nothing changed).
fn forget_once(
    client: &mut Client,
    sel: &Selector,
    apply: bool,
) -> Result<Result<Forgotten, String>, postgres::Error> {
    let (cond, args) = condition(sel);
    let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a.as_ref()).collect();
    let mut tx = client.transaction()?;
    let select = format!(
        "SELECT r.id, r.session_row, r.project_id FROM records r
         JOIN projects p ON p.id = r.project_id WHERE {cond}"
    );
    // The selected records, and the sessions and projects they belong to.
    // Applying, those roll-up rows are locked (projects then sessions, in id
    // order, as ingest updates them) and the records selected again: an
    // ingest that held a lock has committed by then and its records count.
    // Records of a session or project not locked yet (committed meanwhile)
    // mean one more round.
    let mut locked: (Vec<i64>, Vec<i64>) = (Vec::new(), Vec::new());
    let mut rounds = 0;
    let (found, sessions, projects) = loop {
        let found = tx.query(&select, &params)?;
        let mut sessions: Vec<i64> = found
            .iter()
            .filter_map(|r| r.get::<_, Option<i64>>(1))
            .collect();
        let mut projects: Vec<i64> = found.iter().map(|r| r.get(2)).collect();
        sessions.sort_unstable();
        sessions.dedup();
        projects.sort_unstable();
        projects.dedup();
        let new_sessions: Vec<i64> = sessions
            .iter()
            .copied()
            .filter(|s| !locked.0.contains(s))
            .collect();
        let new_projects: Vec<i64> = projects
            .iter()
            .copied()
            .filter(|p| !locked.1.contains(p))
            .collect();
        let settled = new_sessions.is_empty() && new_projects.is_empty();
        if !apply || settled || rounds == MAX_LOCK_ROUNDS {
            break (found, sessions, projects);
        }
        tx.execute(
            "SELECT 1 FROM projects WHERE id = ANY($1) ORDER BY id FOR UPDATE",
            &[&new_projects],
        )?;
        tx.execute(
            "SELECT 1 FROM sessions WHERE id = ANY($1) ORDER BY id FOR UPDATE",
            &[&new_sessions],
        )?;
        locked.0.extend(new_sessions);
        locked.1.extend(new_projects);
        rounds += 1;
    };
    let ids: Vec<i64> = found.iter().map(|r| r.get(0)).collect();
    let records = ids.len() as u64;
    if let Some(k) = &sel.record {
        if records > 1 {
            return Ok(Err(format!(
                "--record {k}: {records} records start with it; give more of the key"
            )));
        }
    }
    let left = |tx: &mut postgres::Transaction<'_>, col: &str, id: i64| {
        tx.query_one(
            &format!("SELECT count(*) FROM records WHERE {col} = $1 AND id <> ALL($2)"),
            &[&id, &ids],
        )
        .map(|r| r.get::<_, i64>(0))
    };
    let mut out = Forgotten {
        records,
        ..Forgotten::default()
    };
    for &s in &sessions {
        if left(&mut tx, "session_row", s)? == 0 {
            out.sessions += 1;
        }
    }
    for &p in &projects {
        if left(&mut tx, "project_id", p)? == 0 {
            out.projects += 1;
        }
    }
    if !apply || records == 0 {
        return Ok(Ok(out));
    }
    remove_ids(&mut tx, &ids, &sessions, &projects)?;
    tx.execute(
        "INSERT INTO forget_log (at_ms, selector, records, sessions, projects)
         VALUES ($1, $2, $3, $4, $5)",
        &[
            &(now_ms() as i64),
            &sel.describe(),
            &(out.records as i64),
            &(out.sessions as i64),
            &(out.projects as i64),
        ],
    )?;
    tx.commit()?;
    Ok(Ok(out))
}

/// Delete the records `ids` of the sessions `sessions` and projects
/// `projects` (their roll-up rows locked by the caller's transaction),
/// remove the sessions and projects left without records and recount the
/// others' roll-ups. Forget and retention remove records through here.
pub(crate) fn remove_ids(
    tx: &mut postgres::Transaction<'_>,
    ids: &[i64],
    sessions: &[i64],
    projects: &[i64],
) -> Result<(), postgres::Error> {
    tx.execute("DELETE FROM records WHERE id = ANY($1)", &[&ids])?;
    let work: Vec<&str> = WORK_EVENTS.to_vec();
    tx.execute(
        "DELETE FROM sessions s WHERE s.id = ANY($1)
           AND NOT EXISTS (SELECT 1 FROM records r WHERE r.session_row = s.id)",
        &[&sessions],
    )?;
    tx.execute(
        "UPDATE sessions s SET
           events = (SELECT count(*) FROM records r WHERE r.session_row = s.id),
           work = (SELECT count(*) FROM records r WHERE r.session_row = s.id
                     AND r.event = ANY($2)),
           first_ms = (SELECT min(occurred_ms) FROM records r WHERE r.session_row = s.id),
           last_ms = (SELECT max(occurred_ms) FROM records r WHERE r.session_row = s.id)
         WHERE s.id = ANY($1)",
        &[&sessions, &work],
    )?;
    tx.execute(
        "DELETE FROM sessions s WHERE s.project_id = ANY($1)
           AND NOT EXISTS (SELECT 1 FROM records r WHERE r.project_id = s.project_id)",
        &[&projects],
    )?;
    tx.execute(
        "DELETE FROM projects p WHERE p.id = ANY($1)
           AND NOT EXISTS (SELECT 1 FROM records r WHERE r.project_id = p.id)",
        &[&projects],
    )?;
    tx.execute(
        "UPDATE projects p SET
           first_ms = (SELECT min(occurred_ms) FROM records r WHERE r.project_id = p.id),
           last_ms = (SELECT max(occurred_ms) FROM records r WHERE r.project_id = p.id),
           records = (SELECT count(*) FROM records r WHERE r.project_id = p.id)
         WHERE p.id = ANY($1)",
        &[&projects],
    )?;
    Ok(())
}

impl PgStore {
    /// Forget the records `sel` names (`apply` false: only count). After a
    /// forget that removed records, `VACUUM` runs on [`VACUUMED_TABLES`];
    /// `wal_emptied` then says it ran (see the module documentation for
    /// what that does and does not promise).
    pub fn forget(&self, sel: &Selector, apply: bool) -> Result<Forgotten, ForgetError> {
        check_forget_key(sel)?;
        let db = self.describe().to_string();
        let mut out = self
            .with_client(|c| forget_once(c, sel, apply).map_err(|e| PgError::of(&db, &e)))
            .map_err(|e| ForgetError::Store(e.into()))?
            .map_err(ForgetError::Key)?;
        if apply && out.records > 0 {
            // Outside any transaction (VACUUM cannot run inside one).
            let vacuumed = self.with_client(|c| {
                c.batch_execute(&format!("VACUUM {VACUUMED_TABLES}"))
                    .map_err(|e| PgError::of(&db, &e))
            });
            match vacuumed {
                Ok(()) => out.wal_emptied = true,
                Err(e) => eprintln!("memhook: {e}: VACUUM after forget failed; run it yourself"),
            }
        }
        Ok(out)
    }

    /// The forget log, newest first.
    pub fn forget_log(&self) -> Result<Vec<LogEntry>, PgError> {
        let db = self.describe().to_string();
        self.with_client(|c| {
            c.query(
                "SELECT at_ms, selector, records, sessions, projects FROM forget_log
                 ORDER BY at_ms DESC",
                &[],
            )
            .map(|rows| {
                rows.iter()
                    .map(|r| LogEntry {
                        at_ms: r.get::<_, i64>(0) as u64,
                        selector: r.get(1),
                        records: r.get::<_, i64>(2) as u64,
                        sessions: r.get::<_, i64>(3) as u64,
                        projects: r.get::<_, i64>(4) as u64,
                    })
                    .collect()
            })
            .map_err(|e| PgError::of(&db, &e))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_number_their_parameters() {
        let sel = Selector {
            record: Some("abcdef01".into()),
            session: Some("s1".into()),
            project: Some(("acme".into(), "api".into())),
            before_ms: Some(5),
        };
        let (cond, args) = condition(&sel);
        assert_eq!(
            cond,
            "true AND r.key LIKE $1 AND r.session_id = $2 AND p.workspace = $3 AND \
             p.project = $4 AND r.occurred_ms < $5"
        );
        assert_eq!(args.len(), 5);
        let (cond, args) = condition(&Selector::default());
        assert_eq!((cond.as_str(), args.len()), ("true", 0));
    }
}
