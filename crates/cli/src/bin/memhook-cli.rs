//! `memhook-cli`: every `memhook` command, parsed with clap. Users type
//! `memhook …`; the lean `memhook` binary runs the per-event commands itself
//! and hands everything else here (docs/architecture.md, "Two binaries").

use std::process::ExitCode;

fn main() -> ExitCode {
    memhook::cli::main()
}
