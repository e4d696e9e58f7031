//! A fingerprint set: the keyed hashes of the identifying lines of a
//! project's excluded files, and of pieces of their long lines. Sorted
//! arrays of `u64`, searched by bisection; written to one owner-only file.
//! No line, path or pattern is in it.

use super::lines::{self, KGRAM_BYTES, LONG_LINE_BYTES, WINNOW};
use super::sip::SipKey;

/// The first bytes of a set file (format 1).
pub const MAGIC: &[u8; 8] = b"MHFPSET1";
/// Most fingerprints one set holds (lines and pieces): 64 MiB of set.
pub const MAX_FINGERPRINTS: usize = 8 * 1024 * 1024;

/// A built set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FpSet {
    /// What the set was built from: a keyed digest of the excluded files'
    /// names, sizes and modification times, and of the policy.
    pub digest: [u8; 16],
    /// Every excluded file was fingerprinted. An incomplete set (a budget
    /// ran out) withholds every kept text of its project.
    pub complete: bool,
    lines: Vec<u64>,
    kgrams: Vec<u64>,
}

/// Why a set file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Builds a set from files' text.
pub struct Builder<'k> {
    key: &'k SipKey,
    lines: Vec<u64>,
    kgrams: Vec<u64>,
    buf: Vec<u8>,
    /// Fingerprints of lines (and pieces) of files the project keeps: they
    /// identify nothing excluded and are taken out of the set.
    common_lines: std::collections::HashSet<u64>,
    common_kgrams: std::collections::HashSet<u64>,
}

impl<'k> Builder<'k> {
    pub fn new(key: &'k SipKey) -> Builder<'k> {
        Builder {
            key,
            lines: Vec::new(),
            kgrams: Vec::new(),
            buf: Vec::new(),
            common_lines: Default::default(),
            common_kgrams: Default::default(),
        }
    }

    /// Fingerprints held so far.
    pub fn len(&self) -> usize {
        self.lines.len() + self.kgrams.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Add the text of an excluded file.
    pub fn add_excluded(&mut self, text: &[u8]) {
        let key = self.key;
        let mut buf = std::mem::take(&mut self.buf);
        for line in text.split(|b| *b == b'\n') {
            each_fingerprint(key, line, &mut buf, |kind, fp| match kind {
                Kind::Line => self.lines.push(fp),
                Kind::Piece => self.kgrams.push(fp),
            });
        }
        self.buf = buf;
    }

    /// Add the text of a file the project keeps: its lines are common.
    pub fn add_kept(&mut self, text: &[u8]) {
        let key = self.key;
        let mut buf = std::mem::take(&mut self.buf);
        for line in text.split(|b| *b == b'\n') {
            each_fingerprint(key, line, &mut buf, |kind, fp| match kind {
                Kind::Line => {
                    self.common_lines.insert(fp);
                }
                Kind::Piece => {
                    self.common_kgrams.insert(fp);
                }
            });
        }
        self.buf = buf;
    }

    pub fn finish(self, digest: [u8; 16], complete: bool) -> FpSet {
        let mut lines = self.lines;
        let mut kgrams = self.kgrams;
        lines.retain(|f| !self.common_lines.contains(f));
        kgrams.retain(|f| !self.common_kgrams.contains(f));
        lines.sort_unstable();
        lines.dedup();
        kgrams.sort_unstable();
        kgrams.dedup();
        FpSet {
            digest,
            complete,
            lines,
            kgrams,
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Line,
    Piece,
}

/// Every fingerprint one line of a file leaves: its core, and for a long
/// core the winnowed pieces.
fn each_fingerprint(key: &SipKey, line: &[u8], buf: &mut Vec<u8>, mut put: impl FnMut(Kind, u64)) {
    lines::squeeze(line, buf);
    let core = lines::core(buf);
    if !lines::identifying(core) {
        return;
    }
    put(Kind::Line, key.hash(core));
    if core.len() >= LONG_LINE_BYTES {
        let hashes: Vec<u64> = core.windows(KGRAM_BYTES).map(|w| key.hash(w)).collect();
        let mut last: Option<usize> = None;
        for start in 0..hashes.len().saturating_sub(WINNOW - 1).max(1) {
            let end = (start + WINNOW).min(hashes.len());
            // Rightmost minimum of the window.
            let mut m = start;
            for i in start..end {
                if hashes[i] <= hashes[m] {
                    m = i;
                }
            }
            if last != Some(m) {
                put(Kind::Piece, hashes[m]);
                last = Some(m);
            }
        }
    }
}

impl FpSet {
    /// Whether the set holds no fingerprint.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty() && self.kgrams.is_empty()
    }

    /// Fingerprints held (lines and pieces).
    pub fn len(&self) -> usize {
        self.lines.len() + self.kgrams.len()
    }

    pub fn has_line(&self, fp: u64) -> bool {
        self.lines.binary_search(&fp).is_ok()
    }

    pub fn has_piece(&self, fp: u64) -> bool {
        self.kgrams.binary_search(&fp).is_ok()
    }

    pub fn has_pieces(&self) -> bool {
        !self.kgrams.is_empty()
    }

    /// The file form: magic, digest, complete flag, two counts, two arrays
    /// (little-endian).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + 16 + 1 + 16 + 8 * self.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.digest);
        out.push(u8::from(self.complete));
        out.extend_from_slice(&(self.lines.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.kgrams.len() as u64).to_le_bytes());
        for f in self.lines.iter().chain(&self.kgrams) {
            out.extend_from_slice(&f.to_le_bytes());
        }
        out
    }

    /// Read the file form back, checking every length and the order.
    pub fn decode(b: &[u8]) -> Result<FpSet, Malformed> {
        const HEAD: usize = 8 + 16 + 1 + 16;
        if b.len() < HEAD || &b[..8] != MAGIC {
            return Err(Malformed("not a fingerprint set of this memhook"));
        }
        let mut digest = [0u8; 16];
        digest.copy_from_slice(&b[8..24]);
        let complete = match b[24] {
            0 => false,
            1 => true,
            _ => return Err(Malformed("bad complete flag")),
        };
        let n = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[at..at + 8]);
            u64::from_le_bytes(w)
        };
        let (nl, nk) = (n(25), n(33));
        let total = nl.checked_add(nk).ok_or(Malformed("bad counts"))?;
        if total > MAX_FINGERPRINTS as u64 || b.len() as u64 != HEAD as u64 + 8 * total {
            return Err(Malformed("length does not match its counts"));
        }
        let all: Vec<u64> = b[HEAD..]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect();
        let (lines, kgrams) = all.split_at(nl as usize);
        let sorted = |v: &[u64]| v.windows(2).all(|w| w[0] < w[1]);
        if !sorted(lines) || !sorted(kgrams) {
            return Err(Malformed("fingerprints out of order"));
        }
        Ok(FpSet {
            digest,
            complete,
            lines: lines.to_vec(),
            kgrams: kgrams.to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SipKey {
        SipKey::from_bytes(&[7; 16])
    }

    #[test]
    fn a_set_round_trips_through_its_file_form_and_refuses_damage() {
        let k = key();
        let mut b = Builder::new(&k);
        b.add_excluded(b"DB_PASSWORD=hunter2-horse-battery\nshort\n");
        // A long line: its pieces are fingerprints too.
        b.add_excluded(
            b"aaaaaaaaaabcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789",
        );
        let set = b.finish([3; 16], true);
        assert!(set.has_pieces());
        let bytes = set.encode();
        assert_eq!(FpSet::decode(&bytes).unwrap(), set);
        let mut cut = bytes.clone();
        cut.pop();
        assert!(FpSet::decode(&cut).is_err());
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert!(FpSet::decode(&bad).is_err());
    }

    #[test]
    fn lines_of_kept_files_are_not_fingerprints() {
        let k = key();
        let mut b = Builder::new(&k);
        b.add_excluded(
            b"Licensed under the Apache License 2.0\nDB_PASSWORD=hunter2-horse-battery\n",
        );
        b.add_kept(b"// Licensed under the Apache License 2.0\nfn main() {}\n");
        let set = b.finish([0; 16], true);
        assert_eq!(set.len(), 1, "only the password line is left");
        assert!(set.has_line(k.hash(b"DB_PASSWORD=hunter2-horse-battery")));
    }
}
