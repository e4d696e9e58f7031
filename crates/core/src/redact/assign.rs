//! Assignments: the value of `key = value`, `key: value`, `"key": "value"`
//! and `--key VALUE` where the key names a credential.

use super::command::word_end;
use super::{lower, starts_with_ci, Splice, MARKER_PREFIX};

/// Words that make a key name a credential, the kind they give, and whether
/// the word must be a whole segment of the key (split at `_`, `-`, `.` and
/// camel case): `DB_PASS` and `dbPass` are credentials, `passed` is not.
/// Checked in order: `auth_token` is a token, `db_password` a password.
pub(super) const CRED_KEYS: &[(&str, &str, bool)] = &[
    ("authorization", "authorization", false),
    ("password", "password", false),
    ("passwd", "password", false),
    ("passphrase", "password", false),
    ("pass", "password", true),
    ("pwd", "password", true),
    ("secret", "secret", false),
    ("credential", "secret", false),
    ("private_key", "secret", false),
    ("private-key", "secret", false),
    ("privatekey", "secret", false),
    ("token", "token", false),
    ("api_key", "api_key", false),
    ("api-key", "api_key", false),
    ("apikey", "api_key", false),
    ("access_key", "api_key", false),
    ("access-key", "api_key", false),
];

/// Keys that hold a credential word but never a secret: the shell's working
/// directories.
const NOT_SECRET_KEYS: &[&str] = &["pwd", "oldpwd"];

/// Is `b[at..at + len]` a whole segment of a key name?
fn is_segment(b: &[u8], at: usize, len: usize) -> bool {
    let end = at + len;
    let before = at == 0
        || !b[at - 1].is_ascii_alphanumeric()
        || (b[at - 1].is_ascii_lowercase() && b[at].is_ascii_uppercase());
    let after = end == b.len()
        || !b[end].is_ascii_alphanumeric()
        || (b[end - 1].is_ascii_lowercase() && b[end].is_ascii_uppercase());
    before && after
}

/// Endings that make `token` a quantity, not a credential: `max_tokens`,
/// `input_tokens`, `token_count`, `tokenizer` (model usage figures).
const TOKEN_QUANTITIES: &[&str] = &["s", "_count", "count", "_limit", "limit", "izer", "_usage"];

/// Is the credential word `w` at `b[at..]` followed by a quantity ending?
fn is_quantity(b: &[u8], at: usize, w: &str) -> bool {
    let rest = &b[at + w.len()..];
    w == "token"
        && TOKEN_QUANTITIES.iter().any(|q| {
            starts_with_ci(rest, q.as_bytes())
                && rest.get(q.len()).is_none_or(|c| !c.is_ascii_lowercase())
        })
}

/// The credential word of [`CRED_KEYS`] at `b[at..]`, if any (index).
fn cred_word_at(b: &[u8], at: usize) -> Option<usize> {
    CRED_KEYS.iter().position(|(w, _, whole)| {
        starts_with_ci(&b[at..], w.as_bytes())
            && (!whole || is_segment(b, at, w.len()))
            && !is_quantity(b, at, w)
    })
}

/// Schemes kept in front of a redacted `Authorization` value.
const AUTH_SCHEMES: &[&str] = &["bearer", "basic", "token", "digest"];

/// How far a key name is followed on each side of its credential word.
const MAX_KEY_BYTES: usize = 128;

fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

/// Bigram table (as `rules::BIGRAMS`) of the credential words only.
static CRED_BIGRAMS: [u64; 1024] = {
    let mut t = [0u64; 1024];
    let mut k = 0;
    while k < CRED_KEYS.len() {
        let w = CRED_KEYS[k].0.as_bytes();
        let idx = ((lower(w[0]) as usize) << 8) | lower(w[1]) as usize;
        t[idx / 64] |= 1 << (idx % 64);
        k += 1;
    }
    t
};

/// The next credential word at or after `from`: (position, index into
/// [`CRED_KEYS`]).
fn next_cred_word(b: &[u8], from: usize) -> Option<(usize, usize)> {
    (from..b.len().saturating_sub(1)).find_map(|i| {
        let idx = ((lower(b[i]) as usize) << 8) | lower(b[i + 1]) as usize;
        if CRED_BIGRAMS[idx / 64] & (1 << (idx % 64)) == 0 {
            return None;
        }
        cred_word_at(b, i).map(|k| (i, k))
    })
}

/// How an assignment's value is delimited.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Delim {
    /// `"…"` (backslash escapes skipped) or `'…'`, or to the end of the line
    /// when the closing quote is missing.
    Quoted(u8),
    /// `\"…\"` inside a JSON-escaped string (a JSON document held in a JSON
    /// string): to the next `\"` that is not itself escaped.
    EscapedQuoted,
    /// One shell word: `--password=VALUE`, `--password VALUE`.
    Word,
    /// A URL query value: `?token=VALUE&…`.
    Query,
    /// A JSON scalar after a quoted key (`"token": 123,`).
    Scalar,
    /// A bare value (`password: correct horse battery staple`): to the end
    /// of the line (a newline or a literal `\n` escape), so a passphrase
    /// goes whole. A YAML block scalar (`|`,
    /// `>`) takes the more indented lines that follow.
    Line,
}

/// The separator at the start of `s` (`:`, `=`, `:=`, `=>`): its length,
/// 0 when there is none. `==` and `::` are not assignments (`None`).
fn separator(s: &[u8]) -> Option<usize> {
    match s {
        [b'=', b'=', ..] | [b':', b':', ..] => None,
        [b':' | b'=', b'=' | b'>', ..] => Some(2),
        [b':' | b'=', ..] => Some(1),
        _ => Some(0),
    }
}

/// For a credential word found at `at` (`len` bytes), the assignment around
/// it: (key start, value start, value end). `None` when the key is not
/// assigned a value there.
fn assignment_at(b: &[u8], at: usize, len: usize) -> Option<(usize, usize, usize)> {
    // Keys are bounded on both sides so a long run of key bytes holding many
    // credential words stays linear.
    let lo = at.saturating_sub(MAX_KEY_BYTES);
    let mut key_start = b[lo..at]
        .iter()
        .rposition(|c| !is_key_byte(*c))
        .map_or(lo, |p| lo + p + 1);
    // A literal `\n`, `\r`, `\t` escape before the key is not part of it.
    if key_start > 0
        && key_start < at
        && b[key_start - 1] == b'\\'
        && matches!(b[key_start], b'n' | b'r' | b't')
    {
        key_start += 1;
    }
    let key_end = at
        + len
        + b[at + len..]
            .iter()
            .take(MAX_KEY_BYTES)
            .take_while(|c| is_key_byte(**c))
            .count();
    let blank = |i: &mut usize| {
        while *i < b.len() && matches!(b[*i], b' ' | b'\t') {
            *i += 1;
        }
    };
    let mut i = key_end;
    // A quoted key: `"password":`, `'password' =>`, `\"password\":`.
    let quoted_key = if b[i..].starts_with(b"\\\"") {
        i += 2;
        true
    } else if i < b.len() && matches!(b[i], b'"' | b'\'') {
        i += 1;
        true
    } else {
        false
    };
    blank(&mut i);
    let flag = b[key_start] == b'-';
    match separator(&b[i..])? {
        0 => {
            // Only `--flag VALUE` may do without a separator, and only when
            // the flag ends with the credential word (`--token-file PATH`
            // is not one).
            let long = b[key_start..].starts_with(b"--") && key_end == at + len;
            if !(long && !quoted_key && i > key_end && i < b.len() && b[i] != b'-') {
                return None;
            }
        }
        n => {
            i += n;
            blank(&mut i);
        }
    }
    let delim = if b[i..].starts_with(b"\\\"") {
        i += 2;
        Delim::EscapedQuoted
    } else if i < b.len() && matches!(b[i], b'"' | b'\'') {
        i += 1;
        Delim::Quoted(b[i - 1])
    } else if flag {
        Delim::Word
    } else if key_start > 0 && matches!(b[key_start - 1], b'?' | b'&') {
        Delim::Query
    } else if quoted_key {
        Delim::Scalar
    } else {
        Delim::Line
    };
    // An Authorization value keeps its scheme word (`Bearer`, `Basic`, …).
    if b[at..].len() >= 13 && b[at..at + 13].eq_ignore_ascii_case(b"authorization") {
        for s in AUTH_SCHEMES {
            let n = s.len();
            if b.len() > i + n
                && b[i..i + n].eq_ignore_ascii_case(s.as_bytes())
                && matches!(b[i + n], b' ' | b'\t')
            {
                i += n;
                blank(&mut i);
                break;
            }
        }
    }
    let end = value_end(b, i, delim);
    if end == i || b[i..].starts_with(MARKER_PREFIX.as_bytes()) {
        return None;
    }
    let end = match delim {
        Delim::Line => yaml_block_end(b, key_start, i, end),
        _ => end,
    };
    Some((key_start, i, end))
}

/// Where a value starting at `i` ends.
fn value_end(b: &[u8], i: usize, delim: Delim) -> usize {
    let n = b.len();
    let mut j = i;
    match delim {
        Delim::Quoted(q) => {
            while j < n && b[j] != q && b[j] != b'\n' && b[j] != b'\r' {
                j += if q == b'"' && b[j] == b'\\' && j + 1 < n {
                    2
                } else {
                    1
                };
            }
            j.min(n)
        }
        Delim::EscapedQuoted => {
            // Decode one level of escaping on the fly: `\\` is a backslash
            // of the inner string, `\"` its quote (closing unless the inner
            // string escaped it).
            let mut inner_escape = false;
            while j < n {
                match (b[j], b.get(j + 1)) {
                    (b'"' | b'\n' | b'\r', _) => break,
                    (b'\\', Some(b'"')) if !inner_escape => break,
                    (b'\\', Some(b'n' | b'r')) if !inner_escape => break,
                    (b'\\', Some(&c)) => {
                        inner_escape = c == b'\\' && !inner_escape;
                        j += 2;
                    }
                    _ => {
                        inner_escape = false;
                        j += 1;
                    }
                }
            }
            j.min(n)
        }
        Delim::Word => word_end(b, i),
        Delim::Query | Delim::Scalar => {
            let stops: &[u8] = match delim {
                Delim::Query => b"&#\"'\\",
                _ => b",}]\"'\\",
            };
            let stop = |c: u8| c.is_ascii_whitespace() || stops.contains(&c);
            i + b[i..].iter().take_while(|&&c| !stop(c)).count()
        }
        Delim::Line => {
            // Quotes do not end it: a stop inside the line could fall
            // between a later key and its value and let that value out.
            while j < n
                && !matches!(b[j], b'\n' | b'\r')
                && !(b[j] == b'\\' && matches!(b.get(j + 1), Some(b'n' | b'r')))
            {
                j += 1;
            }
            while j > i && matches!(b[j - 1], b' ' | b'\t') {
                j -= 1;
            }
            j
        }
    }
}

/// For a bare value `b[start..end]` that opens a YAML block scalar (`|`,
/// `>`, with an optional chomping or indent indicator), the end of the
/// block: the following lines indented more than the key (blank lines
/// inside it included). Any other value ends where it ends.
fn yaml_block_end(b: &[u8], key_start: usize, start: usize, end: usize) -> usize {
    let v = &b[start..end];
    let is_block = matches!(v.first(), Some(b'|' | b'>'))
        && v[1..]
            .iter()
            .all(|c| matches!(c, b'-' | b'+' | b'0'..=b'9'));
    if !is_block {
        return end;
    }
    let line_start = b[..key_start]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1);
    let key_col = key_start - line_start;
    let (mut block_end, mut j) = (end, end);
    while j < b.len() && matches!(b[j], b'\n' | b'\r') {
        j += if b[j..].starts_with(b"\r\n") { 2 } else { 1 };
        let indent = b[j..].iter().take_while(|&&c| c == b' ').count();
        let line_end = j + b[j..]
            .iter()
            .take_while(|&&c| c != b'\n' && c != b'\r')
            .count();
        if line_end == j + indent {
            j = line_end; // blank line: part of the block if more follows
            continue;
        }
        if indent <= key_col {
            break;
        }
        block_end = line_end;
        j = line_end;
    }
    block_end
}

pub(super) fn redact_assignments(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut sp = Splice::default();
    let mut i = 0;
    while let Some((at, k)) = next_cred_word(b, i) {
        let Some((key_start, start, end)) = assignment_at(b, at, CRED_KEYS[k].0.len()) else {
            i = at + 1;
            continue;
        };
        let key = &text[key_start..start];
        let name = key.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
        if NOT_SECRET_KEYS.iter().any(|k| name.eq_ignore_ascii_case(k)) {
            i = at + 1;
            continue;
        }
        // The kind comes from the first credential word in the whole key.
        let kind = (key_start..start)
            .find_map(|j| cred_word_at(&b[..start], j))
            .map_or(CRED_KEYS[k].1, |w| CRED_KEYS[w].1);
        sp.redact(text, start, end, kind);
        i = end;
    }
    sp.finish(text)
}
