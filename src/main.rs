//! The `memhook` binary: parse the command line, run it, decide the exit code.
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
// (The test harness brings its own `main`.)
#![cfg_attr(not(test), no_main)]

use std::process::ExitCode;

#[cfg(not(test))]
#[no_mangle]
extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    reopen_closed_std_streams();
    // SAFETY: setting a signal's disposition to SIG_IGN before any thread
    // exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let code = std::panic::catch_unwind(memhook::cli::main).unwrap_or(ExitCode::from(101));
    // std's runtime would flush stdout after `main`; so does this.
    let _ = std::io::Write::flush(&mut std::io::stdout());
    std::process::exit(status(code))
}

/// The number `code` stands for (`ExitCode` only says whether two are equal).
fn status(code: ExitCode) -> i32 {
    (0..=u8::MAX)
        .find(|&n| ExitCode::from(n) == code)
        .map_or(1, i32::from)
}

#[cfg(not(test))]
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
