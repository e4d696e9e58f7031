//! The background drainer's log: its stderr, `<data>/logs/drain.log`,
//! rotated past [`MAX_LOG_BYTES`].

use std::fmt;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use memhook_core::data_dir;

/// The background drainer's log (its stderr), in the data dir.
pub const LOG_FILE: &str = "logs/drain.log";
/// The log is rotated to `drain.log.old` when it grows past this.
pub const MAX_LOG_BYTES: u64 = 1024 * 1024;

/// Write one line to stderr, never panicking. In the background drainer
/// (stderr is `<data>/logs/drain.log`) the log is rotated first when it is
/// past [`MAX_LOG_BYTES`], so a drainer that logs a lot never grows it
/// past the cap by more than one line.
pub fn log_line(line: fmt::Arguments) {
    DRAIN_LINES.line(line);
}

/// The drainer's lines ([`log_line`]); the background drainer names its
/// data dir ([`Lines::log_into`]).
pub static DRAIN_LINES: Lines = Lines::new(DRAIN_LOG);

/// The lines of a process whose stderr may be a [`StderrLog`] (the
/// background drainer's, `memhook serve`'s): once the process names its
/// data dir, each line first rotates the log when it is past its cap, and
/// points stderr at the fresh file.
#[derive(Debug)]
pub struct Lines {
    log: StderrLog,
    /// The data dir whose log may be this process's stderr.
    of: OnceLock<PathBuf>,
    /// Serialises rotation and writing (other threads log too).
    write: Mutex<()>,
}

impl Lines {
    pub const fn new(log: StderrLog) -> Lines {
        Lines {
            log,
            of: OnceLock::new(),
            write: Mutex::new(()),
        }
    }

    /// From now on, lines keep `data_dir`'s log within its cap when
    /// stderr is that log.
    pub fn log_into(&self, data_dir: &Path) {
        let _ = self.of.set(data_dir.to_path_buf());
    }

    /// Write one line to stderr, never panicking.
    pub fn line(&self, line: fmt::Arguments) {
        let _guard = self.write.lock();
        if let Some(dir) = self.of.get() {
            cap_stderr(dir, &self.log);
        }
        // Unit tests drain on purpose into corrupt and invalid entries:
        // there the line goes through the test harness's capture (shown
        // only when a test fails). `eprintln!` could panic on a closed
        // stderr, so never outside.
        #[cfg(test)]
        eprintln!("{line}");
        #[cfg(not(test))]
        let _ = std::io::Write::write_fmt(&mut io::stderr(), format_args!("{line}\n"));
    }
}

/// A log file that a detached process has as its stderr: where it lives in
/// the data dir, the name it is rotated to, and its cap. The drainer's
/// ([`DRAIN_LOG`]) and `memhook serve`'s when `memhook ui` started it
/// (`memhook_server::log`) are two.
#[derive(Debug, Clone, Copy)]
pub struct StderrLog {
    /// Its path under the data dir.
    pub file: &'static str,
    /// The file name it is rotated to, in the same directory.
    pub old: &'static str,
    /// Past this size it is rotated.
    pub max: u64,
}

impl StderrLog {
    /// Its path in `data_dir`, joined a component at a time (`\` between
    /// them on Windows).
    pub fn path(&self, data_dir: &Path) -> PathBuf {
        self.file
            .split('/')
            .fold(data_dir.to_path_buf(), |p, c| p.join(c))
    }
}

/// The background drainer's log.
pub const DRAIN_LOG: StderrLog = StderrLog {
    file: LOG_FILE,
    old: "drain.log.old",
    max: MAX_LOG_BYTES,
};

/// When stderr is `log` (or its rotated file) and past its cap: rotate the
/// log file (unless someone else already did) and point stderr at a fresh
/// one. A stderr that is anything else (a terminal, a pipe, another file)
/// is left alone.
pub fn cap_stderr(data_dir: &Path, log: &StderrLog) {
    // Windows: stderr is a handle the process cannot swap for the rotated
    // file; the log is rotated at the next start ([`open`]).
    #[cfg(not(unix))]
    let _ = (data_dir, log);
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        use std::os::unix::io::AsRawFd;
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat writes into `st` only; a closed fd just fails.
        if unsafe { libc::fstat(2, &mut st) } != 0 || (st.st_size as u64) <= log.max {
            return;
        }
        let path = log.path(data_dir);
        let ours = fs::symlink_metadata(&path)
            .is_ok_and(|m| m.dev() == st.st_dev as u64 && m.ino() == st.st_ino as u64);
        let rotated = path.with_file_name(log.old);
        let is_old = fs::symlink_metadata(&rotated)
            .is_ok_and(|m| m.dev() == st.st_dev as u64 && m.ino() == st.st_ino as u64);
        // Only a stderr that is (or was) this log is replaced.
        if !(ours || is_old) {
            return;
        }
        if let Ok(f) = open(data_dir, log) {
            // SAFETY: both descriptors are open; dup2 replaces fd 2 atomically.
            unsafe { libc::dup2(f.as_raw_fd(), 2) };
        }
    }
}

/// Open `log` for appending (0600, never through a symlink), rotating it
/// first when it is past its cap.
pub fn open(data_dir: &Path, log: &StderrLog) -> io::Result<File> {
    let path = log.path(data_dir);
    let dir = path.parent().expect("log file has a parent");
    data_dir::ensure_private_dir(dir).map_err(|e| io::Error::other(e.to_string()))?;
    if fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() > log.max) {
        let _ = fs::rename(&path, dir.join(log.old));
    }
    let mut opts = fs::OpenOptions::new();
    opts.append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    opts.open(&path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_rotates_past_the_cap() {
        let t = tempfile::tempdir().unwrap();
        let log = t.path().join(LOG_FILE);
        drop(open(t.path(), &DRAIN_LOG).unwrap());
        fs::write(&log, vec![b'x'; MAX_LOG_BYTES as usize]).unwrap();
        drop(open(t.path(), &DRAIN_LOG).unwrap());
        assert!(log.exists() && !t.path().join("logs/drain.log.old").exists());
        fs::write(&log, vec![b'x'; MAX_LOG_BYTES as usize + 1]).unwrap();
        drop(open(t.path(), &DRAIN_LOG).unwrap());
        assert_eq!(fs::metadata(&log).unwrap().len(), 0);
        assert!(t.path().join("logs/drain.log.old").exists());
    }
}
