//! What a line is to a fingerprint: its bytes without whitespace (so
//! re-indenting, `cat -A`-style spacing or a wrapped diff does not hide it),
//! trimmed of punctuation at both ends (quotes, commas, a trailing `$` or
//! `;`), and only when it is long and varied enough to identify a file.
//! A kept text's line is looked at through several views: from its start
//! and from just after each separator near its start, so the prefixes tools
//! add (`  12→`, `+`, `| `, `file:12:`, `Output: `) do not hide the line
//! that follows them.

/// A line's core shorter than this (in bytes, whitespace removed) is not a
/// fingerprint: `import os`, `}`, `fi`, `end` identify no file.
pub const MIN_LINE_BYTES: usize = 12;
/// A core must hold at least this many distinct bytes (`============`,
/// `------------` are not fingerprints).
pub const MIN_DISTINCT_BYTES: usize = 5;
/// A core must hold at least this many letters or digits.
pub const MIN_WORD_BYTES: usize = 6;
/// Lines whose core is at least this long also leave fingerprints of their
/// pieces ([`KGRAM_BYTES`]-byte windows), so a quoted part of a long line
/// (a cut excerpt, a minified file, a line inside a longer one) is found.
pub const LONG_LINE_BYTES: usize = 64;
/// Bytes in one piece of a long line.
pub const KGRAM_BYTES: usize = 32;
/// Winnowing window: of every this many consecutive pieces, the one with
/// the smallest fingerprint is kept. Any run of at least
/// `KGRAM_BYTES + WINNOW - 1` bytes (47) shared with a long line is found.
pub const WINNOW: usize = 16;
/// Views start only within this many bytes of a kept line's start.
pub const MAX_VIEW_OFFSET: usize = 96;

/// A byte that belongs to a word: ASCII letters and digits, and every byte
/// of a non-ASCII character (never cut inside one).
pub fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b >= 0x80
}

/// `line` without ASCII whitespace (and `\r`).
pub fn squeeze(line: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend(line.iter().copied().filter(|b| !b.is_ascii_whitespace()));
}

/// `s` with leading and trailing non-word bytes removed.
pub fn core(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|b| is_word(*b)).unwrap_or(s.len());
    let end = s.iter().rposition(|b| is_word(*b)).map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

/// Whether a core can identify a file.
pub fn identifying(core: &[u8]) -> bool {
    if core.len() < MIN_LINE_BYTES {
        return false;
    }
    if core.iter().filter(|b| is_word(**b)).count() < MIN_WORD_BYTES {
        return false;
    }
    let mut seen = [false; 256];
    let mut distinct = 0;
    for b in core {
        if !seen[*b as usize] {
            seen[*b as usize] = true;
            distinct += 1;
            if distinct >= MIN_DISTINCT_BYTES {
                return true;
            }
        }
    }
    false
}

/// Offsets into the squeezed line where a view's core starts: the line's
/// own core, and the core after each non-word byte or whitespace within
/// [`MAX_VIEW_OFFSET`] bytes of the raw line's start. Sorted, distinct.
pub fn view_starts(raw: &str, squeezed: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    // Squeezed offset of each raw position: the non-whitespace bytes before it.
    let mut sq = 0usize;
    let mut prev_sep = true;
    for (i, c) in raw.char_indices() {
        if i > MAX_VIEW_OFFSET {
            break;
        }
        let ws = c.is_whitespace();
        if prev_sep && !ws {
            starts.push(sq);
        }
        // Any character that is not a letter or digit separates (`→`, `│`).
        prev_sep = ws || !c.is_alphanumeric();
        if !c.is_ascii_whitespace() {
            sq += c.len_utf8();
        }
    }
    // Each start moves past leading non-word bytes, as the core does.
    let mut out: Vec<usize> = starts
        .into_iter()
        .map(|s| {
            s + squeezed[s.min(squeezed.len())..]
                .iter()
                .position(|b| is_word(*b))
                .unwrap_or(squeezed.len() - s.min(squeezed.len()))
        })
        .filter(|s| *s < squeezed.len())
        .collect();
    out.dedup();
    out
}

/// End of the core of a squeezed line (trailing non-word bytes dropped).
pub fn core_end(squeezed: &[u8]) -> usize {
    squeezed
        .iter()
        .rposition(|b| is_word(*b))
        .map_or(0, |e| e + 1)
}

/// Lines of `text`, split on `\n` (a `\r` is whitespace to [`squeeze`]).
pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.split('\n')
}

/// The lines a JSON- or C-escaped text holds (`\n`, `\r` split; `\"`,
/// `\\`, `\t`, `\/` unescaped), when `line` holds such escapes: a tool
/// that returns a file inside a JSON string puts all of it on one line.
pub fn unescaped_lines(line: &str) -> Option<Vec<String>> {
    if !line.contains('\\') {
        return None;
    }
    let mut out = vec![String::new()];
    let mut chars = line.chars();
    let mut any = false;
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.last_mut().expect("never empty").push(c);
            continue;
        }
        match chars.next() {
            Some('n') | Some('r') => {
                any = true;
                out.push(String::new());
            }
            Some('t') => {
                any = true;
                out.last_mut().expect("never empty").push(' ');
            }
            Some(e @ ('"' | '\\' | '/' | '\'')) => {
                any = true;
                out.last_mut().expect("never empty").push(e);
            }
            Some(other) => {
                let s = out.last_mut().expect("never empty");
                s.push('\\');
                s.push(other);
            }
            None => out.last_mut().expect("never empty").push('\\'),
        }
    }
    any.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sq(s: &str) -> Vec<u8> {
        let mut v = Vec::new();
        squeeze(s.as_bytes(), &mut v);
        v
    }

    #[test]
    fn short_plain_or_repetitive_lines_identify_nothing() {
        for line in [
            "",
            "}",
            "import os",
            "fi",
            "    return x",
            "================================",
            "-- -- -- -- -- -- -- --",
            "1234 1234 1234",
        ] {
            assert!(!identifying(core(&sq(line))), "{line:?}");
        }
        for line in [
            "DB_PASSWORD=hunter2-horse-battery",
            "customer: Alice Smith, 42 Elm Street",
            "    let ledger_total = accounts.sum();",
        ] {
            assert!(identifying(core(&sq(line))), "{line:?}");
        }
    }

    #[test]
    fn the_core_ignores_spacing_and_surrounding_punctuation() {
        assert_eq!(core(&sq("  \"api key\": \"abc\",  ")), b"apikey\":\"abc");
        assert_eq!(core(&sq("api_key = 'abc';$")), b"api_key='abc");
    }

    #[test]
    fn views_start_after_the_prefixes_tools_add() {
        let cases = [
            ("     12\u{2192}DB_PASSWORD=hunter2", "DB_PASSWORD=hunter2"),
            ("+DB_PASSWORD=hunter2", "DB_PASSWORD=hunter2"),
            ("| + DB_PASSWORD=hunter2", "DB_PASSWORD=hunter2"),
            ("secret/.env:3:DB_PASSWORD=hunter2", "DB_PASSWORD=hunter2"),
            ("Output: DB_PASSWORD=hunter2", "DB_PASSWORD=hunter2"),
            ("     3\tDB_PASSWORD=hunter2", "DB_PASSWORD=hunter2"),
        ];
        for (raw, want) in cases {
            let s = sq(raw);
            let end = core_end(&s);
            let found = view_starts(raw, &s)
                .into_iter()
                .any(|st| &s[st..end] == want.as_bytes());
            assert!(found, "{raw:?}");
        }
    }

    #[test]
    fn escaped_text_is_split_into_its_lines() {
        let l = r#"{"text":"line one\nDB_PASSWORD=\"x\"\n"}"#;
        let got = unescaped_lines(l).unwrap();
        assert_eq!(got[1], "DB_PASSWORD=\"x\"");
        assert!(unescaped_lines("no escapes here").is_none());
    }
}
