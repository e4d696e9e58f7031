//! The per-event binary's briefer: a briefing kept ready
//! ([`memhook_core::briefing_cache`]) when one still holds, else one that
//! `memhook-brief` composes as a child (`memhook-brief --data-dir DIR
//! brief`, the request on its stdin, the briefing on its stdout), within
//! what is left of the session-start budget. `memhook-session` and
//! `memhook-cli` answer the same line, for an install that has no
//! `memhook-brief` beside `memhook`.
//!
//! A kept briefing is used only for the embedded store and only when no
//! record of another session waits in the spool for it (those are
//! delivered first, by the child). A server's briefing (`GET /handoff`)
//! never reaches here: `memhook` hands such a session start to
//! `memhook-session` whole.

use std::ffi::OsString;
#[cfg(not(unix))]
use std::io::Read;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use memhook_core::briefing_cache::{self, Key, Lookup};
use memhook_core::data_dir::STORE_FILE;
use memhook_core::event::Event;
use memhook_core::scope::Scope;
use memhook_delivery::spool::{briefing_may_change, SinkTarget, Spool};

/// The command word of the child's line: `--data-dir DIR brief`.
pub const BRIEF_COMMAND: &str = "brief";
/// Largest request (a key, an agent, a session id) and largest answer (a
/// briefing of at most 20,000 characters, as JSON) read.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;
/// Share of the budget (in percent) the child is given; the rest covers
/// starting it and reading its answer.
pub const CHILD_SHARE_PCT: u32 = 90;

/// What the child is asked to compose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    pub key: Key,
    pub session_id: Option<String>,
    pub budget_ms: u64,
}

/// The child's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub briefing: Option<String>,
}

/// How the child composes: memhook-sinks' `session_start::compose_for`.
pub type Composer = fn(&Path, &Key, Option<&str>, Duration) -> Option<String>;

/// The per-event binary's [`crate::Briefer`]: a briefing kept ready, or
/// one composed by `memhook-brief` (then `memhook-session`, `memhook-cli`)
/// as a child.
pub fn kept_or_composed(
    data_dir: &Path,
    sink: &SinkTarget,
    scope: &Scope,
    event: &Event,
    budget: Duration,
) -> Option<String> {
    let started = Instant::now();
    if *sink != SinkTarget::Store {
        return None;
    }
    let key = Key::of(data_dir, scope, event.agent.as_str());
    let session = event.session_id.as_deref();
    if !others_pending(data_dir, session) {
        if let Lookup::Hit(text) =
            briefing_cache::lookup(data_dir, &data_dir.join(STORE_FILE), &key, session)
        {
            return text;
        }
    }
    let request = Request {
        key,
        session_id: event.session_id.clone(),
        budget_ms: (budget.saturating_sub(started.elapsed()) * CHILD_SHARE_PCT / 100).as_millis()
            as u64,
    };
    compose_in_child(data_dir, &request, started + budget)
}

/// Whether the spool holds a record of another session for the store
/// (which session start delivers before it briefs). Delivery at hook time
/// switched off (`MEMHOOK_NO_HOOK_DELIVERY`) delivers nothing, so then
/// nothing pending can change the briefing.
fn others_pending(data_dir: &Path, session: Option<&str>) -> bool {
    if memhook_delivery::drain::hook_delivery_disabled() {
        return false;
    }
    let Ok(spool) = Spool::open(data_dir) else {
        return true;
    };
    spool.pending().map_or(true, |p| {
        briefing_may_change(&p, &SinkTarget::Store, session)
    })
}

/// Run `memhook-brief --data-dir DIR brief` (the first of
/// `memhook-session`, `memhook-cli` there is, when there is no
/// `memhook-brief`), send it `request`, and read its answer until
/// `deadline`; a child still running then is killed. `None` on any problem
/// (said on stderr).
fn compose_in_child(data_dir: &Path, request: &Request, deadline: Instant) -> Option<String> {
    let line = serde_json::to_vec(request).ok()?;
    let mut child = None;
    for name in [
        crate::handover::BRIEF_BINARY,
        crate::handover::SESSION_BINARY,
        crate::handover::FULL_BINARY,
    ] {
        let mut cmd = std::process::Command::new(crate::handover::sibling(name));
        cmd.arg("--data-dir")
            .arg(data_dir)
            .arg(BRIEF_COMMAND)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        #[cfg(windows)]
        {
            // No console window of its own when the agent runs hooks
            // without one (`CREATE_NO_WINDOW`); its pipes still work.
            use std::os::windows::process::CommandExt;
            cmd.creation_flags(0x0800_0000);
        }
        // A sibling being installed (or whose write descriptor a concurrent
        // fork holds for a moment) is "Text file busy": tried again briefly.
        match crate::handover::unless_busy(|| cmd.spawn()) {
            Ok(c) => {
                child = Some(c);
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                eprintln!("memhook: no briefing this session: cannot run {name}: {e}");
                return None;
            }
        }
    }
    let Some(mut child) = child else {
        eprintln!(
            "memhook: no briefing this session: neither {} nor {} is installed beside memhook",
            crate::handover::SESSION_BINARY,
            crate::handover::FULL_BINARY
        );
        return None;
    };
    // The child reads its whole request before it writes anything.
    if let Some(mut pipe) = child.stdin.take() {
        let _ = pipe.write_all(&line);
    }
    let Some(bytes) = read_answer(&mut child, deadline) else {
        // Out of time (or the pipe failed): stop the child, by its PID.
        let _ = child.kill();
        let _ = child.wait();
        return None;
    };
    let _ = child.wait();
    if bytes.len() > MAX_MESSAGE_BYTES {
        return None;
    }
    serde_json::from_slice::<Answer>(&bytes).ok()?.briefing
}

/// The child's whole answer, read until `deadline` (`None`: none by then).
/// Unix: `poll(2)` on the pipe, as stdin is read; an answer is one JSON
/// object, so it is taken as soon as it is whole.
#[cfg(unix)]
fn read_answer(child: &mut std::process::Child, deadline: Instant) -> Option<Vec<u8>> {
    use std::os::fd::AsRawFd;
    let stdout = child.stdout.take()?;
    let wait = deadline.saturating_duration_since(Instant::now());
    match crate::read_fd(stdout.as_raw_fd(), wait, MAX_MESSAGE_BYTES) {
        crate::Stdin::Complete(bytes) => Some(bytes),
        _ => None,
    }
}

/// Windows has no `poll` on a pipe: one thread reads the answer, and the
/// wait for it has the deadline.
#[cfg(not(unix))]
fn read_answer(child: &mut std::process::Child, deadline: Instant) -> Option<Vec<u8>> {
    let stdout = child.stdout.take()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("brief".into())
        .spawn(move || {
            let mut buf = Vec::new();
            let res = stdout
                .take(MAX_MESSAGE_BYTES as u64 + 1)
                .read_to_end(&mut buf);
            let _ = tx.send(res.map(|_| buf));
        })
        .ok()?;
    rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
        .ok()?
        .ok()
}

/// The child's command line, exactly as [`kept_or_composed`] runs it
/// (`--data-dir DIR brief`): its data dir. Anything else is not ours.
pub fn brief_line(argv: &[OsString]) -> Option<PathBuf> {
    match argv {
        [_, flag, dir, cmd] if flag == "--data-dir" && cmd == BRIEF_COMMAND => Some(dir.into()),
        _ => None,
    }
}

/// The child's side: read the [`Request`] on stdin (bounded in size and
/// time), compose with `compose`, print the [`Answer`]. Exit 0 whatever
/// happened (the parent reads no answer as no briefing); a bad request is
/// said on stderr.
pub fn answer(data_dir: &Path, compose: Composer) -> ExitCode {
    let started = Instant::now();
    let request = match crate::read_stdin(crate::STDIN_TIMEOUT) {
        crate::Stdin::Complete(bytes) if bytes.len() <= MAX_MESSAGE_BYTES => {
            serde_json::from_slice::<Request>(&bytes).map_err(|e| e.to_string())
        }
        _ => Err("no complete request on stdin".to_string()),
    };
    let briefing = match request {
        Ok(r) => {
            let budget = Duration::from_millis(r.budget_ms).saturating_sub(started.elapsed());
            compose(data_dir, &r.key, r.session_id.as_deref(), budget)
        }
        Err(e) => {
            eprintln!("memhook: brief: {e}");
            None
        }
    };
    let out = serde_json::to_string(&Answer { briefing }).unwrap_or_default();
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes());
    let _ = stdout.flush();
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_childs_line_is_read_exactly() {
        let os = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            brief_line(&os(&["memhook-session", "--data-dir", "/d", "brief"])),
            Some(PathBuf::from("/d"))
        );
        for other in [
            &["memhook-session", "--data-dir", "/d", "brief", "x"][..],
            &["memhook-session", "brief"],
            &["memhook-session", "--data-dir", "/d", "drain"],
            &["memhook-session", "--datadir", "/d", "brief"],
        ] {
            assert_eq!(brief_line(&os(other)), None, "{other:?}");
        }
    }

    #[test]
    fn requests_and_answers_round_trip() {
        let r = Request {
            key: Key {
                workspace: "acme".into(),
                project: "api".into(),
                max_chars: 4000,
                digest: true,
                mcp: false,
            },
            session_id: Some("s1".into()),
            budget_ms: 1200,
        };
        let back: Request = serde_json::from_slice(&serde_json::to_vec(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        let a = Answer {
            briefing: Some("# b".into()),
        };
        let back: Answer = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        assert_eq!(back, a);
    }
}
