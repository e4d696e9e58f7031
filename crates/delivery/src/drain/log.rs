//! The background drainer's log: its stderr, `<data>/logs/drain.log`,
//! rotated past [`MAX_LOG_BYTES`].

use std::fmt;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use memhook_core::data_dir;

/// The background drainer's log (its stderr), in the data dir.
pub const LOG_FILE: &str = "logs/drain.log";
/// The log is rotated to `drain.log.old` when it grows past this.
pub const MAX_LOG_BYTES: u64 = 1024 * 1024;

/// The data dir whose drain log is this process's stderr (set by the
/// background drainer).
pub static LOG_OF: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
/// Serialises rotation and writing (the deleting thread logs too).
pub static LOG_WRITE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Write one line to stderr, never panicking. In the background drainer
/// (stderr is `<data>/logs/drain.log`) the log is rotated first when it is
/// past [`MAX_LOG_BYTES`], so a drainer that logs a lot never grows it
/// past the cap by more than one line.
pub fn log_line(line: fmt::Arguments) {
    let _guard = LOG_WRITE.lock();
    if let Some(dir) = LOG_OF.get() {
        cap_stderr_log(dir);
    }
    // Unit tests drain on purpose into corrupt and invalid entries: there the
    // line goes through the test harness's capture (shown only when a test
    // fails). `eprintln!` could panic on a closed stderr, so never outside.
    #[cfg(test)]
    eprintln!("{line}");
    #[cfg(not(test))]
    let _ = std::io::Write::write_fmt(&mut io::stderr(), format_args!("{line}\n"));
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

/// The background drainer's log.
pub const DRAIN_LOG: StderrLog = StderrLog {
    file: LOG_FILE,
    old: "drain.log.old",
    max: MAX_LOG_BYTES,
};

/// When stderr is a drain log past [`MAX_LOG_BYTES`]: rotate the log file
/// (unless someone else already did) and point stderr at a fresh one.
pub fn cap_stderr_log(data_dir: &Path) {
    cap_stderr(data_dir, &DRAIN_LOG);
}

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
        let path = data_dir.join(log.file);
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

/// Open the drain log for appending (0600), rotating it past [`MAX_LOG_BYTES`].
pub fn open_log(data_dir: &Path) -> io::Result<File> {
    open(data_dir, &DRAIN_LOG)
}

/// Open `log` for appending (0600, never through a symlink), rotating it
/// first when it is past its cap.
pub fn open(data_dir: &Path, log: &StderrLog) -> io::Result<File> {
    let path = data_dir.join(log.file);
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
        drop(open_log(t.path()).unwrap());
        fs::write(&log, vec![b'x'; MAX_LOG_BYTES as usize]).unwrap();
        drop(open_log(t.path()).unwrap());
        assert!(log.exists() && !t.path().join("logs/drain.log.old").exists());
        fs::write(&log, vec![b'x'; MAX_LOG_BYTES as usize + 1]).unwrap();
        drop(open_log(t.path()).unwrap());
        assert_eq!(fs::metadata(&log).unwrap().len(), 0);
        assert!(t.path().join("logs/drain.log.old").exists());
    }
}
