//! The JSON API under `/api/` (reference: docs/protocol.md): the same
//! reads and changes the pages make, for scripts holding the bearer token.

use serde_json::{json, Value};

use super::{
    json_error, json_response, memory_docs, project_arg, segments, Req, Web, MAX_SESSION_RECORDS,
    MAX_TIMELINE_SESSIONS, SEARCH_RESULTS,
};
use crate::http::Response;
use memhook_core::timefmt::rfc3339_ms;
use memhook_store::memory::{MemoryStore, Outcome, INDEX_PATH};
use memhook_store::model::{browse, Database};
use memhook_store::sqlite::{RecordRow, Selector, SessionRow, StoreError, HIT_END, HIT_START};

fn store_error(e: &StoreError) -> Response {
    crate::log::say!("memhook serve: api: {e}");
    json_error(503, "the store could not be read; see the server's log")
}

fn names_ok(w: &str, p: &str) -> bool {
    memhook_core::names::is_valid_name(w) && memhook_core::names::is_valid_name(p)
}

pub(super) fn route(web: &Web, req: &Req<'_>, rest: &str, db: &dyn Database) -> Response {
    let segs = segments(rest).unwrap_or_default();
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let get = req.head.method == "GET";
    match segs.as_slice() {
        ["projects"] if get => projects(web, db),
        ["projects", w, p] if get && names_ok(w, p) => project(web, db, w, p),
        ["sessions", row] if get => match row.parse::<i64>() {
            Ok(row) => session(db, row),
            Err(_) => json_error(404, "no such session"),
        },
        ["search"] if get => search(req, db),
        ["memory", w, p] if names_ok(w, p) => memory(web, req, w, p),
        ["forget"] if !get => forget(req, db),
        _ => json_error(404, &format!("no such endpoint: /api/{rest}")),
    }
}

fn projects(web: &Web, db: &dyn Database) -> Response {
    let rows = match browse(db, |s| s.browse_projects()) {
        Ok(r) => r,
        Err(e) => return store_error(&e),
    };
    let mut list: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "workspace": r.workspace,
                "project": r.project,
                "sessions": r.sessions,
                "records": r.records,
                "first_at": rfc3339_ms(r.first_ms),
                "last_at": rfc3339_ms(r.last_ms),
            })
        })
        .collect();
    for (w, p) in super::memory_projects(web.data_dir()) {
        if !rows.iter().any(|r| r.workspace == w && r.project == p) {
            list.push(json!({
                "workspace": w, "project": p, "sessions": 0, "records": 0,
                "first_at": null, "last_at": null,
            }));
        }
    }
    json_response(200, json!({ "projects": list }))
}

/// A session as the API shows it.
pub(super) fn session_json(s: &SessionRow) -> Value {
    json!({
        "id": s.row,
        "workspace": s.workspace,
        "project": s.project,
        "session_id": s.session_id,
        "agent": s.agent,
        "started_at": rfc3339_ms(s.first_ms),
        "ended_at": rfc3339_ms(s.last_ms),
        "length_ms": s.last_ms.saturating_sub(s.first_ms),
        "events": s.events,
        "prompts": s.prompts,
        "failures": s.failures,
        "tools": s.families.iter().map(|f| json!({
            "family": f.family, "calls": f.calls, "failed": f.failed,
        })).collect::<Vec<_>>(),
        "first_prompt": s.first_prompt,
    })
}

fn record_json(r: &RecordRow) -> Value {
    json!({
        "id": r.key,
        "at": rfc3339_ms(r.occurred_ms),
        "agent": r.agent,
        "event": r.event,
        "tool_family": r.tool_family,
        "tool_name": r.tool_name,
        "files": r.files,
        "outcome": r.outcome,
        "failed": r.failed,
        "title": r.title,
        "excerpt": r.excerpt,
        "cut": r.cut,
    })
}

fn project(web: &Web, db: &dyn Database, w: &str, p: &str) -> Response {
    let sessions = match browse(db, |s| s.browse_sessions((w, p), MAX_TIMELINE_SESSIONS)) {
        Ok(r) => r,
        Err(e) => return store_error(&e),
    };
    let (docs, more) = memory_docs(web.data_dir(), w, p);
    if sessions.is_empty() && docs.is_empty() {
        return json_error(404, &format!("no project {w}/{p}"));
    }
    json_response(
        200,
        json!({
            "workspace": w,
            "project": p,
            "sessions": sessions.iter().map(session_json).collect::<Vec<_>>(),
            "memory": docs.iter().map(|d| json!({
                "path": d.path, "bytes": d.bytes, "updated_at": d.updated_at,
            })).collect::<Vec<_>>(),
            "memory_cut": more,
        }),
    )
}

fn session(db: &dyn Database, row: i64) -> Response {
    let found = browse(db, |s| {
        let Some(head) = s.browse_session(row)? else {
            return Ok(None);
        };
        Ok(Some((head, s.browse_records(row, MAX_SESSION_RECORDS)?)))
    });
    match found {
        Ok(Some((s, records))) => json_response(
            200,
            json!({
                "session": session_json(&s),
                "records": records.iter().map(record_json).collect::<Vec<_>>(),
            }),
        ),
        Ok(None) => json_error(404, "no such session"),
        Err(e) => store_error(&e),
    }
}

/// A snippet as pieces: `[{"text": …, "hit": bool}]`.
pub(super) fn snippet_pieces(snippet: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut push = |text: &str, hit: bool| {
        let text = text.replace([HIT_START, HIT_END], "");
        if !text.is_empty() {
            out.push(json!({"text": text, "hit": hit}));
        }
    };
    for (i, part) in snippet.split(HIT_START).enumerate() {
        match part.split_once(HIT_END) {
            Some((hit, rest)) if i > 0 => {
                push(hit, true);
                push(rest, false);
            }
            _ => push(part, false),
        }
    }
    out
}

fn search(req: &Req<'_>, db: &dyn Database) -> Response {
    let Some(q) = req.query.get("q") else {
        return json_error(400, "query parameter `q` is required");
    };
    let scope = match req.query.get("project") {
        None => None,
        Some(v) => match project_arg(v) {
            Some(s) => Some(s),
            None => return json_error(400, "`project` must be WORKSPACE/PROJECT"),
        },
    };
    let limit = match req.query.get("limit").map(str::parse::<usize>) {
        None => SEARCH_RESULTS,
        Some(Ok(n)) if (1..=SEARCH_RESULTS).contains(&n) => n,
        Some(_) => return json_error(400, &format!("`limit` must be 1-{SEARCH_RESULTS}")),
    };
    let hits = match browse(db, |s| {
        s.browse_search(
            scope.as_ref().map(|(w, p)| (w.as_str(), p.as_str())),
            q,
            limit,
        )
    }) {
        Ok(h) => h,
        Err(e) => return store_error(&e),
    };
    json_response(
        200,
        json!({
            "query": q,
            "project": scope.map(|(w, p)| format!("{w}/{p}")),
            "results": hits.iter().map(|h| json!({
                "id": h.key,
                "at": rfc3339_ms(h.occurred_ms),
                "workspace": h.workspace,
                "project": h.project,
                "session": h.session_row,
                "session_id": h.session_id,
                "agent": h.agent,
                "event": h.event,
                "tool_family": h.tool_family,
                "snippet": snippet_pieces(&h.snippet),
            })).collect::<Vec<_>>(),
        }),
    )
}

/// The HTTP status of a memory answer.
fn memory_status(o: Outcome) -> u16 {
    match o {
        Outcome::Ok => 200,
        Outcome::NotFound => 404,
        Outcome::Refused => 400,
        Outcome::Failed => 500,
        Outcome::Conflict | Outcome::Missing => 409,
    }
}

fn memory(web: &Web, req: &Req<'_>, w: &str, p: &str) -> Response {
    let store = match MemoryStore::new(web.data_dir(), w, p) {
        Ok(s) => s,
        Err(e) => return json_error(400, &e.to_string()),
    };
    let answer = if req.head.method == "GET" {
        store.read(req.query.get("path").unwrap_or(INDEX_PATH))
    } else {
        let v: Value = match serde_json::from_slice(req.body) {
            Ok(v) => v,
            Err(e) => return json_error(400, &format!("request body is not JSON: {e}")),
        };
        let field = |k: &str| v.get(k).and_then(Value::as_str);
        let (Some(path), Some(content), Some(version)) =
            (field("path"), field("content"), field("if_version"))
        else {
            return json_error(
                400,
                "send {\"path\", \"content\", \"if_version\"} (if_version: the version you read, \
                 or \"new\")",
            );
        };
        store.write(path, content, version)
    };
    let code = memory_status(answer.outcome);
    json_response(code, serde_json::to_value(&answer).unwrap_or(Value::Null))
}

fn forget(req: &Req<'_>, db: &dyn Database) -> Response {
    let v: Value = match serde_json::from_slice(req.body) {
        Ok(Value::Object(m)) => Value::Object(m),
        _ => return json_error(400, "send a JSON object"),
    };
    let field = |k: &str| v.get(k).and_then(Value::as_str);
    let apply = v.get("apply").and_then(Value::as_bool).unwrap_or(false);
    let parsed = Selector::parse(
        field("record"),
        field("session"),
        field("project"),
        field("before"),
    );
    let sel = match parsed {
        Ok(s) => s,
        Err(e) => return json_error(400, &e.to_string().replace("--", "")),
    };
    match memhook_sinks::forget::forget_in_database(db, &sel, apply) {
        Ok(r) => {
            let f = r.stored.clone().unwrap_or_default();
            json_response(
                200,
                json!({
                    "applied": r.applied,
                    "selector": sel.describe(),
                    "records": f.records,
                    "sessions": f.sessions,
                    "projects": f.projects,
                    "pending": r.pending,
                    "wal_emptied": r.applied && !r.wal_pending(),
                }),
            )
        }
        Err(e) => json_error(409, &e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_become_pieces() {
        let s = format!("a {HIT_START}b{HIT_END} c");
        assert_eq!(
            snippet_pieces(&s),
            vec![
                json!({"text": "a ", "hit": false}),
                json!({"text": "b", "hit": true}),
                json!({"text": " c", "hit": false}),
            ]
        );
        assert!(snippet_pieces("").is_empty());
    }

    #[test]
    fn memory_outcomes_have_statuses() {
        assert_eq!(memory_status(Outcome::Ok), 200);
        assert_eq!(memory_status(Outcome::Conflict), 409);
        assert_eq!(memory_status(Outcome::Missing), 409);
        assert_eq!(memory_status(Outcome::Refused), 400);
    }
}
