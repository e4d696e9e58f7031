//! What the hook does at session start: deliver what is pending for the
//! starting session's sink (within part of the budget), then compose the
//! briefing from the store ([`memhook_store::briefing::compose`]) or fetch it from
//! the server's `GET /handoff`, all within one hard budget (DESIGN §6).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use memhook_core::event::Event;
use memhook_core::scope::Scope;
use memhook_delivery::drain;
use memhook_delivery::spool::{SinkTarget, Spool};
use memhook_store::briefing::{clip, compose};
use memhook_store::sqlite::Store;

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
            let composed = Store::open_until(data_dir, Some(deadline)).and_then(|store| {
                compose(
                    &store,
                    (&scope.workspace, &scope.project),
                    event.session_id.as_deref(),
                    max_chars,
                    scope.settings.inject_on_session_start,
                )
            });
            match composed {
                Ok(text) => text?,
                // Out of time (a lock held to the deadline): no briefing,
                // and nothing broken to report.
                Err(_) if Instant::now() >= deadline => return None,
                Err(e) => {
                    report_failure(data_dir, &e.to_string());
                    return None;
                }
            }
        }
        SinkTarget::Http { url } => {
            let token = memhook_delivery::sink::auth_token(data_dir);
            match memhook_delivery::sink::http::handoff(
                url,
                token.as_deref(),
                scope,
                event,
                deadline - now,
            ) {
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

/// The file in the data dir that remembers why the last briefing could not be
/// composed (`memhook status` shows it): `{"at_ms": …, "error": "…"}`.
pub const FAILURE_FILE: &str = "briefing-error.json";
/// Longest failure text kept in [`FAILURE_FILE`] (and read back from it).
pub const MAX_FAILURE_BYTES: usize = 2048;

/// A briefing that could not be composed: the agent still gets `{}` (the
/// hook never fails), but the reason goes to stderr as one `memhook:` line and
/// into [`FAILURE_FILE`] for `memhook status`.
fn report_failure(data_dir: &Path, error: &str) {
    eprintln!("memhook: no briefing this session: {error}");
    let error = memhook_core::record::clean_capped(error, MAX_FAILURE_BYTES);
    let body = serde_json::json!({ "at_ms": memhook_core::timefmt::now_ms(), "error": error });
    let _ = memhook_core::data_dir::write_private_file(
        &data_dir.join(FAILURE_FILE),
        body.to_string().as_bytes(),
    );
}

/// The last briefing failure recorded in `data_dir`: (when, why). A file that
/// is not a regular file of ours, or does not parse, counts as none.
pub fn last_failure(data_dir: &Path) -> Option<(u64, String)> {
    #[derive(serde::Deserialize)]
    struct Failure {
        at_ms: u64,
        error: String,
    }
    let buf = memhook_core::data_dir::read_private_file(
        &data_dir.join(FAILURE_FILE),
        MAX_FAILURE_BYTES as u64 * 2 + 64,
    )
    .ok()?;
    let v: Failure = serde_json::from_slice(&buf).ok()?;
    Some((
        v.at_ms,
        memhook_core::record::clean_capped(&v.error, MAX_FAILURE_BYTES),
    ))
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

#[cfg(test)]
mod tests {
    use super::*;
    use memhook_core::record::{sample, Record};

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

    #[test]
    fn delivery_at_start_only_when_other_sessions_wait() {
        use memhook_delivery::spool::{SpoolEntry, ENTRY_VERSION};
        let t = tempfile::tempdir().unwrap();
        let spool = Spool::open(t.path()).unwrap();
        let put = |key: &str, session: &str, sink: SinkTarget| {
            spool
                .enqueue(&SpoolEntry {
                    v: ENTRY_VERSION,
                    sink,
                    attempts: 0,
                    enqueued_ms: 1,
                    // A key of the hook's shape: `k1` → `0…01`.
                    record: rec(
                        &format!("{:0>32}", key.trim_start_matches('k')),
                        1,
                        session,
                        "session-start",
                    ),
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
}
