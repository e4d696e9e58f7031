//! Passes 1 and 2 of [`super::clean`]: `<private>` spans, then terminal
//! and display tricks (ANSI escapes, control, bidi and invisible
//! characters).

use std::borrow::Cow;

use super::starts_with_ci;

// ---------------------------------------------------------------------------
// 1. <private> spans

const OPEN: &[u8] = b"<private>";
const CLOSE: &[u8] = b"</private>";

pub(super) fn strip_private(text: &str) -> Cow<'_, str> {
    let b = text.as_bytes();
    // `str::contains(char)` is a memchr; most text has no `<` at all.
    if !text.contains('<')
        || !b
            .windows(2)
            .any(|w| w[0] == b'<' && matches!(w[1], b'p' | b'P' | b'/'))
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    let mut keep_from = 0usize;
    let mut i = 0usize;
    while i < b.len() {
        if b[i] != b'<' {
            i += 1;
            continue;
        }
        if starts_with_ci(&b[i..], OPEN) {
            if depth == 0 {
                out.push_str(&text[keep_from..i]);
            }
            depth += 1;
            i += OPEN.len();
            keep_from = i;
        } else if starts_with_ci(&b[i..], CLOSE) {
            if depth == 0 {
                // A stray closing tag: drop the tag, keep the text around it.
                out.push_str(&text[keep_from..i]);
            } else {
                depth -= 1;
            }
            i += CLOSE.len();
            keep_from = i;
        } else {
            i += 1;
        }
    }
    if keep_from == 0 {
        return Cow::Borrowed(text); // no tag at all
    }
    if depth == 0 {
        out.push_str(&text[keep_from..]);
    }
    Cow::Owned(out)
}

// ---------------------------------------------------------------------------
// 2. Control characters, ANSI escapes, bidi and invisible characters

/// Characters removed outright (besides C0/C1 controls and DEL).
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{202A}'..='\u{202E}'
            | '\u{2066}'..='\u{2069}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{061C}'
            | '\u{200B}'
            | '\u{2060}'..='\u{2064}'
            | '\u{180E}'
            | '\u{FEFF}'
    )
}

pub fn is_stripped_control(c: char) -> bool {
    (c.is_control() && !matches!(c, '\t' | '\n' | '\r')) || is_invisible(c)
}

/// Could `text` hold a character [`strip_controls`] removes? A byte check:
/// ASCII controls and DEL, and the lead bytes of every stripped non-ASCII
/// character (C1 controls `C2`, U+061C `D8`, U+180E `E1`, U+200x–U+206x
/// `E2`, U+FEFF `EF`). False positives only cost the exact pass.
pub(super) fn may_hold_controls(text: &str) -> bool {
    let suspect = |b: u8| {
        (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r'))
            | matches!(b, 0x7f | 0xc2 | 0xd8 | 0xe1 | 0xe2 | 0xef)
    };
    // Branch-free within a chunk so the compiler can vectorise it.
    text.as_bytes()
        .chunks(64)
        .any(|c| c.iter().fold(false, |acc, &b| acc | suspect(b)))
}

/// Does `text` hold a character `strip_controls` removes? The byte check
/// first, so text without a suspect byte (nearly all) is read once, fast.
pub fn holds_stripped_control(text: &str) -> bool {
    may_hold_controls(text) && text.chars().any(is_stripped_control)
}

pub(super) fn strip_controls(text: &str) -> Cow<'_, str> {
    if !holds_stripped_control(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\u{1b}' => match it.peek() {
                Some('[') => {
                    it.next();
                    skip_csi(&mut it);
                }
                Some(']') | Some('P') | Some('X') | Some('^') | Some('_') => {
                    it.next();
                    skip_string_sequence(&mut it);
                }
                // Two-byte escapes (ESC c, ESC 7, ESC ( B …): drop the next
                // printable character too.
                Some(&n) if (' '..='~').contains(&n) => {
                    it.next();
                    if matches!(n, '(' | ')' | '*' | '+' | '#' | '%') {
                        it.next_if(|c| (' '..='~').contains(c));
                    }
                }
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut it),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string_sequence(&mut it),
            c if is_stripped_control(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Skip a CSI sequence body: parameters and intermediates, then one final byte.
fn skip_csi(it: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in it.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) || !(' '..='\u{7e}').contains(&c) {
            break;
        }
    }
}

/// Skip an OSC/DCS/SOS/PM/APC body up to BEL, ST (`ESC \`) or the 8-bit ST.
fn skip_string_sequence(it: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = it.next() {
        match c {
            '\u{07}' | '\u{9c}' => break,
            '\u{1b}' => {
                it.next_if_eq(&'\\');
                break;
            }
            _ => {}
        }
    }
}
