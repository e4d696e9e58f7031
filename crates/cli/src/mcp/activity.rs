//! The activity tools (DESIGN §6, §8): search past activity, look around one
//! record, fetch whole records — "search, then fetch by id", so the model
//! pays for what it asks for instead of a large briefing up front. Every
//! answer stays within a stated character budget and says when it was cut.

use serde_json::{json, Map, Value};

use super::call::{s, BadCall, Context};
use memhook_store::memory::{Answer, Outcome};
use memhook_store::sqlite::StoredRecord;

/// Character budget of the rows `activity_search` and `activity_timeline`
/// return (their JSON text).
pub const ROWS_BUDGET_CHARS: usize = 6_000;
/// Character budget of the records `activity_get` returns.
pub const GET_BUDGET_CHARS: usize = 24_000;
/// Default and largest `limit` of `activity_search`.
pub const SEARCH_DEFAULT_ROWS: usize = 20;
pub const SEARCH_MAX_ROWS: usize = 50;
/// Largest `before` / `after` of `activity_timeline`, and the default.
pub const MAX_AROUND: usize = 20;
pub const DEFAULT_AROUND: usize = 5;
/// Most ids one `activity_get` takes.
pub const MAX_GET_IDS: usize = 10;
/// Characters of a row's id (a key prefix; any 8 or more are accepted back).
pub const ROW_ID_CHARS: usize = memhook_core::record::ACTIVITY_ID_CHARS;
/// Longest `line` of a row.
pub const ROW_LINE_CHARS: usize = 120;

pub fn call(ctx: &Context<'_>, name: &str, args: &Map<String, Value>) -> Result<Answer, BadCall> {
    Ok(match name {
        "activity_search" => search(ctx, args)?,
        "activity_timeline" => timeline(ctx, args)?,
        _ => get(ctx, args)?,
    })
}

/// Whether `r` may be shown in this context: its own project, or any when
/// the project allows recall across projects.
fn visible(ctx: &Context<'_>, r: &StoredRecord) -> bool {
    ctx.default_global || (r.workspace == ctx.workspace && r.project == ctx.project)
}

fn int(
    args: &Map<String, Value>,
    key: &str,
    default: usize,
    lo: usize,
    hi: usize,
) -> Result<usize, BadCall> {
    match args.get(key).and_then(Value::as_i64) {
        None => Ok(default),
        Some(n) if n >= lo as i64 && n <= hi as i64 => Ok(n as usize),
        Some(n) => Err(BadCall(format!("{key} {n} is outside {lo}-{hi}"))),
    }
}

fn date(args: &Map<String, Value>, key: &str) -> Result<Option<u64>, BadCall> {
    match s(args, key) {
        None => Ok(None),
        Some(d) => memhook_core::timefmt::parse_utc_ms(d)
            .map(Some)
            .ok_or_else(|| {
                BadCall(format!(
                    "{key} {d:?}: write a UTC date or time, e.g. 2026-11-30 or 2026-11-30T18:00Z"
                ))
            }),
    }
}

/// One compact row: id, when, agent, event, session, one line.
pub fn row(r: &StoredRecord) -> Value {
    let t = memhook_core::timefmt::rfc3339_ms(r.occurred_ms);
    let text = r
        .title
        .as_deref()
        .or(r.body.as_deref())
        .map(|t| {
            t.lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
        })
        .unwrap_or("");
    let mut line = match r.tool_name.as_deref().or(r.tool_family.as_deref()) {
        Some(tool) if !text.is_empty() => format!("[{tool}] {text}"),
        Some(tool) => format!("[{tool}]"),
        None => text.to_string(),
    };
    if let Some(o) = r.outcome.as_deref().filter(|o| *o == "error") {
        line = format!("{line} ({o})");
    }
    if line.chars().count() > ROW_LINE_CHARS {
        line = line.chars().take(ROW_LINE_CHARS - 1).collect::<String>() + "…";
    }
    let mut v = json!({
        "id": &r.key[..r.key.len().min(ROW_ID_CHARS)],
        "at": format!("{} {}", &t[..10], &t[11..16]),
        "agent": r.agent,
        "event": r.event,
        "session": r.session_id,
        "line": line,
    });
    // A search's row says why it matched.
    if let Some(m) = r.matched.as_deref() {
        let m = m.split_whitespace().collect::<Vec<_>>().join(" ");
        v["match"] = if m.chars().count() > ROW_LINE_CHARS {
            m.chars().take(ROW_LINE_CHARS - 1).collect::<String>() + "…"
        } else {
            m
        }
        .into();
    }
    // A row that stands for records of identical text says how many.
    if r.identical > 0 {
        v["identical"] = r.identical.into();
    }
    v
}

/// Keep values while their JSON text fits `budget`; say whether any was cut.
fn within(values: Vec<Value>, budget: usize) -> (Vec<Value>, bool) {
    let mut used = 2;
    let mut out = Vec::new();
    let n = values.len();
    for v in values {
        let len = v.to_string().chars().count() + 1;
        if used + len > budget {
            break;
        }
        used += len;
        out.push(v);
    }
    let cut = out.len() < n;
    (out, cut)
}

fn answer(values: Vec<Value>, budget: usize, empty: &str) -> Answer {
    let (values, cut) = within(values, budget);
    let mut a = Answer::new(Outcome::Ok, "");
    if values.is_empty() {
        a.message = Some(empty.to_string());
    }
    if cut {
        a.message = Some(format!(
            "cut to {} to stay within {budget} characters; narrow the query or ask for fewer",
            values.len()
        ));
    }
    a.records = Some(values);
    a.cut = cut.then_some(true);
    a
}

fn search(ctx: &Context<'_>, args: &Map<String, Value>) -> Result<Answer, BadCall> {
    let limit = int(args, "limit", SEARCH_DEFAULT_ROWS, 1, SEARCH_MAX_ROWS)?;
    let (since, until) = (date(args, "since")?, date(args, "until")?);
    let all = match s(args, "scope") {
        None | Some("project") => false,
        Some("all") => true,
        Some(other) => {
            return Err(BadCall(format!(
                "activity_search: scope {other:?} is not \"project\" or \"all\""
            )))
        }
    };
    if all && !ctx.default_global {
        return Ok(Answer::problem(
            Outcome::Refused,
            "",
            "scope_not_allowed",
            "this project does not allow recall across projects ([recall] default_global); \
             search without scope"
                .into(),
        ));
    }
    let query = s(args, "query").unwrap_or_default();
    if memhook_store::sqlite::fts_query(query).is_none() {
        return Ok(Answer::problem(
            Outcome::Refused,
            "",
            "empty_query",
            "the query has no words to look for".into(),
        ));
    }
    let scope = (!all).then_some((ctx.workspace, ctx.project));
    let found = ctx
        .records
        .find(scope, query, since, until, limit)
        .map_err(|e| BadCall(format!("captured records could not be searched: {e}")))?;
    let rows = found.iter().filter(|r| visible(ctx, r)).map(row).collect();
    Ok(answer(
        rows,
        ROWS_BUDGET_CHARS,
        "nothing matched; try other words or dates",
    ))
}

fn timeline(ctx: &Context<'_>, args: &Map<String, Value>) -> Result<Answer, BadCall> {
    let before = int(args, "before", DEFAULT_AROUND, 0, MAX_AROUND)?;
    let after = int(args, "after", DEFAULT_AROUND, 0, MAX_AROUND)?;
    let anchor = match (s(args, "id"), s(args, "query")) {
        (Some(id), _) => id.to_string(),
        (None, Some(q)) => {
            let scope = (!ctx.default_global).then_some((ctx.workspace, ctx.project));
            let best = ctx
                .records
                .find(scope, q, None, None, 1)
                .map_err(|e| BadCall(format!("captured records could not be searched: {e}")))?;
            match best.first() {
                Some(r) => r.key.clone(),
                None => {
                    return Ok(answer(
                        Vec::new(),
                        ROWS_BUDGET_CHARS,
                        "nothing matched the query",
                    ))
                }
            }
        }
        (None, None) => return Err(BadCall("activity_timeline: give an id or a query".into())),
    };
    let around = ctx
        .records
        .around(&anchor, before, after)
        .map_err(|e| BadCall(format!("captured records could not be read: {e}")))?;
    let Some((list, at)) = around.filter(|(l, at)| visible(ctx, &l[*at])) else {
        return Ok(Answer::problem(
            Outcome::NotFound,
            "",
            "no_such_record",
            format!("no record {anchor:?} in this project"),
        ));
    };
    let rows: Vec<Value> = list
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut v = row(r);
            if i == at {
                v["anchor"] = json!(true);
            }
            v
        })
        .collect();
    Ok(answer(rows, ROWS_BUDGET_CHARS, "no records"))
}

fn get(ctx: &Context<'_>, args: &Map<String, Value>) -> Result<Answer, BadCall> {
    let ids: Vec<String> = args
        .get("ids")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if ids.is_empty() || ids.len() > MAX_GET_IDS {
        return Err(BadCall(format!(
            "activity_get: give 1 to {MAX_GET_IDS} ids"
        )));
    }
    let found = ctx
        .records
        .by_id(&ids)
        .map_err(|e| BadCall(format!("captured records could not be read: {e}")))?;
    let records = found
        .iter()
        .filter(|r| visible(ctx, r))
        .map(StoredRecord::to_json)
        .collect();
    Ok(answer(
        records,
        GET_BUDGET_CHARS,
        "no record with those ids in this project",
    ))
}

#[cfg(test)]
mod tests {
    use super::super::records::StoreRecords;
    use super::super::tools::{call as tool, list};
    use super::*;
    use memhook_store::memory::MemoryStore;
    use memhook_store::sqlite::Store;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn seeded(t: &std::path::Path) -> Vec<String> {
        let mut s = Store::open(t).unwrap();
        let mut keys = Vec::new();
        for i in 0..30u64 {
            let key = format!("{:08x}{:024x}", 0x2000_0000 + i * 0x0101_0101, i);
            let mut r =
                memhook_store::sqlite::samples::rec(&key, 1_000 + i, "api", "s1", "post-tool-use");
            r.scope = memhook_core::record::sample::scope("acme", "api", "marker");
            r.body = Some(format!(
                "step {i}: the flaky retry test {}",
                "x".repeat(400)
            ));
            r.title = None;
            s.insert(&r).unwrap();
            keys.push(key);
        }
        let mut other =
            memhook_store::sqlite::samples::rec(&"e".repeat(32), 9, "web", "s9", "user-prompt");
        other.body = Some("flaky secret plans of another project".into());
        s.insert(&other).unwrap();
        keys
    }

    #[test]
    fn search_timeline_get_stay_in_scope_and_within_budget() {
        let t = tempfile::tempdir().unwrap();
        let keys = seeded(t.path());
        let store = MemoryStore::new(t.path(), "acme", "api").unwrap();
        let records = StoreRecords::new(t.path());
        let ctx = Context {
            store: &store,
            records: &records,
            workspace: "acme",
            project: "api",
            default_global: false,
        };
        let names: Vec<String> = list()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        for n in ["activity_search", "activity_timeline", "activity_get"] {
            assert!(names.contains(&n.to_string()), "{names:?}");
        }

        let a = tool(
            &ctx,
            "activity_search",
            &args(json!({"query": "flaky", "limit": 50})),
        )
        .unwrap();
        let rows = a.records.unwrap();
        assert!(!rows.is_empty());
        assert!(rows
            .iter()
            .all(|r| r["line"].as_str().unwrap().contains("flaky")));
        // Each row says why it matched.
        assert!(
            rows.iter()
                .all(|r| r["match"].as_str().unwrap().contains("**flaky**")),
            "{rows:?}"
        );
        assert!(serde_json::to_string(&rows).unwrap().chars().count() <= ROWS_BUDGET_CHARS);
        assert_eq!(rows.len() < 30, a.cut == Some(true));
        // Another project's record is never a hit here.
        assert!(!serde_json::to_string(&rows)
            .unwrap()
            .contains("another project"));
        let a = tool(
            &ctx,
            "activity_search",
            &args(json!({"query": "flaky", "scope": "all"})),
        )
        .unwrap();
        assert_eq!(a.reason, Some("scope_not_allowed"));
        let a = tool(
            &ctx,
            "activity_search",
            &args(json!({"query": "flaky", "since": "1970-01-01T00:00:01.025Z", "limit": 50})),
        )
        .unwrap();
        assert_eq!(a.records.unwrap().len(), 5);

        let a = tool(
            &ctx,
            "activity_timeline",
            &args(json!({"id": &keys[10][..12], "before": 2, "after": 1})),
        )
        .unwrap();
        let rows = a.records.unwrap();
        let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
        assert_eq!(
            ids,
            vec![
                &keys[8][..12],
                &keys[9][..12],
                &keys[10][..12],
                &keys[11][..12]
            ]
        );
        assert_eq!(rows[2]["anchor"], true);
        let a = tool(
            &ctx,
            "activity_timeline",
            &args(json!({"id": "e".repeat(12)})),
        )
        .unwrap();
        assert_eq!(a.outcome, Outcome::NotFound, "another project's record");

        let a = tool(
            &ctx,
            "activity_get",
            &args(json!({"ids": [&keys[3][..8], &keys[4], "e".repeat(32)]})),
        )
        .unwrap();
        let got = a.records.unwrap();
        assert_eq!(got.len(), 2);
        assert!(got[0]["body"].as_str().unwrap().starts_with("step 3:"));
        assert!(tool(&ctx, "activity_get", &args(json!({"ids": []}))).is_err());
        assert!(tool(&ctx, "activity_get", &args(json!({"ids": [1]}))).is_err());

        // Allowed across projects: the other project's record shows.
        let ctx = Context {
            default_global: true,
            ..ctx
        };
        let a = tool(
            &ctx,
            "activity_search",
            &args(json!({"query": "secret plans", "scope": "all"})),
        )
        .unwrap();
        // One found by its words; the others that follow are close in meaning.
        let rows = a.records.unwrap();
        let by_words: Vec<_> = rows
            .iter()
            .filter(|r| r["match"] != memhook_store::meaning::BY_MEANING)
            .collect();
        assert_eq!(by_words.len(), 1, "{rows:?}");
    }

    #[test]
    fn rows_are_one_short_line() {
        let stored = StoredRecord {
            key: "a".repeat(32),
            occurred_ms: 0,
            agent: "claude-code".into(),
            event: "post-tool-use".into(),
            native_event: "PostToolUse".into(),
            workspace: "w".into(),
            project: "p".into(),
            session_id: Some("s".into()),
            cwd: None,
            subagent: false,
            tool_family: Some("shell".into()),
            tool_name: Some("Bash".into()),
            tool_call_id: None,
            outcome: Some("error".into()),
            disposition: "keep".into(),
            title: None,
            body: Some(format!("\n\nerror: exit 1 {}\nmore", "y".repeat(300))),
            files: vec![],
            token_name: None,
            matched: None,
            identical: 0,
        };
        let v = row(&stored);
        assert!(v.get("match").is_none(), "{v}");
        let line = v["line"].as_str().unwrap();
        assert!(line.starts_with("[Bash] error: exit 1 yyy"), "{line}");
        assert_eq!(line.chars().count(), ROW_LINE_CHARS);
        assert_eq!(v["id"], "aaaaaaaaaaaa");
        assert_eq!(v["at"], "1970-01-01 00:00");
        let found = StoredRecord {
            matched: Some(format!("a **retry**\n{}", "z ".repeat(200))),
            ..stored
        };
        let m = row(&found)["match"].as_str().unwrap().to_string();
        assert!(m.starts_with("a **retry** z z"), "{m}");
        assert_eq!(m.chars().count(), ROW_LINE_CHARS);
    }
}
