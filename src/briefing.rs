//! Session-start briefing: what the next session of a scope should know,
//! composed from the store (or fetched from a server's `GET /handoff`) within
//! the marker's `[briefing] max_chars`.
//!
//! Order (DESIGN §6): (1) the handoff — the previous session of this scope in
//! detail (when, prompts' first lines, tool activity by family, failures,
//! files touched) and the sessions before it in one line each; (2) the project
//! memory index (`MEMORY.md`); (3) only when the marker opts in
//! (`inject_on_session_start`), a digest of recent sessions (files most
//! touched, recurring failures, tools most used). The first line states the
//! briefing's own size. Reading is never destructive: nothing is marked
//! consumed, so a session that does no work leaves the handoff for the next.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::drain;
use crate::event::Event;
use crate::scope::Scope;
use crate::sink::store::{Activity, SessionSummary, Store};
use crate::spool::{SinkTarget, Spool};

/// Hard budget of the whole session-start path (delivery + composition).
pub const DEFAULT_BUDGET: Duration = Duration::from_millis(1500);
/// Environment variable overriding [`DEFAULT_BUDGET`] in milliseconds, for
/// slow machines: an integer in [`MIN_BUDGET_MS`, `MAX_BUDGET_MS`].
pub const BUDGET_ENV: &str = "MEMHOOK_START_BUDGET_MS";
pub const MIN_BUDGET_MS: u64 = 100;
pub const MAX_BUDGET_MS: u64 = 10_000;

/// The session-start budget: [`BUDGET_ENV`] when set, else
/// [`DEFAULT_BUDGET`]. A value that is not a number, or is out of range, is
/// reported on stderr (and replaced by the default, or clamped).
pub fn start_budget() -> Duration {
    let (budget, problem) = budget_from(std::env::var(BUDGET_ENV).ok().as_deref());
    if let Some(problem) = problem {
        eprintln!("memhook: {problem}");
    }
    budget
}

/// The budget `v` asks for, and what is wrong with `v` if anything.
fn budget_from(v: Option<&str>) -> (Duration, Option<String>) {
    let Some(v) = v.map(str::trim).filter(|v| !v.is_empty()) else {
        return (DEFAULT_BUDGET, None);
    };
    match v.parse::<u64>() {
        Ok(ms) if (MIN_BUDGET_MS..=MAX_BUDGET_MS).contains(&ms) => {
            (Duration::from_millis(ms), None)
        }
        Ok(ms) => {
            let used = ms.clamp(MIN_BUDGET_MS, MAX_BUDGET_MS);
            let problem = format!(
                "{BUDGET_ENV}={ms} is outside {MIN_BUDGET_MS}..={MAX_BUDGET_MS} \
                 milliseconds; using {used}"
            );
            (Duration::from_millis(used), Some(problem))
        }
        Err(_) => {
            let problem = format!(
                "{BUDGET_ENV} is not a whole number of milliseconds \
                 ({MIN_BUDGET_MS}..={MAX_BUDGET_MS}); using the default {}",
                DEFAULT_BUDGET.as_millis()
            );
            (DEFAULT_BUDGET, Some(problem))
        }
    }
}

/// Share of the budget (in percent) that delivering pending records may use;
/// the rest is kept for composing or fetching the briefing.
pub const DELIVERY_SHARE_PCT: u32 = 60;
/// Previous sessions shown in the handoff (the newest in detail).
pub const HANDOFF_SESSIONS: usize = 3;
/// Sessions the opt-in digest looks at.
pub const DIGEST_SESSIONS: usize = 20;
/// Prompts listed for the previous session.
pub const MAX_PROMPTS: usize = 8;
/// Files listed for the previous session and in the digest.
pub const MAX_FILES: usize = 12;
/// Failures listed for the previous session and in the digest.
pub const MAX_FAILURES: usize = 5;
/// Longest prompt line shown.
pub const PROMPT_LINE_CHARS: usize = 120;
/// Characters per token used for the size estimate in the first line.
pub const CHARS_PER_TOKEN: usize = 4;

/// Deliver what is pending for `sink` within part of `budget` (waiting for
/// the drain lock at most that long), then compose the briefing: from the
/// store for [`SinkTarget::Store`], from the server's `GET /handoff` for
/// [`SinkTarget::Http`]. `None` — the envelope prints `{}` — when there is
/// nothing to say, on any problem, or when the budget is spent.
pub fn session_start(
    data_dir: &Path,
    sink: &SinkTarget,
    scope: &Scope,
    event: &Event,
    budget: Duration,
) -> Option<String> {
    let start = Instant::now();
    let deadline = start + budget;
    deliver_pending(
        data_dir,
        sink,
        event.session_id.as_deref(),
        start + budget * DELIVERY_SHARE_PCT / 100,
    );
    let now = Instant::now();
    if now >= deadline {
        return None;
    }
    let max_chars = scope.settings.max_chars;
    let text = match sink {
        SinkTarget::Store => {
            // Every wait for the database's lock ends at the deadline.
            let store = Store::open_until(data_dir, Some(deadline)).ok()?;
            compose(
                &store,
                (&scope.workspace, &scope.project),
                event.session_id.as_deref(),
                max_chars,
                scope.settings.inject_on_session_start,
            )?
        }
        SinkTarget::Http { url } => {
            let token = crate::sink::auth_token(data_dir);
            match crate::sink::http::handoff(url, token.as_deref(), scope, event, deadline - now) {
                Ok(Some(t)) => clip(&t, max_chars),
                Ok(None) => return None,
                Err(e) => {
                    eprintln!("memhook: no briefing from {url}: {e}");
                    return None;
                }
            }
        }
    };
    (Instant::now() < deadline).then_some(text)
}

/// Deliver this sink's pending records until `until` (best effort, silent).
/// Only records of other sessions can change the briefing (the starting
/// session is never briefed about itself); when the spool holds nothing else
/// for `sink`, delivery is left to the background drainer.
fn deliver_pending(data_dir: &Path, sink: &SinkTarget, session: Option<&str>, until: Instant) {
    if drain::hook_delivery_disabled() {
        return;
    }
    let Ok(spool) = Spool::open(data_dir) else {
        return;
    };
    let Ok(pending) = spool.pending() else {
        return;
    };
    if !briefing_may_change(&pending, sink, session) {
        return;
    }
    let Ok(Some(lock)) = drain::lock_until(data_dir, until) else {
        return;
    };
    let timeout = until.saturating_duration_since(Instant::now());
    let mut factory = drain::sink_factory_until(data_dir, timeout, Some(until));
    let _ = drain::drain_locked(
        &lock,
        &spool,
        &mut factory,
        drain::Options {
            deadline: until,
            only: Some(sink.clone()),
            honour_backoff: true,
            pipelined: false,
        },
    );
}

/// Pending entries looked at before assuming delivery is worth it.
pub const PENDING_SCAN: usize = 64;

/// Whether `pending` may hold a record of `sink` from a session other than
/// `session`. Past [`PENDING_SCAN`] entries, assume it does.
fn briefing_may_change(pending: &[PathBuf], sink: &SinkTarget, session: Option<&str>) -> bool {
    if pending.len() > PENDING_SCAN {
        return true;
    }
    pending.iter().any(|p| match Spool::load(p) {
        Ok(e) => {
            &e.sink == sink && (session.is_none() || e.record.session_id.as_deref() != session)
        }
        Err(_) => false,
    })
}

/// The project memory index for the briefing (`MEMORY.md`, bounded and
/// wrapped in its tag; `None` when the scope has none).
fn memory_index(data_dir: &Path, scope: (&str, &str)) -> Option<String> {
    crate::memory::index_for(data_dir, scope.0, scope.1)
}

/// Compose the briefing of `scope` from `store`, leaving out the session
/// `exclude_session` (the one starting), within `max_chars` characters.
/// `digest` adds the opt-in digest of recent sessions. `None` when no
/// previous session did any work and there is no memory index.
/// Used by session start and by `memhook serve`'s `GET /handoff`.
pub fn compose(
    store: &Store,
    scope: (&str, &str),
    exclude_session: Option<&str>,
    max_chars: usize,
    digest: bool,
) -> Option<String> {
    store.read(|store| compose_in(store, scope, exclude_session, max_chars, digest))
}

fn compose_in(
    store: &Store,
    scope: (&str, &str),
    exclude_session: Option<&str>,
    max_chars: usize,
    digest: bool,
) -> Option<String> {
    let sessions = store
        .sessions(scope, exclude_session, HANDOFF_SESSIONS)
        .ok()?;
    let memory = memory_index(store.data_dir(), scope);
    if sessions.is_empty() && memory.is_none() {
        return None;
    }
    let mut sections: Vec<Section> = Vec::new();
    if let Some(last) = sessions.first() {
        let act = store
            .activity(&[last.row], MAX_PROMPTS.max(MAX_FILES))
            .ok()?;
        sections.push(handoff_section(last, &act, &sessions[1..], store));
    }
    if let Some(index) = memory {
        let mut s = Section::new("## Project memory (MEMORY.md)");
        let mut lines: Vec<&str> = index.lines().collect();
        s.closing = lines.pop().map(str::to_string);
        for line in lines {
            s.text(line);
        }
        sections.push(s);
    }
    if digest {
        let recent = store
            .sessions(scope, exclude_session, DIGEST_SESSIONS)
            .ok()?;
        if let Some(s) = digest_section(store, &recent) {
            sections.push(s);
        }
    }
    render(scope, &sections, max_chars)
}

/// A titled block of lines; `items` are the bullet lines.
struct Section {
    lines: Vec<(String, bool)>,
    /// A last line that must follow whatever part of the section fits (the
    /// memory index's closing tag): room for it is kept while filling.
    closing: Option<String>,
}

impl Section {
    fn new(title: &str) -> Section {
        Section {
            lines: vec![(title.to_string(), false)],
            closing: None,
        }
    }
    fn item(&mut self, line: String) {
        self.lines.push((format!("- {line}"), true));
    }
    fn text(&mut self, line: &str) {
        self.lines.push((line.to_string(), false));
    }
}

fn when(ms: u64) -> String {
    // `YYYY-MM-DDTHH:MM:SS.mmmZ` → `YYYY-MM-DD HH:MM UTC`
    let t = crate::timefmt::rfc3339_ms(ms);
    format!("{} {} UTC", &t[..10], &t[11..16])
}

fn first_line(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() > max {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

fn failure_label(tool: &str, line: Option<&str>) -> String {
    match line.map(|l| first_line(l, 100)) {
        Some(l) if !l.is_empty() => format!("{tool}: {l}"),
        _ => tool.to_string(),
    }
}

fn handoff_section(
    last: &SessionSummary,
    act: &Activity,
    older: &[SessionSummary],
    store: &Store,
) -> Section {
    let mut s = Section::new(&format!(
        "## Previous session ({}, {} to {}, {} events)",
        last.agent,
        when(last.first_ms),
        &when(last.last_ms)[11..],
        last.events
    ));
    let prompts: Vec<String> = act
        .prompts
        .iter()
        .take(MAX_PROMPTS)
        .map(|p| first_line(p, PROMPT_LINE_CHARS))
        .filter(|p| !p.is_empty())
        .collect();
    for p in &prompts {
        s.item(format!("Prompt: {p}"));
    }
    let more = act
        .prompt_count
        .saturating_sub(act.prompts.len().min(MAX_PROMPTS) as u64);
    if more > 0 {
        s.item(format!("… and {more} more prompts"));
    }
    if !act.families.is_empty() {
        let parts: Vec<String> = act
            .families
            .iter()
            .map(|(f, n, failed)| {
                if *failed > 0 {
                    format!("{f} {n} ({failed} failed)")
                } else {
                    format!("{f} {n}")
                }
            })
            .collect();
        s.item(format!("Tool activity: {}", parts.join(", ")));
    }
    for (tool, line, n) in act.failures.iter().take(MAX_FAILURES) {
        let times = if *n > 1 {
            format!(" (×{n})")
        } else {
            String::new()
        };
        s.item(format!(
            "Failed: {}{times}",
            failure_label(tool, line.as_deref())
        ));
    }
    if !act.files.is_empty() {
        let shown: Vec<&str> = act.files.iter().map(|f| f.0.as_str()).collect();
        let more = act.file_count.saturating_sub(act.files.len() as u64);
        let tail = if more > 0 {
            format!(" (+{more} more)")
        } else {
            String::new()
        };
        s.item(format!("Files touched: {}{tail}", shown.join(", ")));
    }
    for o in older {
        let Ok((prompts, tools, first)) = store.session_outline(o.row) else {
            continue;
        };
        let first = first
            .map(|p| first_line(&p, PROMPT_LINE_CHARS))
            .filter(|p| !p.is_empty())
            .map(|p| format!(" — {p}"))
            .unwrap_or_default();
        s.item(format!(
            "Earlier ({}, {}): {prompts} prompts, {tools} tool calls{first}",
            o.agent,
            when(o.last_ms)
        ));
    }
    s
}

fn digest_section(store: &Store, sessions: &[SessionSummary]) -> Option<Section> {
    let rows: Vec<i64> = sessions.iter().map(|s| s.row).collect();
    let act = store.activity(&rows, MAX_FILES).ok()?;
    let mut s = Section::new(&format!(
        "## Recent sessions digest ({} sessions)",
        sessions.len()
    ));
    if !act.files.is_empty() {
        let shown: Vec<String> = act
            .files
            .iter()
            .map(|(f, n)| format!("{f} ({n})"))
            .collect();
        s.item(format!("Files most touched: {}", shown.join(", ")));
    }
    if !act.tools.is_empty() {
        let shown: Vec<String> = act.tools.iter().map(|(t, n)| format!("{t} {n}")).collect();
        s.item(format!("Tools most used: {}", shown.join(", ")));
    }
    for (tool, line, n) in act.failures.iter().filter(|f| f.2 > 1).take(MAX_FAILURES) {
        s.item(format!(
            "Recurring failure (×{n}): {}",
            failure_label(tool, line.as_deref())
        ));
    }
    (s.lines.len() > 1).then_some(s)
}

/// Lay the sections out under the size line, whole lines only, within
/// `max_chars` characters in total (the size line included). `None` when not
/// even the size line and one line fit.
fn render(scope: (&str, &str), sections: &[Section], max_chars: usize) -> Option<String> {
    // The size line depends on the body and the body's room on the size line:
    // settle it in a few rounds (the digits change at most a little).
    let mut header_len = 80;
    let mut out = String::new();
    for _ in 0..4 {
        let room = max_chars.saturating_sub(header_len + 1);
        let (body, items) = fit(sections, room);
        let mut header = String::new();
        let mut total: usize = 0;
        for _ in 0..3 {
            header = format!(
                "memhook briefing for {}/{}: {items} items, {total} characters, ~{} tokens",
                scope.0,
                scope.1,
                total.div_ceil(CHARS_PER_TOKEN)
            );
            total = header.chars().count() + 1 + body.chars().count();
        }
        let hl = header.chars().count();
        out = format!("{header}\n{body}");
        if hl <= header_len {
            break;
        }
        header_len = hl;
    }
    let fits = out.chars().count() <= max_chars && out.lines().count() > 1;
    fits.then_some(out)
}

/// The sections' lines that fit in `room` characters, and the item count.
fn fit(sections: &[Section], room: usize) -> (String, usize) {
    let mut body = String::new();
    let mut used = 0;
    let mut items = 0;
    'outer: for (i, sec) in sections.iter().enumerate() {
        // Room the closing line needs once anything under the title is in.
        let reserve = sec.closing.as_ref().map_or(0, |c| 1 + c.chars().count());
        for (j, (line, is_item)) in sec.lines.iter().enumerate() {
            let sep = usize::from(!body.is_empty());
            let blank = usize::from(i > 0 && j == 0);
            let need = sep + blank + line.chars().count();
            let keep = if j > 0 { reserve } else { 0 };
            if used + need + keep > room {
                // A title with no room for anything under it is left out.
                if j == 1 && body.ends_with(&sec.lines[0].0) {
                    let cut = body.len() - sec.lines[0].0.len();
                    body.truncate(cut);
                    while body.ends_with('\n') {
                        body.pop();
                    }
                } else if j > 1 {
                    if let Some(c) = &sec.closing {
                        body.push('\n');
                        body.push_str(c);
                    }
                }
                break 'outer;
            }
            if sep == 1 {
                body.push('\n');
            }
            if blank == 1 {
                body.push('\n');
            }
            body.push_str(line);
            used += need;
            if *is_item {
                items += 1;
            }
        }
        if let Some(c) = &sec.closing {
            body.push('\n');
            body.push_str(c);
            used += reserve;
        }
    }
    (body, items)
}

/// Cut `text` to at most `max` characters on a line boundary when it can.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    match cut.rfind('\n') {
        Some(i) if i > 0 => cut[..i].to_string(),
        _ => cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{sample, Record, RecordTool};

    fn rec(key: &str, ms: u64, session: &str, event: &str) -> Record {
        Record {
            occurred_ms: ms,
            event: event.into(),
            native_event: event.into(),
            session_id: Some(session.into()),
            cwd: Some("/w/api".into()),
            scope: sample::scope("acme", "api", "marker"),
            ..sample::record(key)
        }
    }

    fn tool(
        key: &str,
        ms: u64,
        session: &str,
        name: &str,
        fam: &str,
        ok: bool,
        file: &str,
    ) -> Record {
        let mut r = rec(
            key,
            ms,
            session,
            if ok {
                "post-tool-use"
            } else {
                "post-tool-use-failure"
            },
        );
        r.tool = Some(RecordTool {
            family: fam.into(),
            name: Some(name.into()),
            call_id: Some(format!("c{key}")),
            outcome: Some(if ok { "success" } else { "error" }.into()),
        });
        if !ok {
            r.body = Some("exit status 101: test failed".into());
        }
        if !file.is_empty() {
            r.files = vec![file.into()];
        }
        r
    }

    fn seeded() -> (tempfile::TempDir, Store) {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let base = 1_795_964_955_760;
        let mut p = rec("p1", base, "old", "user-prompt");
        p.title = Some("Add the login endpoint".into());
        s.insert(&p).unwrap();
        let mut p = rec("p2", base + 1000, "last", "user-prompt");
        p.title = Some("Fix the flaky retry test".into());
        s.insert(&p).unwrap();
        s.insert(&tool(
            "t1",
            base + 2000,
            "last",
            "Edit",
            "file",
            true,
            "src/retry.rs",
        ))
        .unwrap();
        s.insert(&tool("t2", base + 3000, "last", "Bash", "shell", false, ""))
            .unwrap();
        s.insert(&tool("t3", base + 4000, "last", "Bash", "shell", false, ""))
            .unwrap();
        s.insert(&rec("e1", base + 5000, "new", "session-start"))
            .unwrap();
        (t, s)
    }

    #[test]
    fn nothing_to_say_without_previous_work() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        assert_eq!(compose(&s, ("acme", "api"), None, 4000, true), None);
        // A session that only started and ended is not a handoff.
        s.insert(&rec("a", 1, "idle", "session-start")).unwrap();
        s.insert(&rec("b", 2, "idle", "session-end")).unwrap();
        assert_eq!(compose(&s, ("acme", "api"), None, 4000, true), None);
        // The starting session never briefs itself.
        s.insert(&rec("c", 3, "cur", "user-prompt")).unwrap();
        assert_eq!(compose(&s, ("acme", "api"), Some("cur"), 4000, false), None);
    }

    #[test]
    fn handoff_lists_prompts_tools_failures_files_in_order() {
        let (_t, s) = seeded();
        let b = compose(&s, ("acme", "api"), Some("new"), 4000, false).unwrap();
        let first = b.lines().next().unwrap();
        assert!(first.starts_with("memhook briefing for acme/api: "), "{b}");
        let chars = b.chars().count();
        assert!(first.contains(&format!("{chars} characters")), "{b}");
        assert!(
            first.contains(&format!("~{} tokens", chars.div_ceil(4))),
            "{b}"
        );
        let pos = |needle: &str| b.find(needle).unwrap_or_else(|| panic!("{needle} in {b}"));
        assert!(
            pos("Prompt: Fix the flaky retry test")
                < pos("Tool activity: shell 2 (2 failed), file 1")
        );
        assert!(pos("Tool activity") < pos("Failed: Bash: exit status 101: test failed (×2)"));
        assert!(pos("Failed:") < pos("Files touched: src/retry.rs"));
        assert!(pos("Files touched") < pos("Earlier (claude-code"));
        assert!(b.contains("Add the login endpoint"));
        assert!(!b.contains("Recent sessions digest"));
        // Items in the size line = bullet lines.
        let bullets = b.lines().filter(|l| l.starts_with("- ")).count();
        assert!(first.contains(&format!(": {bullets} items")), "{b}");
        // Reading is not destructive.
        assert_eq!(
            compose(&s, ("acme", "api"), Some("new"), 4000, false).unwrap(),
            b
        );
        // Another scope has nothing.
        assert_eq!(compose(&s, ("acme", "web"), None, 4000, false), None);
    }

    #[test]
    fn digest_only_when_opted_in() {
        let (_t, s) = seeded();
        let b = compose(&s, ("acme", "api"), Some("new"), 4000, true).unwrap();
        assert!(b.contains("## Recent sessions digest (2 sessions)"), "{b}");
        assert!(b.contains("Files most touched: src/retry.rs (1)"), "{b}");
        assert!(b.contains("Recurring failure (×2): Bash"), "{b}");
    }

    #[test]
    fn stays_within_max_chars_at_every_size() {
        let (_t, s) = seeded();
        assert_eq!(compose(&s, ("acme", "api"), Some("new"), 60, true), None);
        for max in [250, 333, crate::scope::MAX_CHARS_MIN, 4000] {
            let b = compose(&s, ("acme", "api"), Some("new"), max, true).unwrap();
            let n = b.chars().count();
            assert!(n <= max, "{n} > {max}: {b}");
            let first = b.lines().next().unwrap();
            assert!(first.contains(&format!("{n} characters")), "{max}: {b}");
            let bullets = b.lines().filter(|l| l.starts_with("- ")).count();
            assert!(first.contains(&format!(": {bullets} items")), "{max}: {b}");
        }
    }

    #[test]
    fn delivery_at_start_only_when_other_sessions_wait() {
        use crate::spool::{SpoolEntry, ENTRY_VERSION};
        let t = tempfile::tempdir().unwrap();
        let spool = Spool::open(t.path()).unwrap();
        let put = |key: &str, session: &str, sink: SinkTarget| {
            spool
                .enqueue(&SpoolEntry {
                    v: ENTRY_VERSION,
                    sink,
                    attempts: 0,
                    enqueued_ms: 1,
                    record: rec(key, 1, session, "session-start"),
                })
                .unwrap()
        };
        let http = SinkTarget::Http {
            url: "http://127.0.0.1:9".into(),
        };
        let store = SinkTarget::Store;
        assert!(!briefing_may_change(&[], &store, Some("new")));
        let own = put("k1", "new", store.clone());
        assert!(!briefing_may_change(
            std::slice::from_ref(&own),
            &store,
            Some("new")
        ));
        let other_sink = put("k2", "old", http.clone());
        let both = vec![own.clone(), other_sink];
        assert!(!briefing_may_change(&both, &store, Some("new")));
        assert!(briefing_may_change(&both, &http, Some("new")));
        assert!(briefing_may_change(
            std::slice::from_ref(&own),
            &store,
            None
        ));
        let old = put("k3", "old", store.clone());
        assert!(briefing_may_change(
            &[own.clone(), old],
            &store,
            Some("new")
        ));
        // Past the scan bound, assume so without reading.
        let many = vec![own; PENDING_SCAN + 1];
        assert!(briefing_may_change(&many, &store, Some("new")));
        assert!(!briefing_may_change(
            &many[..PENDING_SCAN],
            &store,
            Some("new")
        ));
    }

    #[test]
    fn budget_override_is_checked_at_its_edges() {
        let ms = |v: &str| budget_from(Some(v));
        let ok = |n: u64| (Duration::from_millis(n), None);
        assert_eq!(budget_from(None), (DEFAULT_BUDGET, None));
        assert_eq!(ms("  "), (DEFAULT_BUDGET, None));
        assert_eq!(ms(" 2500 "), ok(2500));
        assert_eq!(ms("100"), ok(MIN_BUDGET_MS));
        assert_eq!(ms("10000"), ok(MAX_BUDGET_MS));
        // Out of range: clamped, and said so.
        let (d, p) = ms("99");
        assert_eq!(d, Duration::from_millis(MIN_BUDGET_MS));
        assert!(p
            .unwrap()
            .contains("MEMHOOK_START_BUDGET_MS=99 is outside 100..=10000"));
        let (d, p) = ms("5");
        assert_eq!(d, Duration::from_millis(MIN_BUDGET_MS));
        assert!(p.is_some());
        let (d, p) = ms("10001");
        assert_eq!(d, Duration::from_millis(MAX_BUDGET_MS));
        assert!(p.is_some());
        // Not a number: the default, and said so.
        for bad in ["abc", "-5", "1.5", "1500ms"] {
            let (d, p) = ms(bad);
            assert_eq!(d, DEFAULT_BUDGET, "{bad}");
            assert!(p.unwrap().contains("not a whole number"), "{bad}");
        }
    }

    #[test]
    fn clip_prefers_line_boundaries() {
        assert_eq!(clip("ab\ncd", 10), "ab\ncd");
        assert_eq!(clip("ab\ncdef", 5), "ab");
        assert_eq!(clip("abcdef", 3), "abc");
        assert_eq!(clip("ééé", 2), "éé");
    }
}
