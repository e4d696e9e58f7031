//! `memhook-brief`: the briefing composer the per-event `memhook` runs as a
//! child when no briefing kept ready still holds (docs/architecture.md,
//! "Four binaries").
//!
//! It reads exactly one command line, `--data-dir DIR brief`, with the
//! request on stdin (`memhook_hook::brief`), delivers the store's pending
//! records and composes the briefing from the embedded store. It never
//! talks to a server, so it links no HTTP client or TLS: a session start
//! that composes is mapped from a file a third smaller than
//! `memhook-session`'s (docs/benchmarks.md, "A composer of its own").

use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match memhook_hook::brief::brief_line(&argv) {
        Some(dir) => memhook_hook::brief::answer(&dir, memhook_sinks::session_start::compose_for),
        None => {
            eprintln!(
                "memhook-brief: memhook runs this as `memhook-brief --data-dir DIR brief`; \
                 run `memhook --help` for the commands"
            );
            ExitCode::from(2)
        }
    }
}
