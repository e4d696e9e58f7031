//! Records into PostgreSQL: exactly once on the key, whichever server
//! receives them and however often.
//!
//! One transaction per call (a group of requests), in four round trips when
//! the projects and sessions exist (each statement is prepared once per
//! connection, [`Conn::prepared`]):
//! 1. `BEGIN`;
//! 2. one lookup of the ids of every (project, session) the records name.
//!    Those missing are created (`INSERT … ON CONFLICT DO NOTHING`, in key
//!    order) and looked up again: two more round trips for a new project,
//!    two for new sessions;
//! 3. the records, in arrival order, in one `INSERT … SELECT FROM unnest(…)
//!    ON CONFLICT (key) DO NOTHING RETURNING key`: a key stored before —
//!    or being stored by another server right now, whose transaction this
//!    one waits for — is not returned, so it is a replay here;
//! 4. the roll-ups of the projects and sessions that got new records and
//!    `COMMIT`, sent together: one atomic `UPDATE … SET events = events +
//!    n, first_ms = least(…)` per row, projects then sessions, each in id
//!    order (the order forget locks them in, so concurrent writers queue
//!    rather than deadlock). Counters are only ever added to by the
//!    transaction that inserted the records they count, so concurrent
//!    servers lose no update. The statements carry only integers, written
//!    by this code.
//!
//! Each record keeps the name of the token that delivered it
//! (`records.token_name`); a replay changes nothing, so a record keeps its
//! first token name.
//!
//! Each record's full-text vector is computed here from
//! [`search_document`], the same word splitting as the SQLite store's
//! (see `read.rs`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use super::{Conn, PgError};
use memhook_core::record::Record;
use memhook_store::model::WORK_EVENTS;

/// The words of a record's title, body and files, lowercased and joined by
/// single spaces, then its identifier words
/// ([`memhook_store::words::identifier_words`]): what its full-text vector
/// is made of. A word is a run of letters and digits (as SQLite's
/// `unicode61` tokenizer splits text), so `src/main.rs` is `src main rs` and
/// `fox-jumps` is `fox jumps`; `parseDate` adds `parse date`.
pub fn search_document(record: &Record) -> String {
    search_text(
        record.title.as_deref(),
        record.body.as_deref(),
        &record.files,
    )
}

/// [`search_document`] of a record's parts (as stored).
pub fn search_text(title: Option<&str>, body: Option<&str>, files: &[String]) -> String {
    let mut out = String::new();
    let parts = || {
        [title, body]
            .into_iter()
            .flatten()
            .chain(files.iter().map(String::as_str))
    };
    for part in parts() {
        for word in part.split(|c: char| !c.is_alphanumeric()) {
            if word.is_empty() {
                continue;
            }
            if !out.is_empty() {
                out.push(' ');
            }
            out.extend(word.chars().flat_map(char::to_lowercase));
        }
    }
    let words = memhook_store::words::identifier_words(parts());
    if !words.is_empty() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&words);
    }
    out
}

/// What new records add to one project or session row.
#[derive(Default)]
struct Fold {
    first_ms: i64,
    last_ms: i64,
    events: i64,
    work: i64,
}

impl Fold {
    fn add(&mut self, ms: i64, work: i64) {
        if self.events == 0 {
            self.first_ms = ms;
            self.last_ms = ms;
        }
        self.first_ms = self.first_ms.min(ms);
        self.last_ms = self.last_ms.max(ms);
        self.events += 1;
        self.work += work;
    }
}

fn session_of(r: &Record) -> Option<&str> {
    r.session_id.as_deref().filter(|s| !s.is_empty())
}

/// Where a record belongs: workspace, project, agent, session (if any).
type Scope<'a> = (&'a str, &'a str, &'a str, Option<&'a str>);

fn scope_of(r: &Record) -> Scope<'_> {
    (
        r.scope.workspace.as_str(),
        r.scope.project.as_str(),
        r.agent.as_str(),
        session_of(r),
    )
}

/// The ids of each scope's project and session row, `None` where missing.
const LOOKUP: &str = "SELECT u.o, p.id, s.id
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
          WITH ORDINALITY AS u(uw, up, ua, us, o)
     LEFT JOIN projects p ON p.workspace = u.uw AND p.project = u.up
     LEFT JOIN sessions s ON s.project_id = p.id AND s.agent = u.ua AND s.session_id = u.us";

const INSERT_PROJECTS: &str = "INSERT INTO projects (workspace, project, first_ms, last_ms)
     SELECT w, p, m, m FROM unnest($1::text[], $2::text[], $3::bigint[])
            WITH ORDINALITY AS u(w, p, m, o) ORDER BY o
     ON CONFLICT (workspace, project) DO NOTHING";

const INSERT_SESSIONS: &str =
    "INSERT INTO sessions (project_id, agent, session_id, first_ms, last_ms)
     SELECT p, a, s, m, m FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[])
            WITH ORDINALITY AS u(p, a, s, m, o) ORDER BY o
     ON CONFLICT (project_id, agent, session_id) DO NOTHING";

const INSERT_RECORDS: &str = "INSERT INTO records (key, occurred_ms, project_id, session_row,
        agent, event, native_event, session_id, cwd, subagent, tool_family, tool_name,
        tool_call_id, outcome, disposition, title, body, files, search, token_name,
        exit_code, command, plan)
     SELECT k, ms, p, sr, a, e, ne, s, c, sub, tf, tn, tc, oc, d, ti, b, f::jsonb,
            to_tsvector('memhook_english', doc), tok, ex, cmd, pl::jsonb
     FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[],
            $6::text[], $7::text[], $8::text[], $9::text[], $10::bool[], $11::text[],
            $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[],
            $18::text[], $19::text[], $20::text[], $21::bigint[], $22::text[], $23::text[])
          WITH ORDINALITY
          AS u(k, ms, p, sr, a, e, ne, s, c, sub, tf, tn, tc, oc, d, ti, b, f, doc, tok, ex,
               cmd, pl, o)
     ORDER BY o
     ON CONFLICT (key) DO NOTHING
     RETURNING key, id";

/// A scope's project id and session row id, `None` where missing.
type Ids = (Option<i64>, Option<i64>);

/// For each of `scopes` (sorted), its [`Ids`].
fn lookup(conn: &mut Conn, scopes: &[Scope<'_>]) -> Result<Vec<Ids>, postgres::Error> {
    let ws: Vec<&str> = scopes.iter().map(|s| s.0).collect();
    let ps: Vec<&str> = scopes.iter().map(|s| s.1).collect();
    let agents: Vec<&str> = scopes.iter().map(|s| s.2).collect();
    let sids: Vec<Option<&str>> = scopes.iter().map(|s| s.3).collect();
    let stmt = conn.prepared(LOOKUP)?;
    let mut out = vec![(None, None); scopes.len()];
    for row in conn.client.query(&stmt, &[&ws, &ps, &agents, &sids])? {
        let o: i64 = row.get(0);
        out[o as usize - 1] = (row.get(1), row.get(2));
    }
    Ok(out)
}

/// The roll-up updates of `projects` then `sessions` (each in id order)
/// and `COMMIT`, as one simple-query string: integers only.
fn rollups_and_commit(projects: &BTreeMap<i64, Fold>, sessions: &BTreeMap<i64, Fold>) -> String {
    let mut sql = String::new();
    for (id, f) in projects {
        let _ = writeln!(
            sql,
            "UPDATE projects SET first_ms = least(first_ms, {}), \
             last_ms = greatest(last_ms, {}), records = records + {} WHERE id = {id};",
            f.first_ms, f.last_ms, f.events
        );
    }
    for (id, f) in sessions {
        let _ = writeln!(
            sql,
            "UPDATE sessions SET first_ms = least(first_ms, {}), \
             last_ms = greatest(last_ms, {}), events = events + {}, work = work + {} \
             WHERE id = {id};",
            f.first_ms, f.last_ms, f.events, f.work
        );
    }
    sql.push_str("COMMIT");
    sql
}

/// Store `records` (each with the name of the token that delivered it,
/// `None` for none) in one transaction; for each, whether it was new. `db`
/// names the database in errors.
pub fn insert_each(
    conn: &mut Conn,
    db: &str,
    delivered: &[(&Record, Option<&str>)],
) -> Result<Vec<bool>, PgError> {
    let e = |x: postgres::Error| PgError::of(db, &x);
    conn.client.batch_execute("BEGIN").map_err(e)?;

    // 2. The (project, session) rows: looked up, created where missing.
    let mut first_ms: BTreeMap<Scope<'_>, i64> = BTreeMap::new();
    for (r, _) in delivered {
        let ms = r.occurred_ms as i64;
        let m = first_ms.entry(scope_of(r)).or_insert(ms);
        *m = (*m).min(ms);
    }
    let scopes: Vec<Scope<'_>> = first_ms.keys().copied().collect();
    let mut ids = lookup(conn, &scopes).map_err(e)?;
    if ids.iter().any(|(p, _)| p.is_none()) {
        let mut missing: BTreeMap<(&str, &str), i64> = BTreeMap::new();
        for (s, _) in scopes.iter().zip(&ids).filter(|(_, (p, _))| p.is_none()) {
            let m = missing.entry((s.0, s.1)).or_insert(first_ms[s]);
            *m = (*m).min(first_ms[s]);
        }
        let ws: Vec<&str> = missing.keys().map(|k| k.0).collect();
        let ps: Vec<&str> = missing.keys().map(|k| k.1).collect();
        let ms: Vec<i64> = missing.values().copied().collect();
        let stmt = conn.prepared(INSERT_PROJECTS).map_err(e)?;
        conn.client.execute(&stmt, &[&ws, &ps, &ms]).map_err(e)?;
        ids = lookup(conn, &scopes).map_err(e)?;
    }
    let session_missing = |ids: &[Ids]| {
        scopes
            .iter()
            .zip(ids)
            .any(|(s, (_, row))| s.3.is_some() && row.is_none())
    };
    if session_missing(&ids) {
        let mut missing: BTreeMap<(i64, &str, &str), i64> = BTreeMap::new();
        for (s, (p, row)) in scopes.iter().zip(&ids) {
            if let (Some(p), Some(sid), None) = (p, s.3, row) {
                missing.insert((*p, s.2, sid), first_ms[s]);
            }
        }
        let pids: Vec<i64> = missing.keys().map(|k| k.0).collect();
        let agents: Vec<&str> = missing.keys().map(|k| k.1).collect();
        let sids: Vec<&str> = missing.keys().map(|k| k.2).collect();
        let ms: Vec<i64> = missing.values().copied().collect();
        let stmt = conn.prepared(INSERT_SESSIONS).map_err(e)?;
        conn.client
            .execute(&stmt, &[&pids, &agents, &sids, &ms])
            .map_err(e)?;
        ids = lookup(conn, &scopes).map_err(e)?;
    }
    if ids.iter().any(|(p, _)| p.is_none()) || session_missing(&ids) {
        // Only a forget that removed a row created above, between the two
        // statements, gets here: nothing is committed, the sender retries.
        return Err(PgError::Unavailable {
            db: db.to_string(),
            reason: "a project or session was forgotten while records for it were being \
                     stored; retry"
                .into(),
        });
    }
    let index: HashMap<Scope<'_>, (i64, Option<i64>)> = scopes
        .iter()
        .zip(&ids)
        .map(|(s, (p, row))| (*s, (p.expect("checked above"), *row)))
        .collect();
    let rows = |r: &Record| index[&scope_of(r)];

    // 3. The records: the first of each key in this call is a candidate.
    let mut seen = HashSet::new();
    let (candidates, token_names): (Vec<&Record>, Vec<Option<&str>>) = delivered
        .iter()
        .copied()
        .filter(|(r, _)| seen.insert(r.key.as_str()))
        .unzip();
    let col = |f: &dyn Fn(&Record) -> Option<String>| -> Vec<Option<String>> {
        candidates.iter().map(|r| f(r)).collect()
    };
    let keys: Vec<&str> = candidates.iter().map(|r| r.key.as_str()).collect();
    let times: Vec<i64> = candidates.iter().map(|r| r.occurred_ms as i64).collect();
    let pids: Vec<i64> = candidates.iter().map(|r| rows(r).0).collect();
    let srows: Vec<Option<i64>> = candidates.iter().map(|r| rows(r).1).collect();
    let agents: Vec<&str> = candidates.iter().map(|r| r.agent.as_str()).collect();
    let events: Vec<&str> = candidates.iter().map(|r| r.event.as_str()).collect();
    let natives: Vec<&str> = candidates.iter().map(|r| r.native_event.as_str()).collect();
    let sids = col(&|r| r.session_id.clone());
    let cwds = col(&|r| r.cwd.clone());
    let subagents: Vec<bool> = candidates.iter().map(|r| r.subagent).collect();
    let families = col(&|r| r.tool.as_ref().map(|t| t.family.clone()));
    let names = col(&|r| r.tool.as_ref().and_then(|t| t.name.clone()));
    let calls = col(&|r| r.tool.as_ref().and_then(|t| t.call_id.clone()));
    let outcomes = col(&|r| r.tool.as_ref().and_then(|t| t.outcome.clone()));
    let dispositions: Vec<&str> = candidates.iter().map(|r| r.disposition.as_str()).collect();
    let titles = col(&|r| r.title.clone());
    let bodies = col(&|r| r.body.clone());
    let files = col(&|r| {
        (!r.files.is_empty())
            .then(|| serde_json::to_string(&r.files).ok())
            .flatten()
    });
    let docs: Vec<String> = candidates.iter().map(|r| search_document(r)).collect();
    let exits: Vec<Option<i64>> = candidates
        .iter()
        .map(|r| r.tool.as_ref().and_then(|t| t.exit_code))
        .collect();
    let commands = col(&|r| r.command.clone());
    let plans = col(&|r| r.plan.as_ref().and_then(|p| serde_json::to_string(p).ok()));
    let stmt = conn.prepared(INSERT_RECORDS).map_err(e)?;
    let new: HashMap<String, i64> = conn
        .client
        .query(
            &stmt,
            &[
                &keys,
                &times,
                &pids,
                &srows,
                &agents,
                &events,
                &natives,
                &sids,
                &cwds,
                &subagents,
                &families,
                &names,
                &calls,
                &outcomes,
                &dispositions,
                &titles,
                &bodies,
                &files,
                &docs,
                &token_names,
                &exits,
                &commands,
                &plans,
            ],
        )
        .map_err(e)?
        .into_iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();

    // Their meanings (search by meaning), and a bounded batch of those of
    // records stored before meanings were kept.
    let meanings: Vec<(i64, i64, &Record)> = candidates
        .iter()
        .filter_map(|r| new.get(&r.key).map(|id| (*id, rows(r).0, *r)))
        .collect();
    super::meaning::keep(conn, &meanings).map_err(e)?;
    super::meaning::fill(conn).map_err(e)?;

    // 4. Roll-ups of what is new, in id order, and the commit.
    let mut project_folds: BTreeMap<i64, Fold> = BTreeMap::new();
    let mut session_folds: BTreeMap<i64, Fold> = BTreeMap::new();
    for r in candidates.iter().filter(|r| new.contains_key(&r.key)) {
        let ms = r.occurred_ms as i64;
        let work = i64::from(WORK_EVENTS.contains(&r.event.as_str()));
        let (project, session) = rows(r);
        project_folds.entry(project).or_default().add(ms, work);
        if let Some(row) = session {
            session_folds.entry(row).or_default().add(ms, work);
        }
    }
    conn.client
        .batch_execute(&rollups_and_commit(&project_folds, &session_folds))
        .map_err(e)?;

    // Fates in the order given: the first of a new key is new, the rest not.
    let mut first = HashSet::new();
    Ok(delivered
        .iter()
        .map(|(r, _)| new.contains_key(&r.key) && first.insert(r.key.as_str()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_document_splits_words_like_unicode61() {
        let mut r = memhook_core::record::sample::record("k");
        r.title = Some("Fix the fox-jumps".into());
        r.body = Some("snake_case Ünïcode \"quoted\" v1.2".into());
        r.files = vec!["src/main.rs".into()];
        assert_eq!(
            search_document(&r),
            "fix the fox jumps snake case ünïcode quoted v1 2 src main rs \
             foxjumps snakecase"
        );
        r.body = Some("parseDate(x)".into());
        r.files = vec!["src/RateLimiter.rs".into()];
        assert_eq!(
            search_document(&r),
            "fix the fox jumps parsedate x src ratelimiter rs foxjumps parse date rate limiter"
        );
        r.title = None;
        r.body = None;
        r.files.clear();
        assert_eq!(search_document(&r), "");
    }

    #[test]
    fn rollups_go_projects_then_sessions_in_id_order_then_commit() {
        let fold = |ms: i64, n: i64| {
            let mut f = Fold::default();
            for _ in 0..n {
                f.add(ms, 1);
            }
            f
        };
        let projects: BTreeMap<i64, Fold> = [(9, fold(5, 1)), (2, fold(7, 2))].into();
        let sessions: BTreeMap<i64, Fold> = [(4, fold(3, 3)), (1, fold(8, 1))].into();
        let sql = rollups_and_commit(&projects, &sessions);
        let ids: Vec<&str> = sql
            .lines()
            .map(|l| l.rsplit("WHERE id = ").next().unwrap_or(l))
            .collect();
        assert_eq!(ids, ["2;", "9;", "1;", "4;", "COMMIT"]);
        assert!(sql.starts_with("UPDATE projects SET first_ms = least(first_ms, 7), last_ms = greatest(last_ms, 7), records = records + 2 WHERE id = 2;"));
        assert!(sql.contains("UPDATE sessions SET first_ms = least(first_ms, 3), last_ms = greatest(last_ms, 3), events = events + 3, work = work + 3 WHERE id = 4;"));
        assert_eq!(
            rollups_and_commit(&BTreeMap::new(), &BTreeMap::new()),
            "COMMIT"
        );
    }
}
