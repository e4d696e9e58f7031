//! Where memhook keeps its state, and the safety checks every state directory
//! passes before anything is written into it.
//!
//! Precedence: `--data-dir` > `AI_MEMORY_DATA_DIR` > the platform data dir
//! (`$XDG_DATA_HOME/memhook`, `~/.local/share/memhook`, …). Directories are
//! created 0700; a directory that is a symlink or owned by another user is
//! refused, never written through.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Environment variable that sets the data dir when `--data-dir` is absent.
pub const DATA_DIR_ENV: &str = "AI_MEMORY_DATA_DIR";

/// Why a state directory cannot be used.
#[derive(Debug)]
pub enum DirError {
    /// No flag, no env var and no platform data dir (no usable HOME).
    NoDataDir,
    /// The path exists and is a symlink.
    Symlink(PathBuf),
    /// The path exists and is owned by another user.
    ForeignOwner { path: PathBuf, owner: u32 },
    /// The path exists and is not a directory.
    NotADirectory(PathBuf),
    /// Creating or inspecting the directory failed.
    Io { path: PathBuf, source: io::Error },
}

impl fmt::Display for DirError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DirError::NoDataDir => write!(
                f,
                "no data directory: pass --data-dir or set {DATA_DIR_ENV} (HOME is not usable)"
            ),
            DirError::Symlink(p) => write!(
                f,
                "{} is a symlink; memhook refuses to write through it (replace it with a real directory)",
                p.display()
            ),
            DirError::ForeignOwner { path, owner } => write!(
                f,
                "{} is owned by uid {owner}, not by you; memhook refuses to use it (choose another --data-dir)",
                path.display()
            ),
            DirError::NotADirectory(p) => write!(f, "{} exists and is not a directory", p.display()),
            DirError::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for DirError {}

/// File name of the embedded store inside the data dir (memhook-store
/// opens it; the per-event path only looks at it, `briefing_cache`).
pub const STORE_FILE: &str = "store.sqlite3";

/// Resolve the data dir from the flag, then `AI_MEMORY_DATA_DIR`, then the
/// platform default. Does not create anything.
pub fn resolve(flag: Option<&Path>) -> Result<PathBuf, DirError> {
    if let Some(p) = flag {
        return Ok(absolute(p));
    }
    if let Some(v) = std::env::var_os(DATA_DIR_ENV) {
        if !v.is_empty() {
            return Ok(absolute(Path::new(&v)));
        }
    }
    directories::BaseDirs::new()
        .map(|b| b.data_local_dir().join("memhook"))
        .ok_or(DirError::NoDataDir)
}

/// Whether `dir` is the platform default (used by the installer to decide
/// whether the data dir must be baked into the hook command).
pub fn is_default(dir: &Path) -> bool {
    directories::BaseDirs::new()
        .map(|b| b.data_local_dir().join("memhook") == dir)
        .unwrap_or(false)
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|c| c.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

/// Create `dir` (and missing parents) with mode 0700, then check that it is a
/// real directory owned by the current user. An existing directory's mode is
/// tightened to 0700 when it is ours.
pub fn ensure_private_dir(dir: &Path) -> Result<(), DirError> {
    match fs::symlink_metadata(dir) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let mut b = fs::DirBuilder::new();
            b.recursive(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::DirBuilderExt;
                b.mode(0o700);
            }
            b.create(dir).map_err(|source| DirError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
            // Windows: the owner-only ACL, inherited by every file and
            // directory made inside (the spool, the store, the token).
            #[cfg(windows)]
            crate::winacl::restrict_to_owner(dir).map_err(|source| DirError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        Err(source) => {
            return Err(DirError::Io {
                path: dir.to_path_buf(),
                source,
            })
        }
    }
    check_private_dir(dir)
}

/// Check without creating: `dir` must be a real directory owned by us.
pub fn check_private_dir(dir: &Path) -> Result<(), DirError> {
    let meta = fs::symlink_metadata(dir).map_err(|source| DirError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    if meta.file_type().is_symlink() {
        return Err(DirError::Symlink(dir.to_path_buf()));
    }
    if !meta.is_dir() {
        return Err(DirError::NotADirectory(dir.to_path_buf()));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let me = current_uid();
        if meta.uid() != me {
            return Err(DirError::ForeignOwner {
                path: dir.to_path_buf(),
                owner: meta.uid(),
            });
        }
        if meta.mode() & 0o077 != 0 {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(|source| {
                DirError::Io {
                    path: dir.to_path_buf(),
                    source,
                }
            })?;
        }
    }
    #[cfg(windows)]
    match crate::winacl::foreign_owner(dir) {
        Ok(None) => {}
        Ok(Some(sid)) => {
            return Err(DirError::Io {
                path: dir.to_path_buf(),
                source: io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("owned by {sid}, not by you; memhook refuses to use it (choose another --data-dir)"),
                ),
            })
        }
        Err(source) => {
            return Err(DirError::Io {
                path: dir.to_path_buf(),
                source,
            })
        }
    }
    Ok(())
}

/// The effective uid of this process.
#[cfg(unix)]
pub fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// No uids on Windows: ownership is the data dir's owner-only ACL
/// (checked by [`check_private_dir`]); callers that compare uids are
/// compiled for Unix only.
#[cfg(not(unix))]
pub fn current_uid() -> u32 {
    0
}

/// Write `bytes` to `path` atomically, mode 0600: see [`write_atomic`]. The
/// parent directory must already exist.
pub fn write_private_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic(path, bytes, 0o600, &|| Ok(()))
}

/// Write `bytes` to `path` atomically: a new temp file beside it (mode
/// `mode`, exactly), fsync, `before_rename` (a fault-injection point for
/// tests), rename over `path`. On any error the temp file is removed and
/// `path` is untouched. The directory is not fsynced (see [`sync_dir`]).
pub fn write_atomic(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    before_rename: &dyn Fn() -> io::Result<()>,
) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let mut rnd = [0u8; 6];
    let _ = crate::entropy::fill(&mut rnd);
    let suffix = crate::hex::encode(&rnd);
    let tmp = dir.join(format!(".{name}.memhook-{suffix}.tmp"));
    write_new_synced(&tmp, bytes, mode)?;
    let res = before_rename().and_then(|_| fs::rename(&tmp, path));
    if res.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    res
}

/// Create `tmp` holding `bytes` with mode `mode` exactly (the umask does not
/// narrow it) and fsync it: the first half of an atomic write, whose caller
/// renames `tmp` into place. A leftover file or link of that name (from a
/// killed writer) is replaced, never written through. On error `tmp` is
/// removed.
pub fn write_new_synced(tmp: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    use std::io::Write;
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(mode);
    }
    // Windows: no mode bits; the file inherits the data dir's owner-only
    // ACL (`winacl`). Writes go through the cache (`FILE_FLAG_WRITE_THROUGH`)
    // and `sync_all` below is `FlushFileBuffers`.
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        let _ = mode;
        opts.custom_flags(FILE_FLAG_WRITE_THROUGH);
    }
    let mut f = match opts.open(tmp) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            fs::remove_file(tmp)?;
            opts.open(tmp)?
        }
        Err(e) => return Err(e),
    };
    let res = (|| {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            f.set_permissions(fs::Permissions::from_mode(mode))?;
        }
        f.write_all(bytes)?;
        f.sync_all()
    })();
    if res.is_err() {
        drop(f);
        let _ = fs::remove_file(tmp);
    }
    res
}

/// Best effort: fsync the directory `dir`, so a rename into it survives a
/// crash.
pub fn sync_dir(dir: &Path) {
    #[cfg(windows)]
    let d = {
        use std::os::windows::fs::OpenOptionsExt;
        fs::OpenOptions::new()
            .write(true)
            .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
            .open(dir)
    };
    #[cfg(not(windows))]
    let d = fs::File::open(dir);
    if let Ok(d) = d {
        let _ = d.sync_all();
    }
}

/// Open a file of the data dir for reading without following a symlink
/// (`O_NOFOLLOW`: a link fails with `ELOOP`) and without blocking
/// (`O_NONBLOCK`: a FIFO or device opens at once, to be refused by type;
/// `O_NOCTTY`: a terminal never becomes this process's). The caller checks
/// what it opened; [`open_private_file`] checks type and owner.
pub fn open_nofollow(path: &Path) -> io::Result<fs::File> {
    let mut opts = fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // The standard library adds O_CLOEXEC to every open.
        opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    // Windows: open the reparse point itself, never its target; a
    // symlink or junction opened this way is refused by type here.
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        opts.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT);
        let f = opts.open(path)?;
        if f.metadata()?.file_type().is_symlink() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is a symlink or junction; memhook does not follow it",
                    path.display()
                ),
            ));
        }
        Ok(f)
    }
    #[cfg(not(windows))]
    opts.open(path)
}

/// [`open_nofollow`] for a flush (`sync_all`/`sync_data`): on Windows
/// `FlushFileBuffers` needs a handle with write access (a read-only one
/// fails with "Access denied"), so the file is opened for writing there,
/// never created, truncated or written. Elsewhere it is [`open_nofollow`].
pub fn open_nofollow_to_flush(path: &Path) -> io::Result<fs::File> {
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        let f = fs::OpenOptions::new()
            .write(true)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
            .open(path)?;
        if f.metadata()?.file_type().is_symlink() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is a symlink or junction; memhook does not follow it",
                    path.display()
                ),
            ));
        }
        Ok(f)
    }
    #[cfg(not(windows))]
    open_nofollow(path)
}

/// `FILE_FLAG_WRITE_THROUGH` (winbase.h): writes reach the disk before
/// the call returns.
#[cfg(windows)]
pub const FILE_FLAG_WRITE_THROUGH: u32 = 0x8000_0000;
/// `FILE_FLAG_BACKUP_SEMANTICS` (winbase.h): needed to open a directory.
#[cfg(windows)]
pub const FILE_FLAG_BACKUP_SEMANTICS: u32 = 0x0200_0000;
/// `FILE_FLAG_OPEN_REPARSE_POINT` (winbase.h): open a symlink or junction
/// itself, not what it points at.
#[cfg(windows)]
pub const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;

/// Read `f` to its end, at most `limit` bytes; `len` is its length as the
/// caller's `fstat` found it. The buffer is sized from that, so a small
/// file costs one read plus the one that sees its end (a buffer grown from
/// empty took a read per doubling: seven for a 600-byte file); a file that
/// grew meanwhile is still read to `limit`.
pub fn read_capped(f: &fs::File, len: u64, limit: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut buf = Vec::with_capacity(len.min(limit) as usize + 1);
    f.take(limit).read_to_end(&mut buf)?;
    Ok(buf)
}

/// [`open_private_file`], then at most `limit` bytes of it ([`read_capped`]).
pub fn read_private_file(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let (f, len) = open_private_sized(path)?;
    read_capped(&f, len, limit)
}

/// Open a file of the data dir for reading, trusting nothing about it: a
/// symlink is refused (`O_NOFOLLOW`), a FIFO or device cannot block the open
/// (`O_NONBLOCK`), and what was opened must be a regular file owned by this
/// user.
pub fn open_private_file(path: &Path) -> io::Result<fs::File> {
    open_private_sized(path).map(|(f, _)| f)
}

/// [`open_private_file`], with the file's length from the same `fstat`.
pub fn open_private_sized(path: &Path) -> io::Result<(fs::File, u64)> {
    let f = open_nofollow(path)?;
    let meta = f.metadata()?;
    #[cfg(unix)]
    let foreign = {
        use std::os::unix::fs::MetadataExt;
        meta.uid() != current_uid()
    };
    #[cfg(not(unix))]
    let foreign = false;
    if !meta.is_file() || foreign {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is not a regular file owned by this user",
                path.display()
            ),
        ));
    }
    Ok((f, meta.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_capped_reads_whole_files_and_stops_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let body: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        fs::write(&path, &body).unwrap();
        assert_eq!(read_private_file(&path, 10_000).unwrap(), body);
        assert_eq!(read_private_file(&path, 5000).unwrap(), body);
        assert_eq!(read_private_file(&path, 4999).unwrap(), &body[..4999]);
        // A length hint that is stale (the file grew) still reads to the limit.
        let f = fs::File::open(&path).unwrap();
        assert_eq!(read_capped(&f, 10, 10_000).unwrap(), body);
        fs::write(&path, b"").unwrap();
        assert!(read_private_file(&path, 10).unwrap().is_empty());
    }

    #[test]
    fn creates_0700_and_refuses_symlinks() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("a/b");
        ensure_private_dir(&d).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&d).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700);
            let link = t.path().join("link");
            std::os::unix::fs::symlink(&d, &link).unwrap();
            assert!(matches!(
                ensure_private_dir(&link),
                Err(DirError::Symlink(_))
            ));
        }
    }

    #[cfg(unix)]
    #[test]
    fn tightens_loose_mode() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("loose");
        fs::create_dir(&d).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&d).unwrap();
        assert_eq!(
            fs::metadata(&d).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }

    #[cfg(unix)]
    #[test]
    fn private_file_open_refuses_links_fifos_and_directories() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        write_private_file(&real, b"ok").unwrap();
        assert!(open_private_file(&real).is_ok());
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(open_private_file(&link).is_err());
        let fifo = t.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Must return at once (no writer would ever unblock a plain open).
        assert!(open_private_file(&fifo).is_err());
        assert!(open_private_file(t.path()).is_err());
    }

    /// Merged from three writers: the spool replaced a leftover temp file
    /// of the same name, `write_private_file` removed it first, the
    /// installer never met one (random names). Kept: a leftover file or
    /// link is replaced (never written through) and the mode is exact.
    #[cfg(unix)]
    #[test]
    fn a_leftover_temp_file_or_link_is_replaced_not_written_through() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let tmp = t.path().join("leftover.tmp");
        fs::write(&tmp, b"half a record from a killed writer").unwrap();
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o644)).unwrap();
        write_new_synced(&tmp, b"new", 0o600).unwrap();
        assert_eq!(fs::read(&tmp).unwrap(), b"new");
        assert_eq!(
            fs::metadata(&tmp).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let outside = t.path().join("outside");
        fs::write(&outside, b"keep").unwrap();
        let link = t.path().join("link.tmp");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        write_new_synced(&link, b"new", 0o600).unwrap();
        assert_eq!(fs::read(&outside).unwrap(), b"keep");
        assert!(!fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn a_failed_atomic_write_leaves_the_old_file_and_no_temp_file() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("counters.json");
        write_private_file(&f, b"old").unwrap();
        let err = write_atomic(&f, b"new", 0o600, &|| Err(io::Error::other("crash")));
        assert!(err.is_err());
        assert_eq!(fs::read(&f).unwrap(), b"old");
        assert_eq!(fs::read_dir(t.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn private_file_is_0600() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("token");
        write_private_file(&p, b"x").unwrap();
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        write_private_file(&p, b"yy").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"yy");
    }
}
