//! Assignments: the value of `key = value`, `key: value`, `"key": "value"`,
//! `--key VALUE`, `<key>VALUE</key>` and `.netrc`'s `password VALUE` where
//! the key names a credential; and, where the key only looks like a
//! credential's name, the value when it looks random.

use super::command::word_end;
use super::scan::base64_decode;
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

/// Keys that hold a credential word but name the shell's working
/// directories when their value is a path (`PWD=/home/dev`); ODBC's
/// `Pwd=…` is a password.
const NOT_SECRET_KEYS: &[&str] = &["pwd", "oldpwd"];

/// Last segments of a key that make it a setting about a credential, not
/// the credential: `PASSWORD_MIN_LENGTH`, `TOKEN_TTL`, `token_type`,
/// `PASSWORD_FILE`. Such a key's value is redacted only when it
/// [looks random](looks_random).
pub(super) const SETTING_QUALIFIERS: &[&str] = &[
    "min",
    "max",
    "length",
    "len",
    "size",
    "ttl",
    "timeout",
    "expiry",
    "expires",
    "expiration",
    "lifetime",
    "age",
    "seconds",
    "secs",
    "ms",
    "minutes",
    "mins",
    "hours",
    "days",
    "count",
    "limit",
    "file",
    "path",
    "dir",
    "url",
    "uri",
    "endpoint",
    "header",
    "name",
    "id",
    "type",
    "kind",
    "format",
    "policy",
    "rotation",
    "version",
    "enabled",
    "required",
    "prompt",
    "hint",
    "label",
    "field",
    "env",
    "var",
    "mode",
    "algorithm",
    "alg",
    "rounds",
    "cost",
    "strength",
    "regex",
    "pattern",
];

/// Words that make a key look like a credential's name without saying so,
/// and the kind they give: `…_KEY` (`ENCRYPTION_KEY`, `accountKey`,
/// `tls.key`) and `…AUTH` (`NPM_AUTH`, a Docker config's `"auth"`). The
/// word must be the key's last segment; `key` must follow another one.
/// Their value is redacted only when it [looks random](looks_random) (an
/// `auth` value also when it is base64 of `user:password`).
pub(super) const RANDOM_KEYS: &[(&str, &str)] = &[("key", "secret"), ("auth", "authorization")];

/// Segments before `key` that name something public or a database's key:
/// `PUBLIC_KEY`, `primary_key`, `cache_key`, `Idempotency-Key`.
const NOT_SECRET_KEY_OWNERS: &[&str] = &[
    "public",
    "pub",
    "publishable",
    "primary",
    "foreign",
    "sort",
    "partition",
    "range",
    "hash",
    "cache",
    "idempotency",
    "dedup",
    "dedupe",
    "object",
    "row",
    "lookup",
    "unique",
    "composite",
    "group",
    "routing",
    "shard",
    "i18n",
    "translation",
    "message",
    "map",
    "dict",
];

/// Shortest value that can [look random](looks_random).
pub(super) const MIN_RANDOM_LEN: usize = 16;

/// Least Shannon entropy, in bits per character, of a value that looks
/// random. 16 characters, each of 8 symbols twice, have exactly 3.0; a
/// random 16-character hex string has about 3.5, base64 more. Words and
/// numbers with repeats (`aabbccdd11223333`: 2.75) fall below.
pub(super) const MIN_RANDOM_BITS_PER_CHAR: f64 = 3.0;

/// Bytes a random-looking value may hold besides letters and digits: those
/// of base64, base64url and the separators in vendor tokens. A value with
/// a blank, `$`, `{`, `:` or `%` is a phrase, a placeholder, a URL or a
/// list, not a token.
const RANDOM_EXTRA: &[u8] = b"+/=_-.~";

/// Does a value look like a generated secret? At least
/// [`MIN_RANDOM_LEN`] bytes, all letters, digits or [`RANDOM_EXTRA`]; both
/// a letter and a digit; not a path or a file name; and at least
/// [`MIN_RANDOM_BITS_PER_CHAR`] of entropy.
pub(super) fn looks_random(v: &[u8]) -> bool {
    v.len() >= MIN_RANDOM_LEN
        && v.iter()
            .all(|c| c.is_ascii_alphanumeric() || RANDOM_EXTRA.contains(c))
        && v.iter().any(u8::is_ascii_digit)
        && v.iter().any(u8::is_ascii_alphabetic)
        && !looks_like_path(v)
        && bits_per_char(v) >= MIN_RANDOM_BITS_PER_CHAR
}

/// A path (`/etc/ssl/key.pem`, `~/x`, `./x`, `../x`) or a file name
/// (`server-2024.key`, `db.prod.acme.com`): it starts like a path, or ends
/// with `.` and one to four lowercase letters, and holds no `+` or `=`
/// (which base64 does) and few capitals.
fn looks_like_path(v: &[u8]) -> bool {
    let starts = [&b"/"[..], b"~/", b"./", b"../"]
        .iter()
        .any(|p| v.starts_with(p));
    let ext = v.iter().rposition(|c| *c == b'.').is_some_and(|p| {
        let e = &v[p + 1..];
        p > 0 && (1..=4).contains(&e.len()) && e.iter().all(u8::is_ascii_lowercase)
    });
    let upper = v.iter().filter(|c| c.is_ascii_uppercase()).count();
    let letters = v.iter().filter(|c| c.is_ascii_alphabetic()).count();
    (starts || ext) && !v.iter().any(|c| matches!(c, b'+' | b'=')) && upper * 4 <= letters
}

/// Shannon entropy of `v`'s bytes, in bits per byte.
pub(super) fn bits_per_char(v: &[u8]) -> f64 {
    let mut counts = [0u32; 256];
    for &c in v {
        counts[c as usize] += 1;
    }
    let n = v.len() as f64;
    counts
        .iter()
        .filter(|&&k| k > 0)
        .map(|&k| {
            let p = f64::from(k) / n;
            -p * crate::mathlog::log2(p)
        })
        .sum()
}

/// Is there a boundary between segments of a key name at `k[j]` (`_`, `-`,
/// `.`, `aB`, `2B`, and `ABc` before its `B`)?
fn is_boundary(k: &[u8], j: usize) -> bool {
    if j == 0 || j >= k.len() {
        return true;
    }
    let (a, c) = (k[j - 1], k[j]);
    !a.is_ascii_alphanumeric()
        || !c.is_ascii_alphanumeric()
        || ((a.is_ascii_lowercase() || a.is_ascii_digit()) && c.is_ascii_uppercase())
        || (a.is_ascii_uppercase()
            && c.is_ascii_uppercase()
            && k.get(j + 1).is_some_and(u8::is_ascii_lowercase))
}

/// The segment of key name `k` that ends at or before `end` (separators
/// skipped): its range, empty when there is none.
fn segment_before(k: &[u8], end: usize) -> (usize, usize) {
    let mut e = end;
    while e > 0 && !k[e - 1].is_ascii_alphanumeric() {
        e -= 1;
    }
    if e == 0 {
        return (0, 0);
    }
    let mut s = e - 1;
    while s > 0 && !is_boundary(k, s) {
        s -= 1;
    }
    (s, e)
}

fn is_one_of(word: &[u8], list: &[&str]) -> bool {
    list.iter().any(|w| word.eq_ignore_ascii_case(w.as_bytes()))
}

/// The part of a value the random test looks at: up to its first blank
/// (`KEY=v # comment`).
fn first_word(v: &[u8]) -> &[u8] {
    let n = v.iter().take_while(|c| !c.is_ascii_whitespace()).count();
    &v[..n]
}

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
    /// A value in a `;`-separated connection string (`…;Pwd=VALUE;…`): to
    /// the next `;`, quote or line end; `{…}` (ODBC's quoting) whole.
    ConnString,
    /// The text of an XML element (`<password>VALUE</password>`): to the
    /// closing tag or the end of the line.
    Element,
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

/// An assignment found around a credential word: the key and the value.
struct Assign {
    key_start: usize,
    key_end: usize,
    start: usize,
    end: usize,
}

/// `<key>` or `<ns:key>` around the key `b[key_start..key_end]`: where the
/// element's text starts.
fn element_text_start(b: &[u8], key_start: usize, key_end: usize) -> Option<usize> {
    let mut open = key_start;
    if open > 1 && b[open - 1] == b':' {
        let ns = b[..open - 1]
            .iter()
            .rev()
            .take(MAX_KEY_BYTES)
            .take_while(|c| is_key_byte(**c))
            .count();
        open -= 1 + ns;
    }
    (open > 0 && b[open - 1] == b'<' && b.get(key_end) == Some(&b'>')).then_some(key_end + 1)
}

/// The `.netrc` keywords that may come between `machine` and `password`.
const NETRC_KEYWORDS: &[&str] = &["login", "account", "port"];

/// How many `.netrc` keyword/value pairs are followed back from `password`.
const MAX_NETRC_PAIRS: usize = 8;

/// Is the `password` at `at` a `.netrc` entry's (`machine HOST login USER
/// password VALUE`, on one line or several)? Going back word by word,
/// pairs of a keyword of [`NETRC_KEYWORDS`] and its value lead to
/// `machine HOST` or `default`, and there is a `login` among them, or the
/// `machine` starts its line and its host has a dot or is `localhost` (so
/// prose about a "machine learning password" does not count).
fn netrc_password(b: &[u8], at: usize) -> bool {
    let escape = |j: usize| j >= 2 && b[j - 2] == b'\\' && matches!(b[j - 1], b'n' | b'r' | b't');
    let mut pos = at;
    // The word before `pos`: blanks, newlines and literal `\n`, `\r`, `\t`
    // escapes separate words; a quote opening the text around it (`echo
    // 'machine …'`) is not part of it.
    let mut prev_word = || {
        let mut end = pos;
        while end > 0 && (b[end - 1].is_ascii_whitespace() || escape(end)) {
            end -= if escape(end) { 2 } else { 1 };
        }
        let mut start = end;
        while start > 0 && b[start - 1].is_ascii_graphic() && !escape(start) {
            start -= 1;
        }
        pos = start;
        let start = start
            + b[start..end]
                .iter()
                .take_while(|c| matches!(c, b'"' | b'\''))
                .count();
        (start < end).then_some((start, &b[start..end]))
    };
    let mut login = false;
    for _ in 0..MAX_NETRC_PAIRS {
        let Some((_, value)) = prev_word() else {
            return false;
        };
        if value.eq_ignore_ascii_case(b"default") {
            return login;
        }
        let Some((k, keyword)) = prev_word() else {
            return false;
        };
        if keyword.eq_ignore_ascii_case(b"machine") {
            let blanks = b[..k]
                .iter()
                .rev()
                .take_while(|c| matches!(c, b' ' | b'\t' | b'"' | b'\''))
                .count();
            let line_start =
                k == blanks || matches!(b[k - blanks - 1], b'\n' | b'\r') || escape(k - blanks);
            let host = value.contains(&b'.') || value.eq_ignore_ascii_case(b"localhost");
            return login || (line_start && host);
        }
        if !is_one_of(keyword, NETRC_KEYWORDS) {
            return false;
        }
        login |= keyword.eq_ignore_ascii_case(b"login");
    }
    false
}

/// For a credential word found at `at` (`len` bytes), the assignment around
/// it. `None` when the key is not assigned a value there.
fn assignment_at(b: &[u8], at: usize, len: usize) -> Option<Assign> {
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
    if let Some(i) = element_text_start(b, key_start, key_end) {
        let end = value_end(b, i, Delim::Element);
        if end == i || b[i..].starts_with(MARKER_PREFIX.as_bytes()) {
            return None;
        }
        return Some(Assign {
            key_start,
            key_end,
            start: i,
            end,
        });
    }
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
    let mut word = b[key_start] == b'-';
    match separator(&b[i..])? {
        0 => {
            // Only `--flag VALUE` may do without a separator, and only when
            // the flag ends with the credential word (`--token-file PATH`
            // is not one); and `.netrc`'s `password VALUE`.
            let long = b[key_start..].starts_with(b"--") && key_end == at + len;
            let netrc = !quoted_key
                && key_start == at
                && key_end == at + len
                && b[at..key_end].eq_ignore_ascii_case(b"password")
                && netrc_password(b, at);
            if !((long || netrc) && !quoted_key && i > key_end && i < b.len() && b[i] != b'-') {
                return None;
            }
            word = true;
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
    } else if word {
        Delim::Word
    } else if key_start > 0 && matches!(b[key_start - 1], b'?' | b'&') {
        Delim::Query
    } else if key_start > 0 && b[key_start - 1] == b';' {
        Delim::ConnString
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
    Some(Assign {
        key_start,
        key_end,
        start: i,
        end,
    })
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
        Delim::ConnString => {
            if b[i] == b'{' {
                return b[i..]
                    .iter()
                    .position(|&c| c == b'}' || c == b'\n')
                    .map_or(n, |p| i + p + usize::from(b[i + p] == b'}'));
            }
            while j < n
                && !matches!(b[j], b';' | b'"' | b'\'' | b'\n' | b'\r')
                && !(b[j] == b'\\' && matches!(b.get(j + 1), Some(b'n' | b'r' | b'"')))
            {
                j += 1;
            }
            while j > i && matches!(b[j - 1], b' ' | b'\t') {
                j -= 1;
            }
            j
        }
        Delim::Element => {
            while j < n && !matches!(b[j], b'\n' | b'\r') && !b[j..].starts_with(b"</") {
                j += 1;
            }
            j
        }
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

/// Does a `PWD`/`OLDPWD` value name a directory (`/home/dev`, `~/x`,
/// `$HOME`, `C:\Users`)?
fn is_directory_value(v: &[u8]) -> bool {
    matches!(v.first(), Some(b'/' | b'~' | b'.' | b'$'))
        || (v.len() > 2
            && v[0].is_ascii_alphabetic()
            && v[1] == b':'
            && matches!(v[2], b'\\' | b'/'))
}

pub(super) fn redact_assignments(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut sp = Splice::default();
    let mut i = 0;
    while let Some((at, k)) = next_cred_word(b, i) {
        let len = CRED_KEYS[k].0.len();
        let Some(a) = assignment_at(b, at, len) else {
            i = at + 1;
            continue;
        };
        let key = &b[a.key_start..a.key_end];
        let value = &b[a.start..a.end];
        let (last, _) = segment_before(key, key.len());
        // A setting about the credential (`PASSWORD_MIN_LENGTH=12`): only
        // a random value. The shell's directories: never a path.
        let setting = a.key_start + last >= at + len
            && is_one_of(&key[last..], SETTING_QUALIFIERS)
            && !looks_random(first_word(value));
        if setting || (is_one_of(key, NOT_SECRET_KEYS) && is_directory_value(value)) {
            i = at + 1;
            continue;
        }
        // The kind comes from the first credential word in the whole key.
        let kind = (a.key_start..a.key_end)
            .find_map(|j| cred_word_at(&b[..a.key_end], j))
            .map_or(CRED_KEYS[k].1, |w| CRED_KEYS[w].1);
        sp.redact(text, a.start, a.end, kind);
        i = a.end;
    }
    sp.finish(text)
}

/// Shortest `auth` value checked for base64 of `user:password`.
const MIN_AUTH_BASE64: usize = 8;

/// Assignments to keys of [`RANDOM_KEYS`] whose value [looks
/// random](looks_random).
pub(super) fn redact_random_assignments(text: &str) -> Option<String> {
    /// The first byte of each word of [`RANDOM_KEYS`], in either case.
    static FIRST: [bool; 256] = {
        let mut t = [false; 256];
        let mut k = 0;
        while k < RANDOM_KEYS.len() {
            let c = RANDOM_KEYS[k].0.as_bytes()[0];
            t[c as usize] = true;
            t[c.to_ascii_uppercase() as usize] = true;
            k += 1;
        }
        t
    };
    let b = text.as_bytes();
    let mut sp = Splice::default();
    let mut i = 0;
    while let Some(off) = b[i..].iter().position(|c| FIRST[*c as usize]) {
        let at = i + off;
        i = at + 1;
        let Some(&(word, kind)) = RANDOM_KEYS
            .iter()
            .find(|(w, _)| starts_with_ci(&b[at..], w.as_bytes()))
        else {
            continue;
        };
        let len = word.len();
        if !is_boundary(b, at) || !is_boundary(b, at + len) {
            continue;
        }
        let Some(a) = assignment_at(b, at, len) else {
            continue;
        };
        if a.key_end != at + len {
            continue;
        }
        if word == "key" {
            let key = &b[a.key_start..at];
            let (s, e) = segment_before(key, key.len());
            if s == e || is_one_of(&key[s..e], NOT_SECRET_KEY_OWNERS) {
                continue;
            }
        }
        let v = first_word(&b[a.start..a.end]);
        let basic = word == "auth"
            && v.len() >= MIN_AUTH_BASE64
            && base64_decode(v).is_some_and(|d| {
                d.iter()
                    .position(|c| *c == b':')
                    .is_some_and(|p| p > 0 && p + 1 < d.len())
            });
        if basic || looks_random(v) {
            sp.redact(text, a.start, a.end, kind);
            i = a.end;
        }
    }
    sp.finish(text)
}
