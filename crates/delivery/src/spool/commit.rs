//! The group commit: hooks flush nothing ([`Spool::enqueue`]), so a drainer
//! makes what they enqueued durable, once per pass, before it delivers or
//! deletes any of it.
//!
//! One commit flushes, in this order: each entry of the drainer's listing
//! that is new since the last commit (`fdatasync`), then the spool
//! directory (their names), then every `enqueued` ledger (their counts).
//! The order keeps the hook's: an entry's data before its name, its name
//! before its count.
//!
//! Why this form, the cheapest correct one found (figures: docs/
//! benchmarks.md, "Group commit", `scripts/bench-group-commit.py`):
//! - `syncfs` is a single call, but it writes out every dirty page of the
//!   file system, other programs' too, and waits for them: its cost is
//!   theirs (0.6 ms on an idle disk, 36-40 ms with 64 MiB of another file
//!   dirty), unbounded while something else writes.
//! - One `fsync` of the directory (and the ledger) alone does not put the
//!   entries' data on disk on every file system (ext4 without a journal,
//!   or with `data=writeback`, XFS), so it is not enough.
//! - So one `fdatasync` per new entry. On Linux every new entry's data is
//!   handed to the disk first (`sync_file_range`, which only starts the
//!   writes), so the writes go out together and each `fdatasync` after
//!   them mostly finds its data written (on a journaled file system one
//!   journal commit also serves several): 64 new entries took 10-11 ms
//!   instead of 17 ms.
//! - Only new entries: flushing a file with nothing dirty still costs the
//!   disk a cache flush (0.08 ms each), so re-flushing a backlog of 10,000
//!   entries at every drainer start would cost most of a second.
//!
//! New means renamed into the spool after the last commit's watermark:
//! the wall-clock time read before that commit's listing, less
//! [`COMMIT_SLACK_MS`]. A rename sets the entry's `ctime`, and takes the
//! directory's lock while it does; a listing takes it too, so an entry it
//! did not see was renamed after the listing began, with a `ctime` no
//! earlier than that, less the kernel clock's granularity (a tick), which
//! the slack covers. Every entry with a `ctime` at or before the watermark
//! was therefore flushed by that commit. The drainer keeps the watermark
//! in the spool's mark (`pending.rs`); a missing one, or one ahead of the
//! clock (a clock set back), means flushing every entry listed. What this
//! cannot see: an entry renamed in while the clock was set back behind the
//! watermark, when no commit runs before the clock passes the watermark
//! again (a drainer normally commits within a second); the kernel then
//! writes it back on its own, as it would have without a drainer.
//!
//! Windows has no `ctime` in std's metadata; its equivalent is NTFS's
//! change time (`FILE_BASIC_INFO.ChangeTime`, the "MFT entry changed"
//! time), which a rename sets too, read through a handle opened for
//! attributes only. The last-write time would not do: a hook writes its
//! entry before renaming it in, so an entry renamed in after a listing
//! began can carry a write time before the watermark and be missed. An
//! entry whose change time cannot be read, or is not kept (FAT, exFAT),
//! counts as new (flushed again).

use std::fs;
use std::io;
use std::path::PathBuf;

use super::{sync_dir, sync_file, Spool, LEDGER_ENQUEUED};
use memhook_core::data_dir;

/// How far a commit's watermark stays behind the time read before its
/// listing: far more than the kernel clock's tick (1-10 ms), so an entry
/// renamed in as the listing began is flushed again rather than missed.
pub const COMMIT_SLACK_MS: u64 = 100;
/// Entries open at once while they are flushed (a backlog after a crash
/// can hold 10,000: more descriptors than a process may have).
const COMMIT_CHUNK: usize = 256;

impl Spool {
    /// The group commit of `files`, a listing of the spool taken after the
    /// wall-clock time `listed_at` (Unix ms): flush the entries renamed in
    /// after `durable_before` (the watermark of an earlier commit; `None`:
    /// every entry), then the spool directory and every `enqueued` ledger
    /// (see the module's comment). Nothing new, nothing flushed. Returns
    /// this commit's watermark, or the first error; the caller delivers
    /// anyway (a delivered record is safe wherever the disk fails).
    pub fn commit(
        &self,
        files: &[PathBuf],
        listed_at: u64,
        durable_before: Option<u64>,
    ) -> io::Result<u64> {
        let known = durable_before.filter(|&w| w <= listed_at);
        let new: Vec<&PathBuf> = files
            .iter()
            .filter(|p| match fs::symlink_metadata(p) {
                // A symlink or anything but a file is no entry of ours.
                Ok(m) if m.is_file() => known.is_none_or(|w| changed_ms(p, &m) > w),
                _ => false,
            })
            .collect();
        let mut failed: Option<io::Error> = None;
        let mut note = |r: io::Result<()>| {
            if let Err(e) = r {
                failed.get_or_insert(e);
            }
        };
        for chunk in new.chunks(COMMIT_CHUNK) {
            let mut opened = Vec::with_capacity(chunk.len());
            for &p in chunk {
                match data_dir::open_nofollow_to_flush(p) {
                    Ok(f) => opened.push((f, p)),
                    // Delivered meanwhile (a sleeping drainer commits
                    // without the drain lock).
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => note(Err(e)),
                }
            }
            for (f, _) in &opened {
                start_writeback(f);
            }
            for (f, p) in &opened {
                note(sync_file(f, p));
            }
        }
        if !new.is_empty() {
            note(sync_dir(&self.dir));
            for id in self.ledger_sinks() {
                let path = self.ledger_path(&id, LEDGER_ENQUEUED);
                note(data_dir::open_nofollow_to_flush(&path).and_then(|f| {
                    if !f.metadata()?.is_file() {
                        return Ok(());
                    }
                    sync_file(&f, &path)
                }));
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(listed_at.saturating_sub(COMMIT_SLACK_MS)),
        }
    }
}

/// When the file's inode last changed (a rename sets it), Unix ms.
#[cfg(unix)]
fn changed_ms(_path: &std::path::Path, m: &fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    (m.ctime().max(0) as u64) * 1000 + m.ctime_nsec().max(0) as u64 / 1_000_000
}

/// When the file last changed (NTFS's change time, which a rename sets),
/// Unix ms; unreadable: `u64::MAX` (new, flushed again).
#[cfg(windows)]
fn changed_ms(path: &std::path::Path, _m: &fs::Metadata) -> u64 {
    win::change_time_ms(path).unwrap_or(u64::MAX)
}

/// Neither: every entry is new.
#[cfg(not(any(unix, windows)))]
fn changed_ms(_path: &std::path::Path, _m: &fs::Metadata) -> u64 {
    u64::MAX
}

#[cfg(windows)]
mod win {
    use std::ffi::c_void;
    use std::fs;
    use std::io;
    use std::os::windows::fs::OpenOptionsExt;
    use std::os::windows::io::AsRawHandle;
    use std::path::Path;

    /// `FILE_BASIC_INFO` (winbase.h): times in 100 ns since 1601-01-01 UTC.
    #[repr(C)]
    #[derive(Default)]
    struct FileBasicInfo {
        creation_time: i64,
        last_access_time: i64,
        last_write_time: i64,
        change_time: i64,
        file_attributes: u32,
    }
    /// `FileBasicInfo` of `FILE_INFO_BY_HANDLE_CLASS`.
    const FILE_BASIC_INFO_CLASS: i32 = 0;
    /// `FILE_READ_ATTRIBUTES` (winnt.h): enough to read the times.
    const FILE_READ_ATTRIBUTES: u32 = 0x80;
    /// `FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE`: never in
    /// the way of a hook renaming or a drainer deleting the entry.
    const SHARE_ALL: u32 = 0x7;
    /// 1601-01-01 to 1970-01-01 in 100 ns.
    const UNIX_EPOCH_100NS: i64 = 116_444_736_000_000_000;

    #[link(name = "kernel32")]
    extern "system" {
        fn GetFileInformationByHandleEx(
            file: *mut c_void,
            class: i32,
            info: *mut c_void,
            size: u32,
        ) -> i32;
    }

    /// The change time of `path` (the entry itself, never a reparse
    /// point's target), Unix ms.
    pub fn change_time_ms(path: &Path) -> io::Result<u64> {
        let f = fs::OpenOptions::new()
            .access_mode(FILE_READ_ATTRIBUTES)
            .share_mode(SHARE_ALL)
            .custom_flags(memhook_core::data_dir::FILE_FLAG_OPEN_REPARSE_POINT)
            .open(path)?;
        let mut info = FileBasicInfo::default();
        // SAFETY: a valid handle for the call's duration, and a buffer of
        // the size given, of the layout the class fills.
        let ok = unsafe {
            GetFileInformationByHandleEx(
                f.as_raw_handle().cast(),
                FILE_BASIC_INFO_CLASS,
                (&mut info as *mut FileBasicInfo).cast(),
                std::mem::size_of::<FileBasicInfo>() as u32,
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        // FAT and exFAT keep no change time (0): unknown, so flushed again.
        if info.change_time <= 0 {
            return Err(io::Error::other(format!(
                "{}: the file system keeps no change time",
                path.display()
            )));
        }
        let since_epoch = info.change_time.saturating_sub(UNIX_EPOCH_100NS).max(0);
        Ok(since_epoch as u64 / 10_000)
    }
}

/// Start writing `f`'s dirty pages to the disk without waiting (Linux
/// `sync_file_range`); elsewhere nothing (the `fdatasync` does it all).
fn start_writeback(f: &fs::File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: a valid open descriptor, no pointers.
        unsafe { libc::sync_file_range(f.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = f;
}

#[cfg(test)]
mod tests {
    use super::super::probe;
    use super::super::tests::sample;
    use super::*;
    use memhook_core::timefmt::now_ms;
    use std::path::Path;

    /// The flushes under `dir` that `f` makes, in order.
    fn flushes<T>(dir: &Path, f: impl FnOnce() -> T) -> (T, Vec<PathBuf>) {
        let seen = probe::under(dir).len();
        let out = f();
        let syncs = probe::under(dir)
            .into_iter()
            .skip(seen)
            .filter(|(w, _)| *w == "sync")
            .map(|(_, p)| p)
            .collect();
        (out, syncs)
    }

    #[cfg(unix)]
    #[test]
    fn a_commit_flushes_new_entries_then_the_directory_then_the_ledgers() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        let a = s.enqueue(&sample(&"a".repeat(32))).unwrap();
        let b = s.enqueue(&sample(&"b".repeat(32))).unwrap();
        // Not an entry of ours: never opened, never flushed.
        let link = s.dir().join("0000000000001-l.json");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let at = now_ms();
        let files = s.list().unwrap().files;
        let (w, syncs) = flushes(t.path(), || s.commit(&files, at, None).unwrap());
        assert_eq!(w, at - COMMIT_SLACK_MS);
        let ledger = s.counters_dir().join("store.enqueued");
        assert_eq!(syncs, vec![a, b, s.dir().to_path_buf(), ledger]);
    }

    #[test]
    fn what_the_watermark_covers_is_not_flushed_again() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        let a = s.enqueue(&sample(&"a".repeat(32))).unwrap();
        let files = s.list().unwrap().files;
        let now = now_ms();
        let commit = |at: u64, known: u64| flushes(t.path(), || s.commit(&files, at, Some(known)));
        // Covered: nothing new, nothing flushed at all.
        let (w, syncs) = commit(now + 1000, now + 500);
        assert_eq!((w.unwrap(), syncs), (now + 900, vec![]));
        // Renamed in after the watermark: flushed.
        let (_, syncs) = commit(now + 1000, now - 60_000);
        assert_eq!(syncs.len(), 3);
        assert_eq!(syncs[0], a);
        // A watermark ahead of the clock (set back since) says nothing.
        let (_, syncs) = commit(now, now + 60_000);
        assert_eq!(syncs.len(), 3);
    }
}
