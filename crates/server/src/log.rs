//! `memhook serve`'s log lines. When `memhook ui` started the server, its
//! stderr is `<data>/logs/serve.log`; each line first rotates that file
//! past [`MAX_SERVE_LOG_BYTES`] (to `serve.log.old`), so a server that runs
//! for months, or one that a client keeps making complain, never grows the
//! file past its cap by more than a line. A server run in a terminal writes
//! to the terminal as before.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use memhook_delivery::drain::{cap_stderr, StderrLog};

/// The log of a `memhook serve` that `memhook ui` started, in the data dir.
pub const SERVE_LOG_FILE: &str = "logs/serve.log";
/// Past this size the serve log is rotated to `serve.log.old`.
pub const MAX_SERVE_LOG_BYTES: u64 = 1024 * 1024;

/// The serve log as [`cap_stderr`] and `open_stderr_log` take it.
pub const SERVE_LOG: StderrLog = StderrLog {
    file: SERVE_LOG_FILE,
    old: "serve.log.old",
    max: MAX_SERVE_LOG_BYTES,
};

/// The data dir whose serve log may be this process's stderr.
static LOG_OF: OnceLock<PathBuf> = OnceLock::new();
/// Rotation and writing, one line at a time (connection threads, the
/// writer and retention all log).
static LOG_WRITE: Mutex<()> = Mutex::new(());

/// From now on, lines rotate `data_dir`'s serve log when stderr is it.
pub fn log_into(data_dir: &Path) {
    let _ = LOG_OF.set(data_dir.to_path_buf());
}

/// Write one line to stderr, never panicking.
pub fn line(args: fmt::Arguments) {
    let _guard = LOG_WRITE.lock();
    if let Some(dir) = LOG_OF.get() {
        cap_stderr(dir, &SERVE_LOG);
    }
    let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("{args}\n"));
}

/// One line of `memhook serve`'s log, through [`line`].
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::log::line(format_args!($($arg)*))
    };
}
pub(crate) use say;
