//! Records into PostgreSQL: exactly once on the key, whichever server
//! receives them and however often.
//!
//! One transaction per call (a group of requests):
//! 1. the projects and sessions the records name are created if missing
//!    (`INSERT … ON CONFLICT DO NOTHING`, in key order, then looked up);
//! 2. the records, in arrival order, in one `INSERT … SELECT FROM unnest(…)
//!    ON CONFLICT (key) DO NOTHING RETURNING key`: a key stored before —
//!    or being stored by another server right now, whose transaction this
//!    one waits for — is not returned, so it is a replay here;
//! 3. the roll-ups of the projects and sessions that got new records, each
//!    an atomic `UPDATE … SET events = events + n, first_ms = least(…)`,
//!    in id order. Counters are only ever added to by the transaction that
//!    inserted the records they count, so concurrent servers lose no update.
//!
//! Each record keeps the name of the token that delivered it
//! (`records.token_name`); a replay changes nothing, so a record keeps its
//! first token name.
//!
//! Each record's full-text vector is computed here from
//! [`search_document`], the same word splitting as the SQLite store's
//! (see `read.rs`).

use std::collections::{BTreeMap, HashMap, HashSet};

use postgres::Client;

use crate::record::Record;
use crate::sink::store::WORK_EVENTS;

/// The words of a record's title, body and files, lowercased and joined by
/// single spaces: what its full-text vector is made of. A word is a run of
/// letters and digits (as SQLite's `unicode61` tokenizer splits text), so
/// `src/main.rs` is `src main rs` and `fox-jumps` is `fox jumps`.
pub fn search_document(record: &Record) -> String {
    let mut out = String::new();
    let parts = [record.title.as_deref(), record.body.as_deref()]
        .into_iter()
        .flatten()
        .chain(record.files.iter().map(String::as_str));
    for part in parts {
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

/// Store `records` (each with the name of the token that delivered it,
/// `None` for none) in one transaction; for each, whether it was new.
pub fn insert_each(
    client: &mut Client,
    delivered: &[(&Record, Option<&str>)],
) -> Result<Vec<bool>, postgres::Error> {
    let records: Vec<&Record> = delivered.iter().map(|(r, _)| *r).collect();
    let records = records.as_slice();
    let mut tx = client.transaction()?;

    // 1a. Projects, in key order, then their ids.
    let mut projects: BTreeMap<(&str, &str), i64> = BTreeMap::new();
    for r in records {
        let ms = r.occurred_ms as i64;
        let e = projects
            .entry((r.scope.workspace.as_str(), r.scope.project.as_str()))
            .or_insert(ms);
        *e = (*e).min(ms);
    }
    let ws: Vec<&str> = projects.keys().map(|k| k.0).collect();
    let ps: Vec<&str> = projects.keys().map(|k| k.1).collect();
    let ms: Vec<i64> = projects.values().copied().collect();
    tx.execute(
        "INSERT INTO projects (workspace, project, first_ms, last_ms)
         SELECT w, p, m, m FROM unnest($1::text[], $2::text[], $3::bigint[])
                WITH ORDINALITY AS u(w, p, m, o) ORDER BY o
         ON CONFLICT (workspace, project) DO NOTHING",
        &[&ws, &ps, &ms],
    )?;
    let mut project_ids: HashMap<(String, String), i64> = HashMap::new();
    for row in tx.query(
        "SELECT p.id, p.workspace, p.project FROM projects p
         JOIN unnest($1::text[], $2::text[]) AS u(w, p) ON p.workspace = u.w AND p.project = u.p",
        &[&ws, &ps],
    )? {
        project_ids.insert((row.get(1), row.get(2)), row.get(0));
    }
    let project_id =
        |r: &Record| -> i64 { project_ids[&(r.scope.workspace.clone(), r.scope.project.clone())] };

    // 1b. Sessions, the same way.
    let mut sessions: BTreeMap<(i64, &str, &str), i64> = BTreeMap::new();
    for r in records {
        if let Some(sid) = session_of(r) {
            let ms = r.occurred_ms as i64;
            let e = sessions
                .entry((project_id(r), r.agent.as_str(), sid))
                .or_insert(ms);
            *e = (*e).min(ms);
        }
    }
    let mut session_ids: HashMap<(i64, String, String), i64> = HashMap::new();
    if !sessions.is_empty() {
        let pids: Vec<i64> = sessions.keys().map(|k| k.0).collect();
        let agents: Vec<&str> = sessions.keys().map(|k| k.1).collect();
        let sids: Vec<&str> = sessions.keys().map(|k| k.2).collect();
        let ms: Vec<i64> = sessions.values().copied().collect();
        tx.execute(
            "INSERT INTO sessions (project_id, agent, session_id, first_ms, last_ms)
             SELECT p, a, s, m, m FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[])
                    WITH ORDINALITY AS u(p, a, s, m, o) ORDER BY o
             ON CONFLICT (project_id, agent, session_id) DO NOTHING",
            &[&pids, &agents, &sids, &ms],
        )?;
        for row in tx.query(
            "SELECT s.id, s.project_id, s.agent, s.session_id FROM sessions s
             JOIN unnest($1::bigint[], $2::text[], $3::text[]) AS u(p, a, s)
               ON s.project_id = u.p AND s.agent = u.a AND s.session_id = u.s",
            &[&pids, &agents, &sids],
        )? {
            session_ids.insert((row.get(1), row.get(2), row.get(3)), row.get(0));
        }
    }
    let session_row = |r: &Record| -> Option<i64> {
        session_of(r).map(|sid| session_ids[&(project_id(r), r.agent.clone(), sid.to_string())])
    };

    // 2. The records: the first of each key in this call is a candidate.
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
    let pids: Vec<i64> = candidates.iter().map(|r| project_id(r)).collect();
    let srows: Vec<Option<i64>> = candidates.iter().map(|r| session_row(r)).collect();
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
    let new: HashSet<String> = tx
        .query(
            "INSERT INTO records (key, occurred_ms, project_id, session_row, agent, event,
                native_event, session_id, cwd, subagent, tool_family, tool_name, tool_call_id,
                outcome, disposition, title, body, files, search, token_name)
             SELECT k, ms, p, sr, a, e, ne, s, c, sub, tf, tn, tc, oc, d, ti, b, f::jsonb,
                    to_tsvector('simple', doc), tok
             FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[],
                    $6::text[], $7::text[], $8::text[], $9::text[], $10::bool[], $11::text[],
                    $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[],
                    $18::text[], $19::text[], $20::text[])
                  WITH ORDINALITY
                  AS u(k, ms, p, sr, a, e, ne, s, c, sub, tf, tn, tc, oc, d, ti, b, f, doc, tok, o)
             ORDER BY o
             ON CONFLICT (key) DO NOTHING
             RETURNING key",
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
            ],
        )?
        .into_iter()
        .map(|row| row.get(0))
        .collect();

    // 3. Roll-ups of what is new, in id order.
    let mut project_folds: BTreeMap<i64, Fold> = BTreeMap::new();
    let mut session_folds: BTreeMap<i64, Fold> = BTreeMap::new();
    for r in candidates.iter().filter(|r| new.contains(&r.key)) {
        let ms = r.occurred_ms as i64;
        let work = i64::from(WORK_EVENTS.contains(&r.event.as_str()));
        project_folds
            .entry(project_id(r))
            .or_default()
            .add(ms, work);
        if let Some(row) = session_row(r) {
            session_folds.entry(row).or_default().add(ms, work);
        }
    }
    for (id, f) in &project_folds {
        tx.execute(
            "UPDATE projects SET first_ms = least(first_ms, $2), last_ms = greatest(last_ms, $3)
             WHERE id = $1",
            &[id, &f.first_ms, &f.last_ms],
        )?;
    }
    for (id, f) in &session_folds {
        tx.execute(
            "UPDATE sessions SET first_ms = least(first_ms, $2), last_ms = greatest(last_ms, $3),
                events = events + $4, work = work + $5
             WHERE id = $1",
            &[id, &f.first_ms, &f.last_ms, &f.events, &f.work],
        )?;
    }
    tx.commit()?;

    // Fates in the order given: the first of a new key is new, the rest not.
    let mut first = HashSet::new();
    Ok(records
        .iter()
        .map(|r| new.contains(&r.key) && first.insert(r.key.as_str()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_document_splits_words_like_unicode61() {
        let mut r = crate::record::sample::record("k");
        r.title = Some("Fix the fox-jumps".into());
        r.body = Some("snake_case Ünïcode \"quoted\" v1.2".into());
        r.files = vec!["src/main.rs".into()];
        assert_eq!(
            search_document(&r),
            "fix the fox jumps snake case ünïcode quoted v1 2 src main rs"
        );
        r.title = None;
        r.body = None;
        r.files.clear();
        assert_eq!(search_document(&r), "");
    }
}
