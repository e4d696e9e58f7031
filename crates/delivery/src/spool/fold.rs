//! Keeping the `enqueued` ledgers bounded: the drainer folds settled
//! slots into a base count and gives their bytes back to the file system.
//!
//! A ledger gets one byte per enqueue attempt, forever: a million a year.
//! Its length is what hooks reason with (a slot is an offset, the pending
//! estimate compares lengths, `pending.rs`), so it never shrinks and no
//! offset ever moves. Instead, under the drain lock, [`Spool::fold`]:
//!
//! 1. notes a *candidate*: the ledger's length now and the time;
//! 2. on a later run, once [`FOLD_SETTLE_MS`] has passed since the
//!    candidate, every slot before it was reserved that long ago: its hook
//!    has finished or died (a hook's whole life is seconds), and the
//!    drainer's [`Spool::sweep_tmp`] has settled what a dead one left.
//!    A temp file that still names a slot below the candidate (a hook
//!    alive that long) holds the fold back to that slot;
//! 3. when at least [`FOLD_MIN_BYTES`] slots are settled, counts them by
//!    fate, adds them to `counters/<sink>.enqueued.base` (written whole
//!    under a temp name, flushed, renamed, the directory flushed), and only
//!    then punches the folded bytes out of the ledger (`punch`): the
//!    length stays, the blocks are freed, the bytes read as zeros, which
//!    count nothing. Linux: `fallocate(FALLOC_FL_PUNCH_HOLE |
//!    FALLOC_FL_KEEP_SIZE)`; macOS: `fcntl(F_PUNCHHOLE)` over the range
//!    rounded down to the file system's block (APFS takes only whole
//!    blocks; the folded bytes of the last, partial one stay, are not
//!    read, and go with the next fold); Windows: the ledger marked sparse (`FSCTL_SET_SPARSE`), then
//!    `FSCTL_SET_ZERO_DATA`. Each punch covers every byte from 0 to the
//!    base's offset, so one a dying drainer missed is caught up.
//!
//! A ledger's count is then its base plus its slots from the base's offset
//! on ([`Spool::ledger`] reads only those). Dying at any step keeps the
//! books: before the base is renamed, the old base and the unpunched bytes
//! count as before; after, the new base counts the folded slots and the
//! bytes before its offset are not read, punched or not. So a ledger holds
//! on disk at most the slots of the last [`FOLD_SETTLE_MS`] plus
//! [`FOLD_MIN_BYTES`], and its base file is a few dozen bytes.
//!
//! A file system that cannot punch holes (FAT and exFAT, HFS+, a network
//! share, Wine's emulation of Windows) fails the punch: the fold stands
//! (the base counts the slots, `status` reads only the rest), only the
//! bytes stay on disk, a byte per event as before. That is no error to
//! the drainer and is not logged: it is the volume's nature, repeated at
//! every fold, and costs about a megabyte a year; [`Folded::freed`] says
//! what was freed, and docs/operations.md names the limit.

use std::fs;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{parse_tmp_name, sync_dir, sync_file, Spool, Tally, LEDGER_ENQUEUED};
use memhook_core::data_dir;

/// How long after a candidate its slots are taken as settled: far longer
/// than any hook lives between reserving a slot and renaming its entry in
/// (milliseconds; a hook's whole budget is seconds).
pub const FOLD_SETTLE_MS: u64 = 10 * 60 * 1000;
/// Fewest settled slots worth a fold (one flushed base write each time):
/// a ledger keeps at most this many bytes plus [`FOLD_SETTLE_MS`] of
/// attempts before it is folded.
pub const FOLD_MIN_BYTES: u64 = 64 * 1024;
/// Suffix of a ledger's base file: `counters/<sink>.enqueued.base`.
pub const BASE_SUFFIX: &str = "base";
/// Largest base file read (a handful of numbers).
const MAX_BASE_BYTES: u64 = 4 * 1024;
/// Version of the base file's format.
const BASE_VERSION: u32 = 1;

/// What a ledger's folded slots counted, and where its live slots begin.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Base {
    pub v: u32,
    /// Slots before this offset are counted here, not read from the ledger.
    pub offset: u64,
    pub counted: u64,
    pub interrupted: u64,
    pub full: u64,
    pub write_failed: u64,
    /// The ledger's length when last noted, and when (Unix ms): slots
    /// before it settle [`FOLD_SETTLE_MS`] later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate: Option<Candidate>,
}

/// A ledger length noted at a time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    pub offset: u64,
    pub at_ms: u64,
}

impl Base {
    pub(super) fn tally(&self) -> Tally {
        Tally {
            counted: self.counted,
            dropped: [self.interrupted, self.full, self.write_failed],
        }
    }

    fn add(&mut self, t: &Tally) {
        self.counted += t.counted;
        self.interrupted += t.dropped[0];
        self.full += t.dropped[1];
        self.write_failed += t.dropped[2];
    }
}

/// Why a fold could not be done. Nothing was punched: the books stand.
#[derive(Debug)]
pub enum FoldError {
    /// The base file exists but is not one memhook wrote.
    BadBase {
        path: PathBuf,
        problem: String,
    },
    Io {
        path: PathBuf,
        source: io::Error,
    },
}

impl std::fmt::Display for FoldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FoldError::BadBase { path, problem } => write!(
                f,
                "{}: {problem}; the enqueued count is wrong until it is fixed: \
                 restore it from a backup, or remove it and the ledger beside it \
                 to start the count of this sink again (`memhook status` then \
                 shows the records already delivered as unaccounted)",
                path.display()
            ),
            FoldError::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for FoldError {}

/// What one [`Spool::fold`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Folded {
    /// Slots folded into the base this time.
    pub slots: u64,
    /// Whether a new candidate was noted.
    pub noted: bool,
    /// Bytes from the ledger's start the file system took back this time
    /// (0 when nothing was folded or it cannot punch holes).
    pub freed: u64,
}

impl Spool {
    /// The base file of `sink_id`'s `enqueued` ledger.
    pub fn base_path(&self, sink_id: &str) -> PathBuf {
        self.ledger_path(sink_id, &format!("{LEDGER_ENQUEUED}.{BASE_SUFFIX}"))
    }

    /// The base of `sink_id`'s ledger: none yet is the empty base; one that
    /// cannot be read or understood is an error naming it.
    pub fn read_base(&self, sink_id: &str) -> Result<Base, FoldError> {
        let path = self.base_path(sink_id);
        let bytes = match data_dir::read_private_file(&path, MAX_BASE_BYTES) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Base {
                    v: BASE_VERSION,
                    ..Base::default()
                })
            }
            Err(source) => return Err(FoldError::Io { path, source }),
        };
        let bad = |problem: String| FoldError::BadBase {
            path: path.clone(),
            problem,
        };
        let base: Base = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
        if base.v != BASE_VERSION {
            return Err(bad(format!(
                "version {} (this memhook writes {BASE_VERSION})",
                base.v
            )));
        }
        Ok(base)
    }

    /// Fold `sink_id`'s settled slots (see the module). The caller holds
    /// the drain lock. `now_ms` is the time now.
    pub fn fold(&self, sink_id: &str, now_ms: u64) -> Result<Folded, FoldError> {
        let ledger = self.ledger_path(sink_id, LEDGER_ENQUEUED);
        let io_at = |path: &Path| {
            let path = path.to_path_buf();
            move |source| FoldError::Io { path, source }
        };
        let mut base = self.read_base(sink_id)?;
        let file = match open_rw(&ledger) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Folded::default()),
            Err(source) => {
                return Err(FoldError::Io {
                    path: ledger,
                    source,
                })
            }
        };
        let meta = file.metadata().map_err(io_at(&ledger))?;
        if !meta.is_file() {
            return Ok(Folded::default());
        }
        let len = meta.len();
        let note = Candidate {
            offset: len,
            at_ms: now_ms,
        };
        let Some(cand) = base.candidate else {
            base.candidate = Some(note);
            self.write_base(sink_id, &base)?;
            return Ok(Folded {
                noted: true,
                ..Folded::default()
            });
        };
        if now_ms < cand.at_ms.saturating_add(FOLD_SETTLE_MS) {
            return Ok(Folded::default());
        }
        let upto = cand.offset.min(len).min(self.lowest_live_slot(sink_id));
        if upto < base.offset.saturating_add(FOLD_MIN_BYTES) {
            // Not worth a fold yet; a newer candidate lets more settle.
            if cand.offset < len {
                base.candidate = Some(note);
                self.write_base(sink_id, &base)?;
                return Ok(Folded {
                    noted: true,
                    ..Folded::default()
                });
            }
            return Ok(Folded::default());
        }
        let t = tally_range(&file, base.offset, upto).map_err(io_at(&ledger))?;
        base.add(&t);
        let slots = upto - base.offset;
        base.offset = upto;
        base.candidate = Some(note);
        self.write_base(sink_id, &base)?;
        // The base counts them now; the bytes can go (best effort: bytes
        // left in place are never read again; see the module).
        let freed = punch(&file, upto).unwrap_or(0);
        Ok(Folded {
            slots,
            noted: true,
            freed,
        })
    }

    /// The lowest slot a temp file of `sink_id` still names (a hook alive,
    /// or one the sweep could not finish), or `u64::MAX`.
    fn lowest_live_slot(&self, sink_id: &str) -> u64 {
        let Ok(rd) = fs::read_dir(self.dir.join("tmp")) else {
            return u64::MAX;
        };
        rd.flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                // A temp file still under its hidden name is a hook alive.
                let name = name.strip_prefix('.').unwrap_or(&name).to_string();
                let (_, sink, offset) = parse_tmp_name(&name)?;
                (sink == sink_id).then_some(offset)
            })
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Write `base` whole and durably: temp name, flush, rename, flush
    /// the directory.
    fn write_base(&self, sink_id: &str, base: &Base) -> Result<(), FoldError> {
        let path = self.base_path(sink_id);
        let tmp = self.counters_dir().join(format!(
            ".{sink_id}.{LEDGER_ENQUEUED}.{BASE_SUFFIX}.{}.tmp",
            std::process::id()
        ));
        let bytes = serde_json::to_vec(base).map_err(|e| FoldError::Io {
            path: path.clone(),
            source: io::Error::other(e),
        })?;
        let res = (|| {
            let mut opts = fs::OpenOptions::new();
            opts.write(true).create(true).truncate(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                opts.mode(0o600).custom_flags(libc::O_NOFOLLOW);
            }
            let mut f = opts.open(&tmp)?;
            f.write_all(&bytes)?;
            sync_file(&f, &tmp)?;
            fs::rename(&tmp, &path)?;
            sync_dir(&self.counters_dir())
        })();
        res.map_err(|source| {
            let _ = fs::remove_file(&tmp);
            FoldError::Io { path, source }
        })
    }
}

/// Open a ledger to read and punch: never through a symlink, never
/// blocking.
fn open_rw(path: &Path) -> io::Result<fs::File> {
    let mut opts = fs::OpenOptions::new();
    opts.read(true).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    opts.open(path)
}

/// The fates of the slots in `[from, to)` of the ledger `f`.
pub(super) fn tally_range(f: &fs::File, from: u64, to: u64) -> io::Result<Tally> {
    let mut t = Tally::default();
    let mut r = io::BufReader::with_capacity(64 * 1024, f);
    r.seek(SeekFrom::Start(from))?;
    let mut r = r.take(to.saturating_sub(from));
    let mut buf = [0u8; 64 * 1024];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        t.count(&buf[..n]);
    }
    Ok(t)
}

/// Free the blocks of `[0, upto)` of `f`, keeping its length: the
/// bytes then read as zeros. Returns how many bytes from 0 were punched
/// (on macOS fewer than `upto`: whole blocks only), or why the file system
/// would not. `f` is open to write.
fn punch(f: &fs::File, upto: u64) -> io::Result<u64> {
    if upto == 0 {
        return Ok(0);
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::io::AsRawFd;
        let len = libc::off_t::try_from(upto).map_err(io::Error::other)?;
        // SAFETY: a valid open descriptor; PUNCH_HOLE with KEEP_SIZE frees
        // blocks of the range and leaves the length.
        let r = unsafe {
            libc::fallocate(
                f.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                0,
                len,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(upto)
    }
    #[cfg(target_os = "macos")]
    {
        use std::os::unix::io::AsRawFd;
        let fd = f.as_raw_fd();
        // SAFETY: `statfs` is plain data, filled in by fstatfs.
        let mut fs_info: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: a valid open descriptor and a buffer of the right type.
        if unsafe { libc::fstatfs(fd, &mut fs_info) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let len = whole_blocks(upto, u64::from(fs_info.f_bsize));
        if len == 0 {
            return Ok(0);
        }
        let hole = libc::fpunchhole_t {
            fp_flags: 0,
            reserved: 0,
            fp_offset: 0,
            fp_length: libc::off_t::try_from(len).map_err(io::Error::other)?,
        };
        // SAFETY: a valid descriptor open to write; F_PUNCHHOLE reads the
        // range from `hole` and frees its blocks, leaving the length.
        if unsafe { libc::fcntl(fd, libc::F_PUNCHHOLE, &hole) } == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(len)
    }
    #[cfg(windows)]
    {
        use std::os::windows::io::AsRawHandle;
        use windows_sys::Win32::System::Ioctl::{
            FILE_ZERO_DATA_INFORMATION, FSCTL_SET_SPARSE, FSCTL_SET_ZERO_DATA,
        };
        use windows_sys::Win32::System::IO::DeviceIoControl;
        let handle = f.as_raw_handle();
        let mut returned = 0u32;
        // SAFETY: a valid handle open to write, used synchronously; no
        // input buffer means "make it sparse"; no output buffer.
        let sparse = unsafe {
            DeviceIoControl(
                handle,
                FSCTL_SET_SPARSE,
                std::ptr::null(),
                0,
                std::ptr::null_mut(),
                0,
                &mut returned,
                std::ptr::null_mut(),
            )
        };
        // Not sparse (FAT): zeroing would write zeros and free nothing.
        if sparse == 0 {
            return Err(io::Error::last_os_error());
        }
        let range = FILE_ZERO_DATA_INFORMATION {
            FileOffset: 0,
            BeyondFinalZero: i64::try_from(upto).map_err(io::Error::other)?,
        };
        // SAFETY: as above; the input is one FILE_ZERO_DATA_INFORMATION
        // of its size. On a sparse file the range's clusters are freed.
        let zeroed = unsafe {
            DeviceIoControl(
                handle,
                FSCTL_SET_ZERO_DATA,
                std::ptr::from_ref(&range).cast(),
                std::mem::size_of::<FILE_ZERO_DATA_INFORMATION>() as u32,
                std::ptr::null_mut(),
                0,
                &mut returned,
                std::ptr::null_mut(),
            )
        };
        if zeroed == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(upto)
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
    {
        let _ = f;
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// The part of `[0, upto)` made of whole blocks of `block` bytes (what
/// APFS punches; 0 for a block size the file system did not report).
#[cfg(any(target_os = "macos", test))]
fn whole_blocks(upto: u64, block: u64) -> u64 {
    match block {
        0 => 0,
        b => upto - upto % b,
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::sample;
    use super::super::*;
    use super::*;

    const T0: u64 = 1_700_000_000_000;

    /// Append `n` slots to the store ledger, cycling through every fate
    /// (as `n` hooks leave them, without `n` enqueues).
    fn slots(s: &Spool, n: u64) {
        let fates = [SLOT_COUNTED, SLOT_COUNTED, SLOT_INTERRUPTED, SLOT_FULL];
        let bytes: Vec<u8> = (0..n).map(|i| fates[i as usize % fates.len()]).collect();
        let mut f = fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(s.ledger_path("store", LEDGER_ENQUEUED))
            .unwrap();
        f.write_all(&bytes).unwrap();
    }

    fn books(s: &Spool) -> (u64, Vec<(&'static str, u64)>) {
        (s.ledger("store", LEDGER_ENQUEUED), s.ledger_drops("store"))
    }

    /// The bytes of blocks the ledger holds on disk.
    #[cfg(unix)]
    fn on_disk(s: &Spool) -> u64 {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(s.ledger_path("store", LEDGER_ENQUEUED))
            .unwrap()
            .blocks()
            * 512
    }

    /// The bytes of clusters the ledger holds on disk (`AllocationSize`;
    /// Wine reports the Unix file's `st_blocks` times 512 there).
    #[cfg(windows)]
    fn on_disk(s: &Spool) -> u64 {
        use std::os::windows::io::AsRawHandle;
        use windows_sys::Win32::Storage::FileSystem::{
            FileStandardInfo, GetFileInformationByHandleEx, FILE_STANDARD_INFO,
        };
        let f = fs::File::open(s.ledger_path("store", LEDGER_ENQUEUED)).unwrap();
        let mut info = FILE_STANDARD_INFO::default();
        // SAFETY: a valid handle and a buffer of the class's type and size.
        let ok = unsafe {
            GetFileInformationByHandleEx(
                f.as_raw_handle(),
                FileStandardInfo,
                std::ptr::from_mut(&mut info).cast(),
                std::mem::size_of::<FILE_STANDARD_INFO>() as u32,
            )
        };
        assert_ne!(ok, 0, "{}", io::Error::last_os_error());
        u64::try_from(info.AllocationSize).unwrap()
    }

    /// Whether the test's file system must free a folded ledger's bytes.
    /// Linux (tmpfs, ext4) and macOS (APFS) temp dirs punch holes; on
    /// Windows the volume says whether it has sparse files (NTFS and ReFS
    /// do; FAT does not, nor does the volume Wine emulates).
    fn must_punch(s: &Spool) -> bool {
        #[cfg(windows)]
        {
            use std::os::windows::io::AsRawHandle;
            use windows_sys::Win32::Storage::FileSystem::GetVolumeInformationByHandleW;
            // winnt.h's FILE_SUPPORTS_SPARSE_FILES (windows-sys has it
            // under a feature memhook needs nothing else from).
            const FILE_SUPPORTS_SPARSE_FILES: u32 = 0x40;
            let f = fs::File::open(s.ledger_path("store", LEDGER_ENQUEUED)).unwrap();
            let mut flags = 0u32;
            // SAFETY: a valid handle; every buffer not wanted is null.
            let ok = unsafe {
                GetVolumeInformationByHandleW(
                    f.as_raw_handle(),
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    &mut flags,
                    std::ptr::null_mut(),
                    0,
                )
            };
            assert_ne!(ok, 0, "{}", io::Error::last_os_error());
            flags & FILE_SUPPORTS_SPARSE_FILES != 0
        }
        #[cfg(not(windows))]
        {
            let _ = s;
            cfg!(any(target_os = "linux", target_os = "macos"))
        }
    }

    #[test]
    fn whole_blocks_rounds_the_hole_down_to_the_block() {
        assert_eq!(whole_blocks(0, 4096), 0);
        assert_eq!(whole_blocks(4095, 4096), 0);
        assert_eq!(whole_blocks(4096, 4096), 4096);
        assert_eq!(whole_blocks(3 * 4096 + 17, 4096), 3 * 4096);
        assert_eq!(whole_blocks(FOLD_MIN_BYTES + 1, 16 * 1024), FOLD_MIN_BYTES);
        // A block size the file system did not report: nothing punched.
        assert_eq!(whole_blocks(FOLD_MIN_BYTES, 0), 0);
        // Never past the folded range: the slots after it are live.
        for upto in [1, 511, 512, 513, 65_535, 65_536, 1 << 40] {
            for block in [512, 4096, 65_536] {
                let len = whole_blocks(upto, block);
                assert!(len <= upto && upto - len < block && len.is_multiple_of(block));
            }
        }
    }

    /// On every platform: a fold frees the folded bytes where the file
    /// system can (they then read as zeros and their blocks are gone),
    /// leaves them where it cannot, and the books are the same either
    /// way. Under Wine (8.0) the volume has no sparse files and
    /// `FSCTL_SET_ZERO_DATA` fails (`ERROR_NOT_SUPPORTED`), so there only
    /// the second half runs: the failed punch is no error to the fold,
    /// and nothing is lost.
    #[test]
    fn a_fold_frees_the_folded_bytes_where_it_can_and_the_books_stay() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        let n = 4 * FOLD_MIN_BYTES;
        slots(&s, n);
        let path = s.ledger_path("store", LEDGER_ENQUEUED);
        let written = fs::read(&path).unwrap();
        let before = (books(&s), on_disk(&s));
        assert!(before.1 >= n, "{} bytes on disk", before.1);
        s.fold("store", T0).unwrap();
        let folded = s.fold("store", T0 + FOLD_SETTLE_MS).unwrap();
        assert_eq!(folded.slots, n);
        assert_eq!(books(&s), before.0, "folded, punched or not");
        let now = fs::read(&path).unwrap();
        assert_eq!(now.len() as u64, n, "the length hooks compare stays");
        let after = on_disk(&s);
        if must_punch(&s) {
            // n is a multiple of any block size: all of it goes.
            assert_eq!(folded.freed, n);
            assert!(
                now.iter().all(|&b| b == 0),
                "the folded bytes read as zeros"
            );
            assert!(after + n / 2 <= before.1, "{} -> {after} on disk", before.1);
            #[cfg(windows)]
            {
                use std::os::windows::fs::MetadataExt;
                const FILE_ATTRIBUTE_SPARSE_FILE: u32 = 0x200;
                let attrs = fs::metadata(&path).unwrap().file_attributes();
                assert_ne!(attrs & FILE_ATTRIBUTE_SPARSE_FILE, 0, "{attrs:#x}");
            }
        } else {
            assert_eq!(folded.freed, 0);
            assert_eq!(now, written, "nothing was zeroed");
            assert!(after >= n, "{after} on disk");
            // The file system said no, and the fold said nothing of it.
            let err = punch(&open_rw(&path).unwrap(), n).unwrap_err();
            eprintln!("this file system cannot free a ledger's bytes: {err}");
        }
        // A hook's next slot counts after the folded ones, as before.
        s.enqueue(&sample(&"a".repeat(32))).unwrap();
        assert_eq!(books(&s).0, n + 1);
        assert_eq!(
            books(&s).1,
            vec![(DROP_ENQUEUE_INTERRUPTED, n / 4), (DROP_SPOOL_FULL, n / 4)]
        );
    }

    #[test]
    fn settled_slots_fold_into_the_base_and_the_books_stay() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        let n = 4 * FOLD_MIN_BYTES;
        slots(&s, n);
        let before = books(&s);
        assert_eq!(before.0, n);
        // First run: a candidate only.
        assert_eq!(
            s.fold("store", T0).unwrap(),
            Folded {
                noted: true,
                ..Folded::default()
            }
        );
        // Not settled one millisecond before its time.
        assert_eq!(
            s.fold("store", T0 + FOLD_SETTLE_MS - 1).unwrap(),
            Folded::default()
        );
        slots(&s, 3);
        let folded = s.fold("store", T0 + FOLD_SETTLE_MS).unwrap();
        assert_eq!(folded.slots, n, "the 3 after the candidate wait");
        let base = s.read_base("store").unwrap();
        assert_eq!(base.offset, n);
        assert_eq!(books(&s).0, n + 3);
        #[cfg(target_os = "linux")]
        {
            // tmpfs and ext4 punch holes; a file system that cannot keeps
            // its bytes, which are never read again.
            let bytes = on_disk(&s);
            if bytes < n {
                // What is left: the slots since the candidate and the
                // reserve ahead, not a byte per event since the start.
                assert!(bytes <= FOLD_MIN_BYTES + LEDGER_RESERVE, "{bytes}");
                // A hook's next append keeps its reserve from the end and
                // leaves the freed blocks free.
                s.enqueue(&sample(&"a".repeat(32))).unwrap();
                let after = on_disk(&s);
                assert!(after <= FOLD_MIN_BYTES + 2 * LEDGER_RESERVE, "{after}");
            } else {
                eprintln!("no hole punching here: only the base is checked");
                s.enqueue(&sample(&"a".repeat(32))).unwrap();
            }
        }
        #[cfg(not(target_os = "linux"))]
        s.enqueue(&sample(&"a".repeat(32))).unwrap();
        assert_eq!(books(&s).0, n + 4);
        assert_eq!(
            books(&s).1,
            vec![
                (DROP_ENQUEUE_INTERRUPTED, n / 4 + 1),
                (DROP_SPOOL_FULL, n / 4)
            ]
        );
    }

    /// A year of events in steady use: folded every settle period, the
    /// ledger holds on disk a bounded tail, whatever the count.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_ledger_stays_bounded_on_disk_as_events_go_on() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        let mut now = T0;
        let per_period = FOLD_MIN_BYTES + 1;
        for _ in 0..16 {
            slots(&s, per_period);
            s.fold("store", now).unwrap();
            now += FOLD_SETTLE_MS;
        }
        assert_eq!(books(&s).0, 16 * per_period);
        let bytes = on_disk(&s);
        if s.read_base("store").unwrap().offset > 0 && bytes < 16 * per_period {
            assert!(bytes <= 3 * FOLD_MIN_BYTES, "{bytes}");
        } else {
            panic!("nothing folded or freed: {bytes} bytes on disk");
        }
    }

    #[test]
    fn fewer_settled_slots_than_the_minimum_wait() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        slots(&s, FOLD_MIN_BYTES - 1);
        s.fold("store", T0).unwrap();
        slots(&s, 1);
        // One short at the candidate: a newer candidate is noted instead.
        let f = s.fold("store", T0 + FOLD_SETTLE_MS).unwrap();
        assert_eq!(
            f,
            Folded {
                noted: true,
                ..Folded::default()
            }
        );
        assert_eq!(s.read_base("store").unwrap().offset, 0);
        // At the minimum: folded.
        let f = s.fold("store", T0 + 2 * FOLD_SETTLE_MS).unwrap();
        assert_eq!(f.slots, FOLD_MIN_BYTES);
        assert_eq!(books(&s).0, FOLD_MIN_BYTES);
    }

    #[test]
    fn a_live_hooks_slot_holds_the_fold_back() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        slots(&s, FOLD_MIN_BYTES + 10);
        // A hook still writing (its temp file, hidden or not, names its
        // slot): nothing from its slot on is folded.
        let live = FOLD_MIN_BYTES + 5;
        fs::write(
            s.dir().join("tmp").join(format!(
                ".1700000000000-0000000001-00000001-abcd.store.{live}"
            )),
            b"",
        )
        .unwrap();
        s.fold("store", T0).unwrap();
        let f = s.fold("store", T0 + FOLD_SETTLE_MS).unwrap();
        assert_eq!(f.slots, live);
        assert_eq!(s.read_base("store").unwrap().offset, live);
        // Another sink's temp file holds nothing back.
        let low = s.lowest_live_slot("http-0");
        assert_eq!(low, u64::MAX);
    }

    /// A drainer killed after writing the base and before punching (or
    /// with a torn temp base): the books are the same.
    #[test]
    fn death_between_the_base_and_the_punch_keeps_the_books() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        slots(&s, 100);
        let before = books(&s);
        let f = open_rw(&s.ledger_path("store", LEDGER_ENQUEUED)).unwrap();
        let mut base = s.read_base("store").unwrap();
        base.add(&tally_range(&f, 0, 60).unwrap());
        base.offset = 60;
        s.write_base("store", &base).unwrap();
        assert_eq!(books(&s), before, "base written, bytes still there");
        // Punched where the file system can (the books do not depend on it).
        let _ = punch(&f, 60);
        assert_eq!(books(&s), before, "and punched");
        fs::write(
            s.counters_dir().join(".store.enqueued.base.1.tmp"),
            b"{\"v\":1,\"off",
        )
        .unwrap();
        assert_eq!(books(&s), before, "a torn temp base is not read");
        // The drainer's sweep removes it once old.
        assert_eq!(crate::drain::counters::sweep_counter_tmp(t.path(), 0), 1);
    }

    #[test]
    fn a_base_memhook_did_not_write_is_an_error_naming_it_and_nothing_folds() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        slots(&s, 2 * FOLD_MIN_BYTES);
        fs::write(
            s.base_path("store"),
            b"{\"v\":9,\"offset\":0,\"counted\":0,\"interrupted\":0,\"full\":0,\"write_failed\":0}",
        )
        .unwrap();
        let err = s.fold("store", T0).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("store.enqueued.base") && msg.contains("version 9"),
            "{msg}"
        );
        assert!(matches!(err, FoldError::BadBase { .. }));
        fs::write(s.base_path("store"), b"not json").unwrap();
        assert!(matches!(
            s.fold("store", T0 + FOLD_SETTLE_MS),
            Err(FoldError::BadBase { .. })
        ));
        fs::remove_file(s.base_path("store")).unwrap();
        assert_eq!(books(&s).0, 2 * FOLD_MIN_BYTES, "nothing was punched");
    }
}
