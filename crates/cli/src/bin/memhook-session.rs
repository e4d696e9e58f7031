//! `memhook-session`: session start and the background drainer, for the
//! per-event `memhook` (docs/architecture.md, "Four binaries").
//!
//! Session start delivers what is pending and composes the briefing from
//! the store (or fetches it from the server), so it needs SQLite and the
//! HTTP sink, which the per-event binary leaves out; the drainer needs the
//! same. `memhook-cli` has them too, with the server, PostgreSQL, tokio,
//! clap, the installer and MCP besides, and its larger file costs a
//! session start memory and time just to be mapped (docs/benchmarks.md,
//! "A third binary for session start"). This binary links only the
//! per-event crates, the store and the sinks.
//!
//! It reads exactly the three command lines memhook runs it with — a hook
//! call as `memhook_hook::parse_fast` reads it, the drainer's spawn line,
//! and the per-event binary's request for a briefing (`--data-dir DIR
//! brief`, `memhook_hook::brief`) — and hands any other to `memhook-cli`
//! beside it.

use std::process::ExitCode;

use memhook_hook::handover;

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = handover::run_own_line(
        &argv,
        memhook_sinks::session_start::session_start,
        memhook_sinks::session_start::compose_for,
        |dir| memhook_sinks::drainer::run_background(Some(dir)),
    ) {
        return code;
    }
    let full = handover::sibling(memhook_delivery::drain::spawn::FULL_BINARY);
    match handover::hand_over(&full, &argv) {
        Ok(code) => code,
        Err(e) => {
            eprintln!(
                "memhook: cannot run {}: {e}; install memhook again (`cargo install --locked \
                 --path crates/cli`)",
                full.display()
            );
            ExitCode::from(2)
        }
    }
}
