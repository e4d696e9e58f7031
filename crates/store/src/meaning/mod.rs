//! Search by meaning (issue 24 item 4): questions that share no word with
//! the answer ("make downloads survive flaky networks" for a retry with
//! exponential backoff). Nothing is downloaded, no key, no daemon: static
//! word vectors compiled into this crate ([`table`]; `memhook-cli` only,
//! never the per-event `memhook`).
//!
//! A text's meaning is the SIF-weighted mean of its words' vectors (rare
//! words weigh more; [`words`] splits identifiers), normalised and kept as
//! [`DIMS`] signed bytes ([`embed`]). Each record's is computed when it is
//! stored (by the drainer or `serve`, never by the hook) and kept in the
//! table `record_meaning` of either store; records stored before it are
//! filled in a bounded batch after each insert ([`FILL_BATCH`]). A search
//! compares the question's meaning with the newest [`MAX_CANDIDATES`]
//! records of its scope ([`best`]) and adds the closest ones the words did
//! not find, each marked [`BY_MEANING`]. docs/memory.md says what users see;
//! docs/benchmarks.md, "Search by meaning", what it finds and costs.

pub mod table;
pub mod words;

pub use table::{Table, TableError, DIMS};

use crate::model::{StoredRecord, EXCERPT_CHARS, HIT_END, HIT_START};

/// SIF's `a`: a word of probability `p` weighs `a / (a + p)`.
const SIF_A: f32 = 1e-3;
/// What a search row found by meaning says about why it matched.
pub const BY_MEANING: &str = "(by meaning)";
/// Records of a scope whose meaning a search compares with the question:
/// the newest this many (a bound on the work of any question).
pub const MAX_CANDIDATES: usize = 20_000;
/// Records stored before meanings were kept, filled in after each insert
/// batch, at most this many (newest first).
pub const FILL_BATCH: usize = 500;
/// Least cosine between question and record for a match by meaning:
/// below it, unrelated texts (measured on examples/search_bench.rs).
pub const MIN_COSINE: f32 = 0.55;

/// The texts a record's meaning is made of: its title, body and files.
/// None when the record carries no text of its own — a tool call before it
/// runs (`Bash (shell)`), a session's start or end, a compaction marker, a
/// subagent's stop: their title is memhook's fixed wording, the same for
/// thousands of records, and a meaning of it would only crowd the newest
/// [`MAX_CANDIDATES`] and the store (about half of all records are
/// pre-tool-use; docs/benchmarks.md, "sixth pass").
pub fn record_texts<'a>(
    event: &str,
    title: Option<&'a str>,
    body: Option<&'a str>,
    files: &'a [String],
) -> Vec<&'a str> {
    let has_body = body.is_some_and(|b| !b.trim().is_empty());
    // Without a body or files, a tool result still has a title of its own:
    // its command line or file (`Bash: cargo test → exit 0`).
    if !has_body && files.is_empty() && !crate::model::TOOL_RESULTS.contains(&event) {
        return Vec::new();
    }
    let mut t: Vec<&str> = [title, body].into_iter().flatten().collect();
    t.extend(files.iter().map(String::as_str));
    t
}

/// The meaning of `texts` (a record's title, body and files, or a
/// question) as [`DIMS`] bytes, each an `i8` of the unit vector times 127;
/// empty when no word is in the table (or the table is unusable).
pub fn embed<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<u8> {
    let Ok(table) = Table::get() else {
        return Vec::new();
    };
    let n = table.len() as f32;
    let ln_n = memhook_core::mathlog::ln(f64::from(n)) as f32;
    let mut acc = [0f32; DIMS];
    let mut budget = words::MAX_WORDS;
    for text in texts {
        budget -= words::each_word(text, budget, |w| {
            if let Some((rank, scale, v)) = table.lookup(w) {
                // Zipf: p(w) ~ 1 / ((rank + 10) ln n).
                let p = 1.0 / ((rank as f32 + 10.0) * ln_n);
                let k = SIF_A / (SIF_A + p) * scale;
                for (a, &b) in acc.iter_mut().zip(v) {
                    *a += k * f32::from(b as i8);
                }
            }
        });
        if budget == 0 {
            break;
        }
    }
    let norm = acc.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return Vec::new();
    }
    acc.iter()
        .map(|x| ((x / norm) * 127.0).round().clamp(-127.0, 127.0) as i8 as u8)
        .collect()
}

/// Words this frequent or more (by rank: `the` is 0, `or` about 30) carry
/// too little meaning to ask with alone.
pub const QUESTION_MIN_RANK: u32 = 150;

/// The meaning of a question ([`embed`]), or nothing when none of its
/// words is rarer than [`QUESTION_MIN_RANK`] (`or`, `the list` would be
/// close to everything). The question is cut at `max_chars`.
pub fn embed_question(question: &str, max_chars: usize) -> Vec<u8> {
    let question: String = question.chars().take(max_chars).collect();
    let Ok(table) = Table::get() else {
        return Vec::new();
    };
    let mut rare = false;
    words::each_word(&question, words::MAX_WORDS, |w| {
        rare |= table
            .lookup(w)
            .is_some_and(|(rank, _, _)| rank >= QUESTION_MIN_RANK);
    });
    if !rare {
        return Vec::new();
    }
    embed([question.as_str()])
}

/// The cosine of two meanings from [`embed`]; `None` when either is not
/// one (empty, or stored bytes of another length).
pub fn cosine(a: &[u8], b: &[u8]) -> Option<f32> {
    if a.len() != DIMS || b.len() != DIMS {
        return None;
    }
    let (mut dot, mut na, mut nb) = (0i32, 0i32, 0i32);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (i32::from(x as i8), i32::from(y as i8));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0 || nb == 0 {
        return None;
    }
    Some(dot as f32 / ((na as f32).sqrt() * (nb as f32).sqrt()))
}

/// The ids of the `k` candidates closest to `question` with a cosine of at
/// least [`MIN_COSINE`], closest first (ties: the newer, higher id, first).
pub fn best(
    question: &[u8],
    candidates: impl IntoIterator<Item = (i64, Vec<u8>)>,
    k: usize,
) -> Vec<(i64, f32)> {
    let mut top: Vec<(i64, f32)> = Vec::with_capacity(k + 1);
    if k == 0 {
        return top;
    }
    for (id, v) in candidates {
        let Some(c) = cosine(question, &v) else {
            continue;
        };
        if c < MIN_COSINE {
            continue;
        }
        if top.len() == k {
            let last = top[k - 1];
            if (c, id) <= (last.1, last.0) {
                continue;
            }
            top.pop();
        }
        let at = top
            .iter()
            .position(|&(i, s)| (c, id) > (s, i))
            .unwrap_or(top.len());
        top.insert(at, (id, c));
    }
    top
}

/// `lexical` (the full-text rows, best first, already collapsed) followed
/// by the rows of `by_meaning` (closest first) that it does not hold —
/// identical texts as one row (`crate::collapse`), none of the same text as
/// a lexical row — each marked [`BY_MEANING`]; at most `limit` rows.
pub fn fuse(
    lexical: Vec<StoredRecord>,
    by_meaning: Vec<StoredRecord>,
    limit: usize,
) -> Vec<StoredRecord> {
    let mut out = lexical;
    out.truncate(limit);
    let text = |r: &StoredRecord| (r.title.clone(), r.body.clone(), r.files.clone());
    for mut r in crate::collapse::collapse(by_meaning, limit) {
        if out.len() >= limit {
            break;
        }
        if out.iter().any(|l| l.key == r.key || text(l) == text(&r)) {
            continue;
        }
        r.matched = Some(BY_MEANING.to_string());
        out.push(r);
    }
    out
}

/// The snippet of a web search hit found by meaning: [`BY_MEANING`] and
/// the start of its text, without the marks of a word hit
/// ([`HIT_START`], [`HIT_END`]) that stored text could hold.
pub fn hit_snippet(text: &str) -> String {
    let text: String = text
        .chars()
        .filter(|c| *c != HIT_START && *c != HIT_END)
        .take(EXCERPT_CHARS)
        .collect();
    format!("{BY_MEANING} {text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &str, b: &str) -> f32 {
        cosine(&embed([a]), &embed([b])).unwrap()
    }

    #[test]
    fn paraphrases_are_closer_than_unrelated_texts() {
        let fact = "add a retry with exponential backoff to the download client";
        let para = "make downloads survive flaky networks";
        assert!(cos(para, fact) > cos(para, "cargo test: 42 passed; 0 failed"));
        assert!(
            cos(
                "speed up repeated lookups",
                "cache the price table in memory for an hour"
            ) > cos(
                "speed up repeated lookups",
                "git status: nothing to commit, working tree clean"
            )
        );
        // A text is its own nearest.
        assert!((cos(fact, fact) - 1.0).abs() < 0.01);
    }

    #[test]
    fn a_question_of_only_frequent_words_has_no_meaning() {
        assert!(embed_question("or", 100).is_empty());
        assert!(embed_question("\"* OR the", 100).is_empty());
        assert_eq!(embed_question("speed up repeated lookups", 100).len(), DIMS);
        // Cut at max_chars.
        assert!(embed_question("the downloads", 4).is_empty());
    }

    #[test]
    fn identifiers_mean_their_words() {
        assert!((cos("loadConfig", "load config") - 1.0).abs() < 0.01);
        assert!((cos("parse_date", "parse date") - 1.0).abs() < 0.01);
    }

    #[test]
    fn a_meaning_is_dims_bytes_or_nothing() {
        assert_eq!(embed(["retry the download"]).len(), DIMS);
        assert!(embed(["zzqx 42 ¤"]).is_empty());
        assert!(embed([""]).is_empty());
        assert_eq!(cosine(&[], &embed(["retry"])), None);
        assert_eq!(cosine(&[1; 7], &[1; 7]), None);
        // Hostile stored bytes of the right length are just numbers.
        assert!(cosine(&[0x80; DIMS], &[0x7f; DIMS]).is_some());
        assert_eq!(cosine(&[0; DIMS], &[1; DIMS]), None);
    }

    #[test]
    fn best_keeps_the_closest_k_above_the_floor() {
        let q = embed(["retry the download"]);
        let cands = vec![
            (1, embed(["retry the download"])),
            (2, embed(["git status: nothing to commit"])),
            (3, embed(["download again after a failure"])),
            (4, Vec::new()),
            (5, embed(["retry the download"])),
        ];
        let got = best(&q, cands.clone(), 2);
        let ids: Vec<i64> = got.iter().map(|g| g.0).collect();
        assert_eq!(ids, [5, 1], "{got:?}");
        assert!(best(&q, cands, 0).is_empty());
        assert!(got.iter().all(|g| g.1 >= MIN_COSINE));
    }

    #[test]
    fn long_texts_cost_a_bounded_number_of_words() {
        let long = "download ".repeat(words::MAX_WORDS * 3);
        assert_eq!(embed([long.as_str(), "x"]).len(), DIMS);
    }
}
