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
use memhook_store::briefing::{clip, compose_with};
use memhook_store::sqlite::Store;

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
            let memory_write = memhook_core::mcp_agents::installed(data_dir, event.agent.as_str());
            let composed = Store::open_until(data_dir, Some(deadline)).and_then(|store| {
                compose_with(
                    &store,
                    (&scope.workspace, &scope.project),
                    event.session_id.as_deref(),
                    max_chars,
                    scope.settings.inject_on_session_start,
                    memory_write,
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
            match crate::http::handoff(url, token.as_deref(), scope, event, deadline - now) {
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
    let mut factory = crate::factory::sink_factory_until(data_dir, timeout, Some(until));
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
                    exclusions: None,
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
}
