//! What the web view reads from PostgreSQL: `sink/store/browse.rs`'s
//! queries, translated (same columns, same order, same limits).
//!
//! Search finds what [`super::PgStore::search`] finds (the SQLite store's
//! documented semantics, see `read.rs`); its snippet is `ts_headline` with
//! the SQLite snippet's markers ([`HIT_START`], [`HIT_END`]) and size
//! ([`SNIPPET_TOKENS`] words), over the record's best matching text: its
//! title when the title matches, else its body when that matches, else its
//! files (or body). `…` marks text left out at either end, as SQLite's
//! `snippet()` does. `ts_headline` splits the text with PostgreSQL's own
//! parser, which keeps a path such as `src/main.rs` as one word: such a
//! record is found (the index is built from memhook's own word split) but
//! the word inside the path is not highlighted.

use postgres::Row;

use super::read::{PgRead, FAILED};
use memhook_store::model::Browse;
use memhook_store::model::{
    session_select, FamilyCount, ProjectRow, RecordRow, SearchHit, SessionRow, StoreError,
    EXCERPT_CHARS, HIT_END, HIT_START, MAX_QUERY_LIMIT, SNIPPET_TOKENS, TOOL_RESULT_EVENTS,
};

/// What SQLite's `snippet()` puts where text was left out.
const ELLIPSIS: &str = "…";

fn session_row(r: &Row) -> SessionRow {
    SessionRow {
        row: r.get(0),
        workspace: r.get(1),
        project: r.get(2),
        agent: r.get(3),
        session_id: r.get(4),
        first_ms: r.get::<_, i64>(5) as u64,
        last_ms: r.get::<_, i64>(6) as u64,
        events: r.get::<_, i64>(7) as u64,
        prompts: r.get::<_, i64>(8) as u64,
        failures: r.get::<_, i64>(9) as u64,
        families: Vec::new(),
        first_prompt: r.get(10),
    }
}

/// The ts_headline options: SQLite's snippet markers and size. One
/// fragment: `ts_headline` then stretches the window evenly around the
/// hits, as SQLite's `snippet()` centres them.
fn headline_options() -> String {
    format!(
        "StartSel=\"{HIT_START}\", StopSel=\"{HIT_END}\", MaxWords={SNIPPET_TOKENS}, \
         MinWords={}, ShortWord=0, MaxFragments=1",
        SNIPPET_TOKENS / 2
    )
}

/// `headline` as SQLite's `snippet()` gives it: [`ELLIPSIS`] at an end
/// where text of `doc` was left out, else `doc`'s own white space there
/// (`ts_headline` starts and ends at a word).
fn mark_cuts(headline: String, doc: &str) -> String {
    let headline = headline.trim();
    let plain: String = headline
        .chars()
        .filter(|c| *c != HIT_START && *c != HIT_END)
        .collect();
    if plain.is_empty() {
        return headline.to_string();
    }
    let body = doc.trim();
    let lead = &doc[..doc.len() - doc.trim_start().len()];
    let trail = &doc[doc.trim_end().len()..];
    let mut out = String::new();
    out.push_str(if body.starts_with(&plain) {
        lead
    } else {
        ELLIPSIS
    });
    out.push_str(headline);
    out.push_str(if body.ends_with(&plain) {
        trail
    } else {
        ELLIPSIS
    });
    out
}

/// Consecutive words of the query's phrases (`snake_case` → `snake`,
/// `case`), lowercased: the pairs SQLite highlights as one span.
fn phrase_pairs(query: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for term in query.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        let words: Vec<String> = term
            .split('_')
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        for w in words.windows(2) {
            pairs.push((w[0].clone(), w[1].clone()));
        }
    }
    pairs
}

/// Join the highlights of two words of one phrase into one span (what
/// `ts_headline` marks word by word, SQLite marks per phrase match).
fn join_phrases(snippet: &str, pairs: &[(String, String)]) -> String {
    if pairs.is_empty() {
        return snippet.to_string();
    }
    let mut out = String::with_capacity(snippet.len());
    let mut rest = snippet;
    while let Some(end) = rest.find(HIT_END) {
        let (before, after) = rest.split_at(end);
        out.push_str(before);
        let after = &after[HIT_END.len_utf8()..];
        let gap = after
            .find(|c: char| c.is_alphanumeric() || c == HIT_START)
            .unwrap_or(after.len());
        let joined = after[gap..].starts_with(HIT_START) && {
            let last = before.rsplit(HIT_START).next().unwrap_or("").to_lowercase();
            let next = after[gap + HIT_START.len_utf8()..]
                .split(HIT_END)
                .next()
                .unwrap_or("")
                .to_lowercase();
            pairs.iter().any(|(a, b)| *a == last && *b == next)
        };
        if joined {
            out.push_str(&after[..gap]);
            rest = &after[gap + HIT_START.len_utf8()..];
        } else {
            out.push(HIT_END);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

impl PgRead<'_> {
    /// Fill in each session's tool results per family (one query).
    fn add_families(&self, sessions: &mut [SessionRow]) -> Result<(), StoreError> {
        if sessions.is_empty() {
            return Ok(());
        }
        let ids: Vec<i64> = sessions.iter().map(|s| s.row).collect();
        let rows = self.query(
            &format!(
                "SELECT session_row, coalesce(tool_family, 'unknown'), count(*),
                        count(*) FILTER (WHERE {FAILED})
                 FROM records WHERE session_row = ANY($1) AND event IN {TOOL_RESULT_EVENTS}
                 GROUP BY 1, 2 ORDER BY 1, 3 DESC, 2"
            ),
            &[&ids],
        )?;
        for r in rows {
            let row: i64 = r.get(0);
            if let Some(s) = sessions.iter_mut().find(|s| s.row == row) {
                s.families.push(FamilyCount {
                    family: r.get(1),
                    calls: r.get::<_, i64>(2) as u64,
                    failed: r.get::<_, i64>(3) as u64,
                });
            }
        }
        Ok(())
    }
}

impl Browse for PgRead<'_> {
    fn browse_projects(&self) -> Result<Vec<ProjectRow>, StoreError> {
        let rows = self.query(
            "SELECT p.workspace, p.project, p.first_ms, p.last_ms,
                    (SELECT count(*) FROM sessions s WHERE s.project_id = p.id),
                    p.records
             FROM projects p ORDER BY p.last_ms DESC, p.id DESC LIMIT $1",
            &[&(MAX_QUERY_LIMIT as i64)],
        )?;
        Ok(rows
            .iter()
            .map(|r| ProjectRow {
                workspace: r.get(0),
                project: r.get(1),
                first_ms: r.get::<_, i64>(2) as u64,
                last_ms: r.get::<_, i64>(3) as u64,
                sessions: r.get::<_, i64>(4) as u64,
                records: r.get::<_, i64>(5) as u64,
            })
            .collect())
    }

    fn browse_sessions(
        &self,
        scope: (&str, &str),
        limit: usize,
    ) -> Result<Vec<SessionRow>, StoreError> {
        let rows = self.query(
            &format!(
                "{} ORDER BY s.last_ms DESC, s.id DESC LIMIT $3",
                session_select(FAILED, "p.workspace = $1 AND p.project = $2")
            ),
            &[&scope.0, &scope.1, &(limit.min(MAX_QUERY_LIMIT) as i64)],
        )?;
        let mut sessions: Vec<SessionRow> = rows.iter().map(session_row).collect();
        self.add_families(&mut sessions)?;
        Ok(sessions)
    }

    fn browse_session(&self, row: i64) -> Result<Option<SessionRow>, StoreError> {
        let rows = self.query(&session_select(FAILED, "s.id = $1"), &[&row])?;
        let mut sessions: Vec<SessionRow> = rows.iter().map(session_row).collect();
        self.add_families(&mut sessions)?;
        Ok(sessions.pop())
    }

    fn browse_records(&self, row: i64, limit: usize) -> Result<Vec<RecordRow>, StoreError> {
        let rows = self.query(
            &format!(
                "SELECT key, occurred_ms, agent, event, tool_family, tool_name, outcome, {FAILED},
                        files::text, title, substr(body, 1, {EXCERPT_CHARS}),
                        length(body) > {EXCERPT_CHARS}, tool_call_id, exit_code, command
                 FROM records WHERE session_row = $1 ORDER BY occurred_ms, id LIMIT $2"
            ),
            &[&row, &(limit.min(MAX_QUERY_LIMIT) as i64)],
        )?;
        Ok(rows
            .iter()
            .map(|r| {
                let files: Option<String> = r.get(8);
                RecordRow {
                    key: r.get(0),
                    occurred_ms: r.get::<_, i64>(1) as u64,
                    agent: r.get(2),
                    event: r.get(3),
                    tool_family: r.get(4),
                    tool_name: r.get(5),
                    outcome: r.get(6),
                    failed: r.get(7),
                    files: files
                        .and_then(|f| serde_json::from_str(&f).ok())
                        .unwrap_or_default(),
                    title: r.get(9),
                    excerpt: r.get(10),
                    cut: r.get::<_, Option<bool>>(11).unwrap_or(false),
                    tool_call_id: r.get(12),
                    exit_code: r.get(13),
                    command: r.get(14),
                }
            })
            .collect())
    }

    fn browse_search(
        &self,
        scope: Option<(&str, &str)>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let Some(q) = super::read::ts_query(query) else {
            return Ok(Vec::new());
        };
        let (w, p) = scope.unwrap_or(("", ""));
        let pairs = phrase_pairs(query);
        let cfg = super::read::TS_CONFIG;
        let rank = super::read::SEARCH_RANK;
        let rows = self.query(
            &format!(
                "WITH hits AS (
                SELECT r.key, r.occurred_ms, p.workspace, p.project, r.session_row,
                       r.session_id, r.agent, r.event, r.tool_family,
                       {rank} AS rank, q,
                       CASE
                         WHEN to_tsvector('{cfg}', coalesce(r.title, '')) @@ q THEN r.title
                         WHEN to_tsvector('{cfg}', coalesce(r.body, '')) @@ q THEN r.body
                         ELSE coalesce(
                           (SELECT string_agg(f, ' ') FROM jsonb_array_elements_text(r.files) f),
                           r.body, r.title, '')
                       END AS doc
                FROM records r JOIN projects p ON p.id = r.project_id,
                     to_tsquery('{cfg}', $1) q
                WHERE r.search @@ q AND ($2 = '' OR (p.workspace = $2 AND p.project = $3))
                ORDER BY rank DESC, r.occurred_ms DESC, r.id DESC LIMIT $4)
             SELECT key, occurred_ms, workspace, project, session_row, session_id, agent, event,
                    tool_family, ts_headline('{cfg}', doc, q, $5), doc
             FROM hits ORDER BY rank DESC, occurred_ms DESC"
            ),
            &[
                &q,
                &w,
                &p,
                &(limit.min(MAX_QUERY_LIMIT) as i64),
                &headline_options(),
            ],
        )?;
        let mut out: Vec<SearchHit> = rows
            .iter()
            .map(|r| {
                let doc: String = r.get(10);
                let snippet = join_phrases(
                    &mark_cuts(r.get::<_, Option<String>>(9).unwrap_or_default(), &doc),
                    &pairs,
                );
                hit(r, snippet)
            })
            .collect();
        // Fewer than asked: the records closest in meaning follow, as in
        // the embedded store.
        let limit = limit.min(MAX_QUERY_LIMIT);
        if out.len() < limit {
            let near = self.closest_ids(scope, query, limit)?;
            let rows = self.query(
                &format!(
                    "SELECT r.key, r.occurred_ms, p.workspace, p.project, r.session_row,
                            r.session_id, r.agent, r.event, r.tool_family,
                            substr(coalesce(r.title, r.body, ''), 1, {EXCERPT_CHARS}), r.id
                     FROM records r JOIN projects p ON p.id = r.project_id
                     WHERE r.id = ANY($1)"
                ),
                &[&near],
            )?;
            for id in near {
                if out.len() == limit {
                    break;
                }
                let Some(r) = rows.iter().find(|r| r.get::<_, i64>(10) == id) else {
                    continue;
                };
                if out.iter().any(|h| h.key == r.get::<_, String>(0)) {
                    continue;
                }
                out.push(hit(
                    r,
                    memhook_store::meaning::hit_snippet(&r.get::<_, String>(9)),
                ));
            }
        }
        Ok(out)
    }
}

/// A search hit from a row whose first nine columns are the record's key,
/// time, workspace, project, session row, session id, agent, event and
/// tool family (both of `browse_search`'s queries), with `snippet`.
fn hit(r: &postgres::Row, snippet: String) -> SearchHit {
    SearchHit {
        key: r.get(0),
        occurred_ms: r.get::<_, i64>(1) as u64,
        workspace: r.get(2),
        project: r.get(3),
        session_row: r.get(4),
        session_id: r.get(5),
        agent: r.get(6),
        event: r.get(7),
        tool_family: r.get(8),
        snippet,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_text_is_marked_at_its_ends() {
        let h = format!("the {HIT_START}flaky{HIT_END} parser");
        assert_eq!(mark_cuts(h.clone(), "the flaky parser"), h);
        assert_eq!(
            mark_cuts(h.clone(), "\n  the flaky parser\n"),
            format!("\n  {h}\n")
        );
        assert_eq!(
            mark_cuts(h.clone(), "fix the flaky parser"),
            format!("…{h}")
        );
        assert_eq!(
            mark_cuts(h.clone(), "the flaky parser again"),
            format!("{h}…")
        );
        assert_eq!(mark_cuts(String::new(), "anything"), "");
    }

    #[test]
    fn words_of_one_phrase_are_one_highlight() {
        let (s, e) = (HIT_START, HIT_END);
        let pairs = phrase_pairs("Café_menu x");
        assert_eq!(pairs, [("café".to_string(), "menu".to_string())]);
        assert_eq!(
            join_phrases(&format!("now {s}café{e}_{s}menu{e} tests"), &pairs),
            format!("now {s}café_menu{e} tests")
        );
        // Not one phrase: two highlights stay two.
        assert_eq!(
            join_phrases(&format!("{s}menu{e} {s}café{e}"), &pairs),
            format!("{s}menu{e} {s}café{e}")
        );
        let three = phrase_pairs("a_b_c");
        assert_eq!(
            join_phrases(&format!("{s}a{e}-{s}b{e} {s}c{e}!"), &three),
            format!("{s}a-b c{e}!")
        );
        assert_eq!(join_phrases("plain", &three), "plain");
    }

    #[test]
    fn the_headline_options_carry_the_markers_and_size() {
        let o = headline_options();
        assert!(o.contains(&format!("StartSel=\"{HIT_START}\"")), "{o}");
        assert!(o.contains(&format!("MaxWords={SNIPPET_TOKENS}")), "{o}");
    }
}
