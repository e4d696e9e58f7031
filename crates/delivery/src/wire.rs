//! The ai-memory hook protocol on the wire, shared by the HTTP client
//! (`sink::http`) and the server (`serve`): percent-encoding, query strings,
//! event names, the request body built from a [`Record`] and the batch reply.
//! `docs/protocol.md` describes the same format for users.

use serde::Serialize;
use serde_json::Value;

use memhook_core::record::Record;

/// Body member carrying the exact record, so `memhook serve` stores what the
/// client spooled byte for byte (an ai-memory server ignores it).
pub const RECORD_MEMBER: &str = "memhook_record";
/// Body member of ai-memory's capture protocol object.
pub const CAPTURE_MEMBER: &str = "_ai_memory_capture";

/// Percent-encode every byte except the unreserved set `A-Z a-z 0-9 - _ . ~`
/// (uppercase hex; multibyte UTF-8 is encoded byte by byte).
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    encode_into(s, &mut out);
    out
}

/// [`encode`], appended to `out`.
pub fn encode_into(s: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let is_plain = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~');
    let mut rest = s;
    while !rest.is_empty() {
        // Copy the longest run of unreserved bytes at once.
        let run = rest.bytes().take_while(|&b| is_plain(b)).count();
        out.push_str(&rest[..run]);
        let bytes = &rest.as_bytes()[run..];
        let esc = bytes.iter().take_while(|&&b| !is_plain(b)).count();
        for &b in &bytes[..esc] {
            out.push('%');
            out.push(char::from(HEX[(b >> 4) as usize]));
            out.push(char::from(HEX[(b & 15) as usize]));
        }
        // `run + esc` ends before an unreserved (ASCII) byte or at the end:
        // always a char boundary.
        rest = &rest[run + esc..];
    }
}

/// Decode one query component: `%XX` escapes and `+` as a space (what HTML
/// forms and most HTTP stacks send). The result must be UTF-8.
pub fn decode(s: &str) -> Result<String, String> {
    if !s.contains(['%', '+']) {
        return Ok(s.to_string());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).ok_or("a '%' escape is cut short")?;
                let hi = (hex[0] as char).to_digit(16);
                let lo = (hex[1] as char).to_digit(16);
                match (hi, lo) {
                    (Some(h), Some(l)) => out.push((h * 16 + l) as u8),
                    _ => return Err("a '%' escape is not followed by two hex digits".into()),
                }
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| "an escaped value is not valid UTF-8".to_string())
}

/// A decoded query string: `(name, value)` pairs in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query(pub Vec<(String, String)>);

impl Query {
    /// Parse the part after `?` (empty pairs are skipped). A malformed
    /// escape names the parameter it is in.
    pub fn parse(q: &str) -> Result<Query, String> {
        let mut out = Vec::new();
        for pair in q.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let k = decode(k).map_err(|e| format!("query parameter name: {e}"))?;
            let v = decode(v).map_err(|e| format!("query parameter `{k}`: {e}"))?;
            out.push((k, v));
        }
        Ok(Query(out))
    }

    /// The query of a URL or path (`/hook?a=b` → `a=b`; no `?` → empty).
    pub fn of_url(url: &str) -> Result<Query, String> {
        match url.split_once('?') {
            Some((_, q)) => Query::parse(q.split('#').next().unwrap_or("")),
            None => Ok(Query::default()),
        }
    }

    /// The first non-blank value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, v)| k == name && !v.trim().is_empty())
            .map(|(_, v)| v.as_str())
    }

    /// Whether `name` holds a truthy value (`1`, `true`, `yes`, `on`).
    pub fn truthy(&self, name: &str) -> bool {
        self.get(name).is_some_and(is_truthy)
    }
}

/// `1` / `true` / `yes` / `on`, trimmed, ASCII case-insensitive.
pub fn is_truthy(v: &str) -> bool {
    let v = v.trim();
    ["1", "true", "yes", "on"]
        .iter()
        .any(|t| v.eq_ignore_ascii_case(t))
}

/// Builds a query string, encoding every value.
#[derive(Debug, Default)]
pub struct QueryBuilder(String);

impl QueryBuilder {
    pub fn push(&mut self, name: &str, value: &str) -> &mut Self {
        self.0.push(if self.0.is_empty() { '?' } else { '&' });
        self.0.push_str(name);
        self.0.push('=');
        encode_into(value, &mut self.0);
        self
    }

    pub fn push_opt(&mut self, name: &str, value: Option<&str>) -> &mut Self {
        if let Some(v) = value {
            self.push(name, v);
        }
        self
    }

    pub fn flag(&mut self, name: &str, on: bool) -> &mut Self {
        if on {
            self.push(name, "1");
        }
        self
    }

    pub fn finish(&self) -> String {
        self.0.clone()
    }

    /// The query built so far (`?a=b&…`, or empty).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Canonical memhook event kind → the spelling an ai-memory server parses.
/// Kinds not listed here are sent as they are.
const WIRE_EVENTS: &[(&str, &str)] = &[
    ("post-tool-use-failure", "PostToolUseFailure"),
    ("post-compact", "post-compaction"),
];

/// The `event` query value for a record.
pub fn wire_event(record: &Record) -> &str {
    if record.event == "other" {
        return &record.native_event;
    }
    WIRE_EVENTS
        .iter()
        .find(|(k, _)| *k == record.event)
        .map(|(_, w)| *w)
        .unwrap_or(&record.event)
}

/// ai-memory's tool-family labels (`shell` is its `non-file`).
fn wire_family(family: &str) -> &'static str {
    match family {
        "file" => "file",
        "search-list" => "search-list",
        "shell" => "non-file",
        _ => "unknown",
    }
}

/// Which payload field carries a record's excerpt, per canonical event.
const EXCERPT_FIELD: &[(&str, &str)] = &[
    ("user-prompt", "prompt"),
    ("post-tool-use", "tool_response"),
    ("post-tool-use-failure", "tool_response"),
    ("notification", "message"),
    ("pre-compact", "summary"),
    ("post-compact", "summary"),
];

/// Path and query of the single-event request for `record`:
/// `/hook?event=…&agent=…&cwd=…&workspace=…&project=…&project_src=…&
/// project_strategy=…[&drop_subagent=1][&default_global=1][&briefing=1]&
/// briefing_budget=…&ingest_key=…`, every value percent-encoded.
pub fn hook_path(record: &Record) -> String {
    let s = &record.scope;
    let mut q = QueryBuilder::default();
    q.push("event", wire_event(record))
        .push("agent", &record.agent)
        .push_opt("cwd", record.cwd.as_deref())
        .push("workspace", &s.workspace)
        .push("project", &s.project)
        .push("project_src", &s.project_source)
        .push("project_strategy", &s.project_strategy)
        .flag("drop_subagent", s.drop_subagent)
        .flag("default_global", s.default_global)
        .flag("briefing", s.briefing)
        .push("briefing_budget", &s.briefing_budget.to_string())
        .push("ingest_key", &record.key);
    format!("/hook{}", q.finish())
}

/// The request body for `record`: the payload fields an ai-memory server
/// reads (never more than the record holds) plus the exact record under
/// [`RECORD_MEMBER`]. (The same members as [`HookBody`], as a tree.)
pub fn hook_body(record: &Record) -> Value {
    serde_json::to_value(HookBody::new(record)).unwrap_or(Value::Null)
}

/// The request body for `record`, serialised straight to JSON (no
/// intermediate tree): members in this order, each only when it applies.
#[derive(Debug, Serialize)]
pub struct HookBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cwd: Option<&'a str>,
    hook_event_name: &'a str,
    occurred_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_family: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_use_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    // The excerpt, under the one field an agent would use for the event.
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_response: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'a str>,
    #[serde(rename = "subagentType", skip_serializing_if = "Option::is_none")]
    subagent_type: Option<&'static str>,
    #[serde(rename = "_ai_memory_capture", skip_serializing_if = "Option::is_none")]
    capture: Option<WireCapture<'a>>,
    memhook_record: &'a Record,
}

/// ai-memory's capture protocol object, keys in its order.
#[derive(Debug, Serialize)]
struct WireCapture<'a> {
    version: u32,
    disposition: &'a str,
    policy_state: &'a str,
    tool_family: &'static str,
    path_count: u32,
    extraction_state: &'a str,
}

impl<'a> HookBody<'a> {
    pub fn new(record: &'a Record) -> HookBody<'a> {
        let metadata_only = record.disposition == "metadata-only";
        let tool = record.tool.as_ref();
        let family = tool.map(|t| wire_family(&t.family));
        // Metadata-only bodies name the family, never the tool (as ai-memory does).
        let tool_name = tool.map(|t| {
            let name = if metadata_only {
                None
            } else {
                t.name.as_deref()
            };
            name.unwrap_or(wire_family(&t.family))
        });
        let call_id = tool.and_then(|t| t.call_id.as_deref());
        let (title, excerpt) = if metadata_only {
            (None, None)
        } else {
            (record.title.as_deref(), record.body.as_deref())
        };
        let field = EXCERPT_FIELD
            .iter()
            .find(|(e, _)| *e == record.event)
            .map(|(_, f)| *f)
            .unwrap_or("message");
        let pick = |name: &str| excerpt.filter(|_| field == name);
        // ai-memory only knows inactive/active/invalid and sends the object
        // when a policy is in force.
        let capture = record
            .capture
            .as_ref()
            .filter(|c| matches!(c.policy_state.as_str(), "active" | "invalid"))
            .map(|c| WireCapture {
                version: c.version,
                disposition: &c.disposition,
                policy_state: &c.policy_state,
                tool_family: wire_family(&c.tool_family),
                path_count: c.path_count,
                extraction_state: &c.extraction_state,
            });
        HookBody {
            session_id: record.session_id.as_deref(),
            cwd: record.cwd.as_deref(),
            hook_event_name: wire_event(record),
            occurred_at: memhook_core::timefmt::rfc3339_ms(record.occurred_ms),
            tool_family: family,
            tool_name,
            tool_use_id: call_id,
            tool_call_id: call_id,
            title,
            prompt: pick("prompt"),
            tool_response: pick("tool_response"),
            message: pick("message"),
            summary: pick("summary"),
            subagent_type: record.subagent.then_some("subagent"),
            capture,
            memhook_record: record,
        }
    }
}

/// One item of a `POST /hook/batch` body: `{"url": <hook_path>, "body": <hook_body>}`.
#[derive(Debug, Serialize)]
pub struct BatchItem<'a> {
    url: String,
    body: HookBody<'a>,
}

impl<'a> BatchItem<'a> {
    pub fn new(record: &'a Record) -> BatchItem<'a> {
        BatchItem {
            url: hook_path(record),
            body: HookBody::new(record),
        }
    }
}

/// Append the `POST /hook/batch` body for `records` (a JSON array of
/// [`BatchItem`]) to `out`, serialised item by item without a tree.
pub fn write_batch<'a>(records: impl IntoIterator<Item = &'a Record>, out: &mut Vec<u8>) {
    out.push(b'[');
    for (i, r) in records.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // Writing into a Vec cannot fail, and every map key is a string.
        let _ = serde_json::to_writer(&mut *out, &BatchItem::new(r));
    }
    out.push(b']');
}

/// What a `POST /hook/batch` reply says was accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchReply {
    /// Indices the server accepted (stored or deliberately not stored).
    pub accepted: Vec<usize>,
    /// The item whose processing failed, if any.
    pub failed_index: Option<usize>,
}

impl BatchReply {
    /// Parse `{"accepted": k, "accepted_indices"?: [..], "failed_index"?: i}`
    /// for a batch of `n` items. Without `accepted_indices` the first `k`
    /// items were accepted. Out-of-range numbers make the reply malformed.
    pub fn parse(text: &str, n: usize) -> Result<BatchReply, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
        let obj = v.as_object().ok_or("not a JSON object")?;
        let k = obj
            .get("accepted")
            .and_then(Value::as_u64)
            .ok_or("no numeric `accepted` member")? as usize;
        if k > n {
            return Err(format!("`accepted` is {k} for a batch of {n}"));
        }
        let accepted = match obj.get("accepted_indices") {
            None | Some(Value::Null) => (0..k).collect(),
            Some(Value::Array(a)) => {
                let mut out = Vec::with_capacity(a.len());
                for x in a {
                    match x.as_u64() {
                        Some(i) if (i as usize) < n => out.push(i as usize),
                        _ => return Err("`accepted_indices` holds a bad index".into()),
                    }
                }
                out
            }
            Some(_) => return Err("`accepted_indices` is not an array".into()),
        };
        let failed_index = match obj.get("failed_index") {
            None | Some(Value::Null) => None,
            Some(x) => match x.as_u64() {
                Some(i) if (i as usize) < n => Some(i as usize),
                _ => return Err("`failed_index` is out of range".into()),
            },
        };
        Ok(BatchReply {
            accepted,
            failed_index,
        })
    }
}

/// Sample records that cover every member and branch of a hook body, for
/// this module's tests and `memhook serve`'s ingest tests (`test-support`).
#[cfg(any(test, feature = "test-support"))]
pub mod samples {
    use memhook_core::record::{CaptureMeta, Record, RecordScope, RecordTool};

    pub fn record(key: &str) -> Record {
        Record {
            event: "user-prompt".into(),
            native_event: "UserPromptSubmit".into(),
            session_id: Some("sess-1".into()),
            cwd: Some("/home/u/my repo".into()),
            scope: RecordScope {
                default_global: true,
                ..memhook_core::record::sample::scope("acme", "api", "marker")
            },
            title: Some("fix the login bug".into()),
            body: Some("fix the login bug\nplease".into()),
            ..memhook_core::record::sample::record(key)
        }
    }

    /// Records covering every member and branch of the body.
    pub fn body_variants() -> Vec<Record> {
        let mut out = vec![record("k0")];
        for (i, event) in [
            "post-tool-use",
            "post-tool-use-failure",
            "notification",
            "pre-compact",
            "post-compact",
            "stop",
            "other",
        ]
        .into_iter()
        .enumerate()
        {
            let mut r = record(&format!("k{i}"));
            r.event = event.into();
            r.native_event = "session.idle \"quoted\" é".into();
            r.tool = Some(RecordTool {
                family: ["file", "search-list", "shell", "mcp"][i % 4].into(),
                name: (i % 2 == 0).then(|| "Bash".into()),
                call_id: (i % 3 != 0).then(|| format!("toolu_{i}")),
                outcome: Some("success".into()),
                exit_code: None,
            });
            r.subagent = i % 2 == 1;
            r.session_id = (i != 3).then(|| "s\u{1}\n".into());
            r.cwd = (i != 4).then(|| r"C:\dev\my app".into());
            r.files = vec!["src/a.rs".into(); i];
            r.capture = Some(CaptureMeta {
                version: 1,
                policy_state: ["active", "invalid", "inactive"][i % 3].into(),
                tool_family: "file".into(),
                path_count: i as u32,
                disposition: "keep".into(),
                extraction_state: "complete".into(),
            });
            if i == 5 {
                r.disposition = "metadata-only".into();
            }
            if i == 6 {
                r.title = None;
                r.body = None;
            }
            out.push(r);
        }
        out
    }
}

#[cfg(test)]
pub mod tests {
    use super::samples::{body_variants, record};
    use super::*;
    use memhook_core::record::{CaptureMeta, RecordTool};
    use serde_json::{json, Map};

    /// The body as it was built before [`HookBody`] (a `Value` tree, member
    /// by member): the typed body must serialise to the same bytes.
    /// The request body for `record`: the payload fields an ai-memory server
    /// reads (never more than the record holds) plus the exact record under
    /// [`RECORD_MEMBER`].
    pub fn reference_body(record: &Record) -> Value {
        let mut m = Map::new();
        if let Some(s) = &record.session_id {
            m.insert("session_id".into(), json!(s));
        }
        if let Some(c) = &record.cwd {
            m.insert("cwd".into(), json!(c));
        }
        m.insert("hook_event_name".into(), json!(wire_event(record)));
        m.insert(
            "occurred_at".into(),
            json!(memhook_core::timefmt::rfc3339_ms(record.occurred_ms)),
        );
        let metadata_only = record.disposition == "metadata-only";
        if let Some(t) = &record.tool {
            let family = wire_family(&t.family);
            m.insert("tool_family".into(), json!(family));
            // Metadata-only bodies name the family, never the tool (as ai-memory does).
            let name = if metadata_only {
                None
            } else {
                t.name.as_deref()
            };
            m.insert("tool_name".into(), json!(name.unwrap_or(family)));
            if let Some(id) = &t.call_id {
                m.insert("tool_use_id".into(), json!(id));
                m.insert("tool_call_id".into(), json!(id));
            }
        }
        if !metadata_only {
            if let Some(title) = &record.title {
                m.insert("title".into(), json!(title));
            }
            if let Some(body) = &record.body {
                let field = EXCERPT_FIELD
                    .iter()
                    .find(|(e, _)| *e == record.event)
                    .map(|(_, f)| *f)
                    .unwrap_or("message");
                m.insert(field.into(), json!(body));
            }
        }
        if record.subagent {
            m.insert("subagentType".into(), json!("subagent"));
        }
        if let Some(c) = &record.capture {
            // ai-memory only knows inactive/active/invalid and sends the object
            // when a policy is in force.
            if matches!(c.policy_state.as_str(), "active" | "invalid") {
                m.insert(
                    CAPTURE_MEMBER.into(),
                    json!({
                        "version": c.version,
                        "disposition": c.disposition,
                        "policy_state": c.policy_state,
                        "tool_family": wire_family(&c.tool_family),
                        "path_count": c.path_count,
                        "extraction_state": c.extraction_state,
                    }),
                );
            }
        }
        m.insert(
            RECORD_MEMBER.into(),
            serde_json::to_value(record).unwrap_or(Value::Null),
        );
        Value::Object(m)
    }

    #[test]
    fn typed_body_is_byte_for_byte_the_tree_body() {
        for r in body_variants() {
            let tree = serde_json::to_vec(&reference_body(&r)).unwrap();
            let typed = serde_json::to_vec(&HookBody::new(&r)).unwrap();
            assert_eq!(
                String::from_utf8(typed).unwrap(),
                String::from_utf8(tree).unwrap()
            );
            assert_eq!(hook_body(&r), reference_body(&r));
        }
    }

    #[test]
    fn batch_body_is_byte_for_byte_the_tree_batch() {
        let records = body_variants();
        let tree: Vec<Value> = records
            .iter()
            .map(|r| json!({"url": hook_path(r), "body": reference_body(r)}))
            .collect();
        let mut out = Vec::new();
        write_batch(&records, &mut out);
        assert_eq!(out, serde_json::to_vec(&tree).unwrap());
        let mut empty = Vec::new();
        write_batch(&[], &mut empty);
        assert_eq!(empty, b"[]");
    }

    #[test]
    fn encodes_like_ai_memory() {
        assert_eq!(encode(r"C:\dev\myproject"), "C%3A%5Cdev%5Cmyproject");
        assert_eq!(encode("/home/u/my repo"), "%2Fhome%2Fu%2Fmy%20repo");
        assert_eq!(encode("a b&c=d"), "a%20b%26c%3Dd");
        assert_eq!(encode("ré"), "r%C3%A9");
        assert_eq!(encode("A-z_0.9~"), "A-z_0.9~");
        assert_eq!(encode(""), "");
        assert_eq!(encode("é/x"), "%C3%A9%2Fx");
        assert_eq!(encode("x%"), "x%25");
    }

    #[test]
    fn decodes_and_round_trips() {
        for s in ["/home/u/my repo", "ré&=?#%+", "", "plain"] {
            assert_eq!(decode(&encode(s)).unwrap(), s);
        }
        assert_eq!(decode("a+b").unwrap(), "a b");
        assert!(decode("%4").is_err());
        assert!(decode("%zz").is_err());
        assert!(decode("%FF").is_err());
    }

    #[test]
    fn query_parse_names_the_bad_parameter() {
        let q = Query::of_url("/hook?event=stop&cwd=%2Ftmp%2Fx&&flag&b=+").unwrap();
        assert_eq!(q.get("event"), Some("stop"));
        assert_eq!(q.get("cwd"), Some("/tmp/x"));
        assert_eq!(q.get("flag"), None);
        assert_eq!(q.get("b"), None, "blank counts as absent");
        let err = Query::parse("event=stop&project=%G1").unwrap_err();
        assert!(err.contains("`project`"), "{err}");
        assert!(Query::parse("default_global=Yes")
            .unwrap()
            .truthy("default_global"));
        assert!(!Query::parse("default_global=0")
            .unwrap()
            .truthy("default_global"));
    }

    #[test]
    fn hook_path_carries_every_parameter_encoded_in_order() {
        let r = record("0123456789abcdef0123456789abcdef");
        assert_eq!(
            hook_path(&r),
            "/hook?event=user-prompt&agent=claude-code&cwd=%2Fhome%2Fu%2Fmy%20repo\
             &workspace=acme&project=api&project_src=marker&project_strategy=basename\
             &default_global=1&briefing_budget=4000\
             &ingest_key=0123456789abcdef0123456789abcdef"
        );
    }

    #[test]
    fn event_names_map_both_ways() {
        let mut r = record("k");
        for (canonical, wire) in [
            ("post-tool-use-failure", "PostToolUseFailure"),
            ("post-compact", "post-compaction"),
            ("session-start", "session-start"),
        ] {
            r.event = canonical.into();
            assert_eq!(wire_event(&r), wire);
            // The server reads it back with the one event-name parser.
            assert_eq!(
                memhook_core::event::EventKind::parse(wire).as_str(),
                canonical
            );
        }
        r.event = "other".into();
        r.native_event = "session.idle".into();
        assert_eq!(wire_event(&r), "session.idle");
    }

    #[test]
    fn body_holds_the_excerpt_and_the_exact_record() {
        let r = record("k1");
        let b = hook_body(&r);
        assert_eq!(b["prompt"], "fix the login bug\nplease");
        assert_eq!(b["session_id"], "sess-1");
        assert_eq!(b["hook_event_name"], "user-prompt");
        assert_eq!(b["occurred_at"], "2023-11-14T22:13:20.000Z");
        let back: Record = serde_json::from_value(b[RECORD_MEMBER].clone()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn metadata_only_body_names_the_family_and_carries_no_text() {
        let mut r = record("k2");
        r.event = "post-tool-use".into();
        r.disposition = "metadata-only".into();
        r.title = None;
        r.body = None;
        r.tool = Some(RecordTool {
            family: "shell".into(),
            name: Some("Bash".into()),
            call_id: Some("toolu_1".into()),
            outcome: None,
            exit_code: None,
        });
        r.capture = Some(CaptureMeta {
            version: 1,
            policy_state: "invalid".into(),
            tool_family: "shell".into(),
            path_count: 0,
            disposition: "metadata-only".into(),
            extraction_state: "not-applicable".into(),
        });
        let b = hook_body(&r);
        assert_eq!(b["tool_name"], "non-file");
        assert_eq!(b["tool_use_id"], "toolu_1");
        assert!(b.get("tool_response").is_none() && b.get("title").is_none());
        let cap = b[CAPTURE_MEMBER].as_object().unwrap();
        let keys: Vec<&str> = cap.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "version",
                "disposition",
                "policy_state",
                "tool_family",
                "path_count",
                "extraction_state"
            ]
        );
    }

    #[test]
    fn batch_reply_shapes() {
        let r = BatchReply::parse(r#"{"accepted":2}"#, 3).unwrap();
        assert_eq!(r.accepted, vec![0, 1]);
        let r = BatchReply::parse(
            r#"{"accepted":1,"accepted_indices":[0,2],"failed_index":1}"#,
            3,
        )
        .unwrap();
        assert_eq!((r.accepted, r.failed_index), (vec![0, 2], Some(1)));
        for bad in [
            "nope",
            "[]",
            r#"{"accepted":4}"#,
            r#"{"accepted":"1"}"#,
            r#"{"accepted":1,"failed_index":9}"#,
            r#"{"accepted":1,"accepted_indices":[7]}"#,
        ] {
            assert!(BatchReply::parse(bad, 3).is_err(), "{bad}");
        }
    }
}
