//! Reading and writing agent config files safely: parse or refuse, lock,
//! back up on change, atomic replace through symlinks, mode preserved.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Why an install step cannot go ahead. Every message names the file.
#[derive(Debug)]
pub enum InstallError {
    /// The file does not parse; it is left untouched.
    Malformed {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// A key memhook needs holds the wrong type.
    WrongType {
        path: PathBuf,
        key: String,
        expected: &'static str,
        found: &'static str,
    },
    /// A filesystem operation failed.
    Io { path: PathBuf, source: io::Error },
    /// Anything else, already phrased for the user.
    Refused(String),
}

impl fmt::Display for InstallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InstallError::Malformed {
                path,
                line,
                column,
                message,
            } => write!(
                f,
                "{}:{line}:{column}: cannot parse ({message}); memhook never rewrites a file it cannot parse — fix it by hand and re-run",
                path.display()
            ),
            InstallError::WrongType {
                path,
                key,
                expected,
                found,
            } => write!(
                f,
                "{}: `{key}` is {found}, expected {expected}; fix it by hand and re-run (nothing was written)",
                path.display()
            ),
            InstallError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            InstallError::Refused(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for InstallError {}

pub fn io_err(path: &Path) -> impl FnOnce(io::Error) -> InstallError + '_ {
    move |source| InstallError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What an apply did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Created,
    /// `before` (kept at `backup`) was replaced by `after`.
    Updated {
        backup: PathBuf,
        before: String,
        after: String,
    },
    Deleted {
        backup: Option<PathBuf>,
    },
    UpToDate,
}

/// The file a path finally names, following symlinks (relative links are
/// resolved against the link's directory). The target need not exist.
pub fn resolve_target(path: &Path) -> Result<PathBuf, InstallError> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = fs::read_link(&p).map_err(io_err(&p))?;
                p = if link.is_absolute() {
                    link
                } else {
                    p.parent().unwrap_or(Path::new("/")).join(link)
                };
            }
            Ok(m) if !m.is_file() => {
                return Err(InstallError::Refused(format!(
                    "{} is not a regular file; move it away and re-run",
                    path.display()
                )))
            }
            _ => return Ok(p),
        }
    }
    Err(InstallError::Refused(format!(
        "{}: too many levels of symbolic links",
        path.display()
    )))
}

/// The current text of `path` (through symlinks), or `None` when absent.
pub fn read_text(path: &Path) -> Result<Option<String>, InstallError> {
    let real = resolve_target(path)?;
    match fs::read(&real) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|e| {
            let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
            let column =
                good.len() - good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1) + 1;
            InstallError::Malformed {
                path: path.to_path_buf(),
                line,
                column,
                message: "not UTF-8 text".into(),
            }
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(path)(e)),
    }
}

/// A handle to lock for the installer's changes to `dir`: the directory
/// itself on Unix. Windows can neither open a directory as a plain file
/// ("Access denied") nor lock a directory handle ("Invalid handle"), so
/// there it is a lock file in the temp directory named by the folded path
/// (nothing is left in the agent's config dir).
fn open_dir_to_lock(dir: &Path) -> io::Result<fs::File> {
    #[cfg(windows)]
    {
        fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(std::env::temp_dir().join(lock_name(&dir.to_string_lossy())))
    }
    #[cfg(not(windows))]
    fs::File::open(dir)
}

/// `memhook-install-<FNV-1a of the lowercased path>.lock`: one name per
/// directory as Windows compares paths (without case, `/` as `\\`).
#[cfg_attr(not(windows), allow(dead_code))]
fn lock_name(dir: &str) -> String {
    let key = dir.to_lowercase().replace('/', "\\");
    let h = key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("memhook-install-{h:016x}.lock")
}

/// Apply a change to `path` under a lock: `compute` gets the current text
/// (read under the lock) and returns the new text, or `None` to delete the
/// file. Unchanged text is not written and leaves no backup.
pub fn apply<F>(path: &Path, compute: F) -> Result<Outcome, InstallError>
where
    F: Fn(Option<&str>) -> Result<Option<String>, InstallError>,
{
    let real = resolve_target(path)?;
    let dir = real.parent().unwrap_or(Path::new("/")).to_path_buf();
    if !dir.is_dir() {
        create_dirs(&dir)?;
    }
    // One installer at a time per directory: a lock on the directory itself
    // leaves nothing behind in the user's config dir.
    let lock = open_dir_to_lock(&dir).map_err(io_err(&dir))?;
    fs2::FileExt::lock_exclusive(&lock).map_err(io_err(&dir))?;
    let current = read_text(path)?;
    let next = compute(current.as_deref())?;
    if next == current {
        return Ok(Outcome::UpToDate);
    }
    let old_meta = fs::metadata(&real).ok();
    // A deleted file is one memhook generated: no backup (it would sit in the
    // agent's plugin directory).
    let backup = match (&current, &next) {
        (Some(old), Some(_)) => Some(write_backup(path, old.as_bytes(), old_meta.as_ref())?),
        _ => None,
    };
    let outcome = match (next, backup) {
        (Some(text), None) => {
            write_atomic(&real, text.as_bytes(), 0o600, &|| Ok(()))?;
            Outcome::Created
        }
        (Some(text), Some(backup)) => {
            write_atomic(&real, text.as_bytes(), mode_of(old_meta.as_ref()), &|| {
                Ok(())
            })?;
            Outcome::Updated {
                backup,
                before: current.unwrap_or_default(),
                after: text,
            }
        }
        (None, backup) => {
            while_busy(|| fs::remove_file(path)).map_err(io_err(path))?;
            Outcome::Deleted { backup }
        }
    };
    drop(lock);
    Ok(outcome)
}

fn mode_of(meta: Option<&fs::Metadata>) -> u32 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o600)
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        0o600
    }
}

fn create_dirs(dir: &Path) -> Result<(), InstallError> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir).map_err(io_err(dir))
}

/// Write `<path>.bak-<UTC timestamp>[-N]` beside the user-facing path (not
/// the symlink target) holding `bytes`. Never overwrites an older backup.
fn write_backup(
    path: &Path,
    bytes: &[u8],
    #[cfg_attr(not(unix), allow(unused_variables))] meta: Option<&fs::Metadata>,
) -> Result<PathBuf, InstallError> {
    let stamp: String = memhook_core::timefmt::rfc3339_ms(memhook_core::timefmt::now_ms())
        .chars()
        .take(19)
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .collect();
    let base = format!("{}.bak-{stamp}Z", path.display());
    for n in 1..10_000u32 {
        let candidate = PathBuf::from(if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        let mut opts = fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(mode_of(meta));
        }
        match opts.open(&candidate) {
            Ok(mut f) => {
                f.write_all(bytes)
                    .and_then(|_| f.sync_all())
                    .map_err(io_err(&candidate))?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_err(&candidate)(e)),
        }
    }
    Err(InstallError::Refused(format!(
        "{}: too many backups in one second",
        path.display()
    )))
}

/// [`data_dir::write_atomic`](memhook_core::data_dir::write_atomic) (temp file
/// beside `real`, fsync, `before_rename`, rename), then fsync the directory.
/// On any error the temp file is removed and `real` is untouched.
pub fn write_atomic(
    real: &Path,
    bytes: &[u8],
    mode: u32,
    before_rename: &dyn Fn() -> io::Result<()>,
) -> Result<(), InstallError> {
    while_busy(|| memhook_core::data_dir::write_atomic(real, bytes, mode, before_rename))
        .map_err(io_err(real))?;
    memhook_core::data_dir::sync_dir(real.parent().unwrap_or(Path::new("/")));
    Ok(())
}

/// How often a replace or delete the file system refuses because another
/// program has the file open is tried, [`BUSY_PAUSE`] apart.
const BUSY_TRIES: u32 = 20;
const BUSY_PAUSE: std::time::Duration = std::time::Duration::from_millis(25);

/// Is `e` "another program has the file open"? On Windows an agent, an
/// editor or a virus scanner reading a config file makes replacing or
/// deleting it fail for a moment (access denied, sharing or lock
/// violation); elsewhere nothing is.
fn busy(e: &io::Error) -> bool {
    cfg!(windows) && matches!(e.raw_os_error(), Some(5 | 32 | 33))
}

/// Run `op` again while it fails with [`busy`], at most [`BUSY_TRIES`]
/// times in all (half a second); any other outcome is returned at once.
fn while_busy<T>(op: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    retry(op, busy, BUSY_TRIES, BUSY_PAUSE)
}

fn retry<T>(
    mut op: impl FnMut() -> io::Result<T>,
    again: impl Fn(&io::Error) -> bool,
    tries: u32,
    pause: std::time::Duration,
) -> io::Result<T> {
    let mut left = tries;
    loop {
        match op() {
            Err(e) if again(&e) && left > 1 => {
                left -= 1;
                std::thread::sleep(pause);
            }
            other => return other,
        }
    }
}

pub fn type_name(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Parse a TOML config with `toml_edit` (comments and order kept) or refuse
/// naming line and column.
pub fn parse_toml(path: &Path, text: Option<&str>) -> Result<toml_edit::DocumentMut, InstallError> {
    let text = text.unwrap_or("");
    text.parse::<toml_edit::DocumentMut>().map_err(|e| {
        let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
        InstallError::Malformed {
            path: path.to_path_buf(),
            line,
            column,
            message: e.message().to_string(),
        }
    })
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.chars().rev().take_while(|c| *c != '\n').count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_file_is_tried_again_up_to_the_bound_and_other_errors_are_not() {
        let pause = std::time::Duration::ZERO;
        let is_32 = |e: &io::Error| e.raw_os_error() == Some(32);
        // Busy twice, then done.
        let mut n = 0;
        let r = retry(
            || {
                n += 1;
                if n < 3 {
                    Err(io::Error::from_raw_os_error(32))
                } else {
                    Ok(n)
                }
            },
            is_32,
            BUSY_TRIES,
            pause,
        );
        assert_eq!(r.unwrap(), 3);
        // Busy for ever: exactly BUSY_TRIES tries, then the error.
        let mut n = 0;
        let r: io::Result<()> = retry(
            || {
                n += 1;
                Err(io::Error::from_raw_os_error(32))
            },
            is_32,
            BUSY_TRIES,
            pause,
        );
        assert_eq!(r.unwrap_err().raw_os_error(), Some(32));
        assert_eq!(n, BUSY_TRIES);
        // Another error: one try.
        let mut n = 0;
        let r: io::Result<()> = retry(
            || {
                n += 1;
                Err(io::Error::from_raw_os_error(2))
            },
            is_32,
            BUSY_TRIES,
            pause,
        );
        assert!(r.is_err());
        assert_eq!(n, 1);
        // Only Windows counts anything as busy.
        assert_eq!(busy(&io::Error::from_raw_os_error(32)), cfg!(windows));
        assert!(BUSY_PAUSE * BUSY_TRIES <= std::time::Duration::from_millis(500));
    }

    #[test]
    fn the_windows_install_lock_is_one_name_per_directory_as_windows_compares_them() {
        let a = lock_name(r"C:\Users\Me\.codex");
        assert_eq!(a, lock_name("c:/users/me/.codex"));
        assert_ne!(a, lock_name(r"C:\Users\Me\.claude"));
        assert!(
            a.starts_with("memhook-install-") && a.ends_with(".lock"),
            "{a}"
        );
    }

    // Acceptance check 12: a crash between the temp write and the rename
    // leaves the old file whole and no temp file behind.
    #[test]
    fn failure_before_rename_keeps_the_old_file() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("settings.json");
        fs::write(&f, b"{\"old\": true}\n").unwrap();
        let err = write_atomic(&f, b"{\"new\": true}\n", 0o644, &|| {
            Err(io::Error::other("injected crash"))
        });
        assert!(err.is_err());
        assert_eq!(fs::read(&f).unwrap(), b"{\"old\": true}\n");
        let names: Vec<_> = fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        write_atomic(&f, b"{\"new\": true}\n", 0o644, &|| Ok(())).unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"{\"new\": true}\n");
    }

    #[test]
    fn toml_errors_name_line() {
        let e = parse_toml(Path::new("/c.toml"), Some("a = 1\nb = = 2\n")).unwrap_err();
        match e {
            InstallError::Malformed { line, .. } => assert_eq!(line, 2),
            other => panic!("{other}"),
        }
    }
}
