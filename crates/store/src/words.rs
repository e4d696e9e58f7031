//! Identifier words for full-text search, the same for both stores.
//!
//! A full-text tokenizer splits `parse_date` and `parse-date` into `parse`
//! and `date`, but keeps `parseDate` whole (`parsedate`). So each record is
//! indexed with its text plus [`identifier_words`]: the words of every
//! camelCase or PascalCase identifier (`parseDate` adds `parse date`,
//! `HTTPServer` adds `http server`), and every identifier joined by `_` or
//! `-` written as one word (`parse_date` adds `parsedate`). Then `parse
//! date` finds `parse_date`, `parseDate`, `ParseDate` and `parse-date`,
//! and `parseDate` finds `parse_date` too.
//!
//! The SQLite store does not keep these words (schema 12,
//! `sqlite/compact.rs`): it computes them again whenever the index asks for
//! a record's values (FTS5's `delete`, `snippet()`). A change to what
//! [`identifier_words`] gives for a text must therefore come with a
//! migration that indexes the stored records anew, or forget would hand
//! the index values it never indexed.

/// Most bytes of identifier words kept for one record (the index stays
/// bounded whatever the text).
pub const MAX_WORDS_BYTES: usize = 8 * 1024;

/// The camelCase parts of `word` (letters and digits only): split before an
/// upper-case letter that follows a lower-case letter or a digit
/// (`parseDate`), and before the last capital of a run followed by a
/// lower-case letter (`HTTPServer` is `HTTP` `Server`).
pub(crate) fn camel_parts(word: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (at, c) = chars[i];
        let prev = chars[i - 1].1;
        let next_lower = chars.get(i + 1).is_some_and(|(_, n)| n.is_lowercase());
        let boundary = c.is_uppercase()
            && ((prev.is_lowercase() || prev.is_ascii_digit())
                || (prev.is_uppercase() && next_lower));
        if boundary {
            parts.push(&word[start..at]);
            start = at;
        }
    }
    parts.push(&word[start..]);
    parts
}

/// The extra words that make identifiers in `texts` searchable by their
/// parts, lowercased and joined by single spaces (empty when there are
/// none). See the module documentation.
pub fn identifier_words<'a>(texts: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    let push = |w: &str, out: &mut String| {
        if out.len() + w.len() + 1 > MAX_WORDS_BYTES {
            return;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(w.chars().flat_map(char::to_lowercase));
    };
    for text in texts {
        let idents = text
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .map(|t| t.trim_matches(['_', '-']))
            .filter(|t| !t.is_empty());
        for ident in idents {
            // Most words are plain (no `_` or `-` inside, no capital after
            // the first letter) and add nothing: skipped before any
            // allocation. A search's snippets compute a row's words again
            // (`sqlite/compact.rs`), and this made that four times faster.
            if !ident.contains(['_', '-']) && !ident.chars().skip(1).any(char::is_uppercase) {
                continue;
            }
            let pieces: Vec<&str> = ident.split(['_', '-']).filter(|p| !p.is_empty()).collect();
            if pieces.len() > 1 {
                let joined: String = pieces.concat();
                push(&joined, &mut out);
            }
            for piece in pieces {
                let parts = camel_parts(piece);
                if parts.len() > 1 {
                    for p in parts {
                        push(p, &mut out);
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_add_their_words_and_their_joined_form() {
        assert_eq!(identifier_words(["parseDate"]), "parse date");
        assert_eq!(identifier_words(["ParseDate"]), "parse date");
        assert_eq!(identifier_words(["parse_date"]), "parsedate");
        assert_eq!(identifier_words(["parse-date"]), "parsedate");
        assert_eq!(identifier_words(["HTTPServer"]), "http server");
        assert_eq!(identifier_words(["utf8Decode"]), "utf8 decode");
        assert_eq!(
            identifier_words(["load_userConfig", "src/RateLimiter.rs"]),
            "loaduserconfig user config rate limiter"
        );
        // Plain words and all-capitals add nothing.
        assert_eq!(identifier_words(["the quick FOX _x_ -y-"]), "");
    }

    /// The words as this function gave them before plain words were
    /// skipped early: what the index holds must not change (module doc).
    fn identifier_words_before<'a>(texts: impl IntoIterator<Item = &'a str>) -> String {
        let mut out = String::new();
        let push = |w: &str, out: &mut String| {
            if out.len() + w.len() + 1 > MAX_WORDS_BYTES {
                return;
            }
            if !out.is_empty() {
                out.push(' ');
            }
            out.extend(w.chars().flat_map(char::to_lowercase));
        };
        for text in texts {
            let idents = text
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                .map(|t| t.trim_matches(['_', '-']))
                .filter(|t| !t.is_empty());
            for ident in idents {
                let pieces: Vec<&str> = ident.split(['_', '-']).filter(|p| !p.is_empty()).collect();
                if pieces.len() > 1 {
                    push(&pieces.concat(), &mut out);
                }
                for piece in pieces {
                    let parts = camel_parts(piece);
                    if parts.len() > 1 {
                        for p in parts {
                            push(p, &mut out);
                        }
                    }
                }
            }
        }
        out
    }

    #[test]
    fn skipping_plain_words_gives_the_same_words() {
        let texts = [
            include_str!("words.rs"),
            include_str!("sqlite/compact.rs"),
            include_str!("../../../docs/operations.md"),
            "Ünïcode ÄBc äBC ǅungla ǈx Σίσυφος ΣΊΣΥΦΟΣ aΣb a_Σ x-Ǆy İstanbul ıI",
            "HTTPServer utf8Decode __init__ -x- a__b a--b A_B_C aB9cD 9Ab",
        ];
        for t in texts {
            assert_eq!(identifier_words([t]), identifier_words_before([t]));
        }
        for t in texts {
            for line in t.lines() {
                assert_eq!(
                    identifier_words([line]),
                    identifier_words_before([line]),
                    "{line}"
                );
            }
        }
    }

    #[test]
    fn the_words_are_bounded() {
        let text = "aB ".repeat(MAX_WORDS_BYTES);
        let w = identifier_words([text.as_str()]);
        assert!(w.len() <= MAX_WORDS_BYTES, "{}", w.len());
        assert!(w.starts_with("a b a b"));
    }
}
