//! What the web view reads (DESIGN §12): projects, a project's sessions, a
//! session's records, search hits with highlights. Plain data out, SQL
//! only, so that another store engine mirrors this one file.

use rusqlite::params;

use crate::model::*;

use super::{Store, StoreError, FAILED, MAX_QUERY_LIMIT, TOOL_RESULT_EVENTS};

fn session_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        row: r.get(0)?,
        workspace: r.get(1)?,
        project: r.get(2)?,
        agent: r.get(3)?,
        session_id: r.get(4)?,
        first_ms: r.get::<_, i64>(5)? as u64,
        last_ms: r.get::<_, i64>(6)? as u64,
        events: r.get::<_, i64>(7)? as u64,
        prompts: r.get::<_, i64>(8)? as u64,
        failures: r.get::<_, i64>(9)? as u64,
        families: Vec::new(),
        first_prompt: r.get(10)?,
    })
}

impl Store {
    /// Every project, most recently active first. The record count is the
    /// project's roll-up (`projects.records`), not a count of its records.
    pub fn browse_projects(&self) -> Result<Vec<ProjectRow>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT p.workspace, p.project, p.first_ms, p.last_ms,
                        (SELECT count(*) FROM sessions s WHERE s.project_id = p.id),
                        p.records
                 FROM projects p ORDER BY p.last_ms DESC, p.id DESC LIMIT {MAX_QUERY_LIMIT}"
            ))
            .map_err(|e| self.err(e))?;
        let rows = st.query_map([], |r| {
            Ok(ProjectRow {
                workspace: r.get(0)?,
                project: r.get(1)?,
                first_ms: r.get::<_, i64>(2)? as u64,
                last_ms: r.get::<_, i64>(3)? as u64,
                sessions: r.get::<_, i64>(4)? as u64,
                records: r.get::<_, i64>(5)? as u64,
            })
        });
        super::collect(rows).map_err(|e| self.err(e))
    }

    /// The sessions of one project, newest activity first, at most `limit`.
    pub fn browse_sessions(
        &self,
        scope: (&str, &str),
        limit: usize,
    ) -> Result<Vec<SessionRow>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "{} ORDER BY s.last_ms DESC, s.id DESC LIMIT {}",
                session_select(FAILED, "p.workspace = ?1 AND p.project = ?2"),
                limit.min(MAX_QUERY_LIMIT)
            ))
            .map_err(|e| self.err(e))?;
        let rows = st.query_map(params![scope.0, scope.1], session_row);
        let mut sessions = super::collect(rows).map_err(|e| self.err(e))?;
        self.add_families(&mut sessions)?;
        Ok(sessions)
    }

    /// One session by its row id.
    pub fn browse_session(&self, row: i64) -> Result<Option<SessionRow>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(&session_select(FAILED, "s.id = ?1"))
            .map_err(|e| self.err(e))?;
        let rows = st.query_map([row], session_row);
        let mut sessions = super::collect(rows).map_err(|e| self.err(e))?;
        self.add_families(&mut sessions)?;
        Ok(sessions.pop())
    }

    /// Fill in each session's tool results per family (one query).
    fn add_families(&self, sessions: &mut [SessionRow]) -> Result<(), StoreError> {
        if sessions.is_empty() {
            return Ok(());
        }
        // Integers from our own query: safe to inline.
        let ids: Vec<String> = sessions.iter().map(|s| s.row.to_string()).collect();
        let mut st = self
            .conn
            .prepare(&format!(
                "SELECT session_row, coalesce(tool_family, 'unknown'), count(*),
                        count(*) FILTER (WHERE {FAILED})
                 FROM records WHERE session_row IN ({}) AND event IN {TOOL_RESULT_EVENTS}
                 GROUP BY 1, 2 ORDER BY 1, 3 DESC, 2",
                ids.join(",")
            ))
            .map_err(|e| self.err(e))?;
        let rows = st.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                FamilyCount {
                    family: r.get(1)?,
                    calls: r.get::<_, i64>(2)? as u64,
                    failed: r.get::<_, i64>(3)? as u64,
                },
            ))
        });
        for (row, fam) in super::collect(rows).map_err(|e| self.err(e))? {
            if let Some(s) = sessions.iter_mut().find(|s| s.row == row) {
                s.families.push(fam);
            }
        }
        Ok(())
    }

    /// The records of one session, oldest first, at most `limit`.
    pub fn browse_records(&self, row: i64, limit: usize) -> Result<Vec<RecordRow>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT key, occurred_ms, agent, event, tool_family, tool_name, outcome, {FAILED},
                        files, title, substr(body, 1, {EXCERPT_CHARS}),
                        length(body) > {EXCERPT_CHARS}, tool_call_id, exit_code, command
                 FROM records WHERE session_row = ?1 ORDER BY occurred_ms, id LIMIT {}",
                limit.min(MAX_QUERY_LIMIT)
            ))
            .map_err(|e| self.err(e))?;
        let rows = st.query_map([row], |r| {
            let files: Option<String> = r.get(8)?;
            Ok(RecordRow {
                key: r.get(0)?,
                occurred_ms: r.get::<_, i64>(1)? as u64,
                agent: r.get(2)?,
                event: r.get(3)?,
                tool_family: r.get(4)?,
                tool_name: r.get(5)?,
                outcome: r.get(6)?,
                failed: r.get::<_, i64>(7)? != 0,
                files: files
                    .and_then(|f| serde_json::from_str(&f).ok())
                    .unwrap_or_default(),
                title: r.get(9)?,
                excerpt: r.get(10)?,
                cut: r.get::<_, Option<i64>>(11)?.unwrap_or(0) != 0,
                tool_call_id: r.get(12)?,
                exit_code: r.get(13)?,
                command: r.get(14)?,
            })
        });
        super::collect(rows).map_err(|e| self.err(e))
    }

    /// Records matching every word of `query` (user text, never FTS syntax)
    /// in `scope` (`None`: every project), best match first, each with a
    /// highlighted snippet.
    pub fn browse_search(
        &self,
        scope: Option<(&str, &str)>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let Some(q) = super::fts_query(query) else {
            return Ok(Vec::new());
        };
        let (w, p) = scope.unwrap_or(("", ""));
        // The best ids window by window (`super::ranked`), then a snippet
        // for each of them only.
        let ids = self.ranked_ids(
            &q,
            "?2 = '' OR (p.workspace = ?2 AND p.project = ?3)",
            &[&w, &p],
            limit.min(MAX_QUERY_LIMIT),
            scope,
        )?;
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT r.key, r.occurred_ms, p.workspace, p.project, r.session_row, r.session_id,
                        r.agent, r.event, r.tool_family,
                        snippet(records_fts, -1, char({}), char({}), '…', {SNIPPET_TOKENS})
                 FROM records_fts f
                 JOIN records r ON r.id = f.rowid JOIN projects p ON p.id = r.project_id
                 WHERE records_fts MATCH ?1 AND f.rowid = ?2",
                HIT_START as u32, HIT_END as u32,
            ))
            .map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(ids.len());
        for &id in &ids {
            let rows = st.query_map(params![q, id], |r| {
                hit(r, r.get::<_, Option<String>>(9)?.unwrap_or_default())
            });
            out.extend(super::collect(rows).map_err(|e| self.err(e))?);
        }
        // Fewer than asked: the records closest in meaning follow.
        let limit = limit.min(MAX_QUERY_LIMIT);
        if out.len() < limit {
            let near = self.closest_ids(
                query,
                "?1 = '' OR (p.workspace = ?1 AND p.project = ?2)",
                &[&w, &p],
                limit,
            )?;
            let mut st = self
                .conn
                .prepare_cached(&format!(
                    "SELECT r.key, r.occurred_ms, p.workspace, p.project, r.session_row,
                            r.session_id, r.agent, r.event, r.tool_family,
                            substr(coalesce(r.title, r.body, ''), 1, {EXCERPT_CHARS})
                     FROM records r JOIN projects p ON p.id = r.project_id WHERE r.id = ?1"
                ))
                .map_err(|e| self.err(e))?;
            for id in near.into_iter().filter(|id| !ids.contains(id)) {
                if out.len() == limit {
                    break;
                }
                let rows = st.query_map([id], |r| {
                    hit(r, crate::meaning::hit_snippet(&r.get::<_, String>(9)?))
                });
                out.extend(super::collect(rows).map_err(|e| self.err(e))?);
            }
        }
        Ok(out)
    }
}

/// A search hit from a row whose first nine columns are the record's key,
/// time, workspace, project, session row, session id, agent, event and
/// tool family (both of `browse_search`'s queries), with `snippet`.
fn hit(r: &rusqlite::Row<'_>, snippet: String) -> rusqlite::Result<SearchHit> {
    Ok(SearchHit {
        key: r.get(0)?,
        occurred_ms: r.get::<_, i64>(1)? as u64,
        workspace: r.get(2)?,
        project: r.get(3)?,
        session_row: r.get(4)?,
        session_id: r.get(5)?,
        agent: r.get(6)?,
        event: r.get(7)?,
        tool_family: r.get(8)?,
        snippet,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::tests::rec;

    fn seeded() -> (tempfile::TempDir, Store) {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let mut prompt = rec(&format!("{:032x}", 1), 1000, "api", "s1", "user-prompt");
        prompt.tool = None;
        prompt.title = None;
        prompt.body = Some("fix the flaky parser".into());
        s.insert(&prompt).unwrap();
        let mut fail = rec(
            &format!("{:032x}", 2),
            1001,
            "api",
            "s1",
            "post-tool-use-failure",
        );
        fail.body = Some("y".repeat(EXCERPT_CHARS + 1));
        s.insert(&fail).unwrap();
        s.insert(&rec(
            &format!("{:032x}", 3),
            1002,
            "api",
            "s1",
            "post-tool-use",
        ))
        .unwrap();
        s.insert(&rec(
            &format!("{:032x}", 4),
            2000,
            "web",
            "s2",
            "post-tool-use",
        ))
        .unwrap();
        (t, s)
    }

    #[test]
    fn projects_sessions_and_records() {
        let (_t, s) = seeded();
        let projects = s.browse_projects().unwrap();
        let names: Vec<&str> = projects.iter().map(|p| p.project.as_str()).collect();
        assert_eq!(names, ["web", "api"], "newest first");
        assert_eq!((projects[1].sessions, projects[1].records), (1, 3));

        let sessions = s.browse_sessions(("default", "api"), 10).unwrap();
        assert_eq!(sessions.len(), 1);
        let one = &sessions[0];
        assert_eq!((one.prompts, one.failures, one.events), (1, 1, 3));
        assert_eq!(one.first_prompt.as_deref(), Some("fix the flaky parser"));
        assert_eq!(
            one.families,
            vec![FamilyCount {
                family: "file".into(),
                calls: 2,
                failed: 1
            }]
        );
        assert_eq!(s.browse_session(one.row).unwrap().as_ref(), Some(one));
        assert_eq!(s.browse_session(9999).unwrap(), None);

        let records = s.browse_records(one.row, 10).unwrap();
        let events: Vec<&str> = records.iter().map(|r| r.event.as_str()).collect();
        assert_eq!(
            events,
            ["user-prompt", "post-tool-use-failure", "post-tool-use"]
        );
        assert!(records[1].failed && !records[2].failed);
        // The excerpt is cut at its edge, and says so.
        assert_eq!(
            records[1].excerpt.as_ref().unwrap().chars().count(),
            EXCERPT_CHARS
        );
        assert!(records[1].cut && !records[2].cut);
        assert_eq!(records[2].files, ["src/main.rs"]);
        assert_eq!(s.browse_records(one.row, 1).unwrap().len(), 1);
    }

    #[test]
    fn search_highlights_hits_and_names_the_session() {
        let (_t, s) = seeded();
        let hits = s.browse_search(None, "flaky", 10).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(
            hits[0].snippet,
            format!("fix the {HIT_START}flaky{HIT_END} parser")
        );
        assert!(hits[0].session_row.is_some());
        assert_eq!(hits[0].session_id.as_deref(), Some("s1"));
        assert_eq!(s.browse_search(None, "quick", 10).unwrap().len(), 2);
        assert_eq!(
            s.browse_search(Some(("default", "web")), "quick", 10)
                .unwrap()
                .len(),
            1
        );
        assert!(s.browse_search(None, "\"* OR", 10).unwrap().is_empty());
    }

    #[test]
    fn the_first_prompt_is_cut_at_its_edge() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        for (i, len) in [FIRST_PROMPT_CHARS, FIRST_PROMPT_CHARS + 1]
            .iter()
            .enumerate()
        {
            let mut p = rec(
                &format!("{i:032x}"),
                1,
                "p",
                &format!("s{i}"),
                "user-prompt",
            );
            p.title = None;
            p.body = Some("é".repeat(*len));
            s.insert(&p).unwrap();
        }
        for row in s.browse_sessions(("default", "p"), 10).unwrap() {
            let first = row.first_prompt.unwrap();
            assert_eq!(
                first.chars().count(),
                FIRST_PROMPT_CHARS,
                "{}",
                row.session_id
            );
        }
    }
}
