//! Briefings kept ready: a scope's briefing composed ahead of its next
//! session start, so that session start runs in the per-event binary and
//! never opens the store when nothing changed since (docs/architecture.md,
//! "Briefings kept ready").
//!
//! Who writes one: `memhook-brief` after it composed a briefing at a
//! session start, and the drainer when it finishes (it composes again every
//! kept briefing that its deliveries made stale). Who reads one: `memhook
//! hook` at the event it briefs at, before it asks `memhook-brief` to
//! compose.
//!
//! A kept briefing is used only when all of this still holds:
//! - the store's generation ([`GENERATION_FILE`]) is the one read before the
//!   briefing's snapshot was taken. Every commit to the embedded store
//!   writes a new random generation after it is committed (the store's WAL
//!   hook), so a briefing composed from an older snapshot never matches;
//! - the store file is the same file (a deleted and recreated store is not
//!   the same store);
//! - the scope's `MEMORY.md` is the same file, size and modification time
//!   (`memory_write` and an edit by hand both change one);
//! - the briefing's parameters are the same (scope, `max_chars`, the
//!   digest, whether the agent has the MCP tools);
//! - the starting session is none of the sessions the briefing looked at
//!   (a resumed session is never briefed about itself).
//!
//! Forget and retention remove every kept briefing ([`clear`]): a forgotten
//! text must not survive in one. Files are 0600 in a 0700 directory, read
//! without following a link and only when owned by this user.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::data_dir;

/// The directory of kept briefings in the data dir.
pub const CACHE_DIR: &str = "briefings";
/// The store's generation: 32 hex characters, rewritten after every commit.
pub const GENERATION_FILE: &str = "store-generation";
/// Kept briefings at most (the least recently written go first).
pub const MAX_KEPT: usize = 8;
/// Largest kept-briefing file read (a briefing is at most 20,000
/// characters, `[briefing] max_chars`).
pub const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Sessions a kept briefing lists at most (the briefing looks at 20 at most).
pub const MAX_SESSIONS: usize = 64;
/// The file format's version.
const VERSION: u32 = 1;
/// Characters of a generation.
const GENERATION_CHARS: usize = 32;

/// What a briefing is composed for, besides the store's contents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Key {
    pub workspace: String,
    pub project: String,
    pub max_chars: usize,
    /// The marker's `inject_on_session_start` (the digest of recent sessions).
    pub digest: bool,
    /// The agent has `memhook mcp` registered (`mcp_agents`).
    pub mcp: bool,
}

impl Key {
    /// The key of the briefing `scope` gets for `agent` (its canonical
    /// name), whose MCP registration is read from `data_dir`
    /// ([`crate::mcp_agents`]).
    pub fn of(data_dir: &Path, scope: &crate::scope::Scope, agent: &str) -> Key {
        Key {
            workspace: scope.workspace.clone(),
            project: scope.project.clone(),
            max_chars: scope.settings.max_chars,
            digest: scope.settings.inject_on_session_start,
            mcp: crate::mcp_agents::installed(data_dir, agent),
        }
    }

    /// The kept briefing's file name: a hash of the key, as a sink's id is
    /// made (the key itself is stored inside and compared on every read).
    fn file_name(&self) -> String {
        use sha2::{Digest, Sha256};
        let d = Sha256::digest(serde_json::to_vec(self).unwrap_or_default());
        format!("{}.json", crate::hex::encode(&d[..8]))
    }
}

/// A file as it was when a briefing was composed: same file (identity),
/// same size, same modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileId {
    pub id: u64,
    pub len: u64,
    pub modified_ns: u64,
}

impl FileId {
    /// `path` as it is now (not following a link); `None` if it is absent
    /// or not a regular file.
    pub fn of(path: &Path) -> Option<FileId> {
        let m = fs::symlink_metadata(path).ok()?;
        if !m.is_file() {
            return None;
        }
        #[cfg(windows)]
        return Self::of_handle(path);
        #[cfg(not(windows))]
        {
            let modified_ns = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as u64);
            #[cfg(unix)]
            let id = {
                use std::os::unix::fs::MetadataExt;
                m.ino() ^ m.dev().rotate_left(32)
            };
            #[cfg(not(unix))]
            let id = 0;
            Some(FileId {
                id,
                len: m.len(),
                modified_ns,
            })
        }
    }

    /// Windows: the file's index and volume (`GetFileInformationByHandle`),
    /// which name one file for its life (its creation time can be carried
    /// over to a new file of the same name, and Wine does not keep it),
    /// from a handle opened only to read attributes, sharing everything, on
    /// the link itself, never its target.
    #[cfg(windows)]
    fn of_handle(path: &Path) -> Option<FileId> {
        use std::os::windows::fs::OpenOptionsExt;
        use std::os::windows::io::AsRawHandle;
        use windows_sys::Win32::Storage::FileSystem::{
            GetFileInformationByHandle, BY_HANDLE_FILE_INFORMATION, FILE_ATTRIBUTE_DIRECTORY,
            FILE_ATTRIBUTE_REPARSE_POINT, FILE_READ_ATTRIBUTES,
        };
        let f = fs::OpenOptions::new()
            .access_mode(FILE_READ_ATTRIBUTES)
            .share_mode(7)
            .custom_flags(data_dir::FILE_FLAG_OPEN_REPARSE_POINT)
            .open(path)
            .ok()?;
        // SAFETY: a zeroed BY_HANDLE_FILE_INFORMATION is a valid value, and
        // the handle is open for the call.
        let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
        if unsafe { GetFileInformationByHandle(f.as_raw_handle(), &mut info) } == 0 {
            return None;
        }
        if info.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT) != 0 {
            return None;
        }
        let two = |hi: u32, lo: u32| (u64::from(hi) << 32) | u64::from(lo);
        let written = two(
            info.ftLastWriteTime.dwHighDateTime,
            info.ftLastWriteTime.dwLowDateTime,
        );
        Some(FileId {
            id: two(info.nFileIndexHigh, info.nFileIndexLow)
                ^ u64::from(info.dwVolumeSerialNumber).rotate_left(32),
            len: two(info.nFileSizeHigh, info.nFileSizeLow),
            modified_ns: written.saturating_mul(100),
        })
    }
}

/// What a kept briefing must still match to be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    /// The store's generation, read before the briefing's snapshot.
    pub generation: String,
    /// The store file's identity (its size and time change with every
    /// checkpoint, which changes no content: only `id` is compared).
    pub store: u64,
    /// The scope's `MEMORY.md`, if it has one.
    pub memory: Option<FileId>,
}

/// The stamp of `key`'s scope now. `None` when the store or its
/// generation cannot be read: nothing can be kept or used then.
pub fn stamp(data_dir: &Path, store_file: &Path, key: &Key) -> Option<Stamp> {
    let generation = generation(data_dir)?;
    let store = FileId::of(store_file)?.id;
    Some(Stamp {
        generation,
        store,
        memory: FileId::of(&memory_index(data_dir, key)),
    })
}

/// Where the scope's memory index lives (memhook-store's `memory` module
/// keeps documents under `memory/<workspace>/<project>/`).
pub fn memory_index(data_dir: &Path, key: &Key) -> PathBuf {
    data_dir
        .join("memory")
        .join(&key.workspace)
        .join(&key.project)
        .join("MEMORY.md")
}

/// The store's generation now; `None` when there is none or it is not a
/// file of ours.
pub fn generation(data_dir: &Path) -> Option<String> {
    let bytes =
        data_dir::read_private_file(&data_dir.join(GENERATION_FILE), GENERATION_CHARS as u64 + 1)
            .ok()?;
    let text = String::from_utf8(bytes).ok()?;
    (text.len() == GENERATION_CHARS && text.bytes().all(|b| b.is_ascii_hexdigit())).then_some(text)
}

/// Write a new random generation: every kept briefing is stale from now
/// on. Called after each commit to the store. The file is overwritten in
/// place (its length never changes), without a flush: after a power loss
/// the next commit writes a new one. If it cannot be written it is
/// removed, and if that fails too every kept briefing is, so that a
/// briefing never outlives a change it does not show.
pub fn bump(data_dir: &Path) -> io::Result<()> {
    let path = data_dir.join(GENERATION_FILE);
    let write = || -> io::Result<()> {
        let mut rnd = [0u8; GENERATION_CHARS / 2];
        crate::entropy::fill(&mut rnd)?;
        let text = crate::hex::encode(&rnd);
        let mut opts = fs::OpenOptions::new();
        opts.write(true).create(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        }
        let mut f = opts.open(&path)?;
        let meta = f.metadata()?;
        #[cfg(unix)]
        let foreign = {
            use std::os::unix::fs::MetadataExt;
            meta.uid() != data_dir::current_uid()
        };
        #[cfg(not(unix))]
        let foreign = false;
        if !meta.is_file() || foreign || meta.len() > GENERATION_CHARS as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is not a generation file of this user", path.display()),
            ));
        }
        use std::io::Write;
        f.write_all(text.as_bytes())
    };
    match write() {
        Ok(()) => Ok(()),
        Err(e) => {
            if fs::remove_file(&path).is_err() || fs::symlink_metadata(&path).is_ok() {
                clear(data_dir);
            }
            Err(e)
        }
    }
}

/// A kept briefing as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kept {
    pub v: u32,
    pub key: Key,
    pub stamp: Stamp,
    /// The session ids the briefing looked at, newest first.
    pub sessions: Vec<String>,
    /// The briefing; `None`: nothing to say (the agent gets `{}`).
    pub text: Option<String>,
}

/// What [`lookup`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    /// A kept briefing that still holds: its text (`None`: nothing to say).
    Hit(Option<String>),
    /// None, or one that no longer holds: compose.
    Miss,
}

fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join(CACHE_DIR)
}

fn read(path: &Path) -> Option<Kept> {
    let bytes = data_dir::read_private_file(path, MAX_FILE_BYTES).ok()?;
    let kept: Kept = serde_json::from_slice(&bytes).ok()?;
    (kept.v == VERSION).then_some(kept)
}

/// The kept briefing of `key` for a session starting as `session`, if it
/// still holds (see the module's list).
pub fn lookup(data_dir: &Path, store_file: &Path, key: &Key, session: Option<&str>) -> Lookup {
    let Some(kept) = read(&dir(data_dir).join(key.file_name())) else {
        return Lookup::Miss;
    };
    let holds = kept.key == *key
        && stamp(data_dir, store_file, key).is_some_and(|now| now == kept.stamp)
        && session.is_none_or(|s| !kept.sessions.iter().any(|k| k == s));
    if holds {
        Lookup::Hit(kept.text)
    } else {
        Lookup::Miss
    }
}

/// Keep `text` as the briefing of `key`, composed from a snapshot taken
/// after `stamp` was read. At most [`MAX_KEPT`] are kept.
pub fn keep(
    data_dir: &Path,
    key: &Key,
    stamp: Stamp,
    sessions: Vec<String>,
    text: Option<String>,
) -> io::Result<()> {
    if sessions.len() > MAX_SESSIONS {
        return Ok(());
    }
    let d = dir(data_dir);
    data_dir::ensure_private_dir(&d).map_err(io::Error::other)?;
    let kept = Kept {
        v: VERSION,
        key: key.clone(),
        stamp,
        sessions,
        text,
    };
    let bytes = serde_json::to_vec(&kept).map_err(io::Error::other)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Ok(());
    }
    let path = d.join(key.file_name());
    write_unsynced(&path, &bytes)?;
    // A commit since the stamp was read (a drainer's delivery, or a forget
    // that cleared the kept briefings while this one was composed): the
    // text may quote what a forget removed, so it goes. What stays is the
    // key alone, stale, so that the drainer composes it again when a turn
    // of its scope ends ([`stale`]); without it nothing would be kept ready
    // until the next session start composed one (the race of a session
    // start's composition with the drainer's delivery of that start).
    if self::generation(data_dir).as_deref() != Some(kept.stamp.generation.as_str()) {
        let placeholder = Kept {
            sessions: Vec::new(),
            text: None,
            ..kept
        };
        let bytes = serde_json::to_vec(&placeholder).map_err(io::Error::other)?;
        if write_unsynced(&path, &bytes).is_err() {
            let _ = fs::remove_file(&path);
        }
    }
    trim(&d);
    Ok(())
}

/// Write `bytes` to `path` atomically (a new 0600 temp file beside it,
/// renamed over it) without a flush: a kept briefing is composed again
/// when it is lost, and one that a power loss left torn does not parse.
fn write_unsynced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut rnd = [0u8; 6];
    crate::entropy::fill(&mut rnd)?;
    let tmp = path.with_extension(format!("{}.tmp", crate::hex::encode(&rnd)));
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let res = opts
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| fs::rename(&tmp, path));
    if res.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    res
}

/// Remove the least recently written kept briefings past [`MAX_KEPT`].
fn trim(d: &Path) {
    let mut files = files(d);
    if files.len() <= MAX_KEPT {
        return;
    }
    files.sort_by_key(|(_, modified)| std::cmp::Reverse(*modified));
    for (path, _) in &files[MAX_KEPT..] {
        let _ = fs::remove_file(path);
    }
}

/// The kept-briefing files (name `<16 hex>.json`) and when each was written.
fn files(d: &Path) -> Vec<(PathBuf, std::time::SystemTime)> {
    all_files(d)
        .into_iter()
        .filter(|(p, _)| {
            let n = p.file_name().unwrap_or_default().to_string_lossy();
            n.len() == 21 && n.ends_with(".json")
        })
        .collect()
}

/// Every regular file in `d` (kept briefings and any temp file a killed
/// writer left), not following links.
fn all_files(d: &Path) -> Vec<(PathBuf, std::time::SystemTime)> {
    let Ok(entries) = fs::read_dir(d) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            let modified = m.modified().ok()?;
            m.is_file().then(|| (e.path(), modified))
        })
        .collect()
}

/// Every kept briefing whose stamp no longer holds: what the drainer
/// composes again when it finishes (at most [`MAX_KEPT`]).
pub fn stale(data_dir: &Path, store_file: &Path) -> Vec<Key> {
    files(&dir(data_dir))
        .into_iter()
        .filter_map(|(path, _)| read(&path))
        .filter(|k| stamp(data_dir, store_file, &k.key).is_none_or(|now| now != k.stamp))
        .map(|k| k.key)
        .take(MAX_KEPT)
        .collect()
}

/// Remove every kept briefing (forget, retention): none may hold a text the
/// store no longer has. Each file is emptied before it is removed, and the
/// directory is flushed.
pub fn clear(data_dir: &Path) {
    let d = dir(data_dir);
    for (path, _) in all_files(&d) {
        let mut opts = fs::OpenOptions::new();
        opts.write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        }
        if let Ok(f) = opts.open(&path) {
            let _ = f.set_len(0);
        }
        let _ = fs::remove_file(&path);
    }
    data_dir::sync_dir(&d);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(p: &str) -> Key {
        Key {
            workspace: "acme".into(),
            project: p.into(),
            max_chars: 4000,
            digest: false,
            mcp: true,
        }
    }

    /// A data dir with a store file and a generation.
    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("data");
        data_dir::ensure_private_dir(&d).unwrap();
        let store = d.join("store.sqlite3");
        fs::write(&store, b"x").unwrap();
        bump(&d).unwrap();
        (t, d, store)
    }

    fn keep_now(d: &Path, store: &Path, k: &Key, sessions: &[&str], text: &str) {
        let s = stamp(d, store, k).unwrap();
        keep(
            d,
            k,
            s,
            sessions.iter().map(|s| s.to_string()).collect(),
            Some(text.into()),
        )
        .unwrap();
    }

    #[test]
    fn a_kept_briefing_holds_until_the_generation_changes() {
        let (_t, d, store) = setup();
        let k = key("api");
        assert_eq!(lookup(&d, &store, &k, Some("new")), Lookup::Miss);
        keep_now(&d, &store, &k, &["s1"], "hello");
        assert_eq!(
            lookup(&d, &store, &k, Some("new")),
            Lookup::Hit(Some("hello".into()))
        );
        assert!(stale(&d, &store).is_empty());
        bump(&d).unwrap();
        assert_eq!(lookup(&d, &store, &k, Some("new")), Lookup::Miss);
        assert_eq!(stale(&d, &store), vec![k]);
    }

    #[test]
    fn every_parameter_and_the_session_decide() {
        let (_t, d, store) = setup();
        let k = key("api");
        keep_now(&d, &store, &k, &["s1", "s2"], "hello");
        // A session the briefing looked at (resumed) is never briefed from it.
        assert_eq!(lookup(&d, &store, &k, Some("s2")), Lookup::Miss);
        for other in [
            Key {
                max_chars: 4001,
                ..k.clone()
            },
            Key {
                digest: true,
                ..k.clone()
            },
            Key {
                mcp: false,
                ..k.clone()
            },
            Key {
                project: "web".into(),
                ..k.clone()
            },
            Key {
                workspace: "other".into(),
                ..k.clone()
            },
        ] {
            assert_eq!(
                lookup(&d, &store, &other, Some("new")),
                Lookup::Miss,
                "{other:?}"
            );
        }
    }

    #[test]
    fn a_new_store_or_memory_index_is_not_the_same() {
        let (_t, d, store) = setup();
        let k = key("api");
        keep_now(&d, &store, &k, &[], "hello");
        // The memory index written: stale.
        let index = memory_index(&d, &k);
        fs::create_dir_all(index.parent().unwrap()).unwrap();
        fs::write(&index, b"# notes\n").unwrap();
        assert_eq!(lookup(&d, &store, &k, None), Lookup::Miss);
        keep_now(&d, &store, &k, &[], "with notes");
        assert_eq!(
            lookup(&d, &store, &k, None),
            Lookup::Hit(Some("with notes".into()))
        );
        fs::write(&index, b"# notes, longer\n").unwrap();
        assert_eq!(lookup(&d, &store, &k, None), Lookup::Miss);
        keep_now(&d, &store, &k, &[], "again");
        // The store gone, then another file in its place. The other file
        // is made while the first still exists, so that it cannot reuse its
        // inode (or, under Wine, the file index Wine takes from it).
        let other = d.join("store.sqlite3.other");
        fs::write(&other, b"x").unwrap();
        fs::remove_file(&store).unwrap();
        assert_eq!(lookup(&d, &store, &k, None), Lookup::Miss);
        fs::rename(&other, &store).unwrap();
        assert_eq!(lookup(&d, &store, &k, None), Lookup::Miss);
    }

    #[test]
    fn no_generation_means_nothing_is_kept_or_used() {
        let (_t, d, store) = setup();
        let k = key("api");
        keep_now(&d, &store, &k, &[], "hello");
        fs::remove_file(d.join(GENERATION_FILE)).unwrap();
        assert_eq!(lookup(&d, &store, &k, None), Lookup::Miss);
        assert!(stamp(&d, &store, &k).is_none());
        // A generation of the wrong shape counts as none.
        fs::write(d.join(GENERATION_FILE), b"not hex at all, and 32 chars lo").unwrap();
        assert!(generation(&d).is_none());
    }

    #[cfg(unix)]
    #[test]
    fn links_are_never_followed() {
        let (t, d, store) = setup();
        let k = key("api");
        keep_now(&d, &store, &k, &[], "hello");
        // A kept briefing replaced by a link to another file of the same
        // content: refused.
        let path = d.join(CACHE_DIR).join(k.file_name());
        let elsewhere = t.path().join("elsewhere.json");
        fs::copy(&path, &elsewhere).unwrap();
        fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        assert_eq!(lookup(&d, &store, &k, None), Lookup::Miss);
        // A generation file that is a link: not read, and not written through.
        let gen = d.join(GENERATION_FILE);
        let target = t.path().join("target");
        fs::write(&target, b"keep me").unwrap();
        fs::remove_file(&gen).unwrap();
        std::os::unix::fs::symlink(&target, &gen).unwrap();
        assert!(generation(&d).is_none());
        assert!(bump(&d).is_err());
        assert_eq!(fs::read(&target).unwrap(), b"keep me");
    }

    #[test]
    fn clear_removes_every_kept_briefing_and_the_count_is_bounded() {
        let (_t, d, store) = setup();
        for i in 0..MAX_KEPT + 3 {
            keep_now(&d, &store, &key(&format!("p{i}")), &[], "text");
        }
        assert_eq!(files(&d.join(CACHE_DIR)).len(), MAX_KEPT);
        clear(&d);
        assert!(files(&d.join(CACHE_DIR)).is_empty());
        assert_eq!(lookup(&d, &store, &key("p20"), None), Lookup::Miss);
    }

    /// A commit between the stamp and the keep (the drainer delivered the
    /// starting session's own start while it was composed): the text is
    /// not kept, but the key is, stale, for the drainer to compose again.
    #[test]
    fn a_briefing_overtaken_by_a_commit_keeps_only_its_key_stale() {
        let (_t, d, store) = setup();
        let k = key("api");
        let s = stamp(&d, &store, &k).unwrap();
        bump(&d).unwrap();
        keep(&d, &k, s, vec!["s1".into()], Some("zqxoldtext".into())).unwrap();
        assert_eq!(lookup(&d, &store, &k, Some("new")), Lookup::Miss);
        assert_eq!(stale(&d, &store), vec![k.clone()]);
        let path = d.join(CACHE_DIR).join(k.file_name());
        let bytes = fs::read(&path).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("zqxoldtext"),
            "the overtaken text stays on disk"
        );
        // Composed again with a stamp that holds: used.
        keep_now(&d, &store, &k, &["s1"], "fresh");
        assert_eq!(
            lookup(&d, &store, &k, Some("new")),
            Lookup::Hit(Some("fresh".into()))
        );
    }

    #[test]
    fn a_briefing_with_nothing_to_say_is_kept_too() {
        let (_t, d, store) = setup();
        let k = key("api");
        let s = stamp(&d, &store, &k).unwrap();
        keep(&d, &k, s, vec![], None).unwrap();
        assert_eq!(lookup(&d, &store, &k, Some("x")), Lookup::Hit(None));
    }
}
