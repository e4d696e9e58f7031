//! The document store: one directory per scope, one plain file per document.
//!
//! Safety on disk: every level from the data dir to the document is checked
//! with `symlink_metadata` (a symlink anywhere, the root included, is
//! refused), documents are opened with `O_NOFOLLOW | O_NONBLOCK` and checked
//! to be regular files after opening, reads are bounded by the size actually
//! read (not by a metadata size checked earlier), and writes go to a 0600
//! temp file that is fsynced and renamed over the document, then the
//! directory is fsynced. Read-compare-write runs under an exclusive `fs2`
//! lock on `<scope>/.memhook.lock`, so it holds across processes.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::content::{self, MAX_DOC_BYTES};
use super::path::{self, PathError, VirtualPath, MAX_DEPTH};
use super::{index_warning, Answer, Entry, Outcome, INDEX_PATH, LIST_PAGE, MAX_SCAN_FILES};
use memhook_core::data_dir::{self, DirError};

/// The lock file inside each scope directory (hidden: never a document).
const LOCK_FILE: &str = ".memhook.lock";
/// Longest `if_version` accepted.
pub const MAX_VERSION_LEN: usize = 64;
/// The `if_version` that means "create; the document must not exist".
pub const NEW_VERSION: &str = "new";

/// Why an operation did not happen.
#[derive(Debug)]
pub enum MemError {
    Path(PathError),
    NotFound,
    /// A symlink on the way (the segment is virtual, or "memory root").
    Symlink(String),
    NotAFile,
    NotADirectory(String),
    TooLarge {
        bytes: usize,
    },
    NotUtf8,
    EmptyContent,
    EmptyVersion,
    BadVersion,
    /// A document or directory whose name differs only in case or Unicode
    /// normalisation exists (its path, as stored).
    CaseTwin(String),
    /// The data dir or scope directory cannot be used (details went to stderr).
    Root(String),
    Io {
        doing: &'static str,
        err: io::Error,
    },
}

impl MemError {
    /// `(outcome, reason code)`.
    pub fn outcome(&self) -> (Outcome, &'static str) {
        match self {
            MemError::Path(e) => (Outcome::Refused, e.code()),
            MemError::NotFound => (Outcome::NotFound, "not_found"),
            MemError::Symlink(_) => (Outcome::Refused, "symlink"),
            MemError::NotAFile => (Outcome::Refused, "not_a_file"),
            MemError::NotADirectory(_) => (Outcome::Refused, "not_a_directory"),
            MemError::TooLarge { .. } => (Outcome::Refused, "too_large"),
            MemError::NotUtf8 => (Outcome::Refused, "not_utf8"),
            MemError::EmptyContent => (Outcome::Refused, "empty_content"),
            MemError::EmptyVersion => (Outcome::Refused, "missing_version"),
            MemError::BadVersion => (Outcome::Refused, "invalid_version"),
            MemError::CaseTwin(_) => (Outcome::Refused, "case_twin"),
            MemError::Root(_) => (Outcome::Failed, "store_unavailable"),
            MemError::Io { .. } => (Outcome::Failed, "io_error"),
        }
    }
}

impl fmt::Display for MemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemError::Path(e) => e.fmt(f),
            MemError::NotFound => write!(f, "no such document; memory_list shows what exists"),
            MemError::Symlink(at) => write!(
                f,
                "{at} is a symlink on disk; memhook never follows symlinks in project memory \
                 (replace it with a real file or directory)"
            ),
            MemError::NotAFile => write!(f, "this path is a directory or special file, not a document"),
            MemError::NotADirectory(at) => write!(f, "{at} is a document, not a directory"),
            MemError::TooLarge { bytes } => write!(
                f,
                "document is {bytes} bytes; the limit is {MAX_DOC_BYTES} bytes (split it into several documents)"
            ),
            MemError::NotUtf8 => write!(f, "document is not valid UTF-8 text (fix it in an editor)"),
            MemError::EmptyContent => write!(
                f,
                "content is empty or whitespace only; memory has no delete: write a short note instead"
            ),
            MemError::EmptyVersion => write!(
                f,
                "if_version is empty: pass \"new\" to create a document, or the version memory_read returned"
            ),
            MemError::BadVersion => write!(
                f,
                "if_version is longer than {MAX_VERSION_LEN} characters; pass \"new\" or the version memory_read returned"
            ),
            MemError::CaseTwin(existing) => write!(
                f,
                "{existing} already exists and differs from this name only in case (or Unicode \
                 normalisation); on many systems they are one file: write to {existing} instead"
            ),
            MemError::Root(problem) => write!(f, "the project memory directory cannot be used: {problem}"),
            MemError::Io { doing, err } => write!(f, "{doing}: {err}"),
        }
    }
}

impl std::error::Error for MemError {}

impl From<PathError> for MemError {
    fn from(e: PathError) -> Self {
        MemError::Path(e)
    }
}

fn io_err(doing: &'static str) -> impl FnOnce(io::Error) -> MemError {
    move |err| match err.raw_os_error() {
        Some(libc::ELOOP) => MemError::Symlink("the document".into()),
        _ => MemError::Io { doing, err },
    }
}

/// The documents of one scope.
#[derive(Debug, Clone)]
pub struct MemoryStore {
    data_dir: PathBuf,
    /// `<data dir>/memory/<workspace>/<project>`.
    root: PathBuf,
}

/// Held while a read-compare-write runs (released on drop).
pub struct WriteGuard {
    file: File,
}

impl Drop for WriteGuard {
    fn drop(&mut self) {
        let _ = fs2::FileExt::unlock(&self.file);
    }
}

/// A document found while walking the store.
#[derive(Debug, Clone)]
pub(super) struct Found {
    pub path: VirtualPath,
    pub host: PathBuf,
    pub bytes: u64,
    pub mtime_ms: Option<u64>,
}

impl MemoryStore {
    /// The store of `workspace`/`project` under `data_dir`. Touches nothing.
    pub fn new(data_dir: &Path, workspace: &str, project: &str) -> Result<MemoryStore, MemError> {
        for (what, name) in [("workspace", workspace), ("project", project)] {
            if !memhook_core::names::is_valid_name(name) {
                return Err(MemError::Root(format!(
                    "{what} {}",
                    memhook_core::names::name_problem(name)
                )));
            }
        }
        Ok(MemoryStore {
            data_dir: data_dir.to_path_buf(),
            root: data_dir.join("memory").join(workspace).join(project),
        })
    }

    /// The scope directory on disk (for humans and tests; never shown to the model).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The chain of directories from the data dir to the scope root.
    fn root_chain(&self) -> [PathBuf; 4] {
        let memory = self.data_dir.join("memory");
        let ws = self.root.parent().expect("root has a parent").to_path_buf();
        [self.data_dir.clone(), memory, ws, self.root.clone()]
    }

    /// Check the root chain without creating anything. `Ok(false)` when a
    /// level does not exist yet (an empty store).
    fn check_root(&self) -> Result<bool, MemError> {
        for dir in self.root_chain() {
            match fs::symlink_metadata(&dir) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
                Err(e) => {
                    return Err(root_problem(DirError::Io {
                        path: dir,
                        source: e,
                    }))
                }
                Ok(_) => data_dir::check_private_dir(&dir).map_err(root_problem)?,
            }
        }
        Ok(true)
    }

    /// Create the root chain (0700, refusing symlinks level by level).
    fn ensure_root(&self) -> Result<(), MemError> {
        for dir in self.root_chain() {
            data_dir::ensure_private_dir(&dir).map_err(root_problem)?;
        }
        Ok(())
    }

    /// Walk the directories of `vp` (all but the last segment), checking that
    /// each is a real directory; create missing ones when `create`.
    fn parent_dir(&self, vp: &VirtualPath, create: bool) -> Result<PathBuf, MemError> {
        let segs = vp.segments();
        let mut dir = self.root.clone();
        let mut shown = String::new();
        for seg in &segs[..segs.len().saturating_sub(1)] {
            dir.push(seg);
            shown.push('/');
            shown.push_str(seg);
            match fs::symlink_metadata(&dir) {
                Ok(m) if m.file_type().is_symlink() => return Err(MemError::Symlink(shown)),
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(MemError::NotADirectory(shown)),
                Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
                    #[cfg_attr(not(unix), allow(unused_mut))]
                    let mut b = fs::DirBuilder::new();
                    #[cfg(unix)]
                    {
                        use std::os::unix::fs::DirBuilderExt;
                        b.mode(0o700);
                    }
                    match b.create(&dir) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                        Err(e) => return Err(io_err("creating a directory")(e)),
                    }
                    let m = fs::symlink_metadata(&dir).map_err(io_err("checking a directory"))?;
                    if !m.is_dir() || m.file_type().is_symlink() {
                        return Err(MemError::Symlink(shown));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(MemError::NotFound),
                Err(e) => return Err(io_err("checking a directory")(e)),
            }
        }
        Ok(dir)
    }

    /// The stored path of a document or directory that differs from `vp`
    /// (or one of its directories) only in case or normalisation: walking
    /// down, the first level whose name does not exist as given but a
    /// sibling folds to the same name. `None` when there is none (or the level is new, or
    /// not a real directory).
    fn case_twin(&self, vp: &VirtualPath) -> Option<String> {
        let mut dir = self.root.clone();
        let mut shown = String::new();
        for seg in vp.segments() {
            let want = path::fold(seg);
            // Only real directories are looked into (never through a
            // symlink); whatever else is on the way, the walk that follows
            // reports it.
            let real_dir =
                fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir() && !m.file_type().is_symlink());
            let entries = real_dir.then(|| fs::read_dir(&dir).ok()).flatten()?;
            let mut twin = None;
            let mut exact = false;
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name == *seg {
                    exact = true;
                } else if twin.is_none() && path::fold(&name) == want {
                    twin = Some(name);
                }
            }
            // A name that exists as given is used as it is (twins made
            // before this rule, or by hand, stay writable); only a new
            // name is refused beside its twin.
            if !exact {
                return twin.map(|name| format!("{shown}/{name}"));
            }
            shown.push('/');
            shown.push_str(seg);
            dir.push(seg);
        }
        None
    }

    /// Read a document's raw bytes as stored, bounded; `Ok(None)` when it
    /// does not exist.
    fn read_bytes(&self, host: &Path) -> Result<Option<(Vec<u8>, fs::Metadata)>, MemError> {
        match fs::symlink_metadata(host) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(MemError::Symlink("the document".into()))
            }
            Ok(m) if !m.is_file() => return Err(MemError::NotAFile),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err("checking the document")(e)),
        }
        let mut f = match data_dir::open_nofollow(host) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err("opening the document")(e)),
        };
        let meta = f.metadata().map_err(io_err("checking the document"))?;
        if !meta.is_file() {
            return Err(MemError::NotAFile);
        }
        let mut buf = Vec::new();
        (&mut f)
            .take(MAX_DOC_BYTES as u64 + 1)
            .read_to_end(&mut buf)
            .map_err(io_err("reading the document"))?;
        if buf.len() > MAX_DOC_BYTES {
            let bytes = (meta.len() as usize).max(buf.len());
            return Err(MemError::TooLarge { bytes });
        }
        Ok(Some((buf, meta)))
    }

    /// The stored text of a document (not normalised), for the briefing.
    pub fn read_raw(&self, raw_path: &str) -> Result<String, MemError> {
        let vp = VirtualPath::document(raw_path)?;
        if !self.check_root()? {
            return Err(MemError::NotFound);
        }
        let host = self
            .parent_dir(&vp, false)?
            .join(vp.segments().last().expect("document"));
        let (bytes, _) = self.read_bytes(&host)?.ok_or(MemError::NotFound)?;
        String::from_utf8(bytes).map_err(|_| MemError::NotUtf8)
    }

    /// `memory_read`.
    pub fn read(&self, raw_path: &str) -> Answer {
        match self.try_read(raw_path) {
            Ok(a) => a,
            Err(e) => Answer::from_error(raw_path, &e),
        }
    }

    fn try_read(&self, raw_path: &str) -> Result<Answer, MemError> {
        let vp = VirtualPath::document(raw_path)?;
        if !self.check_root()? {
            return Err(MemError::NotFound);
        }
        let host = self
            .parent_dir(&vp, false)?
            .join(vp.segments().last().expect("document"));
        let (bytes, meta) = self.read_bytes(&host)?.ok_or(MemError::NotFound)?;
        let text = std::str::from_utf8(&bytes).map_err(|_| MemError::NotUtf8)?;
        let mut a = Answer::new(Outcome::Ok, &vp.to_string());
        a.version = Some(content::version_of(&bytes));
        a.bytes = Some(bytes.len() as u64);
        a.updated_at = mtime_ms(&meta).map(memhook_core::timefmt::rfc3339_ms);
        a.content = Some(content::normalize(text));
        Ok(a)
    }

    /// `memory_write`: whole-document compare-and-swap.
    pub fn write(&self, raw_path: &str, text: &str, if_version: &str) -> Answer {
        match self.try_write(raw_path, text, if_version) {
            Ok(a) => a,
            Err(e) => Answer::from_error(raw_path, &e),
        }
    }

    fn try_write(&self, raw_path: &str, text: &str, if_version: &str) -> Result<Answer, MemError> {
        let vp = VirtualPath::document(raw_path)?;
        let shown = vp.to_string();
        let normalized = content::normalize(text);
        // Memory is shown to every later session: secrets and <private>
        // spans never get in (the same cleaning captured records get).
        let text = memhook_core::redact::clean(&normalized);
        let redactions = text
            .matches(memhook_core::redact::MARKER_PREFIX)
            .count()
            .saturating_sub(
                normalized
                    .matches(memhook_core::redact::MARKER_PREFIX)
                    .count(),
            );
        if text.trim().is_empty() {
            return Err(MemError::EmptyContent);
        }
        if text.len() > MAX_DOC_BYTES {
            return Err(MemError::TooLarge { bytes: text.len() });
        }
        let expected = if_version.trim();
        if expected.is_empty() {
            return Err(MemError::EmptyVersion);
        }
        if expected.len() > MAX_VERSION_LEN {
            return Err(MemError::BadVersion);
        }
        let create = expected.eq_ignore_ascii_case(NEW_VERSION);

        self.ensure_root()?;
        let _guard = self.lock()?;
        if let Some(existing) = self.case_twin(&vp) {
            return Err(MemError::CaseTwin(existing));
        }
        let dir = self.parent_dir(&vp, true)?;
        let name = vp.segments().last().expect("document");
        let host = dir.join(name);

        let current = self.read_bytes(&host)?;
        match (&current, create) {
            (None, false) => {
                return Ok(Answer::problem(
                    Outcome::Missing,
                    &shown,
                    "not_found",
                    "the document does not exist (any more); pass if_version=\"new\" to create it"
                        .into(),
                ))
            }
            (Some((bytes, _)), _) => {
                let current_version = content::version_of(bytes);
                if create || !current_version.eq_ignore_ascii_case(expected) {
                    let mut a = Answer::problem(
                        Outcome::Conflict,
                        &shown,
                        "conflict",
                        if create {
                            "the document already exists; merge your text into currentContent and \
                             retry with if_version=currentVersion"
                        } else {
                            "the document changed since you read it; merge your text into currentContent \
                             and retry with if_version=currentVersion"
                        }
                        .into(),
                    );
                    a.current_version = Some(current_version);
                    a.current_content = Some(content::normalize(&String::from_utf8_lossy(bytes)));
                    return Ok(a);
                }
            }
            (None, true) => {}
        }

        let new_bytes = text.as_bytes();
        let op = match &current {
            Some((bytes, _)) if bytes.as_slice() == new_bytes => "unchanged",
            Some(_) => "updated",
            None => "created",
        };
        if op != "unchanged" {
            data_dir::write_private_file(&host, new_bytes)
                .map_err(io_err("writing the document"))?;
            data_dir::sync_dir(&dir);
        }
        let mut a = Answer::new(Outcome::Ok, &shown);
        a.op = Some(op);
        a.version = Some(content::version_of(new_bytes));
        a.bytes = Some(new_bytes.len() as u64);
        let mut warnings: Vec<String> = Vec::new();
        if redactions > 0 {
            warnings.push(format!(
                "{redactions} secret(s) were replaced by [REDACTED:…] before saving; memory is \
                 shown to later sessions, so keep credentials out of it"
            ));
        }
        if text.len() != normalized.len() && redactions == 0 {
            warnings.push("<private> spans were removed before saving".into());
        }
        if shown == INDEX_PATH {
            warnings.extend(index_warning(&text));
        }
        if !warnings.is_empty() {
            a.warning = Some(warnings.join("; "));
        }
        Ok(a)
    }

    /// Take the per-scope write lock (blocks until free).
    pub fn lock(&self) -> Result<WriteGuard, MemError> {
        let path = self.root.join(LOCK_FILE);
        let mut opts = OpenOptions::new();
        opts.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
        }
        let file = opts
            .open(&path)
            .map_err(io_err("opening the memory lock"))?;
        fs2::FileExt::lock_exclusive(&file).map_err(io_err("taking the memory lock"))?;
        Ok(WriteGuard { file })
    }

    /// How many documents the scope holds (at most [`MAX_SCAN_FILES`]).
    pub fn count(&self) -> Result<usize, MemError> {
        Ok(self.find(&VirtualPath::prefix("/")?)?.0.len())
    }

    /// Delete the scope's whole memory (`memhook forget --project W/P
    /// --memory`): under the write lock, every document's bytes are
    /// overwritten with zeros and synced, then the scope's directory is
    /// removed (without following symlinks). Returns how many documents
    /// there were.
    pub fn forget_all(&self) -> Result<usize, MemError> {
        if !self.check_root()? {
            return Ok(0);
        }
        let guard = self.lock()?;
        let (found, _) = self.find(&VirtualPath::prefix("/")?)?;
        for f in &found {
            zero_file(&f.host);
        }
        drop(guard);
        fs::remove_dir_all(&self.root).map_err(io_err("removing the project's memory"))?;
        if let Some(ws) = self.root.parent() {
            data_dir::sync_dir(ws);
        }
        Ok(found.len())
    }

    /// `memory_list`: documents under `prefix` after `cursor`, sorted, one page.
    pub fn list(&self, prefix: Option<&str>, cursor: Option<&str>) -> Answer {
        let shown = prefix.unwrap_or("/");
        match self.try_list(shown, cursor) {
            Ok(a) => a,
            Err(e) => Answer::from_error(shown, &e),
        }
    }

    fn try_list(&self, prefix: &str, cursor: Option<&str>) -> Result<Answer, MemError> {
        let vp = VirtualPath::prefix(prefix)?;
        let (mut found, truncated) = self.find(&vp)?;
        found.sort_by_cached_key(|f| f.path.to_string());
        if let Some(c) = cursor {
            found.retain(|f| f.path.to_string().as_str() > c);
        }
        let remaining = found.len().saturating_sub(LIST_PAGE);
        found.truncate(LIST_PAGE);
        let mut a = Answer::new(Outcome::Ok, &vp.to_string());
        if remaining > 0 {
            a.next_cursor = found.last().map(|f| f.path.to_string());
        }
        a.entries = Some(
            found
                .into_iter()
                .map(|f| Entry {
                    path: Some(f.path.to_string()),
                    bytes: Some(f.bytes),
                    updated_at: f.mtime_ms.map(memhook_core::timefmt::rfc3339_ms),
                    ..Entry::default()
                })
                .collect(),
        );
        a.remaining = Some(remaining);
        if truncated {
            a.warning = Some(format!(
                "the store holds more than {MAX_SCAN_FILES} files; only the first ones were listed"
            ));
        }
        Ok(a)
    }

    /// Every document under `prefix` (unsorted), and whether the walk hit
    /// [`MAX_SCAN_FILES`]. A prefix naming a document yields that document.
    pub(super) fn find(&self, prefix: &VirtualPath) -> Result<(Vec<Found>, bool), MemError> {
        if !self.check_root()? {
            return Ok((Vec::new(), false));
        }
        let mut start = self.root.clone();
        let mut shown = String::new();
        for seg in prefix.segments() {
            start.push(seg);
            shown.push('/');
            shown.push_str(seg);
            match fs::symlink_metadata(&start) {
                Ok(m) if m.file_type().is_symlink() => return Err(MemError::Symlink(shown)),
                Ok(_) => {}
                // Missing, or a document where a directory would be: nothing under it.
                Err(e)
                    if e.kind() == io::ErrorKind::NotFound
                        || e.raw_os_error() == Some(libc::ENOTDIR) =>
                {
                    return Ok((Vec::new(), false))
                }
                Err(e) => return Err(io_err("checking a directory")(e)),
            }
        }
        let meta = fs::symlink_metadata(&start).map_err(io_err("checking a directory"))?;
        let mut out = Vec::new();
        if meta.is_file() {
            if !prefix.is_root() {
                out.push(Found {
                    path: prefix.clone(),
                    host: start,
                    bytes: meta.len(),
                    mtime_ms: mtime_ms(&meta),
                });
            }
            return Ok((out, false));
        }
        let mut truncated = false;
        walk(&start, prefix.segments().to_vec(), &mut out, &mut truncated);
        Ok((out, truncated))
    }

    /// Read a found document for search (bounded, normalised); `None` when
    /// it vanished, grew past the cap or is not text.
    pub(super) fn read_found(&self, f: &Found) -> Option<String> {
        let (bytes, _) = self.read_bytes(&f.host).ok()??;
        String::from_utf8(bytes)
            .ok()
            .map(|t| content::normalize(&t))
    }
}

/// Recursive listing: skips hidden names, names that break a path rule,
/// symlinks and special files; stops at [`MAX_DEPTH`] and [`MAX_SCAN_FILES`].
fn walk(dir: &Path, segs: Vec<String>, out: &mut Vec<Found>, truncated: &mut bool) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for entry in rd.flatten() {
        if out.len() >= MAX_SCAN_FILES {
            *truncated = true;
            return;
        }
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_symlink() {
            continue;
        }
        let mut child = segs.clone();
        child.push(name);
        let Some(vp) = VirtualPath::from_segments(child.clone()) else {
            continue;
        };
        if ft.is_dir() {
            if child.len() < MAX_DEPTH {
                walk(&entry.path(), child, out, truncated);
            }
        } else if ft.is_file() {
            let Ok(meta) = entry.metadata() else { continue };
            out.push(Found {
                path: vp,
                host: entry.path(),
                bytes: meta.len(),
                mtime_ms: mtime_ms(&meta),
            });
        }
    }
}

/// Overwrite a regular file's bytes with zeros in place (best effort; never
/// through a symlink), so that the text is not left in its blocks for a
/// plain read of the disk on file systems that reuse them in place.
fn zero_file(path: &Path) {
    let mut opts = OpenOptions::new();
    opts.write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
    }
    let Ok(mut f) = opts.open(path) else { return };
    let Ok(meta) = f.metadata() else { return };
    if !meta.is_file() {
        return;
    }
    let zeros = vec![0u8; 64 * 1024];
    let mut left = meta.len();
    while left > 0 {
        let n = left.min(zeros.len() as u64) as usize;
        if io::Write::write_all(&mut f, &zeros[..n]).is_err() {
            return;
        }
        left -= n as u64;
    }
    let _ = f.sync_all();
}

fn mtime_ms(meta: &fs::Metadata) -> Option<u64> {
    meta.modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_millis() as u64)
}

/// Report a root problem in full on stderr (it names host paths) and give
/// the model a short version without them.
fn root_problem(e: DirError) -> MemError {
    eprintln!("memhook: project memory: {e}");
    match e {
        DirError::Symlink(_) => MemError::Symlink("the memory root".into()),
        DirError::ForeignOwner { .. } => MemError::Root("it is owned by another user".into()),
        DirError::NotADirectory(_) => {
            MemError::Root("a file stands where a directory belongs".into())
        }
        DirError::NoDataDir => MemError::Root("there is no data directory".into()),
        DirError::Io { source, .. } => MemError::Root(source.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn store(t: &tempfile::TempDir) -> MemoryStore {
        MemoryStore::new(t.path(), "acme", "api").unwrap()
    }

    #[cfg(unix)]
    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn create_read_update_with_compare_and_swap() {
        let t = tempfile::tempdir().unwrap();
        let s = store(&t);
        let a = s.write("/notes/build.md", "cargo build\r\n", "new");
        assert_eq!((a.outcome, a.op), (Outcome::Ok, Some("created")), "{a:?}");
        let v1 = a.version.clone().unwrap();
        assert_eq!(a.bytes, Some(12));

        let r = s.read("/notes/build.md");
        assert_eq!(r.outcome, Outcome::Ok);
        assert_eq!(r.content.as_deref(), Some("cargo build\n"));
        assert_eq!(r.version.as_deref(), Some(v1.as_str()));
        assert!(r.updated_at.unwrap().ends_with('Z'));

        let u = s.write("/notes/build.md", "cargo build --locked\n", &v1);
        assert_eq!((u.outcome, u.op), (Outcome::Ok, Some("updated")));
        let v2 = u.version.unwrap();
        assert_ne!(v1, v2);

        // The stale version loses and sees the current text.
        let c = s.write("/notes/build.md", "something else\n", &v1);
        assert_eq!(c.outcome, Outcome::Conflict);
        assert_eq!(c.reason, Some("conflict"));
        assert_eq!(c.current_version.as_deref(), Some(v2.as_str()));
        assert_eq!(c.current_content.as_deref(), Some("cargo build --locked\n"));
        assert_eq!(c.path.as_deref(), Some("/notes/build.md"));

        // `new` on an existing document is a conflict too.
        let c = s.write("/notes/build.md", "x", "new");
        assert_eq!(c.outcome, Outcome::Conflict);
        assert_eq!(c.current_version.as_deref(), Some(v2.as_str()));

        // Same text, right version: nothing rewritten.
        let same = s.write(
            "/notes/build.md",
            "cargo build --locked\n",
            &format!(" {} ", v2.to_uppercase()),
        );
        assert_eq!((same.outcome, same.op), (Outcome::Ok, Some("unchanged")));
    }

    #[test]
    fn names_differing_only_in_case_or_normalisation_are_one_name() {
        let t = tempfile::tempdir().unwrap();
        let s = store(&t);
        assert_eq!(s.write("/MEMORY.md", "index", "new").outcome, Outcome::Ok);
        for twin in ["/memory.md", "/Memory.MD"] {
            let a = s.write(twin, "other", "new");
            assert_eq!(
                (a.outcome, a.reason),
                (Outcome::Refused, Some("case_twin")),
                "{twin}"
            );
            assert!(
                a.message.as_deref().unwrap_or("").contains("/MEMORY.md"),
                "{a:?}"
            );
        }
        assert_eq!(s.write("/Notes/a.md", "x", "new").outcome, Outcome::Ok);
        let a = s.write("/notes/b.md", "x", "new");
        assert_eq!(a.reason, Some("case_twin"), "a directory's twin too: {a:?}");
        assert_eq!(s.write("/Notes/b.md", "x", "new").outcome, Outcome::Ok);
        // NFD and NFC spellings are one document.
        assert_eq!(s.write("/été.md", "v1", "new").outcome, Outcome::Ok);
        let r = s.read("/e\u{301}te\u{301}.md");
        assert_eq!(r.outcome, Outcome::Ok, "{r:?}");
        assert_eq!(
            s.write("/E\u{301}TE\u{301}.md", "x", "new").reason,
            Some("case_twin")
        );
        // Updating the document itself is not a twin.
        let v = s.read("/MEMORY.md").version.unwrap();
        assert_eq!(s.write("/MEMORY.md", "index 2", &v).outcome, Outcome::Ok);
        // Twins already on disk (made by hand, or before this rule) stay
        // writable under their own names.
        fs::write(s.root().join("memory.md"), "old twin").unwrap();
        let v = s.read("/MEMORY.md").version.unwrap();
        assert_eq!(s.write("/MEMORY.md", "index 3", &v).outcome, Outcome::Ok);
        // Only a case-sensitive file system holds both: on Windows (and
        // macOS by default) `memory.md` was `MEMORY.md`, and `/memory.md`
        // stays its refused twin.
        let on_disk = fs::read_dir(s.root()).unwrap();
        if !on_disk
            .map(|e| e.unwrap().file_name())
            .any(|n| n == "memory.md")
        {
            assert_eq!(s.write("/memory.md", "x", &v).reason, Some("case_twin"));
            return;
        }
        let v = s.read("/memory.md").version.unwrap();
        assert_eq!(s.write("/memory.md", "twin 2", &v).outcome, Outcome::Ok);
    }

    #[test]
    fn forget_all_removes_every_document_and_the_scope_dir() {
        let t = tempfile::tempdir().unwrap();
        let s = store(&t);
        assert_eq!(s.count().unwrap(), 0);
        assert_eq!(s.forget_all().unwrap(), 0, "nothing there yet");
        assert_eq!(s.write("/MEMORY.md", "index", "new").outcome, Outcome::Ok);
        assert_eq!(s.write("/notes/a.md", "a", "new").outcome, Outcome::Ok);
        assert_eq!(s.count().unwrap(), 2);
        let other = MemoryStore::new(t.path(), "acme", "other").unwrap();
        assert_eq!(
            other.write("/MEMORY.md", "keep", "new").outcome,
            Outcome::Ok
        );
        assert_eq!(s.forget_all().unwrap(), 2);
        assert!(!s.root().exists());
        assert_eq!(s.count().unwrap(), 0);
        assert_eq!(other.count().unwrap(), 1, "another project is untouched");
    }

    /// Unix modes; on Windows privacy is the data dir's owner-only ACL,
    /// which everything in it inherits (memhook-core's winacl).
    #[cfg(unix)]
    #[test]
    fn files_and_dirs_are_private() {
        let t = tempfile::tempdir().unwrap();
        let s = store(&t);
        assert_eq!(s.write("/a/b/c.md", "x", "new").outcome, Outcome::Ok);
        for d in [
            t.path().join("memory"),
            t.path().join("memory/acme"),
            s.root().to_path_buf(),
            s.root().join("a"),
            s.root().join("a/b"),
        ] {
            assert_eq!(mode(&d), 0o700, "{}", d.display());
        }
        assert_eq!(mode(&s.root().join("a/b/c.md")), 0o600);
        assert_eq!(fs::read_to_string(s.root().join("a/b/c.md")).unwrap(), "x");
    }

    #[test]
    fn missing_and_not_found() {
        let t = tempfile::tempdir().unwrap();
        let s = store(&t);
        let r = s.read("/nope.md");
        assert_eq!(
            (r.outcome, r.reason),
            (Outcome::NotFound, Some("not_found"))
        );
        let w = s.write("/nope.md", "text", "0123456789abcdef");
        assert_eq!((w.outcome, w.reason), (Outcome::Missing, Some("not_found")));
        assert!(w.message.unwrap().contains("new"));
        assert!(!s.root().join("nope.md").exists());
        let r = s.read("/dir/nope.md");
        assert_eq!(r.outcome, Outcome::NotFound);
    }

    #[test]
    fn content_rules() {
        let t = tempfile::tempdir().unwrap();
        let s = store(&t);
        for empty in ["", "   \n\t\r\n", "\u{200B}\u{FEFF}"] {
            let a = s.write("/e.md", empty, "new");
            assert_eq!(
                (a.outcome, a.reason),
                (Outcome::Refused, Some("empty_content")),
                "{empty:?}"
            );
        }
        let exact = "a".repeat(MAX_DOC_BYTES);
        assert_eq!(s.write("/big.md", &exact, "new").outcome, Outcome::Ok);
        let over = "a".repeat(MAX_DOC_BYTES + 1);
        let a = s.write("/bigger.md", &over, "new");
        assert_eq!((a.outcome, a.reason), (Outcome::Refused, Some("too_large")));
        // The cap applies after normalisation: CRLF shrinks to LF.
        let crlf = "a\r\n".repeat(MAX_DOC_BYTES / 2);
        assert_eq!(s.write("/crlf.md", &crlf, "new").outcome, Outcome::Ok);
        // Invisible characters never reach the disk.
        assert_eq!(
            s.write("/inv.md", "a\u{202E}b\u{200D}c\u{1b}", "new")
                .outcome,
            Outcome::Ok
        );
        assert_eq!(
            fs::read_to_string(s.root().join("inv.md")).unwrap(),
            "abc\u{FFFD}"
        );
    }

    #[test]
    fn longest_names_can_be_written() {
        use crate::memory::path::{MAX_DEPTH, MAX_SEGMENT_BYTES};
        let t = tempfile::tempdir().unwrap();
        let s = store(&t);
        let long = format!("/{}", "n".repeat(MAX_SEGMENT_BYTES));
        let a = s.write(&long, "x", "new");
        assert_eq!(a.outcome, Outcome::Ok, "{a:?}");
        assert_eq!(s.write(&long, "y", &a.version.unwrap()).op, Some("updated"));
        let deep = "/d".repeat(MAX_DEPTH);
        assert_eq!(s.write(&deep, "x", "new").outcome, Outcome::Ok);
        let listed = s.list(None, None).entries.unwrap();
        assert!(listed
            .iter()
            .any(|e| e.path.as_deref() == Some(deep.as_str())));
    }

    #[test]
    fn secrets_and_private_spans_never_reach_the_disk() {
        let t = tempfile::tempdir().unwrap();
        let s = store(&t);
        let key = format!("ghp_{}", "a1B2".repeat(9));
        let a = s.write("/creds.md", &format!("CI token: {key}\nrest\n"), "new");
        assert_eq!(a.outcome, Outcome::Ok);
        assert!(
            a.warning.as_deref().unwrap().contains("1 secret(s)"),
            "{a:?}"
        );
        let on_disk = fs::read_to_string(s.root().join("creds.md")).unwrap();
        assert!(
            !on_disk.contains(&key) && on_disk.contains("[REDACTED:github_token]"),
            "{on_disk}"
        );
        assert_eq!(a.version, Some(content::version_of(on_disk.as_bytes())));

        let a = s.write(
            "/p.md",
            "keep <private>my home address</private>this",
            "new",
        );
        assert!(a.warning.unwrap().contains("<private>"));
        assert_eq!(
            fs::read_to_string(s.root().join("p.md")).unwrap(),
            "keep this"
        );
        // Only a private span: nothing is left to save.
        let a = s.write("/q.md", "<private>all of it</private>", "new");
        assert_eq!(a.reason, Some("empty_content"));
        // Clean text gets no warning.
        assert_eq!(s.write("/ok.md", "plain note", "new").warning, None);
    }

    #[test]
    fn version_rules() {
        let t = tempfile::tempdir().unwrap();
        let s = store(&t);
        let a = s.write("/v.md", "x", "  ");
        assert_eq!(
            (a.outcome, a.reason),
            (Outcome::Refused, Some("missing_version"))
        );
        let a = s.write("/v.md", "x", &"f".repeat(MAX_VERSION_LEN + 1));
        assert_eq!(
            (a.outcome, a.reason),
            (Outcome::Refused, Some("invalid_version"))
        );
        assert_eq!(s.write("/v.md", "x", " NEW ").outcome, Outcome::Ok);
    }

    #[test]
    fn path_rules_are_refused_with_the_path_kept() {
        let t = tempfile::tempdir().unwrap();
        let s = store(&t);
        for (p, code) in [
            ("/../outside.md", "dot_segment"),
            ("/.env", "hidden_segment"),
            ("/hooks/pre.sh", "reserved_segment"),
            ("notes.md", "not_absolute"),
            ("/", "root_is_not_a_document"),
        ] {
            for a in [s.write(p, "x", "new"), s.read(p)] {
                assert_eq!((a.outcome, a.reason), (Outcome::Refused, Some(code)), "{p}");
                assert_eq!(a.path.as_deref(), (!p.is_empty()).then_some(p));
            }
        }
        assert!(!t.path().join("outside.md").exists());
        assert_eq!(
            s.list(Some("/skills"), None).reason,
            Some("reserved_segment")
        );
    }

    /// Unix symlinks (creating one on Windows needs a privilege or
    /// Developer Mode; reparse points are refused by memhook-core's
    /// `open_nofollow`).
    #[cfg(unix)]
    #[test]
    fn symlinks_are_never_followed() {
        let t = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret.md"), "secret").unwrap();
        let s = store(&t);
        assert_eq!(s.write("/MEMORY.md", "index", "new").outcome, Outcome::Ok);

        // A symlinked directory inside the store.
        symlink(outside.path(), s.root().join("linked")).unwrap();
        let r = s.read("/linked/secret.md");
        assert_eq!((r.outcome, r.reason), (Outcome::Refused, Some("symlink")));
        let w = s.write("/linked/new.md", "x", "new");
        assert_eq!((w.outcome, w.reason), (Outcome::Refused, Some("symlink")));
        assert!(!outside.path().join("new.md").exists());
        assert_eq!(s.list(Some("/linked"), None).reason, Some("symlink"));

        // A symlinked document.
        symlink(outside.path().join("secret.md"), s.root().join("doc.md")).unwrap();
        assert_eq!(s.read("/doc.md").reason, Some("symlink"));
        let w = s.write("/doc.md", "overwrite", "new");
        assert_eq!(w.reason, Some("symlink"));
        assert_eq!(
            fs::read_to_string(outside.path().join("secret.md")).unwrap(),
            "secret"
        );

        // Listing skips symlinks.
        let l = s.list(None, None);
        let paths: Vec<_> = l
            .entries
            .unwrap()
            .into_iter()
            .map(|e| e.path.unwrap())
            .collect();
        assert_eq!(paths, vec!["/MEMORY.md"]);

        // A symlinked scope root.
        let s2 = MemoryStore::new(t.path(), "acme", "web").unwrap();
        symlink(outside.path(), t.path().join("memory/acme/web")).unwrap();
        for a in [
            s2.read("/secret.md"),
            s2.write("/x.md", "x", "new"),
            s2.list(None, None),
        ] {
            assert_eq!(
                (a.outcome, a.reason),
                (Outcome::Refused, Some("symlink")),
                "{a:?}"
            );
        }
        // A symlinked workspace directory.
        let t2 = tempfile::tempdir().unwrap();
        fs::create_dir_all(t2.path().join("memory")).unwrap();
        symlink(outside.path(), t2.path().join("memory/acme")).unwrap();
        let s3 = MemoryStore::new(t2.path(), "acme", "api").unwrap();
        assert_eq!(s3.write("/x.md", "x", "new").reason, Some("symlink"));
    }

    #[test]
    fn special_files_and_oversized_files_on_disk() {
        let t = tempfile::tempdir().unwrap();
        let s = store(&t);
        assert_eq!(s.write("/a.md", "x", "new").outcome, Outcome::Ok);
        // A directory where a document is asked for.
        fs::create_dir(s.root().join("dir.md")).unwrap();
        assert_eq!(s.read("/dir.md").reason, Some("not_a_file"));
        assert_eq!(s.write("/dir.md", "x", "new").reason, Some("not_a_file"));
        // A document where a directory is needed.
        assert_eq!(
            s.write("/a.md/b.md", "x", "new").reason,
            Some("not_a_directory")
        );
        // A FIFO does not hang the reader (no FIFOs in a Windows directory).
        #[cfg(unix)]
        {
            let fifo = s.root().join("fifo.md");
            let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            assert_eq!(s.read("/fifo.md").reason, Some("not_a_file"));
        }
        // A file an editor grew past the cap is refused, not truncated.
        fs::write(s.root().join("huge.md"), "h".repeat(MAX_DOC_BYTES + 10)).unwrap();
        let r = s.read("/huge.md");
        assert_eq!((r.outcome, r.reason), (Outcome::Refused, Some("too_large")));
        // Not UTF-8.
        fs::write(s.root().join("bin.md"), [0xff, 0xfe, 0x00]).unwrap();
        assert_eq!(s.read("/bin.md").reason, Some("not_utf8"));
    }

    #[test]
    fn list_is_sorted_paged_and_hides_what_tools_cannot_name() {
        let t = tempfile::tempdir().unwrap();
        let s = store(&t);
        for i in (0..55).rev() {
            assert_eq!(
                s.write(&format!("/n/{i:02}.md"), "x", "new").outcome,
                Outcome::Ok
            );
        }
        assert_eq!(s.write("/MEMORY.md", "idx", "new").outcome, Outcome::Ok);
        fs::write(s.root().join(".hidden"), "h").unwrap();
        fs::create_dir(s.root().join("hooks")).unwrap();
        fs::write(s.root().join("hooks/x.sh"), "h").unwrap();

        let p1 = s.list(None, None);
        let e1 = p1.entries.unwrap();
        assert_eq!(e1.len(), LIST_PAGE);
        assert_eq!(e1[0].path.as_deref(), Some("/MEMORY.md"));
        assert_eq!(e1[1].path.as_deref(), Some("/n/00.md"));
        assert_eq!(e1[1].bytes, Some(1));
        assert_eq!(p1.remaining, Some(6));
        let cursor = p1.next_cursor.unwrap();
        assert_eq!(cursor, "/n/48.md");
        let p2 = s.list(None, Some(&cursor));
        let e2 = p2.entries.unwrap();
        assert_eq!(e2.len(), 6);
        assert_eq!(e2.last().unwrap().path.as_deref(), Some("/n/54.md"));
        assert_eq!((p2.remaining, p2.next_cursor), (Some(0), None));

        let n = s.list(Some("/n/"), Some("/n/52.md")).entries.unwrap();
        assert_eq!(n.len(), 2);
        let one = s.list(Some("/MEMORY.md"), None).entries.unwrap();
        assert_eq!(one.len(), 1);
        let under_doc = s.list(Some("/MEMORY.md/x"), None);
        assert_eq!(
            (under_doc.outcome, under_doc.entries.unwrap().len()),
            (Outcome::Ok, 0)
        );
        let none = s.list(Some("/missing"), None);
        assert_eq!(
            (none.outcome, none.entries.unwrap().len()),
            (Outcome::Ok, 0)
        );
        // An empty store lists nothing and creates nothing.
        let empty = MemoryStore::new(t.path(), "acme", "empty").unwrap();
        assert_eq!(empty.list(None, None).entries.unwrap().len(), 0);
        assert!(!empty.root().exists());
    }

    #[test]
    fn lock_serialises_writers_in_one_process_too() {
        let t = tempfile::tempdir().unwrap();
        let s = store(&t);
        let v = s.write("/race.md", "v0", "new").version.unwrap();
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let s = s.clone();
                let v = v.clone();
                std::thread::spawn(move || s.write("/race.md", &format!("writer {i}"), &v).outcome)
            })
            .collect();
        let outcomes: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(
            outcomes.iter().filter(|o| **o == Outcome::Ok).count(),
            1,
            "{outcomes:?}"
        );
        assert_eq!(
            outcomes.iter().filter(|o| **o == Outcome::Conflict).count(),
            7
        );
    }

    #[test]
    fn scope_names_are_validated() {
        let t = tempfile::tempdir().unwrap();
        assert!(MemoryStore::new(t.path(), "..", "x").is_err());
        assert!(MemoryStore::new(t.path(), "a", "B/c").is_err());
    }
}
