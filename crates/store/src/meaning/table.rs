//! The word vector table compiled into the store (`data/word-vectors.bin`,
//! written by `scripts/make-word-vectors.py`, whose docstring gives the
//! format): words sorted bytewise, each with its frequency rank and a
//! vector of one signed byte per dimension times its own scale. Looked up
//! in place by binary search: nothing is parsed or allocated per word, and
//! opening it checks only the header and the section sizes.

use std::fmt;
use std::sync::OnceLock;

/// The table's bytes, in the binary (`memhook-cli` only: the per-event
/// `memhook` does not link this crate).
static TABLE_BYTES: &[u8] = include_bytes!("../../data/word-vectors.bin");
/// Where the table comes from, for errors.
pub const TABLE_FILE: &str = "crates/store/data/word-vectors.bin";
/// The first bytes of the table.
const MAGIC: &[u8; 4] = b"MHWV";
/// The format this code reads.
pub const TABLE_VERSION: u16 = 1;
/// Dimensions of a word vector.
pub const DIMS: usize = 100;
/// Bytes of the header: magic, version, dims, count, text bytes.
const HEADER: usize = 16;

/// A table that cannot be read (a build that shipped a bad file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableError {
    pub problem: String,
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{TABLE_FILE} (compiled in): {}; regenerate it with scripts/make-word-vectors.py",
            self.problem
        )
    }
}

impl std::error::Error for TableError {}

/// The word vectors, read in place.
#[derive(Debug)]
pub struct Table {
    count: usize,
    offsets: &'static [u8],
    ranks: &'static [u8],
    scales: &'static [u8],
    vectors: &'static [u8],
    text: &'static [u8],
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i * 4..i * 4 + 4].try_into().expect("4 bytes"))
}

impl Table {
    /// The compiled-in table (checked once).
    pub fn get() -> Result<&'static Table, &'static TableError> {
        static TABLE: OnceLock<Result<Table, TableError>> = OnceLock::new();
        TABLE.get_or_init(|| Table::parse(TABLE_BYTES)).as_ref()
    }

    /// Check the header and section sizes of `b`.
    pub fn parse(b: &'static [u8]) -> Result<Table, TableError> {
        let bad = |problem: String| TableError { problem };
        if b.len() < HEADER || &b[..4] != MAGIC {
            return Err(bad("not a word vector table (no MHWV header)".into()));
        }
        let version = u16::from_le_bytes([b[4], b[5]]);
        if version != TABLE_VERSION {
            return Err(bad(format!(
                "format version {version}, this build reads {TABLE_VERSION}"
            )));
        }
        let dims = u16::from_le_bytes([b[6], b[7]]) as usize;
        if dims != DIMS {
            return Err(bad(format!("{dims} dimensions, expected {DIMS}")));
        }
        let count = u32_at(b, 2) as usize;
        let text_len = u32_at(b, 3) as usize;
        let sizes = [
            4 * (count + 1),
            4 * count,
            4 * count,
            DIMS * count,
            text_len,
        ];
        if HEADER + sizes.iter().sum::<usize>() != b.len() || count == 0 {
            return Err(bad(format!(
                "{} bytes do not hold {count} words of {text_len} text bytes",
                b.len()
            )));
        }
        let mut at = HEADER;
        let mut take = |n: usize| {
            let s = &b[at..at + n];
            at += n;
            s
        };
        let t = Table {
            count,
            offsets: take(sizes[0]),
            ranks: take(sizes[1]),
            scales: take(sizes[2]),
            vectors: take(sizes[3]),
            text: take(sizes[4]),
        };
        // Offsets must rise within the text, or a lookup could slice past it.
        let mut prev = 0;
        for i in 0..=count {
            let o = u32_at(t.offsets, i) as usize;
            if o < prev || o > text_len || (i == 0 && o != 0) {
                return Err(bad(format!("word offset {i} is out of order")));
            }
            prev = o;
        }
        Ok(t)
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the table has no words (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn word(&self, i: usize) -> &'static [u8] {
        let (a, b) = (u32_at(self.offsets, i), u32_at(self.offsets, i + 1));
        &self.text[a as usize..b as usize]
    }

    /// The frequency rank (0: most frequent), the scale and the quantised
    /// vector (each byte an `i8`) of `word` (lowercase), if the table has it.
    pub fn lookup(&self, word: &str) -> Option<(u32, f32, &'static [u8])> {
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.word(mid).cmp(word.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let scale = f32::from_le_bytes(
                        self.scales[mid * 4..mid * 4 + 4]
                            .try_into()
                            .expect("4 bytes"),
                    );
                    let v = &self.vectors[mid * DIMS..(mid + 1) * DIMS];
                    return Some((u32_at(self.ranks, mid), scale, v));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compiled_table_reads_and_finds_frequent_words() {
        let t = Table::get().unwrap();
        assert!(t.len() >= 20_000, "{}", t.len());
        let (rank, scale, v) = t.lookup("the").unwrap();
        assert_eq!(rank, 0);
        assert!(scale > 0.0);
        assert_eq!(v.len(), DIMS);
        assert!(t.lookup("download").is_some());
        assert!(t.lookup("zzzznotaword").is_none());
        assert!(t.lookup("").is_none());
    }

    #[test]
    fn a_bad_table_is_an_error_that_names_the_fix() {
        let e = Table::parse(b"nope").unwrap_err();
        assert!(e.to_string().contains("make-word-vectors.py"), "{e}");
        let mut b = TABLE_BYTES[..HEADER].to_vec();
        b[4] = 9;
        let b: &'static [u8] = Box::leak(b.into_boxed_slice());
        assert!(Table::parse(b)
            .unwrap_err()
            .problem
            .contains("format version 9"));
        let short: &'static [u8] = &TABLE_BYTES[..TABLE_BYTES.len() - 1];
        assert!(Table::parse(short).is_err());
    }
}
