//! `memhook status`, `recent` and `search`: read-only views of the spool,
//! the delivery counters and the store.
//!
//! `status` shows, per sink, the accounting identity
//! `enqueued = delivered + pending + dropped` (dropped by reason, spool-full
//! refusals and failed spool writes included), the oldest pending record, the last delivery and the
//! last error, and whether a drainer holds the lock.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use crate::cmd::{CmdResult, ScopeArgs};
use memhook_core::data_dir;
use memhook_core::scope::{self, Mode, Scope, ScopeInput};
use memhook_core::term;
use memhook_core::timefmt::{local_text, now_ms, rfc3339_ms};
use memhook_delivery::drain::{self, SinkCounters};
use memhook_delivery::spool::{SinkTarget, Spool};
use memhook_store::sqlite::{Store, StoredRecord, STORE_FILE};

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `--limit` of `recent` and `search`: 1 to the store's most rows per query,
/// refused above it rather than silently cut.
fn parse_limit(v: &str) -> Result<usize, String> {
    let max = memhook_store::sqlite::MAX_QUERY_LIMIT;
    match v.trim().parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "{v:?} is not a number from 1 to {max} (one call lists at most {max} records; \
             narrow it with --workspace/--project or `memhook search`)"
        )),
    }
}

#[derive(Debug, Args)]
pub struct RecentArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// How many records to list (1 to 1,000).
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = parse_limit)]
    pub limit: usize,
    /// List records of every project, not only the current scope.
    #[arg(long)]
    pub all: bool,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Plain words to look for: a record matches when it holds every word
    /// in any inflection (`retries` finds `retry`); `parse date` also finds
    /// `parse_date`, `parseDate`, `parse-date`. Other punctuation only
    /// separates words (no query syntax). Best match first, recent ones
    /// lifted; under each hit, why it matched (the words between **).
    /// Records of identical text are one hit that says how many. When the
    /// words find fewer than --limit, the records closest in meaning follow,
    /// marked (by meaning): "make downloads survive flaky networks" finds a
    /// retry with backoff.
    pub query: String,
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// How many records to list (1 to 1,000).
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = parse_limit)]
    pub limit: usize,
    /// Search every project, not only the current scope.
    #[arg(long)]
    pub all: bool,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
}

/// The accounting of one sink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkStatus {
    pub id: String,
    pub sink: Option<SinkTarget>,
    pub enqueued: u64,
    pub delivered: u64,
    pub pending: u64,
    /// By reason; `spool_full` and `spool_write_failed` come from the
    /// enqueue ledgers.
    pub dropped: BTreeMap<String, u64>,
    pub oldest_pending_ms: Option<u64>,
    pub counters: SinkCounters,
}

impl SinkStatus {
    pub fn dropped_total(&self) -> u64 {
        self.dropped.values().sum()
    }

    /// `enqueued - (delivered + pending + dropped)`: 0 when the books balance.
    pub fn unaccounted(&self) -> i64 {
        self.enqueued as i64 - (self.delivered + self.pending + self.dropped_total()) as i64
    }

    fn describe(&self) -> String {
        self.sink
            .as_ref()
            .map(SinkTarget::describe)
            .unwrap_or_else(|| "(sink unknown)".to_string())
    }
}

/// Everything `status` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub data_dir: PathBuf,
    pub drainer_running: bool,
    pub sinks: Vec<SinkStatus>,
    /// Corrupt entries dropped whose sink could not be read.
    pub corrupt_unattributed: u64,
    /// Pending files that cannot be read right now, or that the next drain
    /// drops as corrupt or invalid.
    pub unreadable_pending: u64,
    /// Why the last session-start briefing could not be composed, and when.
    pub last_briefing_error: Option<(u64, String)>,
    /// A pause of capture in force (`memhook pause`), in words.
    pub paused: Option<String>,
    /// `*.json` names in the spool that are not regular files (FIFOs,
    /// directories, …): skipped by every drain, never counted as records.
    pub not_regular: u64,
    /// The binaries of an install that are not beside this one (see
    /// [`missing_binaries`]).
    pub missing_binaries: Vec<String>,
    /// Markers the hook could not use and that still cannot be used.
    pub marker_problems: Vec<memhook_core::scope::problems::MarkerProblem>,
    /// The embedded store's size, oldest record and what retention removed
    /// (`None`: no store in this data dir).
    pub store: Option<StoreSize>,
}

/// The embedded store at a glance (docs/retention.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSize {
    /// Bytes of the database file and its WAL.
    pub bytes: u64,
    /// Records, from the projects' roll-ups.
    pub records: u64,
    pub oldest_ms: Option<u64>,
    /// What retention removed, per class (`retention::Class::ALL` order).
    pub removed: memhook_store::sqlite::retention::Removed,
}

/// The store of `dir` at a glance; `None` when there is none (or it cannot
/// be read: `recent` and `search` say why).
fn store_size(dir: &Path) -> Option<StoreSize> {
    let file = dir.join(STORE_FILE);
    let store = open_store(dir).ok()??;
    let bytes = [file.clone(), dir.join(format!("{STORE_FILE}-wal"))]
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    Some(StoreSize {
        bytes,
        records: store.record_total().ok()?,
        oldest_ms: store.oldest_ms().ok()?,
        removed: store.retention_removed().ok()?,
    })
}

/// `n` bytes in words: KiB, MiB or GiB with one decimal.
fn size_words(n: u64) -> String {
    let units = [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in units {
        if n >= size {
            return format!("{:.1} {unit}", n as f64 / size as f64);
        }
    }
    format!("{n} bytes")
}

/// Gather the status of `data_dir`. A data dir that does not exist has an
/// empty status: looking never creates one.
pub fn collect(dir: &Path) -> Result<Status, memhook_delivery::spool::SpoolError> {
    if !dir.exists() {
        return Ok(Status {
            data_dir: dir.to_path_buf(),
            drainer_running: false,
            sinks: Vec::new(),
            corrupt_unattributed: 0,
            unreadable_pending: 0,
            last_briefing_error: None,
            not_regular: 0,
            paused: None,
            marker_problems: Vec::new(),
            store: None,
            missing_binaries: missing_binaries(),
        });
    }
    let spool = Spool::open(dir)?;
    let mut pending: BTreeMap<String, (u64, u64, SinkTarget)> = BTreeMap::new();
    let mut unreadable = 0;
    let listing = spool.list()?;
    for path in listing.files {
        match Spool::load(&path) {
            Ok(e) => {
                let slot = pending
                    .entry(e.sink.id())
                    .or_insert((0, u64::MAX, e.sink.clone()));
                slot.0 += 1;
                slot.1 = slot.1.min(e.enqueued_ms);
            }
            Err(_) => unreadable += 1,
        }
    }
    let mut ids: BTreeSet<String> = spool.ledger_sinks().into_iter().collect();
    ids.extend(drain::counter_sinks(dir));
    ids.extend(pending.keys().cloned());
    let corrupt_unattributed = drain::load_counters(dir, drain::UNKNOWN_SINK).dropped_total();
    ids.remove(drain::UNKNOWN_SINK);
    let mut sinks = Vec::new();
    for id in ids {
        let counters = drain::load_counters(dir, &id);
        let (n, oldest, target) = match pending.get(&id) {
            Some((n, o, t)) => (*n, Some(*o), Some(t.clone())),
            None => (0, None, None),
        };
        let mut dropped = counters.dropped.clone();
        for (reason, n) in spool.ledger_drops(&id) {
            *dropped.entry(reason.to_string()).or_default() += n;
        }
        let sink = counters
            .sink
            .clone()
            .or(target)
            .or_else(|| (id == SinkTarget::Store.id()).then_some(SinkTarget::Store));
        sinks.push(SinkStatus {
            enqueued: spool.ledger(&id, memhook_delivery::spool::LEDGER_ENQUEUED),
            delivered: counters.delivered,
            pending: n,
            dropped,
            oldest_pending_ms: oldest,
            sink,
            counters,
            id,
        });
    }
    Ok(Status {
        data_dir: dir.to_path_buf(),
        drainer_running: drain::drainer_running(dir),
        sinks,
        corrupt_unattributed,
        unreadable_pending: unreadable,
        last_briefing_error: memhook_sinks::session_start::last_failure(dir),
        paused: memhook_core::switches::describe(dir, None),
        not_regular: listing.not_regular as u64,
        marker_problems: memhook_core::scope::problems::current(dir),
        store: store_size(dir),
        missing_binaries: missing_binaries(),
    })
}

/// The binaries `cargo install` puts beside `memhook` that are not beside
/// this one, when this one is part of an install (a `memhook` beside it).
/// `memhook` falls back to the others (docs/architecture.md, "Four
/// binaries"), at a cost: without `memhook-brief` a briefing is composed
/// in the larger `memhook-session`; without `memhook-session` the drainer
/// is `memhook-cli`; without both and `memhook-cli`, no briefing.
pub fn missing_binaries() -> Vec<String> {
    use memhook_delivery::drain::spawn::{BRIEF_BINARY, FULL_BINARY, LEAN_BINARY, SESSION_BINARY};
    let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    else {
        return Vec::new();
    };
    if !dir.join(LEAN_BINARY).is_file() {
        return Vec::new();
    }
    [SESSION_BINARY, BRIEF_BINARY, FULL_BINARY]
        .into_iter()
        .filter(|name| !dir.join(name).is_file())
        .map(|name| dir.join(name).display().to_string())
        .collect()
}

fn age(ms: u64) -> String {
    let s = now_ms().saturating_sub(ms) / 1000;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{:02}h", s / 86_400, (s % 86_400) / 3600),
    }
}

impl Status {
    /// The `--json` object.
    pub fn to_json(&self) -> serde_json::Value {
        let sinks: Vec<serde_json::Value> = self
            .sinks
            .iter()
            .map(|s| {
                json!({
                    "id": s.id,
                    "sink": s.describe(),
                    "kind": match &s.sink {
                        Some(SinkTarget::Store) => "store",
                        Some(SinkTarget::Http { .. }) => "http",
                        None => "unknown",
                    },
                    "enqueued": s.enqueued,
                    "delivered": s.delivered,
                    "pending": s.pending,
                    "dropped": s.dropped,
                    "dropped_total": s.dropped_total(),
                    "balanced": s.unaccounted() == 0,
                    "unaccounted": s.unaccounted(),
                    "oldest_pending_at": s.oldest_pending_ms.map(rfc3339_ms),
                    "oldest_pending_age_secs": s.oldest_pending_ms.map(|m| now_ms().saturating_sub(m) / 1000),
                    "last_delivery_at": s.counters.last_delivery_ms.map(rfc3339_ms),
                    "last_error": s.counters.last_error,
                    "last_error_at": s.counters.last_error_ms.map(rfc3339_ms),
                    "retry_after": (s.counters.retry_after_ms > now_ms()).then(|| rfc3339_ms(s.counters.retry_after_ms)),
                })
            })
            .collect();
        json!({
            "data_dir": self.data_dir.display().to_string(),
            "drainer_running": self.drainer_running,
            "sinks": sinks,
            "corrupt_unattributed": self.corrupt_unattributed,
            "unreadable_pending": self.unreadable_pending,
            "paused": self.paused,
            "last_briefing_error": self.last_briefing_error.as_ref().map(|(_, e)| e),
            "last_briefing_error_at": self.last_briefing_error.as_ref().map(|(ms, _)| rfc3339_ms(*ms)),
            "not_regular": self.not_regular,
            "missing_binaries": self.missing_binaries,
            "marker_problems": self.marker_problems.iter().map(|p| serde_json::json!({
                "marker": p.marker,
                "problem": p.problem,
                "filed_under": p.scope,
                "since": rfc3339_ms(p.since_ms),
            })).collect::<Vec<_>>(),
            "store": self.store.as_ref().map(|st| json!({
                "bytes": st.bytes,
                "records": st.records,
                "oldest_at": st.oldest_ms.map(rfc3339_ms),
                "retention_removed": memhook_store::sqlite::retention::Class::ALL
                    .iter()
                    .zip(st.removed.records)
                    .map(|(c, n)| (c.key().to_string(), json!(n)))
                    .collect::<serde_json::Map<String, serde_json::Value>>(),
                "retention_last_at": st.removed.last_ms.map(rfc3339_ms),
            })),
        })
    }

    /// Text for humans.
    pub fn to_text(&self) -> String {
        let mut o = format!(
            "data dir: {}\ndrainer: {}\n",
            self.data_dir.display(),
            if self.drainer_running {
                "running"
            } else {
                "idle"
            }
        );
        if let Some(p) = &self.paused {
            o.push_str(&format!("{p}\n"));
        }
        if self.sinks.is_empty() {
            o.push_str("nothing captured yet\n");
        }
        for s in &self.sinks {
            o.push_str(&format!(
                "\nsink {} [{}]\n",
                term::line(&s.describe()),
                term::line(&s.id)
            ));
            let balance = match s.unaccounted() {
                0 => "balanced".to_string(),
                n => format!(
                    "OFF BY {n}: a hook may be enqueueing right now (run status again); \
                     if it persists, report it"
                ),
            };
            o.push_str(&format!(
                "  enqueued {} = delivered {} + pending {} + dropped {}  ({balance})\n",
                s.enqueued,
                s.delivered,
                s.pending,
                s.dropped_total()
            ));
            if !s.dropped.is_empty() {
                let parts: Vec<String> = s
                    .dropped
                    .iter()
                    .map(|(k, v)| format!("{} {v}", term::line(k)))
                    .collect();
                o.push_str(&format!("  dropped: {}\n", parts.join(", ")));
            }
            if let Some(ms) = s.oldest_pending_ms {
                o.push_str(&format!("  oldest pending: {} ago\n", age(ms)));
            }
            if let Some(ms) = s.counters.last_delivery_ms {
                o.push_str(&format!(
                    "  last delivery: {} ({} ago)\n",
                    local_text(ms),
                    age(ms)
                ));
            }
            if let Some(e) = &s.counters.last_error {
                let at = s
                    .counters
                    .last_error_ms
                    .map(|m| format!(" ({} ago)", age(m)))
                    .unwrap_or_default();
                o.push_str(&format!("  last error: {}{at}\n", term::line(e)));
            }
            if s.counters.retry_after_ms > now_ms() {
                o.push_str(&format!(
                    "  backing off until {} (`memhook drain` retries now)\n",
                    local_text(s.counters.retry_after_ms)
                ));
            }
        }
        if let Some(st) = &self.store {
            let oldest = st
                .oldest_ms
                .map(|ms| format!(", oldest {} ({} ago)", local_text(ms), age(ms)))
                .unwrap_or_default();
            o.push_str(&format!(
                "\nstore: {}, {} records{oldest}\n",
                size_words(st.bytes),
                st.records
            ));
            let parts: Vec<String> = memhook_store::sqlite::retention::Class::ALL
                .iter()
                .zip(st.removed.records)
                .map(|(c, n)| format!("{} {n}", c.key()))
                .collect();
            let last = st
                .removed
                .last_ms
                .map(|ms| format!(" (last {} ago)", age(ms)))
                .unwrap_or_default();
            o.push_str(&format!(
                "  retention removed: {}{last} (docs/retention.md)\n",
                parts.join(", ")
            ));
        }
        if self.corrupt_unattributed > 0 {
            o.push_str(&format!(
                "\ncorrupt or invalid spool entries dropped with no trusted sink: {}\n",
                self.corrupt_unattributed
            ));
        }
        if self.unreadable_pending > 0 {
            o.push_str(&format!(
                "\nunreadable spool entries pending: {} (the next drain drops them as corrupt or invalid)\n",
                self.unreadable_pending
            ));
        }
        if let Some((ms, e)) = &self.last_briefing_error {
            o.push_str(&format!(
                "\nlast briefing error ({} ago; that session started with no briefing): {}\n",
                age(*ms),
                term::line(e)
            ));
        }
        for p in &self.marker_problems {
            o.push_str(&format!(
                "\nmarker problem (since {}): {}: {}\n  until it is fixed, events there are filed under {} and file and shell tool events keep metadata only; `memhook show --cwd DIR` checks it\n",
                local_text(p.since_ms),
                term::line(&p.marker),
                term::line(&p.problem),
                term::line(&p.scope),
            ));
        }
        if self.not_regular > 0 {
            o.push_str(&format!(
                "\nspool entries that are not regular files: {} (skipped by every drain; remove them by hand)\n",
                self.not_regular
            ));
        }
        if !self.missing_binaries.is_empty() {
            o.push_str(&format!(
                "\nincomplete install: {} missing; memhook falls back to the binaries it finds, \
                 with more memory per session start or no briefing (docs/architecture.md, \
                 \"Four binaries\"); install again: `cargo install --locked --path crates/cli`\n",
                self.missing_binaries
                    .iter()
                    .map(|p| term::line(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        o
    }
}

/// `memhook status [--json]`.
pub fn run_status(args: &StatusArgs, data_dir: Option<&Path>) -> CmdResult {
    let dir = data_dir::resolve(data_dir)?;
    if !dir.exists() {
        eprintln!(
            "memhook: {} does not exist: nothing was captured there (check --data-dir \
             and AI_MEMORY_DATA_DIR)",
            dir.display()
        );
    }
    let st = collect(&dir)?;
    if args.json {
        println!("{}", st.to_json());
    } else {
        print!("{}", st.to_text());
    }
    Ok(ExitCode::SUCCESS)
}

/// Resolve the scope of a client command and print the stderr scope note
/// (the same resolution and note as `memhook show`).
fn client_scope(args: &ScopeArgs) -> Result<Scope, Box<dyn std::error::Error + Send + Sync>> {
    let input = ScopeInput::from_env(
        Mode::Client,
        args.cwd.as_deref(),
        args.workspace.clone(),
        args.project.clone(),
        None,
    )?;
    let scope = scope::resolve(&input)?;
    scope::report(&scope);
    Ok(scope)
}

/// `None` = every scope: `--all`, or the marker's `[recall] default_global`
/// when the user allowed it (`memhook trust --recall-all`) and no
/// `--workspace`/`--project` names a scope explicitly.
fn query_scope(
    args: &ScopeArgs,
    all: bool,
    data_dir: &Path,
) -> Result<Option<(String, String)>, Box<dyn std::error::Error + Send + Sync>> {
    if all {
        return Ok(None);
    }
    let mut scope = client_scope(args)?;
    // DESIGN §11: an untrusted checkout reads its own quarantine only.
    scope::binding::enforce_client(data_dir, &mut scope, scope::binding::Access::ReadOnly);
    let explicit = args.workspace.is_some() || args.project.is_some();
    if memhook_core::switches::recall_all(data_dir, &scope) && !explicit {
        return Ok(None);
    }
    Ok(Some((scope.workspace, scope.project)))
}

fn print_records(records: &[StoredRecord], json: bool) -> std::io::Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for r in records {
        if json {
            writeln!(out, "{}", r.to_json())?;
        } else {
            // Stored text is hostile: every field through term::line. Times
            // for people: local, with the offset from UTC (as `recent`).
            let t = local_text(r.occurred_ms);
            let tool_outcome = tool_and_outcome(r);
            let title = r
                .title
                .as_deref()
                .map(|t| format!(" — {}", term::line(t)))
                .unwrap_or_default();
            writeln!(
                out,
                "{} {} {}/{} {} {}{tool_outcome}{title}",
                t,
                term::line(r.key.get(..8).unwrap_or(&r.key)),
                term::line(&r.workspace),
                term::line(&r.project),
                term::line(&r.agent),
                term::line(&r.event)
            )?;
            // A search's record says why it matched (`recent`'s never do).
            if let Some(m) = r.matched.as_deref() {
                writeln!(out, "    {}", term::line(m))?;
            }
            if r.identical > 0 {
                writeln!(out, "    (and {} more of identical text)", r.identical)?;
            }
        }
    }
    out.flush()
}

/// The characters of a session id `recent` shows (what `forget --session`
/// completes).
const SHORT_SESSION: usize = 8;

/// `recent`'s lines for people: local time with its offset, the key's
/// first 8 characters, scope, agent, the session's first 8 characters,
/// the event and the title.
fn print_recent(records: &[StoredRecord]) -> std::io::Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for r in records {
        writeln!(out, "{}", recent_line(r))?;
    }
    out.flush()
}

/// ` TOOL OUTCOME` of a record (tool name, else family), each through
/// `term::line`; empty parts left out.
fn tool_and_outcome(r: &StoredRecord) -> String {
    let tool = r
        .tool_name
        .as_deref()
        .or(r.tool_family.as_deref())
        .map(|t| format!(" {}", term::line(t)))
        .unwrap_or_default();
    let outcome = r
        .outcome
        .as_deref()
        .map(|o| format!(" {}", term::line(o)))
        .unwrap_or_default();
    format!("{tool}{outcome}")
}

fn recent_line(r: &StoredRecord) -> String {
    // Stored text is hostile: every field through term::line.
    let session = r
        .session_id
        .as_deref()
        .map(|s| {
            let short: String = s.chars().take(SHORT_SESSION).collect();
            format!(" session {}", term::line(&short))
        })
        .unwrap_or_default();
    let what = match r.title.as_deref() {
        Some(t) => format!(" — {}", term::line(t)),
        None => tool_and_outcome(r),
    };
    format!(
        "{} {} {}/{} {}{session} {}{what}",
        local_text(r.occurred_ms),
        term::line(r.key.get(..8).unwrap_or(&r.key)),
        term::line(&r.workspace),
        term::line(&r.project),
        term::line(&r.agent),
        term::line(&r.event)
    )
}

/// The store, or `None` when nothing was ever stored in this data dir. A
/// data dir or store that cannot be looked at is an error, never an empty
/// answer.
pub(crate) fn open_store(
    dir: &Path,
) -> Result<Option<Store>, Box<dyn std::error::Error + Send + Sync>> {
    let store = dir.join(STORE_FILE);
    match std::fs::symlink_metadata(&store) {
        Ok(_) => Ok(Some(Store::open(dir)?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!(
            "cannot read the store {}: {e} (check --data-dir / AI_MEMORY_DATA_DIR and the \
             directory's permissions)",
            store.display()
        )
        .into()),
    }
}

/// What `recent` and `search` looked at, for the notes they print on stderr.
fn scope_words(scope: &Option<(String, String)>) -> String {
    match scope {
        Some((w, p)) => format!("{w}/{p} (only this project; `--all` looks in every project)"),
        None => "any project".to_string(),
    }
}

/// Notes that keep `recent`/`search` from answering with silence: where new
/// events go when a server is configured, and why nothing was listed.
fn explain_empty_or_elsewhere(dir: &Path, store_exists: bool, empty: Option<String>) {
    if let SinkTarget::Http { .. } = SinkTarget::configured(None) {
        eprintln!(
            "memhook: {} is set: hooks run with it deliver new events to that server; \
             this lists only the local store in {}",
            memhook_delivery::spool::HOOK_URL_ENV,
            dir.display()
        );
    }
    if !store_exists {
        eprintln!(
            "memhook: nothing has been stored in {} yet (run `memhook status` to see \
             what is pending)",
            dir.display()
        );
    } else if let Some(what) = empty {
        eprintln!("memhook: {what}");
    }
}

/// `memhook recent [--limit N] [--all] [--json]`.
pub fn run_recent(args: &RecentArgs, data_dir: Option<&Path>) -> CmdResult {
    let dir = data_dir::resolve(data_dir)?;
    let scope = query_scope(&args.scope, args.all, &dir)?;
    let store = open_store(&dir)?;
    let records = match &store {
        Some(store) => {
            let scope_ref = scope.as_ref().map(|(w, p)| (w.as_str(), p.as_str()));
            if args.json {
                store.recent(scope_ref, args.limit)?
            } else {
                // Calls folded into their results: look at twice as many.
                let mut folded =
                    memhook_store::fold::fold_calls(store.recent(scope_ref, args.limit * 2)?);
                folded.truncate(args.limit);
                folded
            }
        }
        None => Vec::new(),
    };
    if args.json {
        print_records(&records, true)?;
    } else {
        print_recent(&records)?;
    }
    let empty = records
        .is_empty()
        .then(|| format!("no records in {}", scope_words(&scope)));
    explain_empty_or_elsewhere(&dir, store.is_some(), empty);
    Ok(ExitCode::SUCCESS)
}

/// `memhook search QUERY [--all] [--json]`.
pub fn run_search(args: &SearchArgs, data_dir: Option<&Path>) -> CmdResult {
    let dir = data_dir::resolve(data_dir)?;
    let scope = query_scope(&args.scope, args.all, &dir)?;
    let store = open_store(&dir)?;
    let records = match &store {
        Some(store) => {
            let scope_ref = scope.as_ref().map(|(w, p)| (w.as_str(), p.as_str()));
            store.search_fused(scope_ref, &args.query, args.limit)?
        }
        None => Vec::new(),
    };
    print_records(&records, args.json)?;
    let empty = records.is_empty().then(|| {
        if memhook_store::sqlite::fts_query(&args.query).is_none() {
            "the query has no word to search for (letters or digits)".to_string()
        } else {
            format!(
                "nothing matched every word of the query in {}",
                scope_words(&scope)
            )
        }
    });
    explain_empty_or_elsewhere(&dir, store.is_some(), empty);
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memhook_delivery::spool::SpoolEntry;

    #[test]
    fn stored_text_in_status_and_drain_output_has_no_control_sequences() {
        let hostile = "boom \x1b]0;pwned\x07\x1b[2J\rfake line\nnext";
        let st = Status {
            data_dir: PathBuf::from("/d"),
            drainer_running: false,
            sinks: vec![SinkStatus {
                id: "store".into(),
                sink: Some(SinkTarget::Store),
                enqueued: 1,
                delivered: 0,
                pending: 0,
                dropped: BTreeMap::from([(hostile.to_string(), 1)]),
                oldest_pending_ms: None,
                counters: drain::SinkCounters {
                    last_error: Some(hostile.into()),
                    ..Default::default()
                },
            }],
            corrupt_unattributed: 0,
            unreadable_pending: 0,
            last_briefing_error: Some((0, hostile.into())),
            not_regular: 0,
            paused: None,
            marker_problems: vec![memhook_core::scope::problems::MarkerProblem {
                marker: hostile.into(),
                problem: hostile.into(),
                scope: hostile.into(),
                since_ms: 0,
            }],
            store: None,
            // A directory name is the user's, and may hold anything.
            missing_binaries: vec![hostile.into()],
        };
        assert!(st.to_text().contains("last briefing error"));
        assert!(st.to_text().contains("incomplete install"));
        assert!(st.to_text().contains("marker problem"));
        let report = drain::Report {
            errors: BTreeMap::from([("store".to_string(), hostile.to_string())]),
            ..Default::default()
        };
        for text in [st.to_text(), report.summary()] {
            assert!(
                text.contains("boom") && text.contains("fake line"),
                "{text}"
            );
            assert!(
                !text.contains(['\x1b', '\x07', '\r']) && !text.contains("line\nnext"),
                "{text:?}"
            );
        }
    }

    #[test]
    fn store_sizes_read_in_the_largest_whole_unit() {
        assert_eq!(size_words(1023), "1023 bytes");
        assert_eq!(size_words(1024), "1.0 KiB");
        assert_eq!(size_words((1 << 20) - 1), "1024.0 KiB");
        assert_eq!(size_words(1 << 20), "1.0 MiB");
        assert_eq!(size_words(3 << 29), "1.5 GiB");
    }

    #[test]
    fn status_balances_and_shows_spool_full_as_a_drop() {
        let t = tempfile::tempdir().unwrap();
        let spool = Spool::open(t.path()).unwrap();
        let e: SpoolEntry = serde_json::from_value(json!({
            "v": 1, "sink": {"kind": "store"}, "enqueued_ms": now_ms(),
            "record": {"v": 1, "key": "b".repeat(32), "occurred_ms": 1, "agent": "codex",
              "event": "stop", "native_event": "Stop",
              "scope": {"workspace": "w", "project": "p", "workspace_source": "env",
                        "project_source": "env", "project_strategy": "basename"},
              "disposition": "keep"}
        }))
        .unwrap();
        spool.enqueue(&e).unwrap();
        // A refused enqueue bumps both ledgers.
        std::fs::write(t.path().join("counters/store.enqueued"), "..").unwrap();
        std::fs::write(t.path().join("counters/store.full"), ".").unwrap();
        let st = collect(t.path()).unwrap();
        assert_eq!(st.sinks.len(), 1);
        let s = &st.sinks[0];
        assert_eq!((s.enqueued, s.delivered, s.pending), (2, 0, 1));
        assert_eq!(s.dropped.get("spool_full"), Some(&1));
        assert_eq!(s.unaccounted(), 0);
        let text = st.to_text();
        assert!(
            text.contains("enqueued 2 = delivered 0 + pending 1 + dropped 1  (balanced)"),
            "{text}"
        );
        assert_eq!(st.to_json()["sinks"][0]["balanced"], json!(true));
        // An uncounted loss shows.
        std::fs::write(t.path().join("counters/store.enqueued"), "...").unwrap();
        let st = collect(t.path()).unwrap();
        assert_eq!(st.sinks[0].unaccounted(), 1);
        assert!(st.to_text().contains("OFF BY 1"));
    }
}
