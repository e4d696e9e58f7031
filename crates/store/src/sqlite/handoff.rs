//! The queries behind the handoff part of the briefing: how one session
//! began and ended, and which files it changed or only read.

use rusqlite::params;

use crate::model::*;

use super::columns::{name, BODY, CWD, KEY};
use super::{Store, StoreError};

/// The events a session's notes are made of: stops and tool results.
const NOTE_EVENTS: [&str; 3] = ["stop", "post-tool-use", "post-tool-use-failure"];

impl Store {
    /// The session's first prompt and its last `last` prompts (oldest first;
    /// the first one is not repeated), and how many prompts it had. A
    /// subagent's prompts are the agent's words, not the user's: not counted.
    pub fn session_prompts(
        &self,
        row: i64,
        last: usize,
    ) -> Result<(Option<Prompt>, Vec<Prompt>, u64), StoreError> {
        let e = |x| self.err(x);
        let prompt = self.name_in("event", &["user-prompt"])?;
        let q = |order: &str, limit: usize| -> Result<Vec<Prompt>, StoreError> {
            let mut st = self
                .conn
                .prepare_cached(&format!(
                    "SELECT coalesce(substr({BODY}, 1, {PROMPT_TEXT_CHARS}), r.title), r.occurred_ms, {KEY}
                     FROM record_rows r
                     WHERE r.session_row = ?1 AND {prompt} AND r.subagent = 0
                     ORDER BY r.occurred_ms {order}, r.id {order} LIMIT {}",
                    limit.min(super::MAX_QUERY_LIMIT)
                ))
                .map_err(e)?;
            let rows = st.query_map([row], |r| {
                Ok(Prompt {
                    text: r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                    ms: r.get::<_, i64>(1)? as u64,
                    key: r.get(2)?,
                })
            });
            super::collect(rows).map_err(e)
        };
        let first = q("ASC", 1)?.pop();
        let mut tail = q("DESC", last)?;
        tail.reverse();
        if let (Some(f), Some(t)) = (&first, tail.first()) {
            if f.key == t.key {
                tail.remove(0);
            }
        }
        let count: u64 = self
            .conn
            .prepare_cached(&format!(
                "SELECT count(*) FROM record_rows r
                 WHERE r.session_row = ?1 AND {prompt} AND r.subagent = 0"
            ))
            .and_then(|mut st| st.query_row([row], |r| r.get(0)))
            .map_err(e)?;
        Ok((first, tail, count))
    }

    /// The session's records from `from_ms` on, oldest first (at most
    /// [`MAX_TAIL_RECORDS`], the newest kept), as [`TailEvent`]s.
    pub fn session_tail(&self, row: i64, from_ms: u64) -> Result<Vec<TailEvent>, StoreError> {
        // The names as ids, named here: up to 2,000 rows of four names.
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT r.event, r.tool_name, r.tool_family, r.tool_call_id, r.outcome
                 FROM record_rows r
                 WHERE r.session_row = ?1 AND r.occurred_ms >= ?2
                 ORDER BY r.occurred_ms DESC, r.id DESC LIMIT {MAX_TAIL_RECORDS}"
            ))
            .map_err(|x| self.err(x))?;
        type Ids = (i64, Option<i64>, Option<i64>, Option<String>, Option<i64>);
        let rows = st.query_map(params![row, from_ms as i64], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        });
        let ids: Vec<Ids> = super::collect(rows).map_err(|x| self.err(x))?;
        let mut out = Vec::with_capacity(ids.len());
        for (event, tool_name, tool_family, tool_call_id, outcome) in ids.into_iter().rev() {
            out.push(TailEvent {
                event: self.name_of(Some(event))?.unwrap_or_default(),
                tool_name: self.name_of(tool_name)?,
                tool_family: self.name_of(tool_family)?,
                tool_call_id,
                outcome: self.name_of(outcome)?,
            });
        }
        Ok(out)
    }

    /// Where the session worked: the first working directory it reported.
    pub fn session_root(&self, row: i64) -> Result<Option<String>, StoreError> {
        use rusqlite::OptionalExtension;
        self.conn
            .prepare_cached(&format!(
                "SELECT c FROM (SELECT {CWD} AS c, r.occurred_ms AS ms, r.id AS id
                                FROM record_rows r LEFT JOIN sessions s ON s.id = r.session_row
                                WHERE r.session_row = ?1)
                 WHERE c IS NOT NULL ORDER BY ms, id LIMIT 1"
            ))
            .and_then(|mut st| st.query_row([row], |r| r.get(0)))
            .optional()
            .map_err(|x| self.err(x))
    }

    /// The files the session touched: changed ones first, then read-only
    /// ones, each group most recent first.
    pub fn session_files(&self, row: i64) -> Result<Vec<TouchedFile>, StoreError> {
        let reads = READ_ONLY_FILE_TOOLS
            .iter()
            .map(|t| format!("'{t}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let file = self.name_in("tool_family", &["file"])?;
        let tool_name = name("tool_name");
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT j.value, max(r.occurred_ms),
                        max({file}
                            AND lower(coalesce({tool_name}, '')) NOT IN ({reads})) AS changed
                 FROM record_rows r, json_each(r.files) j
                 WHERE r.session_row = ?1 AND r.files IS NOT NULL AND j.type = 'text'
                 GROUP BY 1 ORDER BY changed DESC, 2 DESC, 1 LIMIT {MAX_SESSION_FILES}"
            ))
            .map_err(|x| self.err(x))?;
        let rows = st.query_map([row], |r| {
            Ok(TouchedFile {
                path: r.get(0)?,
                last_ms: r.get::<_, i64>(1)? as u64,
                changed: r.get::<_, i64>(2)? != 0,
            })
        });
        super::collect(rows).map_err(|x| self.err(x))
    }

    /// The session's stops and tool results, oldest first (at most
    /// [`MAX_NOTES`], the newest kept): what the handoff's conclusion, open
    /// plan items and unresolved failures are computed from.
    pub fn session_notes(&self, row: i64) -> Result<Vec<Note>, StoreError> {
        let failed = self.failed_row()?;
        // The names as ids, named below (`session_tail`).
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT {KEY}, r.occurred_ms, r.event, r.tool_name, r.tool_family, {failed},
                        {success}, r.exit_code, r.command, r.files,
                        CASE WHEN {stop} THEN {BODY}
                             WHEN {failed} THEN substr({BODY}, 1, {NOTE_LINE_CHARS}) END,
                        r.plan
                 FROM record_rows r
                 WHERE r.session_row = ?1 AND {notes}
                 ORDER BY r.occurred_ms DESC, r.id DESC LIMIT {MAX_NOTES}",
                success = self.name_in("outcome", &["success"])?,
                stop = self.name_in("event", &["stop"])?,
                notes = self.name_in("event", &NOTE_EVENTS)?,
            ))
            .map_err(|x| self.err(x))?;
        type Ids = (i64, Option<i64>, Option<i64>);
        let rows = st.query_map([row], |r| {
            let files: Option<String> = r.get(9)?;
            let plan: Option<String> = r.get(11)?;
            let ids: Ids = (r.get(2)?, r.get(3)?, r.get(4)?);
            Ok((
                ids,
                Note {
                    key: r.get(0)?,
                    ms: r.get::<_, i64>(1)? as u64,
                    event: String::new(),
                    tool: None,
                    failed: r.get::<_, i64>(5)? != 0,
                    succeeded: r.get::<_, i64>(6)? != 0,
                    exit_code: r.get(7)?,
                    command: r.get(8)?,
                    files: files
                        .and_then(|f| serde_json::from_str(&f).ok())
                        .unwrap_or_default(),
                    text: r.get(10)?,
                    plan: plan.and_then(|p| serde_json::from_str(&p).ok()),
                },
            ))
        });
        let rows: Vec<(Ids, Note)> = super::collect(rows).map_err(|x| self.err(x))?;
        let mut out = Vec::with_capacity(rows.len());
        for ((event, tool_name, tool_family), mut note) in rows.into_iter().rev() {
            note.event = self.name_of(Some(event))?.unwrap_or_default();
            note.tool = match self.name_of(tool_name)? {
                Some(n) => Some(n),
                None => self.name_of(tool_family)?,
            };
            out.push(note);
        }
        Ok(out)
    }

    /// [`Reads::session_conclusion`]
    /// without reading every note: the ids and events of the newest
    /// [`MAX_NOTES`] notes, then the stops' texts newest first until one is
    /// not blank. A briefing reads it for each earlier session, and
    /// reading every note of those inflated every stop's and failure's
    /// body for one quote (docs/benchmarks.md, sixth pass).
    pub fn session_conclusion(&self, row: i64) -> Result<Option<(String, String)>, StoreError> {
        let e = |x| self.err(x);
        let stop = self.name_in("event", &["stop"])?;
        let notes = self.name_in("event", &NOTE_EVENTS)?;
        let stops: Vec<i64> = {
            let mut st = self
                .conn
                .prepare_cached(&format!(
                    "SELECT id FROM (SELECT r.id, r.event, r.occurred_ms FROM record_rows r
                                     WHERE r.session_row = ?1 AND {notes}
                                     ORDER BY r.occurred_ms DESC, r.id DESC LIMIT {MAX_NOTES}) r
                     WHERE {stop} ORDER BY r.occurred_ms DESC, r.id DESC"
                ))
                .map_err(e)?;
            let rows = st.query_map([row], |r| r.get(0));
            super::collect(rows).map_err(e)?
        };
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT {KEY}, {BODY} FROM record_rows r WHERE r.id = ?1"
            ))
            .map_err(e)?;
        for id in stops {
            let (key, text): (String, Option<String>) = st
                .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(e)?;
            if let Some(t) = text.filter(|t| !t.trim().is_empty()) {
                return Ok(Some((t, key)));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{conclusion, Reads, MAX_NOTES};
    use crate::sqlite::samples::rec;
    use crate::sqlite::Store;

    /// The embedded store's conclusion is the one its notes give, in every
    /// case that decides it: no stop, a blank last stop, a stop deflated,
    /// and a stop older than the newest notes.
    #[test]
    fn the_conclusion_is_the_one_the_notes_give() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let mut n = 0u64;
        let mut add = |s: &mut Store, session: &str, event: &str, body: Option<String>| {
            n += 1;
            let mut r = rec(&format!("{n:032x}"), 1000 + n, "p", session, event);
            r.body = body;
            s.insert(&r).unwrap();
        };
        // s1: tool results only.
        add(&mut s, "s1", "post-tool-use", Some("ok".into()));
        // s2: a long (deflated) conclusion, then a blank stop, then work.
        let long = format!("the retry works now {}", "and the tests pass ".repeat(20));
        add(&mut s, "s2", "stop", Some("an early word".into()));
        add(&mut s, "s2", "stop", Some(long.clone()));
        add(&mut s, "s2", "stop", Some("  \n ".into()));
        add(&mut s, "s2", "post-tool-use", Some("ok".into()));
        // s3: a stop, then more than MAX_NOTES tool results.
        add(&mut s, "s3", "stop", Some("out of reach".into()));
        for _ in 0..MAX_NOTES + 1 {
            add(
                &mut s,
                "s3",
                "post-tool-use-failure",
                Some("error: no".into()),
            );
        }
        let rows: Vec<i64> = s
            .conn
            .prepare("SELECT id FROM sessions ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(rows.len(), 3);
        let got: Vec<Option<(String, String)>> = rows
            .iter()
            .map(|&r| s.session_conclusion(r).unwrap())
            .collect();
        let want: Vec<Option<(String, String)>> = rows
            .iter()
            .map(|&r| conclusion(&s.session_notes(r).unwrap()))
            .collect();
        assert_eq!(got, want);
        assert_eq!(got[0], None);
        assert_eq!(got[1].as_ref().map(|c| c.0.as_str()), Some(long.as_str()));
        assert_eq!(got[2], None, "older than the newest notes");
        // Through the trait, as the briefing asks.
        let reads: &dyn Reads = &s;
        assert_eq!(reads.session_conclusion(rows[1]).unwrap(), want[1]);
    }
}
