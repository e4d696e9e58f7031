//! `memhook serve`'s log lines. When `memhook ui` started the server, its
//! stderr is `<data>/logs/serve.log`; each line first rotates that file
//! past [`MAX_SERVE_LOG_BYTES`] (to `serve.log.old`), so a server that runs
//! for months, or one that a client keeps making complain, never grows the
//! file past its cap by more than a line. A server run in a terminal writes
//! to the terminal as before.

use std::path::Path;

use memhook_delivery::drain::{Lines, StderrLog};

/// The log of a `memhook serve` that `memhook ui` started, in the data dir.
pub const SERVE_LOG_FILE: &str = "logs/serve.log";
/// Past this size the serve log is rotated to `serve.log.old`.
pub const MAX_SERVE_LOG_BYTES: u64 = 1024 * 1024;

/// The serve log, as `memhook ui` opens it and as the server keeps it.
pub const SERVE_LOG: StderrLog = StderrLog {
    file: SERVE_LOG_FILE,
    old: "serve.log.old",
    max: MAX_SERVE_LOG_BYTES,
};

/// The server's lines (connection threads, the writer and retention all
/// log).
pub(crate) static LINES: Lines = Lines::new(SERVE_LOG);

/// From now on, lines rotate `data_dir`'s serve log when stderr is it.
pub fn log_into(data_dir: &Path) {
    LINES.log_into(data_dir);
}

/// One line of `memhook serve`'s log, through [`LINES`].
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::log::LINES.line(format_args!($($arg)*))
    };
}
pub(crate) use say;
