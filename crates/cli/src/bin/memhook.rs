//! The `memhook` binary agents run on every event: `memhook hook --event E
//! …` runs here, built from the per-event crates only (memhook-hook,
//! memhook-delivery, memhook-core: no SQLite, no TLS, no clap, no
//! PostgreSQL, no tokio, no server, installer or MCP code). With the
//! embedded store a session start is briefed here too, from a briefing kept
//! ready, or one `memhook-brief` beside it composes as a child
//! (`memhook_hook::brief`). With a server, the hook calls that deliver and
//! brief go to `memhook-session` (the store and the sinks, still no server,
//! PostgreSQL, clap, installer or MCP); every other command line — other
//! commands, `--help`, arguments this binary does not read exactly — goes
//! to `memhook-cli`. Either replaces this process (`exec`: same arguments,
//! stdin, stdout and exit code), so users type `memhook …` for everything
//! and agents' configurations written by any version keep working. The
//! hook starts its drainer from `memhook-session` too (docs/architecture.md,
//! "Four binaries", "Briefings kept ready").
//!
//! The entry point is the C `main` rather than Rust's: every agent starts
//! `memhook hook` on every event, and std's runtime setup before `main`
//! costs about as much as a tenth of the whole call (`docs/benchmarks.md`,
//! "Process start"). Of what that setup does, memhook keeps what it relies
//! on and does it here, in the same order:
//!
//! - standard streams that were closed are reopened on `/dev/null`, so a
//!   file memhook opens later (a spool entry) can never become fd 1 and
//!   receive the envelope;
//! - `SIGPIPE` is ignored, so writing to an agent that stopped reading is an
//!   error memhook handles, not a silent death (children get the default
//!   back, as std does);
//! - a panic that escapes is caught and ends the process with status 101.
//!
//! What it skips is the main thread's stack-overflow handler: finding the
//! stack's bounds makes glibc read and parse `/proc/self/maps`, and the
//! handler needs an alternate signal stack mapped and two signal handlers
//! set. Without it, a stack overflow ends the process with `SIGSEGV`
//! instead of first printing "has overflowed its stack". The hook's inputs
//! cannot get there: event payloads are JSON read with a nesting limit of
//! 128 and markers are TOML read with the parser's own recursion limit
//! (tests in `tests/integration/hook.rs` feed both 30,000 levels deep).
//!
//! Arguments come from `std::env::args_os`, which glibc fills before any
//! `main` runs.
//!
//! Windows has no `exec`: there the sibling runs as a child that
//! inherits the standard handles (the payload still unread on stdin), and
//! its exit code is this process's. Rust's own `main` is used there (its
//! setup is small on Windows and there is no `SIGPIPE`).
// (The test harness brings its own `main`.)
#![cfg_attr(all(not(test), unix), no_main)]

use std::ffi::OsString;
use std::process::ExitCode;

use memhook_core::event::EventKind;
use memhook_delivery::drain::spawn::FULL_BINARY;
use memhook_hook::handover;

/// Small allocations are carved from one region and never freed: one
/// process, one event, a few milliseconds (`memhook_hook::arena`).
#[cfg(all(not(test), unix))]
#[global_allocator]
static ARENA: memhook_hook::arena::Arena = memhook_hook::arena::Arena::new();

#[cfg(all(not(test), windows))]
fn main() -> ExitCode {
    let code = std::panic::catch_unwind(lean_main).unwrap_or(ExitCode::from(101));
    let _ = std::io::Write::flush(&mut std::io::stdout());
    code
}

#[cfg(all(not(test), unix))]
#[no_mangle]
extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    reopen_closed_std_streams();
    // SAFETY: setting a signal's disposition to SIG_IGN before any thread
    // exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let code = std::panic::catch_unwind(lean_main).unwrap_or(ExitCode::from(101));
    // std's runtime would flush stdout after `main`; so does this.
    let _ = std::io::Write::flush(&mut std::io::stdout());
    std::process::exit(status(code))
}

/// Run the hook here; hand session start to `memhook-session` and anything
/// else to `memhook-cli`.
#[cfg_attr(test, allow(dead_code))]
fn lean_main() -> ExitCode {
    let argv: Vec<OsString> = std::env::args_os().collect();
    let hook = memhook_hook::parse_fast(&argv);
    if let Some((args, data_dir)) = &hook {
        // With the embedded store every hook call runs here: a briefing is
        // one kept ready, or one `memhook-brief` composes as a child
        // (`memhook_hook::brief`).
        if !server_configured(args) {
            return memhook_hook::run(
                args,
                data_dir.as_deref(),
                memhook_hook::brief::kept_or_composed,
            );
        }
        // With a server, session start delivers and briefs through the
        // HTTP sink: memhook-session's. So does an event named only in the
        // payload (it may be a session start). The installer always writes
        // `--event`.
        // The same holds for the event an agent is briefed at when it takes
        // no context at session start (OpenHands: its prompt).
        let briefing_event =
            memhook_core::envelope::briefing_event(&memhook_core::event::Agent::parse(&args.agent));
        let kind = args.event.as_deref().map(EventKind::parse);
        if kind.is_some_and(|k| k != EventKind::SessionStart && k != briefing_event) {
            return memhook_hook::run(args, data_dir.as_deref(), memhook_hook::no_briefing);
        }
        // A briefing event after session start (Cline's tool calls) is
        // briefed once per session: only the first goes to memhook-session,
        // with the payload read here.
        if kind.is_some_and(|k| k != EventKind::SessionStart) {
            return match memhook_hook::late_briefing(args, data_dir.as_deref()) {
                memhook_hook::Late::Ran(code) => code,
                memhook_hook::Late::HandOver(payload) => {
                    hand_over_payload(&argv, args, data_dir.as_deref(), payload)
                }
            };
        }
    }
    // Session start (and the other briefing events) to memhook-session;
    // an install that has no memhook-session (built before it existed)
    // still has memhook-cli, which runs them too.
    let siblings: &[&str] = if hook.is_some() {
        &[handover::SESSION_BINARY, FULL_BINARY]
    } else {
        &[FULL_BINARY]
    };
    let (name, err) = match hand_over_to(siblings, &argv, None) {
        Ok(code) => return code,
        Err(failed) => failed,
    };
    let problem = format!(
        "cannot run {}: {err}; install memhook again (`cargo install --locked --path crates/cli` \
         installs `memhook`, `memhook-session`, `memhook-brief` and `memhook-cli`)",
        handover::sibling(name).display()
    );
    if memhook_hook::is_hook_invocation(&argv) {
        // Still a hook call: exit 0 with an envelope, whatever happened.
        return memhook_hook::run_bad_arguments(&argv, &problem);
    }
    eprintln!("memhook: {problem}");
    ExitCode::from(2)
}

/// Whether records go to a server (`--server-url` or `AI_MEMORY_HOOK_URL`
/// set and not blank), as `SinkTarget::configured` decides; whether the URL
/// is usable is decided, and said, where the event runs.
fn server_configured(args: &memhook_hook::HookArgs) -> bool {
    args.server_url
        .as_deref()
        .is_some_and(|u| !u.trim().is_empty())
        || std::env::var(memhook_delivery::spool::HOOK_URL_ENV).is_ok_and(|u| !u.trim().is_empty())
}

/// The first event of a session at a late briefing event, its payload
/// already read: `memhook-session` runs it with the payload on its stdin
/// (`memhook-cli` when there is no `memhook-session`); with neither, it
/// runs here, unbriefed.
fn hand_over_payload(
    argv: &[OsString],
    args: &memhook_hook::HookArgs,
    data_dir: Option<&std::path::Path>,
    payload: Vec<u8>,
) -> ExitCode {
    let (name, err) = match hand_over_to(
        &[handover::SESSION_BINARY, FULL_BINARY],
        argv,
        Some(&payload),
    ) {
        Ok(code) => return code,
        Err(failed) => failed,
    };
    // The last one tried was not found only when none of them was.
    let problem = if err.kind() == std::io::ErrorKind::NotFound {
        format!(
            "neither {} nor {FULL_BINARY} is installed beside memhook",
            handover::SESSION_BINARY
        )
    } else {
        format!("cannot run {}: {err}", handover::sibling(name).display())
    };
    eprintln!(
        "memhook: {problem}; the event is captured without a briefing (install memhook again: \
         `cargo install --locked --path crates/cli` installs all four binaries)"
    );
    memhook_hook::run_payload(args, data_dir, payload)
}

/// Hand the call to the first of `siblings` installed beside memhook
/// (`exec`, or, with `payload`, a child fed it on stdin); one that is not
/// installed passes it on to the next. When none ran it: the last one
/// tried and why.
fn hand_over_to<'a>(
    siblings: &[&'a str],
    argv: &[OsString],
    payload: Option<&[u8]>,
) -> Result<ExitCode, (&'a str, std::io::Error)> {
    let mut last = None;
    for &name in siblings {
        let program = handover::sibling(name);
        let tried = match payload {
            Some(bytes) => handover::hand_over_with_stdin(&program, argv, bytes),
            None => handover::hand_over(&program, argv),
        };
        match tried {
            Ok(code) => return Ok(code),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => last = Some((name, e)),
            Err(e) => return Err((name, e)),
        }
    }
    Err(last.expect("at least one sibling is tried"))
}

/// The number `code` stands for (`ExitCode` only says whether two are equal).
#[cfg_attr(windows, allow(dead_code))]
fn status(code: ExitCode) -> i32 {
    (0..=u8::MAX)
        .find(|&n| ExitCode::from(n) == code)
        .map_or(1, i32::from)
}

#[cfg(all(not(test), unix))]
fn reopen_closed_std_streams() {
    for fd in 0..=2 {
        // SAFETY: F_GETFD only asks whether `fd` is open.
        let closed = unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF);
        if closed {
            // SAFETY: a NUL-terminated path; the lowest free descriptor is
            // `fd`, as every lower one is open. If /dev/null cannot be
            // opened the stream stays closed and writes to it fail.
            unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_exit_code_keeps_its_number() {
        for n in [0u8, 1, 2, 101, 255] {
            assert_eq!(status(ExitCode::from(n)), i32::from(n));
        }
        assert_eq!(status(ExitCode::SUCCESS), 0);
        assert_eq!(status(ExitCode::FAILURE), 1);
    }
}
