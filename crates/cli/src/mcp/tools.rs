//! The memory tools and the activity tools: definitions (name, description,
//! input schema) and calls. Each call answers with one outcome object
//! ([`Answer`]).

use serde_json::{json, Map, Value};

pub use super::call::{s, BadCall, Context};
use memhook_store::memory::search::terms;
use memhook_store::memory::{Answer, Entry, Outcome};

/// Default and largest `limit` of `memory_search`.
pub const SEARCH_DEFAULT_LIMIT: usize = 10;
pub const SEARCH_MAX_LIMIT: usize = 50;

/// One tool: its name, argument table and description, in one place.
struct Tool {
    name: &'static str,
    /// Human-readable title (MCP `annotations.title`).
    title: &'static str,
    /// The tool changes nothing (MCP `annotations.readOnlyHint`).
    read_only: bool,
    description: &'static str,
    /// `(name, JSON type, required, description)`.
    args: &'static [(&'static str, &'static str, bool, &'static str)],
}

const TOOLS: &[Tool] = &[
    Tool {
        name: "memory_list",
        title: "List project memory",
        read_only: true,
        description: "List the project's memory documents (sorted by path, 50 per page) with their size and \
            last change. The /MEMORY.md index shown at session start is usually enough: list only when it \
            does not point you to what you need. Pass nextCursor from the previous page as cursor to continue.",
        args: &[
            ("path_prefix", "string", false, "Only documents under this virtual directory (or this one document), e.g. /notes. Default: /"),
            ("cursor", "string", false, "nextCursor of the previous page"),
        ],
    },
    Tool {
        name: "memory_read",
        title: "Read a memory document",
        read_only: true,
        description: "Read one memory document. Returns its content and version; pass that version as \
            if_version when you write the document back.",
        args: &[("path", "string", true, "Virtual absolute path, e.g. /MEMORY.md or /notes/build.md")],
    },
    Tool {
        name: "memory_write",
        title: "Write a memory document",
        read_only: false,
        description: "Create or replace a whole memory document (Markdown, at most 100 KiB). Use \
            if_version=\"new\" to create a document, or the version from memory_read to replace one. If \
            someone changed it meanwhile you get outcome \"conflict\" with currentContent and \
            currentVersion: merge, then retry with currentVersion. Keep /MEMORY.md a short index (one line \
            per document, with its path); sessions load only its first 200 lines. Save lasting lessons and \
            decisions, not logs or secrets.",
        args: &[
            ("path", "string", true, "Virtual absolute path, e.g. /notes/build.md; no '.', '..', hidden or reserved (skills, commands, agents, hooks) segments, no Windows device names (CON, NUL, COM1…) or : < > \" | ? *, one script per word, and not a case variant of an existing name"),
            ("content", "string", true, "The complete new text of the document"),
            ("if_version", "string", true, "\"new\" to create, else the version this text is based on"),
        ],
    },
    Tool {
        name: "memory_search",
        title: "Search memory and past sessions",
        read_only: true,
        description: "Search this project's memory documents and the activity memhook captured from past \
            sessions (prompts, tool results, failures) for any of the given words.",
        args: &[
            ("query", "string", true, "Words to look for"),
            ("limit", "integer", false, "Most results to return (1-50, default 10)"),
        ],
    },
    Tool {
        name: "activity_search",
        title: "Search past activity",
        read_only: true,
        description: "Step 1 of 3 for past sessions: find captured activity (prompts, tool results, \
            failures) holding every given word in any inflection (retries finds retry; parse date finds \
            parse_date and parseDate). Best match first, recent ones lifted. Returns compact rows (id, when, \
            agent, event, one line, and why it matched: the matched words between **, or (by meaning) \
            for records close in meaning that follow when the words find fewer than limit); \
            then use activity_timeline for what happened around one, and activity_get for whole records.",
        args: &[
            ("query", "string", true, "Words that must all appear, in any inflection (no query syntax)"),
            ("scope", "string", false, "\"project\" (default) or \"all\" (only where the project allows recall across projects)"),
            ("since", "string", false, "Only from this UTC date or time on: YYYY-MM-DD or YYYY-MM-DDTHH:MMZ"),
            ("until", "string", false, "Only before this UTC date or time"),
            ("limit", "integer", false, "Most rows to return (1-50, default 20)"),
        ],
    },
    Tool {
        name: "activity_timeline",
        title: "Activity around one record",
        read_only: true,
        description: "Step 2 of 3: the records of the same session just before and after one record \
            (by its id from activity_search or the session-start briefing, or the best hit of a query), \
            in time order, as compact rows.",
        args: &[
            ("id", "string", false, "A record id (its first 8 or more characters)"),
            ("query", "string", false, "Words: the best matching record is the anchor (when no id)"),
            ("before", "integer", false, "Records before the anchor (0-20, default 5)"),
            ("after", "integer", false, "Records after the anchor (0-20, default 5)"),
        ],
    },
    Tool {
        name: "activity_get",
        title: "Get whole records",
        read_only: true,
        description: "Step 3 of 3: whole captured records (prompt text, tool output excerpt, files, \
            outcome) for up to 10 ids.",
        args: &[("ids", "array", true, "Record ids (their first 8 or more characters)")],
    },
];

/// The `tools/list` result.
pub fn list() -> Value {
    let tools: Vec<Value> = TOOLS
        .iter()
        .map(|t| {
            let mut props = Map::new();
            for (name, ty, _, desc) in t.args {
                let mut p = json!({"type": ty, "description": desc});
                match (t.name, *name) {
                    ("memory_write", "if_version") => {
                        p["maxLength"] = json!(memhook_store::memory::MAX_VERSION_LEN)
                    }
                    ("memory_write", "content") => {
                        p["maxLength"] = json!(memhook_store::memory::content::MAX_DOC_BYTES)
                    }
                    (_, "path") | (_, "path_prefix") => {
                        p["maxLength"] = json!(memhook_store::memory::path::MAX_PATH_BYTES)
                    }
                    (_, "limit") => {
                        p["minimum"] = json!(1);
                        p["maximum"] = json!(SEARCH_MAX_LIMIT);
                    }
                    (_, "before") | (_, "after") => {
                        p["minimum"] = json!(0);
                        p["maximum"] = json!(super::activity::MAX_AROUND);
                    }
                    (_, "ids") => {
                        p["items"] = json!({"type": "string"});
                        p["maxItems"] = json!(super::activity::MAX_GET_IDS);
                    }
                    _ => {}
                }
                props.insert(name.to_string(), p);
            }
            let required: Vec<&str> = t.args.iter().filter(|a| a.2).map(|a| a.0).collect();
            json!({
                "name": t.name,
                "description": t.description,
                "inputSchema": {
                    "type": "object",
                    "properties": props,
                    "required": required,
                    "additionalProperties": false,
                },
                "annotations": {
                    "title": t.title,
                    "readOnlyHint": t.read_only,
                    // Writes replace a document only after a version check
                    // and memory has no delete.
                    "destructiveHint": false,
                    "openWorldHint": false,
                },
            })
        })
        .collect();
    json!({ "tools": tools })
}

/// Check `args` against the tool's table: no unknown keys, required keys
/// present, types right.
fn check_args(tool: &Tool, args: &Map<String, Value>) -> Result<(), BadCall> {
    for key in args.keys() {
        if !tool.args.iter().any(|a| a.0 == key) {
            let known: Vec<&str> = tool.args.iter().map(|a| a.0).collect();
            return Err(BadCall(format!(
                "{}: unknown argument {key:?} (arguments: {})",
                tool.name,
                known.join(", ")
            )));
        }
    }
    for (name, ty, required, _) in tool.args {
        match args.get(*name) {
            None | Some(Value::Null) if *required => {
                return Err(BadCall(format!(
                    "{}: missing required argument {name:?}",
                    tool.name
                )))
            }
            None | Some(Value::Null) => {}
            Some(v) => {
                let ok = match *ty {
                    "string" => v.is_string(),
                    "integer" => v.is_u64() || v.is_i64(),
                    "array" => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
                    _ => true,
                };
                if !ok {
                    return Err(BadCall(format!(
                        "{}: argument {name:?} must be a {ty}",
                        tool.name
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Run the tool `name` with `args`. `Err` only for a malformed call; every
/// memory problem is an outcome inside the [`Answer`].
pub fn call(ctx: &Context<'_>, name: &str, args: &Map<String, Value>) -> Result<Answer, BadCall> {
    let Some(tool) = TOOLS.iter().find(|t| t.name == name) else {
        let known: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
        return Err(BadCall(format!(
            "unknown tool {name:?} (tools: {})",
            known.join(", ")
        )));
    };
    check_args(tool, args)?;
    let answer = match name {
        "memory_list" => ctx.store.list(s(args, "path_prefix"), s(args, "cursor")),
        "memory_read" => ctx.store.read(s(args, "path").unwrap_or_default()),
        "memory_write" => ctx.store.write(
            s(args, "path").unwrap_or_default(),
            s(args, "content").unwrap_or_default(),
            s(args, "if_version").unwrap_or_default(),
        ),
        "activity_search" | "activity_timeline" | "activity_get" => {
            super::activity::call(ctx, name, args)?
        }
        "memory_search" => {
            let limit = match args.get("limit").and_then(Value::as_i64) {
                None => SEARCH_DEFAULT_LIMIT,
                Some(n) if (1..=SEARCH_MAX_LIMIT as i64).contains(&n) => n as usize,
                Some(n) => {
                    return Err(BadCall(format!(
                        "memory_search: limit {n} is outside 1-{SEARCH_MAX_LIMIT}"
                    )))
                }
            };
            search(ctx, s(args, "query").unwrap_or_default(), limit)
        }
        _ => unreachable!("every tool in TOOLS is dispatched"),
    };
    Ok(answer)
}

/// `memory_search`: documents of this scope and captured records,
/// interleaved (best of each first), at most `limit`.
fn search(ctx: &Context<'_>, query: &str, limit: usize) -> Answer {
    let words = terms(query);
    if words.is_empty() {
        return Answer::problem(
            Outcome::Refused,
            "",
            "empty_query",
            "the query has no words to look for".into(),
        );
    }
    let docs = match ctx.store.search_documents(query, limit) {
        Ok(d) => d,
        Err(e) => return Answer::from_error("", &e),
    };
    let scope = (!ctx.default_global).then_some((ctx.workspace, ctx.project));
    let (records, warning) = match ctx.records.search(scope, query, limit) {
        Ok(r) => (r, None),
        Err(e) => (
            Vec::new(),
            Some(format!("captured records could not be searched: {e}")),
        ),
    };
    let mut docs = docs.into_iter().map(|d| Entry {
        source: Some("memory"),
        path: Some(d.path),
        updated_at: d.updated_at,
        snippet: Some(d.snippet),
        ..Entry::default()
    });
    let mut records = records.into_iter().map(|r| Entry {
        source: Some("record"),
        workspace: Some(r.workspace),
        project: Some(r.project),
        session_id: r.session_id,
        event: Some(r.event),
        updated_at: r.at_ms.map(memhook_core::timefmt::rfc3339_ms),
        snippet: Some(r.snippet),
        ..Entry::default()
    });
    let mut entries = Vec::new();
    loop {
        let (d, r) = (docs.next(), records.next());
        if d.is_none() && r.is_none() {
            break;
        }
        entries.extend(d);
        entries.extend(r);
    }
    entries.truncate(limit);
    let mut a = Answer::new(Outcome::Ok, "");
    if entries.is_empty() {
        a.message = Some("nothing matched; try other words".into());
    }
    a.entries = Some(entries);
    a.warning = warning;
    a
}

/// The `tools/call` result for an answer: the object as
/// `structuredContent` and as compact JSON text. `isError` is set when the
/// requested action did not happen (`refused`, `failed`, `conflict`,
/// `missing`); `ok` and `not_found` are answers, not errors.
pub fn result(answer: &Answer) -> Value {
    let obj = serde_json::to_value(answer).expect("answers serialise");
    let text = serde_json::to_string(&obj).expect("answers serialise");
    let is_error = !matches!(answer.outcome, Outcome::Ok | Outcome::NotFound);
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": obj,
        "isError": is_error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::records::{NoRecords, RecordHit, RecordSearch};
    use memhook_store::memory::MemoryStore;

    struct Fixed(Result<Vec<RecordHit>, String>);
    impl crate::mcp::records::RecordFetch for Fixed {}
    impl RecordSearch for Fixed {
        fn search(
            &self,
            scope: Option<(&str, &str)>,
            q: &str,
            limit: usize,
        ) -> Result<Vec<RecordHit>, String> {
            assert_eq!(scope, Some(("acme", "api")));
            assert_eq!(q, "flaky test");
            assert!(limit >= 1);
            self.0.clone()
        }
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn tool_list_has_schemas() {
        let l = list();
        let tools = l["tools"].as_array().unwrap();
        let names: Vec<_> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "memory_list",
                "memory_read",
                "memory_write",
                "memory_search",
                "activity_search",
                "activity_timeline",
                "activity_get"
            ]
        );
        let w = &tools[2]["inputSchema"];
        assert_eq!(w["required"], json!(["path", "content", "if_version"]));
        assert_eq!(w["additionalProperties"], json!(false));
        assert_eq!(w["properties"]["if_version"]["maxLength"], json!(64));
        assert_eq!(tools[2]["annotations"]["readOnlyHint"], json!(false));
        assert_eq!(tools[1]["annotations"]["readOnlyHint"], json!(true));
        assert!(tools
            .iter()
            .all(|t| t["description"].as_str().unwrap().len() > 40));
    }

    #[test]
    fn malformed_calls_are_bad_calls() {
        let t = tempfile::tempdir().unwrap();
        let store = MemoryStore::new(t.path(), "acme", "api").unwrap();
        let ctx = Context {
            store: &store,
            records: &NoRecords,
            workspace: "acme",
            project: "api",
            default_global: false,
        };
        for (name, a) in [
            ("memory_nope", json!({})),
            ("memory_read", json!({})),
            ("memory_read", json!({"path": 3})),
            ("memory_read", json!({"path": "/a", "extra": 1})),
            ("memory_write", json!({"path": "/a", "content": "x"})),
            ("memory_search", json!({"query": "x", "limit": 0})),
            ("memory_search", json!({"query": "x", "limit": 51})),
            ("memory_search", json!({"query": "x", "limit": "5"})),
        ] {
            assert!(call(&ctx, name, &args(a.clone())).is_err(), "{name} {a}");
        }
        assert!(call(&ctx, "memory_list", &Map::new()).is_ok());
    }

    #[test]
    fn search_interleaves_documents_and_records() {
        let t = tempfile::tempdir().unwrap();
        let store = MemoryStore::new(t.path(), "acme", "api").unwrap();
        store.write("/notes/tests.md", "the flaky test needs one thread", "new");
        let hit = RecordHit {
            workspace: "acme".into(),
            project: "api".into(),
            session_id: Some("s1".into()),
            event: "PostToolUse".into(),
            at_ms: Some(0),
            snippet: "test failed: flaky".into(),
        };
        let records = Fixed(Ok(vec![hit.clone(), hit]));
        let ctx = Context {
            store: &store,
            records: &records,
            workspace: "acme",
            project: "api",
            default_global: false,
        };
        let a = call(&ctx, "memory_search", &args(json!({"query": "flaky test"}))).unwrap();
        let e = a.entries.unwrap();
        let sources: Vec<_> = e.iter().map(|e| e.source.unwrap()).collect();
        assert_eq!(sources, ["memory", "record", "record"]);
        assert_eq!(e[1].updated_at.as_deref(), Some("1970-01-01T00:00:00.000Z"));
        let a = call(
            &ctx,
            "memory_search",
            &args(json!({"query": "flaky test", "limit": 2})),
        )
        .unwrap();
        assert_eq!(a.entries.unwrap().len(), 2);

        let broken = Fixed(Err("database is locked".into()));
        let ctx = Context {
            records: &broken,
            ..ctx
        };
        let a = call(&ctx, "memory_search", &args(json!({"query": "flaky test"}))).unwrap();
        assert_eq!(a.outcome, Outcome::Ok);
        assert_eq!(a.entries.unwrap().len(), 1);
        assert!(a.warning.unwrap().contains("database is locked"));

        let a = call(&ctx, "memory_search", &args(json!({"query": "  ,, "}))).unwrap();
        assert_eq!(
            (a.outcome, a.reason),
            (Outcome::Refused, Some("empty_query"))
        );
    }

    #[test]
    fn results_carry_structured_and_text_content() {
        let mut a = Answer::new(Outcome::Conflict, "/x.md");
        a.current_version = Some("abc".into());
        let r = result(&a);
        assert_eq!(r["isError"], json!(true));
        assert_eq!(r["structuredContent"]["outcome"], json!("conflict"));
        assert_eq!(r["structuredContent"]["currentVersion"], json!("abc"));
        let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, r["structuredContent"]);
        assert_eq!(
            result(&Answer::new(Outcome::NotFound, "/x"))["isError"],
            json!(false)
        );
        assert_eq!(
            result(&Answer::new(Outcome::Ok, "/x"))["isError"],
            json!(false)
        );
    }
}
