//! How many records are pending, without reading the spool directory.
//!
//! Every time a drain lock holder lists the spool (the end of every drain),
//! it writes the *mark*, `counters/spool.mark`: how many entries it found,
//! and how long each sink's `enqueued` ledger was just before it listed.
//! Every slot appended to a ledger since then is an attempt the listing may
//! not have seen, so a hook estimates
//!
//! ```text
//! pending ≈ mark.pending + Σ sinks (ledger length now − ledger length at the mark)
//! ```
//!
//! and learns its own sink's ledger length for free (its slot's offset).
//! The estimate errs high: an attempt that failed or was refused since the
//! mark still counts, until the next drain writes a new mark. It errs low
//! only by hooks that were between reserving their slot and renaming their
//! entry in while the drainer listed (a few at most, as any count taken
//! under concurrent writers). A crash never makes it drift: a killed hook
//! counts once, as an attempt, until the next mark; a killed drainer leaves
//! the last mark, which the next drain replaces. A missing or unreadable
//! mark (a spool from before marks, a torn write) means counting the
//! directory once and writing a mark.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use super::{count_entries, Spool, LEDGER_ENQUEUED, MAX_SPOOL_FILES};
use memhook_core::data_dir;

/// The mark's file, in `counters/`.
pub const MARK_FILE: &str = "spool.mark";
/// Largest mark read (a count and one length per sink).
const MAX_MARK_BYTES: u64 = 64 * 1024;

/// What a listing of the spool found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    /// Entries the listing found.
    pub pending: u64,
    /// Each sink's `enqueued` ledger length just before the listing.
    pub ledgers: BTreeMap<String, u64>,
    /// The watermark of the drainer's last group commit: every entry
    /// renamed into the spool before this time (Unix ms) is on disk
    /// ([`Spool::commit`]). Absent: nothing is known to be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durable_before_ms: Option<u64>,
}

impl Spool {
    /// Each sink's `enqueued` ledger length now (a regular file only).
    pub fn ledger_lengths(&self) -> BTreeMap<String, u64> {
        self.ledger_sinks()
            .into_iter()
            .filter_map(|id| {
                let m = fs::symlink_metadata(self.ledger_path(&id, LEDGER_ENQUEUED)).ok()?;
                m.is_file().then_some((id, m.len()))
            })
            .collect()
    }

    /// Write the mark of a listing that found `pending` entries, with the
    /// ledger lengths `ledgers` read before it and the watermark of the
    /// last group commit. Not synced: a mark lost to a power cut is stale
    /// or missing, which the next drain or hook repairs (a stale watermark
    /// only means flushing more again; it was written after its flush).
    pub fn write_mark(
        &self,
        ledgers: BTreeMap<String, u64>,
        pending: usize,
        durable_before_ms: Option<u64>,
    ) -> io::Result<()> {
        let mark = Mark {
            pending: pending as u64,
            ledgers,
            durable_before_ms,
        };
        let bytes = serde_json::to_vec(&mark).map_err(io::Error::other)?;
        let path = self.counters_dir().join(MARK_FILE);
        let tmp = self
            .counters_dir()
            .join(format!(".{MARK_FILE}.{}.tmp", std::process::id()));
        let mut opts = fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600).custom_flags(libc::O_NOFOLLOW);
        }
        let res = opts
            .open(&tmp)
            .and_then(|mut f| f.write_all(&bytes))
            .and_then(|_| fs::rename(&tmp, &path));
        if res.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        res
    }

    /// List the spool and write its mark (the caller holds the drain lock,
    /// so no entry leaves meanwhile). Returns the entries found.
    pub fn mark_pending(&self) -> io::Result<usize> {
        let durable = self.read_mark().and_then(|m| m.durable_before_ms);
        let ledgers = self.ledger_lengths();
        let pending = count_entries(&self.dir, usize::MAX)?;
        self.write_mark(ledgers, pending, durable)?;
        Ok(pending)
    }

    /// The mark, if there is a readable one.
    pub fn read_mark(&self) -> Option<Mark> {
        let bytes =
            data_dir::read_private_file(&self.counters_dir().join(MARK_FILE), MAX_MARK_BYTES)
                .ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Pending records as a hook about to add one sees them, at most
    /// [`MAX_SPOOL_FILES`]: `own_len` is the length of `sink_id`'s ledger
    /// before its slot was reserved. Reads the mark and, for any other
    /// sink the mark knows, its ledger's length; the spool directory only
    /// when there is no mark (then it writes one).
    pub(super) fn pending_estimate(&self, sink_id: &str, own_len: u64) -> io::Result<usize> {
        let Some(mark) = self.read_mark() else {
            let mut ledgers = self.ledger_lengths();
            ledgers.insert(sink_id.to_string(), own_len);
            let pending = count_entries(&self.dir, MAX_SPOOL_FILES)?;
            // Best effort: without it the next hook counts again.
            let _ = self.write_mark(ledgers, pending, None);
            return Ok(pending);
        };
        let mut n = mark.pending;
        n = n.saturating_add(
            own_len.saturating_sub(mark.ledgers.get(sink_id).copied().unwrap_or(0)),
        );
        for (id, at_mark) in mark.ledgers.iter().filter(|(id, _)| *id != sink_id) {
            let now =
                fs::symlink_metadata(self.ledger_path(id, LEDGER_ENQUEUED)).map_or(0, |m| m.len());
            n = n.saturating_add(now.saturating_sub(*at_mark));
        }
        Ok(n.min(MAX_SPOOL_FILES as u64) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::sample;
    use super::super::*;
    #[cfg_attr(not(unix), allow(unused_imports))]
    use super::*;

    /// `n` pending records as enqueues leave them: entry files under spool
    /// names and one counted slot each (without `n` fsyncs).
    fn fill(s: &Spool, n: usize) {
        let bytes = serde_json::to_vec(&sample(&"f".repeat(32))).unwrap();
        let mut ledger = fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(s.ledger_path("store", LEDGER_ENQUEUED))
            .unwrap();
        ledger.write_all(&vec![b'.'; n]).unwrap();
        for i in 0..n {
            fs::write(
                s.dir().join(format!("1700000000000-{i:010}-0-f.json")),
                &bytes,
            )
            .unwrap();
        }
    }

    #[test]
    fn the_cap_holds_at_its_edge_from_the_mark() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        fill(&s, MAX_SPOOL_FILES - 1);
        assert_eq!(s.mark_pending().unwrap(), MAX_SPOOL_FILES - 1);
        // The last free place is taken, the next enqueue is refused:
        // without listing the directory again.
        s.enqueue(&sample(&"a".repeat(32))).unwrap();
        let err = s.enqueue(&sample(&"b".repeat(32))).unwrap_err();
        assert!(
            matches!(err, SpoolError::Full { pending } if pending == MAX_SPOOL_FILES),
            "{err}"
        );
        assert_eq!(s.pending().unwrap().len(), MAX_SPOOL_FILES);
        assert_eq!(s.ledger_drops("store"), vec![(DROP_SPOOL_FULL, 1)]);
        // A drain (here: one entry delivered, then the new mark) makes room
        // for exactly one more.
        fs::remove_file(&s.pending().unwrap()[0]).unwrap();
        s.mark_pending().unwrap();
        s.enqueue(&sample(&"c".repeat(32))).unwrap();
        assert!(matches!(
            s.enqueue(&sample(&"d".repeat(32))),
            Err(SpoolError::Full { .. })
        ));
    }

    #[test]
    fn the_estimate_counts_what_arrived_since_the_mark_in_every_sink() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        s.mark_pending().unwrap();
        let http = SinkTarget::Http {
            url: "http://127.0.0.1:9".into(),
        };
        let mut e = sample(&"a".repeat(32));
        e.sink = http.clone();
        s.enqueue(&e).unwrap();
        s.mark_pending().unwrap();
        assert_eq!(s.read_mark().unwrap().pending, 1);
        s.enqueue(&e).unwrap();
        s.enqueue(&sample(&"b".repeat(32))).unwrap();
        // One store entry reserved already (its own), one http entry
        // since the mark, one pending at the mark.
        assert_eq!(s.pending_estimate("store", 1).unwrap(), 3);
        assert_eq!(s.pending().unwrap().len(), 3);
    }

    #[test]
    fn after_crashes_the_estimate_errs_high_until_the_next_mark() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        fill(&s, 5);
        s.mark_pending().unwrap();
        // A hook killed after reserving its slot: an attempt, no entry.
        s.append_fate("store", SLOT_INTERRUPTED).unwrap();
        // A drainer killed after delivering and deleting two entries,
        // before its mark.
        for p in &s.pending().unwrap()[..2] {
            fs::remove_file(p).unwrap();
        }
        let len = s.ledger_lengths()["store"];
        assert_eq!(s.pending_estimate("store", len).unwrap(), 6);
        assert_eq!(s.mark_pending().unwrap(), 3);
        assert_eq!(s.pending_estimate("store", len).unwrap(), 3);
    }

    #[cfg(unix)]
    #[test]
    fn without_a_readable_mark_the_directory_is_counted_once() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        fill(&s, 4);
        let mark = s.counters_dir().join(MARK_FILE);
        fs::write(&mark, b"{\"pend").unwrap();
        assert_eq!(s.pending_estimate("store", 4).unwrap(), 4);
        assert_eq!(
            s.read_mark().unwrap(),
            Mark {
                pending: 4,
                ledgers: [("store".to_string(), 4)].into(),
                durable_before_ms: None,
            }
        );
        // A mark that is a symlink is not read (and not written through).
        fs::remove_file(&mark).unwrap();
        let outside = t.path().join("outside");
        fs::write(&outside, b"{\"pending\":0,\"ledgers\":{}}").unwrap();
        std::os::unix::fs::symlink(&outside, &mark).unwrap();
        assert_eq!(s.read_mark(), None);
        assert_eq!(s.pending_estimate("store", 4).unwrap(), 4);
        assert_eq!(
            fs::read(&outside).unwrap(),
            b"{\"pending\":0,\"ledgers\":{}}"
        );
    }
}
