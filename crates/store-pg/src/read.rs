//! Reads from PostgreSQL: the briefing's ([`Reads`]), newest records, and
//! full-text search. Each query is the SQLite store's, translated; every
//! text column is `COLLATE "C"`, so ties sort as they do in SQLite.
//!
//! Search has the SQLite store's documented semantics
//! ([`memhook_store::sqlite::fts_query`]): user text is never syntax; every
//! run of letters, digits, `_` and inner `-` is one term, the terms are
//! ANDed; a term is matched as a phrase of its words (`snake_case` is
//! `snake` followed by `case`). Documents are split into words the same way
//! at ingest, with their identifier words added
//! ([`super::ingest::search_document`]), and indexed with the
//! `memhook_english` configuration (lowercase, Snowball English stems, no
//! stop words; SQLite's is the Porter stemmer). Ranking is relevance lifted
//! by recency, as in SQLite ([`SEARCH_RANK`]). Differences: relevance is
//! `ts_rank` instead of SQLite's `bm25` (the same records are found; their
//! order among near-equal matches may differ), the two stemmers differ on
//! some rare words, and diacritics are kept (`café` does not find `cafe`;
//! SQLite's `unicode61` folds them).

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use postgres::types::ToSql;
use postgres::{Client, Row};

use super::{PgError, PgStore};
use memhook_store::model::Reads;
use memhook_store::model::READ_ONLY_FILE_TOOLS;
use memhook_store::model::{
    Activity, Note, Prompt, SessionSummary, StoreError, StoredRecord, TailEvent, TouchedFile,
    MATCH_MARK, MATCH_WORDS, MAX_NOTES, MAX_QUERY_LIMIT, MAX_SESSION_FILES, MAX_TAIL_RECORDS,
    NOTE_LINE_CHARS, PROMPT_TEXT_CHARS, TOOL_RESULT_EVENTS,
};

/// A tool result that failed, as an SQL condition that is never NULL.
pub(super) const FAILED: &str =
    "(event = 'post-tool-use-failure' OR coalesce(outcome = 'error', false))";

pub(super) const RECORD_COLUMNS: &str = "r.key, r.occurred_ms, r.agent, r.event, r.native_event, \
     p.workspace, p.project, r.session_id, r.cwd, r.subagent, r.tool_family, r.tool_name, \
     r.tool_call_id, r.outcome, r.disposition, r.title, r.body, r.files::text, r.token_name";

/// The configuration of every full-text vector and query: Snowball English
/// stems, no stop words (schema migration 4).
pub const TS_CONFIG: &str = "memhook_english";

/// Best match first, recent matches lifted, as the SQLite store ranks
/// (`memhook_store::sqlite`'s `SEARCH_RANK`): `ts_rank` weighed by up to 1.5
/// for a record of today, 1.25 for one of 30 days ago, barely for one of a
/// year ago. `q` is the query, `r` the record.
pub const SEARCH_RANK: &str = "ts_rank(r.search, q) * (1.0 + 0.5 / (1.0 + \
     greatest(0, extract(epoch from now()) * 1000 - r.occurred_ms) / 2592000000.0))";

/// Turn user text into a `to_tsquery('memhook_english', …)` text with the
/// SQLite store's semantics ([`memhook_store::sqlite::query_terms`]): `None`
/// when nothing is searchable.
pub fn ts_query(text: &str) -> Option<String> {
    let terms: Vec<String> = memhook_store::sqlite::query_terms(text)
        .into_iter()
        .filter_map(|term| {
            let words: Vec<String> = term
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(|w| format!("'{}'", w.to_lowercase()))
                .collect();
            match words.len() {
                0 => None,
                1 => Some(words[0].clone()),
                _ => Some(format!("({})", words.join(" <-> "))),
            }
        })
        .collect();
    (!terms.is_empty()).then(|| terms.join(" & "))
}

pub(super) fn to_record(r: &Row) -> StoredRecord {
    let files: Option<String> = r.get(17);
    StoredRecord {
        key: r.get(0),
        occurred_ms: r.get::<_, i64>(1) as u64,
        agent: r.get(2),
        event: r.get(3),
        native_event: r.get(4),
        workspace: r.get(5),
        project: r.get(6),
        session_id: r.get(7),
        cwd: r.get(8),
        subagent: r.get(9),
        tool_family: r.get(10),
        tool_name: r.get(11),
        tool_call_id: r.get(12),
        outcome: r.get(13),
        disposition: r.get(14),
        title: r.get(15),
        body: r.get(16),
        files: files
            .and_then(|f| serde_json::from_str(&f).ok())
            .unwrap_or_default(),
        token_name: r.get(18),
        // Only searches select it.
        matched: r.try_get::<_, Option<String>>(19).ok().flatten(),
        identical: 0,
    }
}

impl PgStore {
    fn query_records(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<StoredRecord>, PgError> {
        let db = self.describe().to_string();
        self.with_client(|c| {
            c.query(sql, params)
                .map(|rows| rows.iter().map(to_record).collect())
                .map_err(|e| PgError::of(&db, &e))
        })
    }

    /// Number of stored records.
    pub fn count(&self) -> Result<u64, PgError> {
        let db = self.describe().to_string();
        self.with_client(|c| {
            c.query_one("SELECT count(*) FROM records", &[])
                .map(|r| r.get::<_, i64>(0) as u64)
                .map_err(|e| PgError::of(&db, &e))
        })
    }

    /// Newest records first, of one scope or of every scope.
    pub fn recent(
        &self,
        scope: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, PgError> {
        let limit = limit.min(MAX_QUERY_LIMIT) as i64;
        let base = format!(
            "SELECT {RECORD_COLUMNS} FROM records r JOIN projects p ON p.id = r.project_id"
        );
        match scope {
            Some((w, p)) => self.query_records(
                &format!(
                    "{base} WHERE p.workspace = $1 AND p.project = $2
                     ORDER BY r.occurred_ms DESC, r.id DESC LIMIT $3"
                ),
                &[&w, &p, &limit],
            ),
            None => self.query_records(
                &format!("{base} ORDER BY r.occurred_ms DESC, r.id DESC LIMIT $1"),
                &[&limit],
            ),
        }
    }

    /// Full-text search, best match first, then newest (see the module
    /// documentation for the semantics and how they differ from SQLite's);
    /// identical texts are one row, as in the embedded store.
    pub fn search(
        &self,
        scope: Option<(&str, &str)>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, PgError> {
        let Some(q) = ts_query(query) else {
            return Ok(Vec::new());
        };
        let want = limit.min(MAX_QUERY_LIMIT);
        let limit = memhook_store::collapse::candidates(limit) as i64;
        // The candidates are ranked without why they matched: a headline
        // costs more than ranking (100,000 records, `the` in a project:
        // 14 of its 20 ms were the 80 candidates' headlines), and only
        // the records kept after collapsing get one (`headlines`).
        let base = format!(
            "SELECT {RECORD_COLUMNS}
             FROM records r JOIN projects p ON p.id = r.project_id,
                    to_tsquery('{TS_CONFIG}', $1) q
             WHERE r.search @@ q"
        );
        let order = format!("ORDER BY {SEARCH_RANK} DESC, r.occurred_ms DESC, r.id DESC");
        let found = match scope {
            Some((w, p)) => self.query_records(
                &format!("{base} AND p.workspace = $2 AND p.project = $3 {order} LIMIT $4"),
                &[&q, &w, &p, &limit],
            ),
            None => self.query_records(&format!("{base} {order} LIMIT $2"), &[&q, &limit]),
        }?;
        let mut kept = memhook_store::collapse::collapse(found, want);
        self.headlines(&q, &mut kept)?;
        Ok(kept)
    }

    /// Why each of `records` matched the query `q` (a `to_tsquery` text):
    /// the words around the matches of its title and body (an identifier's
    /// words are matched in the index alone), into
    /// [`StoredRecord::matched`].
    fn headlines(&self, q: &str, records: &mut [StoredRecord]) -> Result<(), PgError> {
        if records.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = records.iter().map(|r| r.key.clone()).collect();
        let db = self.describe().to_string();
        let rows = self.with_client(|c| {
            c.query(
                &format!(
                    "SELECT r.key,
                            ts_headline('{TS_CONFIG}', concat_ws(' ', r.title, r.body), q,
                                'StartSel={MATCH_MARK}, StopSel={MATCH_MARK}, MaxWords={MATCH_WORDS},
                                 MinWords=4, MaxFragments=1, FragmentDelimiter=…')
                     FROM records r, to_tsquery('{TS_CONFIG}', $1) q
                     WHERE r.key = ANY($2)"
                ),
                &[&q, &keys],
            )
            .map_err(|e| PgError::of(&db, &e))
        })?;
        let mut by_key: std::collections::HashMap<String, Option<String>> = rows
            .iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, Option<String>>(1)))
            .collect();
        for r in records {
            r.matched = by_key.remove(&r.key).flatten();
        }
        Ok(())
    }

    /// [`PgStore::search`], then the records closest in meaning that the
    /// words did not find, as the embedded store's `search_fused`.
    pub fn search_fused(
        &self,
        scope: Option<(&str, &str)>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, PgError> {
        let limit = limit.min(MAX_QUERY_LIMIT);
        let found = self.search(scope, query, limit)?;
        if found.len() == limit {
            return Ok(found);
        }
        let n = memhook_store::collapse::candidates(limit);
        let near = self.closest(scope, query, 0, i64::MAX, n)?;
        Ok(memhook_store::meaning::fuse(found, near, limit))
    }
}

/// One connection inside a read-only snapshot, answering the briefing's
/// reads (see [`PgStore::read`]).
pub struct PgRead<'c> {
    client: RefCell<&'c mut Client>,
    db: String,
    data_dir: PathBuf,
}

impl<'c> PgRead<'c> {
    pub(super) fn new(client: &'c mut Client, db: &str, data_dir: &Path) -> PgRead<'c> {
        PgRead {
            client: RefCell::new(client),
            db: db.to_string(),
            data_dir: data_dir.to_path_buf(),
        }
    }

    pub(super) fn query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, StoreError> {
        self.client
            .borrow_mut()
            .query(sql, params)
            .map_err(|e| StoreError::from(PgError::of(&self.db, &e)))
    }

    pub(super) fn one(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Row, StoreError> {
        self.client
            .borrow_mut()
            .query_one(sql, params)
            .map_err(|e| StoreError::from(PgError::of(&self.db, &e)))
    }

    fn prompts(&self, row: i64, order: &str, limit: usize) -> Result<Vec<Prompt>, StoreError> {
        let rows = self.query(
            &format!(
                "SELECT coalesce(substr(body, 1, {PROMPT_TEXT_CHARS}), title), occurred_ms, key FROM records
                 WHERE session_row = $1 AND event = 'user-prompt' AND NOT subagent
                 ORDER BY occurred_ms {order}, id {order} LIMIT $2"
            ),
            &[&row, &(limit as i64)],
        )?;
        Ok(rows
            .iter()
            .map(|r| Prompt {
                text: r.get::<_, Option<String>>(0).unwrap_or_default(),
                ms: r.get::<_, i64>(1) as u64,
                key: r.get(2),
            })
            .collect())
    }
}

fn n(r: &Row, i: usize) -> u64 {
    r.get::<_, i64>(i) as u64
}

impl Reads for PgRead<'_> {
    fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    fn sessions(
        &self,
        scope: (&str, &str),
        exclude_session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SessionSummary>, StoreError> {
        let rows = self.query(
            "SELECT s.id, s.agent, s.session_id, s.first_ms, s.last_ms, s.events, s.work
             FROM sessions s JOIN projects p ON p.id = s.project_id
             WHERE p.workspace = $1 AND p.project = $2 AND s.work > 0 AND s.session_id <> $3
             ORDER BY s.last_ms DESC, s.id DESC LIMIT $4",
            &[
                &scope.0,
                &scope.1,
                &exclude_session.unwrap_or(""),
                &(limit.min(MAX_QUERY_LIMIT) as i64),
            ],
        )?;
        Ok(rows
            .iter()
            .map(|r| SessionSummary {
                row: r.get(0),
                agent: r.get(1),
                session_id: r.get(2),
                first_ms: n(r, 3),
                last_ms: n(r, 4),
                events: n(r, 5),
                work: n(r, 6),
            })
            .collect())
    }

    fn outcomes(&self, rows: &[i64], max_list: usize) -> Result<Activity, StoreError> {
        let mut a = Activity::default();
        if rows.is_empty() {
            return Ok(a);
        }
        let lim = max_list.min(MAX_QUERY_LIMIT) as i64;
        a.families = self
            .query(
                &format!(
                    "SELECT coalesce(tool_family, 'unknown'), count(*),
                            count(*) FILTER (WHERE {FAILED})
                     FROM records WHERE session_row = ANY($1) AND event IN {TOOL_RESULT_EVENTS}
                     GROUP BY 1 ORDER BY 2 DESC, 1"
                ),
                &[&rows],
            )?
            .iter()
            .map(|r| (r.get(0), n(r, 1), n(r, 2)))
            .collect();
        let b = "ltrim(body, E'\\n\\r \\t')";
        a.failures = self
            .query(
                &format!(
                    "SELECT coalesce(tool_name, tool_family, 'tool'),
                            nullif(trim(substr({b}, 1, strpos({b} || E'\\n', E'\\n') - 1)), ''),
                            count(*)
                     FROM records WHERE session_row = ANY($1) AND {FAILED}
                     GROUP BY 1, 2 ORDER BY 3 DESC, max(occurred_ms) DESC LIMIT $2"
                ),
                &[&rows, &lim],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1), n(r, 2)))
            .collect();
        Ok(a)
    }

    fn activity(&self, rows: &[i64], max_list: usize) -> Result<Activity, StoreError> {
        let mut a = self.outcomes(rows, max_list)?;
        if rows.is_empty() {
            return Ok(a);
        }
        let lim = max_list.min(MAX_QUERY_LIMIT) as i64;
        a.tools = self
            .query(
                &format!(
                    "SELECT coalesce(tool_name, tool_family, 'unknown'), count(*) FROM records
                     WHERE session_row = ANY($1) AND event IN {TOOL_RESULT_EVENTS}
                     GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $2"
                ),
                &[&rows, &lim],
            )?
            .iter()
            .map(|r| (r.get(0), n(r, 1)))
            .collect();
        let files: Vec<(String, u64)> = self
            .query(
                "SELECT j.v COLLATE \"C\", count(*)
                 FROM records r, jsonb_array_elements_text(r.files) AS j(v)
                 WHERE r.session_row = ANY($1) AND r.files IS NOT NULL
                 GROUP BY 1 ORDER BY 2 DESC, 1",
                &[&rows],
            )?
            .iter()
            .map(|r| (r.get(0), n(r, 1)))
            .collect();
        a.file_count = files.len() as u64;
        a.files = files.into_iter().take(max_list).collect();
        Ok(a)
    }

    fn session_outline(&self, row: i64) -> Result<(u64, u64, Option<String>), StoreError> {
        let r = self.one(
            &format!(
                "SELECT count(*) FILTER (WHERE event = 'user-prompt'),
                        count(*) FILTER (WHERE event IN {TOOL_RESULT_EVENTS}),
                        (SELECT coalesce(title, substr(body, 1, 400)) FROM records
                          WHERE session_row = $1 AND event = 'user-prompt'
                          ORDER BY occurred_ms, id LIMIT 1)
                 FROM records WHERE session_row = $1"
            ),
            &[&row],
        )?;
        Ok((n(&r, 0), n(&r, 1), r.get(2)))
    }

    fn session_prompts(
        &self,
        row: i64,
        last: usize,
    ) -> Result<(Option<Prompt>, Vec<Prompt>, u64), StoreError> {
        let first = self.prompts(row, "ASC", 1)?.pop();
        let mut tail = self.prompts(row, "DESC", last)?;
        tail.reverse();
        if let (Some(f), Some(t)) = (&first, tail.first()) {
            if f.key == t.key {
                tail.remove(0);
            }
        }
        let count = n(
            &self.one(
                "SELECT count(*) FROM records
                 WHERE session_row = $1 AND event = 'user-prompt' AND NOT subagent",
                &[&row],
            )?,
            0,
        );
        Ok((first, tail, count))
    }

    fn session_tail(&self, row: i64, from_ms: u64) -> Result<Vec<TailEvent>, StoreError> {
        let mut out: Vec<TailEvent> = self
            .query(
                "SELECT event, tool_name, tool_family, tool_call_id, outcome FROM records
                 WHERE session_row = $1 AND occurred_ms >= $2
                 ORDER BY occurred_ms DESC, id DESC LIMIT $3",
                &[&row, &(from_ms as i64), &(MAX_TAIL_RECORDS as i64)],
            )?
            .iter()
            .map(|r| TailEvent {
                event: r.get(0),
                tool_name: r.get(1),
                tool_family: r.get(2),
                tool_call_id: r.get(3),
                outcome: r.get(4),
            })
            .collect();
        out.reverse();
        Ok(out)
    }

    fn session_root(&self, row: i64) -> Result<Option<String>, StoreError> {
        Ok(self
            .query(
                "SELECT cwd FROM records WHERE session_row = $1 AND cwd IS NOT NULL
                 ORDER BY occurred_ms, id LIMIT 1",
                &[&row],
            )?
            .first()
            .map(|r| r.get(0)))
    }

    fn session_files(&self, row: i64) -> Result<Vec<TouchedFile>, StoreError> {
        let reads = READ_ONLY_FILE_TOOLS
            .iter()
            .map(|t| format!("'{t}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let rows = self.query(
            &format!(
                "SELECT (j.e #>> '{{}}') COLLATE \"C\", max(r.occurred_ms),
                        bool_or(coalesce(r.tool_family, '') = 'file'
                            AND lower(coalesce(r.tool_name, '')) NOT IN ({reads})) AS changed
                 FROM records r, jsonb_array_elements(r.files) AS j(e)
                 WHERE r.session_row = $1 AND r.files IS NOT NULL
                   AND jsonb_typeof(j.e) = 'string'
                 GROUP BY 1 ORDER BY changed DESC, 2 DESC, 1 LIMIT $2"
            ),
            &[&row, &(MAX_SESSION_FILES as i64)],
        )?;
        Ok(rows
            .iter()
            .map(|r| TouchedFile {
                path: r.get(0),
                last_ms: n(r, 1),
                changed: r.get(2),
            })
            .collect())
    }

    fn session_notes(&self, row: i64) -> Result<Vec<Note>, StoreError> {
        let rows = self.query(
            &format!(
                "SELECT key, occurred_ms, event, coalesce(tool_name, tool_family), {FAILED},
                        coalesce(outcome = 'success', false), exit_code, command, files::text,
                        CASE WHEN event = 'stop' THEN body
                             WHEN {FAILED} THEN substr(body, 1, {NOTE_LINE_CHARS}) END,
                        plan::text
                 FROM records
                 WHERE session_row = $1
                   AND event IN ('stop', 'post-tool-use', 'post-tool-use-failure')
                 ORDER BY occurred_ms DESC, id DESC LIMIT $2"
            ),
            &[&row, &(MAX_NOTES as i64)],
        )?;
        let mut out: Vec<Note> = rows
            .iter()
            .map(|r| {
                let files: Option<String> = r.get(8);
                let plan: Option<String> = r.get(10);
                Note {
                    key: r.get(0),
                    ms: n(r, 1),
                    event: r.get(2),
                    tool: r.get(3),
                    failed: r.get(4),
                    succeeded: r.get(5),
                    exit_code: r.get(6),
                    command: r.get(7),
                    files: files
                        .and_then(|f| serde_json::from_str(&f).ok())
                        .unwrap_or_default(),
                    text: r.get(9),
                    plan: plan.and_then(|p| serde_json::from_str(&p).ok()),
                }
            })
            .collect();
        out.reverse();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memhook_store::model::{MAX_QUERY_CHARS, MAX_QUERY_TERMS};

    #[test]
    fn ts_query_quotes_every_word_and_ands_the_terms() {
        assert_eq!(ts_query("Foo-bar").as_deref(), Some("('foo' <-> 'bar')"));
        assert_eq!(ts_query("-x- y").as_deref(), Some("'x' & 'y'"));
        assert_eq!(
            ts_query("snake_case x").as_deref(),
            Some("('snake' <-> 'case') & 'x'")
        );
        assert_eq!(ts_query("a'b\"c").as_deref(), Some("'a' & 'b' & 'c'"));
        assert_eq!(ts_query(" -\"* "), None);
        assert_eq!(ts_query("___"), None);
        let many = "w ".repeat(MAX_QUERY_TERMS + 5);
        assert_eq!(
            ts_query(&many).unwrap().matches('&').count(),
            MAX_QUERY_TERMS - 1
        );
        let long = "x".repeat(MAX_QUERY_CHARS + 10);
        assert_eq!(ts_query(&long).unwrap().len(), MAX_QUERY_CHARS + 2);
    }
}
