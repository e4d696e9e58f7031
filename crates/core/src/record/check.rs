//! The one record validator. A record is checked wherever it comes from
//! before memhook trusts it: a spool entry the drainer reads (written by
//! memhook's own hook: [`Origin::Hook`]) and a record a client sends to
//! `memhook serve` or `memhook import` reads from a file (hostile input
//! from another program: [`Origin::Client`]). The bounds are the record
//! builder's; what differs by origin is only what a hook is known to write
//! exactly (a 32-hex key, canonical names, no control characters), while a
//! client's texts are cleaned after this check (`memhook serve`'s ingest).

use super::words::{
    valid_plan_id, MAX_COMMAND_BYTES, MAX_PLAN_ID_BYTES, MAX_PLAN_ITEMS, MAX_PLAN_TEXT_BYTES,
    PLAN_STATUSES,
};
use super::{clean_capped, title_line, MAX_PROMPT_BYTES, MAX_SUMMARY_BYTES, RECORD_VERSION};
use super::{Outcome, Record, MAX_FILES, MAX_PATH_BYTES, MAX_SESSION_ID_BYTES, MAX_TITLE_CHARS};
use crate::capture::{Disposition, ToolFamily};
use crate::event::{sanitize_native_name, valid_call_id, Agent, EventKind};

/// Who wrote the record being checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// memhook's own hook (a spool entry): exactly what the builder writes.
    Hook,
    /// Another program (an ai-memory client, an export file): the same
    /// bounds, with the wider shapes the ai-memory protocol allows.
    Client,
}

/// Longest id-like field a client may send (agent, event names, session id,
/// tool fields), in bytes.
pub const MAX_SHORT_FIELD: usize = 256;
/// Largest body of any record: the largest cap (prompts and summaries).
pub const MAX_BODY_BYTES: usize = if MAX_PROMPT_BYTES > MAX_SUMMARY_BYTES {
    MAX_PROMPT_BYTES
} else {
    MAX_SUMMARY_BYTES
};
/// Most files a client's record lists (the hook writes at most [`MAX_FILES`]).
pub const MAX_CLIENT_FILES: usize = 64;
/// Longest key a client may give (ai-memory's `ingest_key`: 1–64 of
/// `[A-Za-z0-9_-]`).
pub const MAX_CLIENT_KEY_LEN: usize = 64;
/// Longest tool name the hook writes.
const MAX_TOOL_NAME_BYTES: usize = 64;

/// Whether `k` is a key a client may give: 1–[`MAX_CLIENT_KEY_LEN`] of
/// `A-Z a-z 0-9 - _`.
pub fn valid_client_key(k: &str) -> bool {
    (1..=MAX_CLIENT_KEY_LEN).contains(&k.len())
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Why `r` is not a record memhook accepts from `origin`, naming the field.
pub fn problem(r: &Record, origin: Origin) -> Option<String> {
    let hook = origin == Origin::Hook;
    if hook && r.v != RECORD_VERSION {
        return Some(format!(
            "record version {} (this memhook writes {RECORD_VERSION})",
            r.v
        ));
    }
    if r.v > RECORD_VERSION {
        return Some(format!(
            "record format v{} is newer than this memhook understands (v{RECORD_VERSION}); \
             upgrade memhook",
            r.v
        ));
    }
    if hook && !super::valid_key(&r.key) {
        return Some("record `key` is not 32 lowercase hex digits".into());
    }
    if !hook && !valid_client_key(&r.key) {
        return Some(format!(
            "record `key` must be 1-{MAX_CLIENT_KEY_LEN} of A-Z a-z 0-9 '-' '_'"
        ));
    }
    for (field, name) in [
        ("workspace", &r.scope.workspace),
        ("project", &r.scope.project),
    ] {
        if !crate::names::is_valid_name(name) {
            return Some(format!(
                "record scope `{field}`: {}",
                crate::names::name_problem(name)
            ));
        }
    }
    if hook {
        if let Some(p) = hook_shapes(r) {
            return Some(p);
        }
    }
    bounds(r, origin)
}

/// What only memhook's hook is known to write exactly: canonical agent and
/// event names, a native name as the hook sanitises it, known dispositions,
/// tool families, call ids and outcomes.
fn hook_shapes(r: &Record) -> Option<String> {
    if Agent::parse(&r.agent).as_str() != r.agent {
        return Some("record `agent` is not a canonical agent name".into());
    }
    if EventKind::parse(&r.event).as_str() != r.event {
        return Some("record `event` is not a canonical event name".into());
    }
    if sanitize_native_name(&r.native_event) != r.native_event {
        return Some("record `native_event` holds characters the hook removes".into());
    }
    let one_of = |v: &str, all: &[&str]| all.contains(&v);
    let dispositions = [Disposition::Keep, Disposition::MetadataOnly].map(Disposition::as_str);
    if !one_of(&r.disposition, &dispositions) {
        return Some("record `disposition` is neither keep nor metadata-only".into());
    }
    if let Some(t) = &r.tool {
        let families = [
            ToolFamily::File,
            ToolFamily::SearchList,
            ToolFamily::Shell,
            ToolFamily::Unknown,
        ]
        .map(ToolFamily::as_str);
        if !one_of(&t.family, &families) {
            return Some("record tool family is not one the hook writes".into());
        }
        if t.call_id.as_deref().is_some_and(|c| !valid_call_id(c)) {
            return Some("record tool call id is not 1-128 of [A-Za-z0-9_.-]".into());
        }
        let outcomes = [Outcome::Success, Outcome::Error, Outcome::Unknown].map(Outcome::as_str);
        if t.outcome.as_deref().is_some_and(|o| !one_of(o, &outcomes)) {
            return Some("record tool outcome is not success, error or unknown".into());
        }
    }
    if let Some(plan) = &r.plan {
        for item in &plan.items {
            if item.id.as_deref().is_some_and(|id| !valid_plan_id(id)) {
                return Some("record plan item id is not 1-64 of [A-Za-z0-9_.-]".into());
            }
            if !item.status.is_empty() && !one_of(&item.status, PLAN_STATUSES) {
                return Some("record plan item status is not one the hook writes".into());
            }
        }
    }
    None
}

/// Every text within its bound; from the hook, also free of what
/// [`crate::redact::clean`] strips (a client's texts are cleaned after).
fn bounds(r: &Record, origin: Origin) -> Option<String> {
    let hook = origin == Origin::Hook;
    let (max_files, short) = if hook {
        (MAX_FILES, MAX_SESSION_ID_BYTES)
    } else {
        (MAX_CLIENT_FILES, MAX_SHORT_FIELD)
    };
    if r.files.len() > max_files {
        return Some(format!("record `files`: more than {max_files} paths"));
    }
    let items = r.plan.as_ref().map_or(&[][..], |p| &p.items[..]);
    if items.len() > MAX_PLAN_ITEMS {
        return Some(format!("record `plan`: more than {MAX_PLAN_ITEMS} items"));
    }
    if r.title
        .as_ref()
        .is_some_and(|t| t.chars().count() > MAX_TITLE_CHARS)
    {
        return Some(format!(
            "record `title` is over {MAX_TITLE_CHARS} characters"
        ));
    }
    let tool = r.tool.as_ref();
    let texts = [
        ("agent", Some(r.agent.as_str()), MAX_SHORT_FIELD),
        ("event", Some(r.event.as_str()), MAX_SHORT_FIELD),
        (
            "native_event",
            Some(r.native_event.as_str()),
            MAX_SHORT_FIELD,
        ),
        ("session_id", r.session_id.as_deref(), short),
        ("cwd", r.cwd.as_deref(), MAX_PATH_BYTES),
        ("title", r.title.as_deref(), MAX_TITLE_CHARS * 4),
        ("body", r.body.as_deref(), MAX_BODY_BYTES),
        (
            "tool name",
            tool.and_then(|t| t.name.as_deref()),
            // A client's is capped by ingest's cleaning, not refused.
            if hook {
                MAX_TOOL_NAME_BYTES
            } else {
                usize::MAX
            },
        ),
    ];
    let files = r
        .files
        .iter()
        .map(|f| ("files", Some(f.as_str()), MAX_PATH_BYTES));
    let plan = items.iter().flat_map(|i| {
        [
            ("plan item text", i.text.as_deref(), MAX_PLAN_TEXT_BYTES),
            ("plan item id", i.id.as_deref(), MAX_PLAN_ID_BYTES),
            ("plan item status", Some(i.status.as_str()), MAX_SHORT_FIELD),
        ]
    });
    let command = [("command", r.command.as_deref(), MAX_COMMAND_BYTES)];
    for (field, text, max) in texts.into_iter().chain(files).chain(command).chain(plan) {
        let Some(text) = text else { continue };
        if text.len() > max {
            return Some(format!("record `{field}` is over {max} bytes"));
        }
        if hook && crate::redact::holds_stripped_control(text) {
            return Some(format!("record `{field}` holds control characters"));
        }
    }
    None
}

/// Pass every text of a client's record through the hook's cleaning
/// (`record::clean_capped`: private spans, control and bidi characters,
/// secrets, then the cap), as `record::build` does for the hook's own
/// records. The title is rebuilt from its cleaned first line.
pub fn clean(r: &mut Record) {
    fn text(s: &mut String, max: usize) {
        *s = clean_capped(s, max);
    }
    fn opt(s: &mut Option<String>, max: usize) {
        *s = s
            .as_deref()
            .map(|t| clean_capped(t, max))
            .filter(|t| !t.trim().is_empty());
    }
    text(&mut r.agent, MAX_SHORT_FIELD);
    text(&mut r.event, MAX_SHORT_FIELD);
    text(&mut r.native_event, MAX_SHORT_FIELD);
    text(&mut r.disposition, MAX_SHORT_FIELD);
    opt(&mut r.session_id, MAX_SHORT_FIELD);
    opt(&mut r.cwd, MAX_PATH_BYTES);
    opt(&mut r.body, MAX_BODY_BYTES);
    r.title = r
        .title
        .as_deref()
        .and_then(|t| title_line(&clean_capped(t, MAX_BODY_BYTES)));
    for f in &mut r.files {
        text(f, MAX_PATH_BYTES);
    }
    r.files.retain(|f| !f.is_empty());
    opt(&mut r.command, MAX_COMMAND_BYTES);
    if let Some(plan) = r.plan.as_mut() {
        for item in &mut plan.items {
            opt(&mut item.text, MAX_PLAN_TEXT_BYTES);
            if let Some(t) = item.text.as_mut() {
                *t = t.replace(['\n', '\r'], " ");
            }
            item.id = item.id.take().filter(|id| valid_plan_id(id));
            text(&mut item.status, MAX_SHORT_FIELD);
        }
        plan.items.retain(|i| i.id.is_some() || i.text.is_some());
    }
    let scope = &mut r.scope;
    for s in [
        &mut scope.workspace_source,
        &mut scope.project_source,
        &mut scope.project_strategy,
    ] {
        text(s, MAX_SHORT_FIELD);
    }
    if let Some(t) = r.tool.as_mut() {
        text(&mut t.family, MAX_SHORT_FIELD);
        opt(&mut t.name, MAX_SHORT_FIELD);
        opt(&mut t.call_id, MAX_SHORT_FIELD);
        opt(&mut t.outcome, MAX_SHORT_FIELD);
    }
    if let Some(c) = r.capture.as_mut() {
        for s in [
            &mut c.policy_state,
            &mut c.tool_family,
            &mut c.disposition,
            &mut c.extraction_state,
        ] {
            text(s, MAX_SHORT_FIELD);
        }
    }
}

/// A metadata-only record keeps no text: title, body, files and tool name
/// go.
pub fn strip_metadata_only(record: &mut Record) {
    if record.disposition == "metadata-only" {
        record.title = None;
        record.body = None;
        record.files.clear();
        record.command = None;
        record.plan = None;
        if let Some(t) = record.tool.as_mut() {
            t.name = None;
            t.exit_code = None;
        }
    }
}

/// A record read from a file by `memhook import` (hostile input, like a
/// client's body sent to `memhook serve`): [`problem`] for
/// [`Origin::Client`] — key, names, bounds — then [`clean`] (redaction and
/// hygiene of every text), and a metadata-only record stripped of text.
/// `Err` names the problem.
pub fn admit_imported(record: Record) -> Result<Record, String> {
    if let Some(problem) = problem(&record, Origin::Client) {
        return Err(problem);
    }
    let mut r = record;
    clean(&mut r);
    strip_metadata_only(&mut r);
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::sample;

    fn hooked() -> Record {
        sample::record(&"a".repeat(32))
    }

    #[test]
    fn the_hooks_own_record_passes_from_either_origin() {
        assert_eq!(problem(&hooked(), Origin::Hook), None);
        assert_eq!(problem(&hooked(), Origin::Client), None);
    }

    #[test]
    fn keys_follow_the_origin() {
        let mut r = hooked();
        r.key = "my-client_key-1".into();
        assert!(problem(&r, Origin::Hook).unwrap().contains("`key`"));
        assert_eq!(problem(&r, Origin::Client), None);
        r.key = "k".repeat(MAX_CLIENT_KEY_LEN);
        assert_eq!(problem(&r, Origin::Client), None);
        r.key = "k".repeat(MAX_CLIENT_KEY_LEN + 1);
        assert!(problem(&r, Origin::Client).unwrap().contains("`key`"));
        r.key = "a b".into();
        assert!(problem(&r, Origin::Client).is_some());
    }

    #[test]
    fn bounds_hold_at_their_edges_for_both_origins() {
        for origin in [Origin::Hook, Origin::Client] {
            let mut r = hooked();
            r.body = Some("x".repeat(MAX_BODY_BYTES));
            r.title = Some("é".repeat(MAX_TITLE_CHARS));
            r.cwd = Some("/".repeat(MAX_PATH_BYTES));
            assert_eq!(problem(&r, origin), None, "{origin:?}");
            let mut b = r.clone();
            b.body = Some("x".repeat(MAX_BODY_BYTES + 1));
            assert!(problem(&b, origin).unwrap().contains("`body`"));
            let mut t = r.clone();
            t.title = Some("é".repeat(MAX_TITLE_CHARS + 1));
            assert!(problem(&t, origin).unwrap().contains("`title`"));
            let mut c = r.clone();
            c.cwd = Some("/".repeat(MAX_PATH_BYTES + 1));
            assert!(problem(&c, origin).unwrap().contains("`cwd`"));
        }
        let mut f = hooked();
        f.files = vec!["f".into(); MAX_FILES];
        assert_eq!(problem(&f, Origin::Hook), None);
        f.files.push("f".into());
        assert!(problem(&f, Origin::Hook).unwrap().contains("`files`"));
        f.files = vec!["f".into(); MAX_CLIENT_FILES];
        assert_eq!(problem(&f, Origin::Client), None);
        f.files.push("f".into());
        assert!(problem(&f, Origin::Client).unwrap().contains("`files`"));
    }

    #[test]
    fn command_and_plan_are_bounded_and_cleaned() {
        use crate::record::{PlanItem, RecordPlan};
        let item = |text: &str, id: Option<&str>, status: &str| PlanItem {
            id: id.map(str::to_string),
            text: Some(text.to_string()),
            status: status.into(),
        };
        for origin in [Origin::Hook, Origin::Client] {
            let mut r = hooked();
            r.command = Some("c".repeat(MAX_COMMAND_BYTES));
            r.plan = Some(RecordPlan {
                full: true,
                items: vec![
                    item(&"t".repeat(MAX_PLAN_TEXT_BYTES), Some("1"), "done");
                    MAX_PLAN_ITEMS
                ],
            });
            assert_eq!(problem(&r, origin), None, "{origin:?}");
            let mut c = r.clone();
            c.command = Some("c".repeat(MAX_COMMAND_BYTES + 1));
            assert!(problem(&c, origin).unwrap().contains("`command`"));
            let mut p = r.clone();
            p.plan.as_mut().unwrap().items.push(item("x", None, "done"));
            assert!(problem(&p, origin).unwrap().contains("`plan`"));
            let mut t = r.clone();
            t.plan.as_mut().unwrap().items[0].text = Some("t".repeat(MAX_PLAN_TEXT_BYTES + 1));
            assert!(problem(&t, origin).unwrap().contains("plan item text"));
        }
        let mut r = hooked();
        r.plan = Some(RecordPlan {
            full: false,
            items: vec![item("x", Some("../1"), "done")],
        });
        assert!(problem(&r, Origin::Hook).unwrap().contains("plan item id"));
        r.plan = Some(RecordPlan {
            full: false,
            items: vec![item("x", Some("1"), "whatever")],
        });
        assert!(problem(&r, Origin::Hook).unwrap().contains("status"));
        // A client's texts are cleaned: secrets redacted, one line, bad ids dropped.
        let mut c = hooked();
        c.key = "client-1".into();
        c.command = Some("curl -u bob:hunter2 x".into());
        c.plan = Some(RecordPlan {
            full: true,
            items: vec![
                item("set password=hunter2\nthen go", Some("../x"), "done"),
                PlanItem {
                    id: Some("../y".into()),
                    text: None,
                    status: "done".into(),
                },
            ],
        });
        let c = admit_imported(c).unwrap();
        assert!(!c.command.as_deref().unwrap().contains("hunter2"));
        let items = &c.plan.as_ref().unwrap().items;
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].id, None);
        let t = items[0].text.as_deref().unwrap();
        assert!(!t.contains("hunter2") && !t.contains('\n'), "{t}");
    }

    #[test]
    fn only_the_hook_is_held_to_its_exact_shapes() {
        let mut r = hooked();
        r.agent = "Some Agent".into();
        r.session_id = Some("s\u{1b}[2J".into());
        assert!(problem(&r, Origin::Hook).is_some());
        // A client's names and texts are cleaned by ingest, not refused.
        assert_eq!(problem(&r, Origin::Client), None);
        let mut n = hooked();
        n.scope.project = "Bad Name".into();
        for origin in [Origin::Hook, Origin::Client] {
            assert!(problem(&n, origin).unwrap().contains("`project`"));
        }
    }

    #[test]
    fn a_newer_record_format_is_refused_from_both() {
        let mut r = hooked();
        r.v = RECORD_VERSION + 1;
        for origin in [Origin::Hook, Origin::Client] {
            assert!(problem(&r, origin).is_some(), "{origin:?}");
        }
    }
}
