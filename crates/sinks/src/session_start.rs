//! What the hook does at session start: deliver what is pending for the
//! starting session's sink (within part of the budget), then compose the
//! briefing from the store ([`memhook_store::briefing::compose`]) or fetch it from
//! the server's `GET /handoff`, all within one hard budget (DESIGN §6).

use std::path::Path;
use std::time::{Duration, Instant};

use memhook_core::briefing_cache::{self, Key};
use memhook_core::event::Event;
use memhook_core::scope::Scope;
use memhook_delivery::drain;
use memhook_delivery::sink::Sink;
use memhook_delivery::spool::{briefing_may_change, SinkTarget, Spool};
use memhook_store::briefing::{clip, compose_kept, compose_with};
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
    let session = event.session_id.as_deref();
    let SinkTarget::Http { url } = sink else {
        let key = Key::of(data_dir, scope, event.agent.as_str());
        return compose_for(data_dir, &key, session, budget);
    };
    let start = Instant::now();
    let deadline = start + budget;
    let until = start + budget * DELIVERY_SHARE_PCT / 100;
    // Each sink's timeout is what is left when it is made: after the wait
    // for the drain lock.
    deliver_pending(data_dir, sink, session, until, |target| {
        let timeout = until.saturating_duration_since(Instant::now());
        crate::factory::make_sink(data_dir, target, timeout, Some(until))
    });
    let now = Instant::now();
    if now >= deadline {
        return None;
    }
    let token = memhook_delivery::sink::auth_token(data_dir);
    let text = match crate::http::handoff(url, token.as_deref(), scope, event, deadline - now) {
        Ok(Some(t)) => clip(&t, scope.settings.max_chars),
        Ok(None) => return None,
        Err(e) => {
            eprintln!("memhook: no briefing from {url}: {e}");
            return None;
        }
    };
    (Instant::now() < deadline).then_some(text)
}

/// What `memhook-brief --data-dir DIR brief` does for the per-event
/// binary when it has no briefing kept ready (`memhook_hook::brief`):
/// deliver what is pending for the embedded store, then compose `key`'s
/// briefing for `session` (and keep it ready for the next session), all
/// within `budget`. It makes no sink but the store's
/// ([`crate::factory::store_only`]), so a binary that calls it and no other
/// delivery links no HTTP client or TLS.
pub fn compose_for(
    data_dir: &Path,
    key: &Key,
    session: Option<&str>,
    budget: Duration,
) -> Option<String> {
    let start = Instant::now();
    let deadline = start + budget;
    let until = start + budget * DELIVERY_SHARE_PCT / 100;
    deliver_pending(
        data_dir,
        &SinkTarget::Store,
        session,
        until,
        crate::factory::store_only(data_dir, until),
    );
    if Instant::now() >= deadline {
        return None;
    }
    let text = store_briefing(data_dir, key, session, deadline)?;
    (Instant::now() < deadline).then_some(text)
}

/// `key`'s briefing from the embedded store for `session`, kept ready for
/// the next session start when `session` is none of the sessions it looked
/// at (so that it holds for any other). `None` — the envelope prints `{}`
/// — when there is nothing to say or on any problem.
fn store_briefing(
    data_dir: &Path,
    key: &Key,
    session: Option<&str>,
    deadline: Instant,
) -> Option<String> {
    // The stamp is read before the snapshot: a commit after it makes the
    // kept briefing stale, never the other way round.
    let store_file = data_dir.join(memhook_store::sqlite::STORE_FILE);
    let stamp = briefing_cache::stamp(data_dir, &store_file, key);
    // Every wait for the database's lock ends at the deadline.
    let composed = Store::open_until(data_dir, Some(deadline)).and_then(|store| {
        let (text, looked_at) = compose_kept(&store, key)?;
        if session.is_some_and(|s| looked_at.iter().any(|k| k == s)) {
            // A resumed session: briefed about the others, never itself.
            return compose_with(
                &store,
                (&key.workspace, &key.project),
                session,
                key.max_chars,
                key.digest,
                key.mcp,
            );
        }
        if let Some(stamp) = stamp {
            if let Err(e) = briefing_cache::keep(data_dir, key, stamp, looked_at, text.clone()) {
                eprintln!("memhook: the briefing is not kept ready for the next session: {e}");
            }
        }
        Ok(text)
    });
    match composed {
        Ok(text) => text,
        // Out of time (a lock held to the deadline): no briefing, and
        // nothing broken to report.
        Err(_) if Instant::now() >= deadline => None,
        Err(e) => {
            report_failure(data_dir, &e.to_string());
            None
        }
    }
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
///
/// `factory` makes the sinks: [`crate::factory::store_only`] for a
/// composer that never talks to a server, so that it links no HTTP.
fn deliver_pending(
    data_dir: &Path,
    sink: &SinkTarget,
    session: Option<&str>,
    until: Instant,
    mut factory: impl FnMut(&SinkTarget) -> Box<dyn Sink>,
) {
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
