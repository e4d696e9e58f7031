//! Document search: a bounded scan of the scope's documents.
//!
//! Project memory is small (documents are at most 100 KiB and the walk
//! stops at `MAX_SCAN_FILES`), so a linear scan is simple and fast enough.
//! Matching is by word, ASCII case-insensitive, over the path and the text;
//! a document matching more distinct words ranks higher.

use super::path::VirtualPath;
use super::store::{MemError, MemoryStore};

/// Most words of a query that are used.
pub const MAX_QUERY_TERMS: usize = 16;
/// Most bytes of documents a single search reads.
pub const MAX_SEARCH_BYTES: u64 = 16 * 1024 * 1024;
/// Bytes of context on each side of a match in a snippet.
pub const SNIPPET_CONTEXT: usize = 80;

/// One matching document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocHit {
    pub path: String,
    pub snippet: String,
    pub updated_at: Option<String>,
    /// Distinct query words found.
    pub matched: usize,
    /// Total occurrences of the query words.
    pub occurrences: usize,
}

/// Split a query into lower-case words (letters and digits; other
/// characters separate words).
pub fn terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in query.split(|c: char| !c.is_alphanumeric() && c != '_') {
        let w = w.to_ascii_lowercase();
        if !w.is_empty() && !out.contains(&w) {
            out.push(w);
        }
        if out.len() == MAX_QUERY_TERMS {
            break;
        }
    }
    out
}

impl MemoryStore {
    /// Documents matching any word of `query`, best first, at most `limit`.
    pub fn search_documents(&self, query: &str, limit: usize) -> Result<Vec<DocHit>, MemError> {
        let words = terms(query);
        if words.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let root = VirtualPath::prefix("/").expect("root is valid");
        let (mut found, _) = self.find(&root)?;
        found.sort_by(|a, b| a.path.cmp(&b.path));
        let mut budget = MAX_SEARCH_BYTES;
        let mut hits = Vec::new();
        for f in found {
            if f.bytes > budget {
                break;
            }
            budget -= f.bytes;
            let Some(text) = self.read_found(&f) else {
                continue;
            };
            let path = f.path.to_string();
            let hay = format!("{path}\n{text}").to_ascii_lowercase();
            let mut matched = 0;
            let mut occurrences = 0;
            let mut first: Option<usize> = None;
            for w in &words {
                let n = hay.matches(w.as_str()).count();
                if n > 0 {
                    matched += 1;
                    occurrences += n;
                    // Prefer a match in the text over one in the path.
                    let at = hay[path.len()..].find(w.as_str()).map(|i| i + path.len());
                    if let Some(at) = at {
                        first = Some(first.map_or(at, |f: usize| f.min(at)));
                    }
                }
            }
            if matched == 0 {
                continue;
            }
            let body_at = first.map(|at| at.saturating_sub(path.len() + 1));
            hits.push(DocHit {
                path,
                snippet: snippet(&text, body_at.unwrap_or(0)),
                updated_at: f.mtime_ms.map(memhook_core::timefmt::rfc3339_ms),
                matched,
                occurrences,
            });
        }
        hits.sort_by(|a, b| {
            (b.matched, b.occurrences)
                .cmp(&(a.matched, a.occurrences))
                .then_with(|| a.path.cmp(&b.path))
        });
        hits.truncate(limit);
        Ok(hits)
    }
}

/// Up to [`SNIPPET_CONTEXT`] bytes either side of `at`, on character
/// boundaries, whitespace collapsed to single spaces.
fn snippet(text: &str, at: usize) -> String {
    snippet_with(text, at, SNIPPET_CONTEXT)
}

/// A snippet of `text` around the first occurrence of any of `words`
/// (lower-case, as [`terms`] returns them; ASCII case-insensitive), with
/// `context` bytes either side; the start of the text when none occurs.
pub fn snippet_for(text: &str, words: &[String], context: usize) -> String {
    let lower = text.to_ascii_lowercase();
    let at = words
        .iter()
        .filter_map(|w| lower.find(w.as_str()))
        .min()
        .unwrap_or(0);
    snippet_with(text, at, context)
}

fn snippet_with(text: &str, at: usize, context: usize) -> String {
    use super::content::floor_char_boundary;
    let at = floor_char_boundary(text, at);
    let start = if at <= context {
        0
    } else {
        floor_char_boundary(text, at - context)
    };
    let end = floor_char_boundary(text, at.saturating_add(context).max(start + 2 * context));
    let mut s = String::new();
    if start > 0 {
        s.push('…');
    }
    s.push_str(
        &text[start..end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    );
    if end < text.len() {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Outcome;

    #[test]
    fn snippets_centre_on_the_first_word() {
        let text = format!("{}Needle here{}", "a ".repeat(100), " b".repeat(100));
        let s = snippet_for(&text, &["needle".to_string()], 20);
        assert!(
            s.starts_with('…') && s.ends_with('…') && s.contains("Needle here"),
            "{s}"
        );
        let s = snippet_for("short text", &["absent".to_string()], 20);
        assert_eq!(s, "short text");
        let s = snippet_for(&"é".repeat(100), &[], 15);
        assert!(s.ends_with('…') && s.trim_end_matches('…').chars().all(|c| c == 'é'));
    }

    #[test]
    fn terms_split_and_dedupe() {
        assert_eq!(
            terms("Cargo build, cargo TEST!"),
            vec!["cargo", "build", "test"]
        );
        assert!(terms("  -- ").is_empty());
        let many: String = (0..40).map(|i| format!("w{i} ")).collect();
        assert_eq!(terms(&many).len(), MAX_QUERY_TERMS);
    }

    #[test]
    fn finds_ranks_and_snippets_documents() {
        let t = tempfile::tempdir().unwrap();
        let s = MemoryStore::new(t.path(), "acme", "api").unwrap();
        let long = format!(
            "{}\nThe flaky test is fixed by running cargo test with one thread.\n{}",
            "x ".repeat(200),
            "y ".repeat(200)
        );
        for (p, c) in [
            ("/notes/tests.md", long.as_str()),
            ("/notes/build.md", "Use cargo build --locked."),
            ("/other.md", "nothing relevant"),
        ] {
            assert_eq!(s.write(p, c, "new").outcome, Outcome::Ok);
        }
        let hits = s.search_documents("cargo TEST", 10).unwrap();
        let paths: Vec<_> = hits.iter().map(|h| h.path.as_str()).collect();
        assert_eq!(paths, vec!["/notes/tests.md", "/notes/build.md"]);
        assert!(
            hits[0].snippet.contains("flaky test"),
            "{}",
            hits[0].snippet
        );
        assert!(hits[0].snippet.starts_with('…') && hits[0].snippet.ends_with('…'));
        assert!(hits[0].snippet.len() < 2 * SNIPPET_CONTEXT + 10);
        // Path words count too.
        assert_eq!(
            s.search_documents("build", 10).unwrap()[0].path,
            "/notes/build.md"
        );
        assert_eq!(s.search_documents("cargo", 1).unwrap().len(), 1);
        assert!(s.search_documents("absent", 10).unwrap().is_empty());
        assert!(s.search_documents("", 10).unwrap().is_empty());
    }
}
