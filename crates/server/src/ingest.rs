//! Turning what a client sent into records: a memhook body's exact record
//! (checked, bounded, and passed through the hook's redaction and hygiene),
//! or a plain ai-memory payload built by the hook's own pipeline.
//! Every text a client sends is cleaned exactly as `memhook hook` cleans
//! it (`record::clean_capped`, i.e. `redact::clean` then the cap) before it
//! is stored: private spans, terminal control sequences and secrets never
//! reach the store, whoever sent them.

use std::path::Path;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::Answer;
use memhook_core::names;
use memhook_core::record::check::{self, valid_client_key, Origin};
use memhook_core::record::Record;
use memhook_core::scope;
use memhook_delivery::wire::{self, Query};
use memhook_sinks::http::MAX_BATCH_ITEMS;

pub use memhook_core::record::check::{
    MAX_BODY_BYTES as MAX_RECORD_BODY_BYTES, MAX_CLIENT_FILES as MAX_RECORD_FILES,
    MAX_CLIENT_KEY_LEN as MAX_INGEST_KEY_LEN, MAX_SHORT_FIELD,
};
pub use memhook_core::record::{MAX_PATH_BYTES, MAX_TITLE_CHARS};

/// What to do with one hook item.
#[derive(Debug)]
pub(super) enum Prepared {
    Store(Box<Record>),
    /// Accepted and deliberately not stored.
    Skip(&'static str),
}

/// The 413 answer to a batch of `n` items.
fn too_many_items(n: usize) -> Answer {
    Answer::json(
        413,
        json!({"accepted": 0, "error": format!(
            "batch of {n} items; at most {MAX_BATCH_ITEMS} per request")}),
    )
}

/// One batch item as a memhook client sends it, borrowed from the request
/// body: its `url` and its body left unparsed.
#[derive(Deserialize)]
struct RawItem<'a> {
    #[serde(borrow)]
    url: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    body: &'a RawValue,
}

/// The batch read without JSON trees: every item `{url, body}` and every
/// body a memhook body (read as [`MemhookBody`]; any other body as a tree).
/// `None` when anything is unusual (not an array of such items, too many
/// items, a body that is not JSON): [`tree_batch`] then answers it exactly
/// as before, with its messages.
pub(super) fn fast_batch(body: &[u8]) -> Option<Vec<Result<Prepared, String>>> {
    let items: Vec<RawItem> = serde_json::from_slice(body).ok()?;
    if items.len() > MAX_BATCH_ITEMS {
        return None;
    }
    let mut out = Vec::with_capacity(items.len());
    for item in &items {
        let query = match Query::of_url(&item.url) {
            Ok(q) => q,
            Err(e) => {
                out.push(Err(e));
                continue;
            }
        };
        out.push(prepare_text(&query, item.body.get()).ok()?);
    }
    Some(out)
}

/// Prepare one hook body given as JSON text: a memhook client's body is
/// read without a tree ([`MemhookBody`]), anything else as a tree (whose
/// error, when the text is not JSON, is returned).
pub(super) fn prepare_text(
    query: &Query,
    text: &str,
) -> Result<Result<Prepared, String>, serde_json::Error> {
    if let Ok(b) = serde_json::from_str::<Box<MemhookBody>>(text) {
        return Ok(prepare_body(query, Body::Memhook(b)));
    }
    serde_json::from_str::<Value>(text).map(|v| prepare(query, &v))
}

/// The batch read as a JSON tree: any shape, every error named.
pub(super) fn tree_batch(body: &[u8]) -> Result<Vec<Result<Prepared, String>>, Answer> {
    let items: Vec<Value> = match serde_json::from_slice(body) {
        Ok(Value::Array(a)) => a,
        Ok(_) => {
            return Err(Answer::error(
                400,
                "batch body must be a JSON array of {url, body}",
            ))
        }
        Err(e) => return Err(Answer::error(400, format!("batch body is not JSON: {e}"))),
    };
    if items.len() > MAX_BATCH_ITEMS {
        return Err(too_many_items(items.len()));
    }
    Ok(items
        .iter()
        .map(|item| match item.get("url").and_then(Value::as_str) {
            None => Err("item has no string `url`".to_string()),
            Some(url) => Query::of_url(url)
                .and_then(|q| prepare(&q, item.get("body").unwrap_or(&Value::Null))),
        })
        .collect())
}

/// Validate a scope name given as query parameter `param`.
pub(super) fn check_name(param: &str, value: &str) -> Result<(), String> {
    if names::is_valid_name(value) {
        Ok(())
    } else {
        Err(format!(
            "query parameter `{param}`: {}",
            names::name_problem(value)
        ))
    }
}

/// A memhook client's hook body, read without a JSON tree: the exact record
/// plus the few payload members [`prepare_body`] looks at (the rest of the
/// payload is skipped). A body without a well-formed record member, with a
/// member given twice, or not an object at all does not parse as this and is
/// read as a [`Value`] instead.
#[derive(Deserialize)]
struct MemhookBody {
    memhook_record: Record,
    #[serde(rename = "_ai_memory_capture", default)]
    capture: Option<Value>,
    #[serde(default)]
    agent_id: Option<Value>,
    #[serde(default)]
    agent_type: Option<Value>,
    #[serde(rename = "subagentType", default)]
    subagent_type_camel: Option<Value>,
    #[serde(default)]
    subagent_type: Option<Value>,
}

/// A hook body as [`prepare_body`] sees it.
enum Body<'a> {
    /// Any JSON value (plain ai-memory payloads, unusual bodies).
    Tree(&'a Value),
    /// A memhook client's body.
    Memhook(Box<MemhookBody>),
}

impl Body<'_> {
    /// `_ai_memory_capture.disposition == "drop"`: the client's policy excluded it.
    fn capture_dropped(&self) -> bool {
        let capture = match self {
            Body::Tree(v) => v.get(wire::CAPTURE_MEMBER),
            Body::Memhook(b) => b.capture.as_ref(),
        };
        capture
            .and_then(|c| c.get("disposition"))
            .and_then(Value::as_str)
            == Some("drop")
    }

    /// The payload carries a subagent marker (`agent_id`, `agent_type`, `subagentType`).
    fn is_subagent(&self) -> bool {
        let marks = match self {
            Body::Tree(v) => {
                ["agent_id", "agent_type", "subagentType", "subagent_type"].map(|k| v.get(k))
            }
            Body::Memhook(b) => [
                b.agent_id.as_ref(),
                b.agent_type.as_ref(),
                b.subagent_type_camel.as_ref(),
                b.subagent_type.as_ref(),
            ],
        };
        marks.iter().any(|m| {
            m.and_then(Value::as_str)
                .is_some_and(|s| !s.trim().is_empty())
        })
    }
}

/// Turn one hook request (query + body) into a record to store, or a
/// deliberate skip, or a 400 message naming what is wrong.
pub(super) fn prepare(query: &Query, body: &Value) -> Result<Prepared, String> {
    prepare_body(query, Body::Tree(body))
}

/// [`prepare`] for a body read either way.
fn prepare_body(query: &Query, body: Body) -> Result<Prepared, String> {
    for p in ["workspace", "project"] {
        if let Some(v) = query.get(p) {
            check_name(p, v)?;
        }
    }
    let event = query
        .get("event")
        .ok_or("query parameter `event` is required (e.g. event=post-tool-use)")?;
    if let Some(k) = query.get("ingest_key") {
        if !valid_client_key(k) {
            return Err(format!(
                "query parameter `ingest_key`: must be 1-{MAX_INGEST_KEY_LEN} of A-Z a-z 0-9 '-' '_'"
            ));
        }
    }
    if let Body::Tree(v) = &body {
        if !v.is_object() {
            return Err(format!(
                "request body must be a JSON object (an agent's hook payload or a memhook \
                 body), not {}",
                kind_of(v)
            ));
        }
    }
    if body.capture_dropped() {
        return Ok(Prepared::Skip("capture policy dropped"));
    }
    let subagent_payload = body.is_subagent();
    let mut record = match body {
        Body::Tree(v) => match v.get(wire::RECORD_MEMBER) {
            Some(r) => exact_record(query, r)?,
            None => plain_record(query, event, v)?,
        },
        Body::Memhook(b) => checked_record(query, b.memhook_record)?,
    };
    let drop_subagent = query.truthy("drop_subagent") || record.scope.drop_subagent;
    if drop_subagent && (record.subagent || subagent_payload) {
        return Ok(Prepared::Skip("subagent capture dropped"));
    }
    check::strip_metadata_only(&mut record);
    Ok(Prepared::Store(Box::new(record)))
}

/// Whatever a client sent, a metadata-only record carries no text.
/// A memhook client's exact record, checked: version, key, names, bounds,
/// and agreement with the query.
fn exact_record(query: &Query, raw: &Value) -> Result<Record, String> {
    let r = Record::deserialize(raw).map_err(|e| {
        format!(
            "body member `{}` is not a memhook record: {e}",
            wire::RECORD_MEMBER
        )
    })?;
    checked_record(query, r)
}

/// [`exact_record`]'s checks on a record already read.
fn checked_record(query: &Query, r: Record) -> Result<Record, String> {
    if let Some(problem) = check::problem(&r, Origin::Client) {
        return Err(problem);
    }
    for (field, value, given) in [
        ("workspace", &r.scope.workspace, query.get("workspace")),
        ("project", &r.scope.project, query.get("project")),
        ("ingest_key", &r.key, query.get("ingest_key")),
    ] {
        if let Some(g) = given {
            if g != value {
                return Err(format!(
                    "query parameter `{field}` ({g:?}) disagrees with the record ({value:?})"
                ));
            }
        }
    }
    let mut r = r;
    check::clean(&mut r);
    Ok(r)
}

/// What JSON value `v` is, for messages.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A name made from free text: lowercase, invalid bytes → `-`.
pub(super) fn derive_name(text: &str) -> Option<String> {
    let s: String = text
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_start_matches(['.', '_', '-']);
    let s: String = s.chars().take(names::MAX_NAME_LEN).collect();
    names::is_valid_name(&s).then_some(s)
}

/// Derive a 32-hex store key from a client's ingest key (a 32-hex key is
/// kept as is), so the same ingest key always lands on the same record.
fn store_key(ingest: &str) -> String {
    if ingest.len() == 32
        && ingest
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return ingest.to_string();
    }
    let d = Sha256::digest(ingest.as_bytes());
    memhook_core::hex::encode(&d[..16])
}

/// A record from a plain ai-memory agent payload (no `memhook_record`),
/// built by the hook's own pipeline: the payload is normalised per agent
/// (`event::normalize`), the capture disposition the client reported in
/// `_ai_memory_capture` is honoured (the server has no marker of its own),
/// and `record::build` bounds and redacts every text exactly as the hook
/// does. The scope comes from the query.
fn plain_record(query: &Query, event_name: &str, body: &Value) -> Result<Record, String> {
    use memhook_core::capture::{self, Disposition, ToolFamily};
    use memhook_core::scope::{CaptureConfig, Scope, Settings, Source, Strategy};
    let agent = if body.get("cursor_version").is_some() {
        "cursor"
    } else {
        query.get("agent").unwrap_or("generic")
    };
    let mut event = memhook_core::event::normalize(agent, Some(event_name), body);
    if event.cwd.is_none() {
        event.cwd = query.get("cwd").map(str::to_string);
    }
    if event.session_id.is_none() {
        event.session_id = query.get("session_id").map(str::to_string);
    }
    let project = match query.get("project") {
        Some(p) => p.to_string(),
        None => event
            .cwd
            .as_deref()
            .and_then(|c| Path::new(c).file_name())
            .and_then(|n| n.to_str())
            .and_then(derive_name)
            .ok_or("query parameter `project` is required when the cwd gives no usable name")?,
    };
    let scope = Scope {
        workspace: query.get("workspace").unwrap_or("default").to_string(),
        project,
        workspace_source: Source::Flag,
        project_source: Source::Flag,
        marker: None,
        strategy: match query.get("project_strategy") {
            Some("repo-root" | "repo_root") => Strategy::RepoRoot,
            _ => Strategy::Basename,
        },
        settings: Settings {
            drop_subagent_captures: query.truthy("drop_subagent"),
            default_global: query.truthy("default_global"),
            inject_on_session_start: query.truthy("briefing"),
            max_chars: briefing_budget(query),
            enabled: true,
            file_history: true,
        },
        capture: CaptureConfig::Absent,
        warnings: vec![],
    };
    let mut decision = capture::decide(&scope.capture, None, &event);
    let claimed = body
        .get(wire::CAPTURE_MEMBER)
        .and_then(|c| c.get("disposition"))
        .and_then(Value::as_str);
    if claimed == Some("metadata-only") {
        decision.disposition = Disposition::MetadataOnly;
    }
    let files = if decision.disposition == Disposition::Keep
        && decision.tool_family == ToolFamily::File
        && event.kind.is_post_tool()
    {
        capture::kept_file_paths(&event)
    } else {
        Vec::new()
    };
    let key = match query.get("ingest_key") {
        Some(k) => store_key(k),
        None => memhook_core::record::new_key(),
    };
    let mut record = memhook_core::record::build(
        &event,
        &scope,
        &decision,
        files,
        key,
        memhook_core::timefmt::now_ms(),
    );
    // The server did not resolve this scope: the client's query did.
    record.scope.workspace_source = "query".into();
    record.scope.project_source = match query.get("project_src") {
        Some(src @ ("marker" | "repo-root" | "env" | "flag" | "fallback")) => src.into(),
        _ => "query".into(),
    };
    Ok(record)
}

/// `briefing_budget` clamped like the marker's `max_chars`.
pub(super) fn briefing_budget(query: &Query) -> usize {
    query
        .get("briefing_budget")
        .and_then(|b| b.trim().parse::<usize>().ok())
        .map(|b| b.clamp(scope::MAX_CHARS_MIN, scope::MAX_CHARS_MAX))
        .unwrap_or(scope::MAX_CHARS_DEFAULT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_keys_are_stable() {
        let hex = "0123456789abcdef0123456789abcdef";
        assert_eq!(store_key(hex), hex);
        let k = store_key("some-uuid-with-dashes");
        assert_eq!(k.len(), 32);
        assert_eq!(k, store_key("some-uuid-with-dashes"));
        assert_ne!(k, store_key("other"));
    }

    #[test]
    fn prepare_rejects_bad_names_naming_the_parameter() {
        let q = Query::parse("event=stop&project=Bad%20Name").unwrap();
        let e = prepare(&q, &json!({})).unwrap_err();
        assert!(e.contains("`project`"), "{e}");
        let q = Query::parse("project=p").unwrap();
        assert!(prepare(&q, &json!({})).unwrap_err().contains("`event`"));
        let q = Query::parse("event=stop&project=p&ingest_key=a%20b").unwrap();
        assert!(prepare(&q, &json!({}))
            .unwrap_err()
            .contains("`ingest_key`"));
    }

    #[test]
    fn plain_payloads_go_through_the_record_pipeline() {
        let q = Query::parse("event=UserPromptSubmit&agent=claude-code&workspace=w&ingest_key=abc")
            .unwrap();
        let body = json!({"session_id": "s", "cwd": "/x/My Repo",
            "prompt": "deploy with AKIAIOSFODNN7EXAMPLE please\nthanks"});
        let Prepared::Store(r) = prepare(&q, &body).unwrap() else {
            panic!("stored")
        };
        assert_eq!(r.event, "user-prompt");
        assert_eq!(r.scope.project, "my-repo");
        assert_eq!(r.scope.workspace_source, "query");
        assert_eq!(r.key, store_key("abc"));
        let text = r.body.as_deref().unwrap();
        assert!(
            text.contains("REDACTED") && !text.contains("AKIAIOSFODNN7EXAMPLE"),
            "{text}"
        );
        // A client that reduced the event to metadata is obeyed.
        let q = Query::parse("event=PostToolUse&agent=claude-code&project=p").unwrap();
        let body = json!({"tool_name": "Bash", "tool_use_id": "t1",
            "tool_response": {"stdout": "out"},
            "_ai_memory_capture": {"version": 1, "disposition": "metadata-only"}});
        let Prepared::Store(r) = prepare(&q, &body).unwrap() else {
            panic!("stored")
        };
        assert_eq!(r.disposition, "metadata-only");
        assert!(r.body.is_none() && r.title.is_none());
        assert_eq!(r.tool.as_ref().unwrap().call_id.as_deref(), Some("t1"));
    }

    #[test]
    fn record_bounds_at_their_edges() {
        let base: Record = serde_json::from_value(json!({
            "v": 1, "key": "k", "occurred_ms": 1, "agent": "codex", "event": "user-prompt",
            "native_event": "UserPromptSubmit",
            "scope": {"workspace": "w", "project": "p", "workspace_source": "marker",
                      "project_source": "marker", "project_strategy": "basename"},
            "disposition": "keep"
        }))
        .unwrap();
        let mut r = base.clone();
        r.body = Some("x".repeat(MAX_RECORD_BODY_BYTES));
        r.title = Some("é".repeat(MAX_TITLE_CHARS));
        r.cwd = Some("/".repeat(MAX_PATH_BYTES));
        r.files = vec!["f".into(); MAX_RECORD_FILES];
        assert!(checked_record(&Query::default(), r.clone()).is_ok());
        let mut b = r.clone();
        b.body = Some("x".repeat(MAX_RECORD_BODY_BYTES + 1));
        assert!(checked_record(&Query::default(), b.clone())
            .unwrap_err()
            .contains("`body`"));
        let mut t = r.clone();
        t.title = Some("é".repeat(MAX_TITLE_CHARS + 1));
        assert!(checked_record(&Query::default(), t.clone())
            .unwrap_err()
            .contains("`title`"));
        let mut c = r.clone();
        c.cwd = Some("/".repeat(MAX_PATH_BYTES + 1));
        assert!(checked_record(&Query::default(), c.clone())
            .unwrap_err()
            .contains("`cwd`"));
        let mut f = r;
        f.files.push("g".into());
        assert!(checked_record(&Query::default(), f.clone())
            .unwrap_err()
            .contains("`files`"));
    }

    /// Both ways of reading a body give the same verdict.
    fn both_ways(query: &str, body: &Value) -> String {
        let q = Query::parse(query).unwrap();
        let tree = format!("{:?}", prepare(&q, body));
        let bytes = serde_json::to_vec(body).unwrap();
        let fast = serde_json::from_slice::<Box<MemhookBody>>(&bytes)
            .map(|b| format!("{:?}", prepare_body(&q, Body::Memhook(b))))
            .unwrap_or_else(|_| tree.clone());
        assert_eq!(fast, tree, "{query} {body}");
        tree
    }

    #[test]
    fn typed_bodies_read_like_trees() {
        use memhook_delivery::wire::{hook_body, samples::body_variants};
        for r in body_variants() {
            let body = hook_body(&r);
            for q in [
                "event=stop&project=api&workspace=acme",
                "event=stop&drop_subagent=1",
                "event=stop&project=other",
                "event=stop&ingest_key=nope",
            ] {
                both_ways(q, &body);
            }
            let mut b = body.clone();
            b["agent_id"] = json!("a1");
            assert!(both_ways("event=stop&drop_subagent=1", &b).contains("Skip"));
            b["agent_id"] = json!(" ");
            b["subagentType"] = json!(7);
            both_ways("event=stop&drop_subagent=1", &b);
            b[wire::CAPTURE_MEMBER] = json!({"disposition": "drop"});
            assert!(both_ways("event=stop", &b).contains("capture policy dropped"));
            b[wire::CAPTURE_MEMBER] = json!("drop");
            both_ways("event=stop", &b);
            let mut bad = body.clone();
            bad[wire::RECORD_MEMBER]["key"] = json!("a b");
            assert!(both_ways("event=stop", &bad).contains("`key`"));
            bad[wire::RECORD_MEMBER] = Value::Null;
            assert!(both_ways("event=stop", &bad).contains("not a memhook record"));
        }
    }

    #[test]
    fn fast_batches_read_like_tree_batches() {
        use memhook_delivery::wire::{hook_body, hook_path, samples::body_variants};
        let mut items: Vec<Value> = body_variants()
            .iter()
            .map(|r| json!({"url": hook_path(r), "body": hook_body(r)}))
            .collect();
        items.push(
            json!({"url": "/hook?event=UserPromptSubmit&agent=claude-code&project=p",
            "body": {"session_id": "s", "prompt": "hello"}}),
        );
        items.push(json!({"url": "/hook?event=stop&project=Bad%20Name", "body": {}}));
        items.push(json!({"url": "/hook?event=stop&project=%G1", "body": {}}));
        items.push(json!({"url": "/hook?event=stop", "body": 5}));
        let body = serde_json::to_vec(&items).unwrap();
        let fast = fast_batch(&body).expect("a well-formed batch reads fast");
        let Ok(tree) = tree_batch(&body) else {
            panic!("tree")
        };
        // Plain payloads get fresh keys and times: compare the verdicts' shape.
        let shape = |v: &[Result<Prepared, String>]| -> Vec<String> {
            v.iter()
                .map(|p| match p {
                    Ok(Prepared::Store(r)) if r.scope.workspace_source == "query" => {
                        "plain".to_string()
                    }
                    other => format!("{other:?}"),
                })
                .collect()
        };
        assert_eq!(shape(&fast), shape(&tree));
        assert_eq!(fast.len(), items.len());
        // Unusual batches are left to the tree reader and its messages.
        for odd in [
            &b"{}"[..],
            b"nope",
            br#"[{"body": {}}]"#,
            br#"[{"url": 1, "body": {}}]"#,
        ] {
            assert!(
                fast_batch(odd).is_none(),
                "{}",
                String::from_utf8_lossy(odd)
            );
        }
        let many = serde_json::to_vec(&vec![items[0].clone(); MAX_BATCH_ITEMS + 1]).unwrap();
        assert!(fast_batch(&many).is_none());
        assert!(matches!(tree_batch(&many), Err(Answer { code: 413, .. })));
    }

    #[test]
    fn subagent_and_capture_drops_are_skips() {
        let q = Query::parse("event=stop&project=p&drop_subagent=true").unwrap();
        assert!(matches!(
            prepare(&q, &json!({"agent_id": "a1"})).unwrap(),
            Prepared::Skip("subagent capture dropped")
        ));
        let q = Query::parse("event=stop&project=p").unwrap();
        assert!(matches!(
            prepare(&q, &json!({"agent_id": "a1"})).unwrap(),
            Prepared::Store(_)
        ));
        assert!(matches!(
            prepare(&q, &json!({"_ai_memory_capture": {"disposition": "drop"}})).unwrap(),
            Prepared::Skip("capture policy dropped")
        ));
    }
}
