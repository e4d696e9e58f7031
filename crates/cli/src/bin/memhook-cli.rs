//! `memhook-cli`: every `memhook` command, parsed with clap. Users type
//! `memhook …`; the lean `memhook` binary runs the per-event commands itself
//! and hands everything else here (docs/architecture.md, "Four binaries").
//!
//! This is Rust's own `main`, with std's runtime set-up: a stack overflow
//! (in `memhook serve`, say) ends with std's "has overflowed its stack"
//! message rather than a bare SIGSEGV. Only the per-event binary keeps the
//! C `main`, for its measured start-up saving (docs/benchmarks.md).

use std::process::ExitCode;

/// Variable that makes a debug build overflow its stack at start (fault
/// injection: the tests prove std's handler is in place; release builds
/// never read it).
const OVERFLOW_ENV: &str = "MEMHOOK_TEST_STACK_OVERFLOW";

fn main() -> ExitCode {
    if cfg!(debug_assertions) && std::env::var_os(OVERFLOW_ENV).is_some() {
        overflow(0);
    }
    memhook::cli::main()
}

/// Recurse until the stack runs out (see [`OVERFLOW_ENV`]).
#[allow(unconditional_recursion)]
#[inline(never)]
fn overflow(depth: u64) -> u64 {
    let pad = std::hint::black_box([depth; 64]);
    overflow(depth + 1) + pad[0]
}
