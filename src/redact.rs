//! Secret redaction and text hygiene applied to every excerpt before any cap.
//!
//! [`clean`] runs three passes, in this order:
//!
//! 1. `<private>…</private>` spans are removed (tags matched ASCII
//!    case-insensitively, nesting counted). An unclosed `<private>` removes
//!    everything up to the end of the text: a forgotten closing tag must not
//!    leak what the user meant to hide. A stray `</private>` is removed and
//!    the text around it kept.
//! 2. Terminal and display tricks are stripped: ANSI escape sequences (CSI,
//!    OSC, two-byte `ESC x`, and their 8-bit C1 forms), C0 and C1 control
//!    characters except tab, newline and carriage return, DEL, bidi overrides
//!    and isolates (U+202A–U+202E, U+2066–U+2069), the bidi marks U+200E,
//!    U+200F and U+061C, and the invisible characters U+200B, U+2060–U+2064,
//!    U+180E and U+FEFF. The joiners U+200C/U+200D are kept: scripts and
//!    emoji need them and they cannot reorder text.
//! 3. Secrets are replaced by `[REDACTED:<kind>]` (the kinds are listed in
//!    [`KINDS`]).
//!
//! Cost: a single byte pass over the text looks for each rule's keywords; a
//! rule's regex is compiled (once per process) and run only when one of its
//! keywords occurs. Clean text therefore costs one pass and no compilation.
//! Every pattern uses ASCII classes only (the regex crate is built without
//! Unicode tables, and Unicode classes are a compile-time trap anyway).

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::{Captures, Regex};

/// Every kind a redaction marker can name, in rule order.
pub const KINDS: &[&str] = &[
    "private_key",
    "aws_access_key",
    "github_token",
    "gitlab_token",
    "slack_token",
    "stripe_key",
    "anthropic_key",
    "openai_key",
    "google_api_key",
    "jwt",
    "authorization",
    "bearer",
    "url_credentials",
    "aws_secret",
    "password",
    "secret",
    "token",
    "api_key",
];

/// The marker prefix every redaction starts with.
pub const MARKER_PREFIX: &str = "[REDACTED:";

/// Remove private spans, strip control/ANSI/bidi characters, redact secrets.
pub fn clean(text: &str) -> String {
    let text = strip_private(text);
    let text = strip_controls(&text);
    redact_secrets(&text).into_owned()
}

// ---------------------------------------------------------------------------
// 1. <private> spans

const OPEN: &[u8] = b"<private>";
const CLOSE: &[u8] = b"</private>";

fn strip_private(text: &str) -> Cow<'_, str> {
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

fn starts_with_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len() && hay[..needle.len()].eq_ignore_ascii_case(needle)
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

/// Whether [`clean`] removes `c` (so no cleaned text holds it).
pub(crate) fn is_stripped_control(c: char) -> bool {
    (c.is_control() && !matches!(c, '\t' | '\n' | '\r')) || is_invisible(c)
}

/// Could `text` hold a character [`strip_controls`] removes? A byte check:
/// ASCII controls and DEL, and the lead bytes of every stripped non-ASCII
/// character (C1 controls `C2`, U+061C `D8`, U+180E `E1`, U+200x–U+206x
/// `E2`, U+FEFF `EF`). False positives only cost the exact pass.
fn may_hold_controls(text: &str) -> bool {
    let suspect = |b: u8| {
        (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r'))
            | matches!(b, 0x7f | 0xc2 | 0xd8 | 0xe1 | 0xe2 | 0xef)
    };
    // Branch-free within a chunk so the compiler can vectorise it.
    text.as_bytes()
        .chunks(64)
        .any(|c| c.iter().fold(false, |acc, &b| acc | suspect(b)))
}

fn strip_controls(text: &str) -> Cow<'_, str> {
    if !may_hold_controls(text) || !text.chars().any(is_stripped_control) {
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

// ---------------------------------------------------------------------------
// 3. Secrets

/// How one rule finds secrets.
#[derive(Clone, Copy)]
enum Matcher {
    /// A regex (compiled on first use). When it has groups named `s1`,
    /// `s2`, … only those are replaced (names and separators around them
    /// stay); otherwise the whole match is.
    Regex(&'static str),
    /// `-----BEGIN … PRIVATE KEY-----` through its END line, or to the end of
    /// the text when the END line is missing.
    PrivateKey,
    /// `Bearer <token>` (ASCII case-insensitive, token of 16 or more
    /// `[A-Za-z0-9._~+/=-]`): the token.
    Bearer,
    /// `scheme://user:password@host`: the `user:password` part.
    UrlCredentials,
    /// `key = value`, `key: value`, `"key": "value"` and `--key value` where
    /// the key names a credential (see [`CRED_KEYS`]).
    Assignment,
}

/// One redaction rule: keywords for the prefilter (ASCII, matched
/// case-insensitively), a matcher, and the kind its markers name
/// (assignments take theirs from the key).
struct Rule {
    keywords: &'static [&'static str],
    matcher: Matcher,
    kind: &'static str,
}

/// ASCII whitespace, spelled out (`\s` would be Unicode-aware).
macro_rules! ws {
    () => {
        r"[ \t\r\n\x0B\x0C]"
    };
}

/// Words that make a key name a credential, the kind they give, and whether
/// the word must be a whole segment of the key (split at `_`, `-`, `.` and
/// camel case): `DB_PASS` and `dbPass` are credentials, `passed` is not.
/// Checked in order: `auth_token` is a token, `db_password` a password.
const CRED_KEYS: &[(&str, &str, bool)] = &[
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

/// The credential word of [`CRED_KEYS`] at `b[at..]`, if any (index).
fn cred_word_at(b: &[u8], at: usize) -> Option<usize> {
    CRED_KEYS.iter().position(|(w, _, whole)| {
        starts_with_ci(&b[at..], w.as_bytes()) && (!whole || is_segment(b, at, w.len()))
    })
}

/// Schemes kept in front of a redacted `Authorization` value.
const AUTH_SCHEMES: &[&str] = &["bearer", "basic", "token", "digest"];

/// The rules, most specific first so markers name the most precise kind.
const RULES: &[Rule] = &[
    Rule {
        keywords: &["private key"],
        matcher: Matcher::PrivateKey,
        kind: "private_key",
    },
    Rule {
        keywords: &["akia", "asia", "abia", "acca"],
        matcher: Matcher::Regex(r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?-u:\b)"),
        kind: "aws_access_key",
    },
    Rule {
        keywords: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        matcher: Matcher::Regex(r"gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}"),
        kind: "github_token",
    },
    Rule {
        keywords: &["glpat-"],
        matcher: Matcher::Regex(r"glpat-[A-Za-z0-9_-]{20,}"),
        kind: "gitlab_token",
    },
    Rule {
        keywords: &["xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xapp-"],
        matcher: Matcher::Regex(r"xox[abprs]-[A-Za-z0-9-]{10,}|xapp-[0-9]+-[A-Za-z0-9-]{10,}"),
        kind: "slack_token",
    },
    Rule {
        keywords: &["sk_live_", "rk_live_", "sk_test_", "rk_test_"],
        matcher: Matcher::Regex(r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"),
        kind: "stripe_key",
    },
    Rule {
        keywords: &["sk-ant-"],
        matcher: Matcher::Regex(r"sk-ant-[A-Za-z0-9_-]{20,}"),
        kind: "anthropic_key",
    },
    Rule {
        keywords: &["sk-"],
        matcher: Matcher::Regex(r"(?-u:\b)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        kind: "openai_key",
    },
    Rule {
        keywords: &["aiza"],
        matcher: Matcher::Regex(r"AIza[A-Za-z0-9_-]{35,}"),
        kind: "google_api_key",
    },
    Rule {
        keywords: &["eyj"],
        matcher: Matcher::Regex(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
        kind: "jwt",
    },
    Rule {
        keywords: &["bearer"],
        matcher: Matcher::Bearer,
        kind: "bearer",
    },
    Rule {
        keywords: &["://"],
        matcher: Matcher::UrlCredentials,
        kind: "url_credentials",
    },
    Rule {
        keywords: &["aws_secret", "secret_access_key", "secretaccesskey"],
        matcher: Matcher::Regex(concat!(
            r#"(?i-u:aws_?secret(?:_?access)?_?key)["']?"#,
            ws!(),
            r"*[:=]",
            ws!(),
            r#"*["']?(?P<s1>[A-Za-z0-9/+=]{30,})"#
        )),
        kind: "aws_secret",
    },
    Rule {
        keywords: &[
            "authorization",
            "password",
            "passwd",
            "passphrase",
            "pass",
            "pwd",
            "secret",
            "credential",
            "private_key",
            "private-key",
            "privatekey",
            "token",
            "api_key",
            "api-key",
            "apikey",
            "access_key",
            "access-key",
        ],
        matcher: Matcher::Assignment,
        kind: "token",
    },
];

fn compiled(i: usize) -> Option<&'static Regex> {
    static CELLS: [OnceLock<Regex>; RULES.len()] = [const { OnceLock::new() }; RULES.len()];
    let Matcher::Regex(pattern) = RULES[i].matcher else {
        return None;
    };
    Some(
        CELLS[i].get_or_init(|| {
            Regex::new(pattern).expect("redaction patterns are valid (unit-tested)")
        }),
    )
}

/// Compile rule `i` now (benchmarks measure the cost); returns its kind.
#[doc(hidden)]
pub fn warm_rule(i: usize) -> Option<&'static str> {
    let rule = RULES.get(i)?;
    compiled(i);
    Some(rule.kind)
}

const fn lower(b: u8) -> u8 {
    b.to_ascii_lowercase()
}

/// Bit `(a << 8) | b` is set when some keyword starts with the bytes `a b`
/// (lowercased). Built at compile time; one lookup per text byte.
static BIGRAMS: [u64; 1024] = {
    let mut t = [0u64; 1024];
    let mut r = 0;
    while r < RULES.len() {
        let kws = RULES[r].keywords;
        let mut k = 0;
        while k < kws.len() {
            let kw = kws[k].as_bytes();
            let idx = ((lower(kw[0]) as usize) << 8) | lower(kw[1]) as usize;
            t[idx / 64] |= 1 << (idx % 64);
            k += 1;
        }
        r += 1;
    }
    t
};

/// (keyword, rule index) pairs.
type Keywords = Vec<(&'static [u8], usize)>;

/// Keywords by lowercased first byte.
fn keywords_by_first_byte() -> &'static [Keywords] {
    static INDEX: OnceLock<Vec<Keywords>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut by_first = vec![Vec::new(); 256];
        for (ri, rule) in RULES.iter().enumerate() {
            for kw in rule.keywords {
                by_first[lower(kw.as_bytes()[0]) as usize].push((kw.as_bytes(), ri));
            }
        }
        by_first
    })
}

/// Which rules have a keyword in `text` (ASCII case-insensitive), as a bit
/// set over rule indices. One bigram-table lookup per byte; keywords are
/// compared only where a keyword's first two bytes occur.
fn prefilter(text: &str) -> u64 {
    const _: () = assert!(RULES.len() <= 64);
    let b = text.as_bytes();
    let mut hits = 0u64;
    for i in 0..b.len().saturating_sub(1) {
        let idx = ((lower(b[i]) as usize) << 8) | lower(b[i + 1]) as usize;
        if BIGRAMS[idx / 64] & (1 << (idx % 64)) == 0 {
            continue;
        }
        for &(kw, ri) in &keywords_by_first_byte()[lower(b[i]) as usize] {
            if hits & (1 << ri) == 0 && starts_with_ci(&b[i..], kw) {
                hits |= 1 << ri;
            }
        }
    }
    hits
}

fn redact_secrets(text: &str) -> Cow<'_, str> {
    let hits = prefilter(text);
    if hits == 0 {
        return Cow::Borrowed(text);
    }
    let mut cur = Cow::Borrowed(text);
    for (i, rule) in RULES.iter().enumerate() {
        if hits & (1 << i) == 0 {
            continue;
        }
        let next = match rule.matcher {
            Matcher::Regex(_) => {
                let re = compiled(i).expect("a regex rule");
                match re.replace_all(&cur, |c: &Captures<'_>| rewrite(rule.kind, c)) {
                    Cow::Owned(s) => Some(s),
                    Cow::Borrowed(_) => None,
                }
            }
            Matcher::PrivateKey => redact_private_keys(&cur),
            Matcher::UrlCredentials => redact_url_credentials(&cur),
            Matcher::Bearer => redact_bearer(&cur),
            Matcher::Assignment => redact_assignments(&cur),
        };
        if let Some(s) = next {
            cur = Cow::Owned(s);
        }
    }
    cur
}

fn marker(kind: &str) -> String {
    format!("{MARKER_PREFIX}{kind}]")
}

/// The replacement text for one regex match.
fn rewrite(kind: &str, c: &Captures<'_>) -> String {
    let whole = c.get(0).expect("group 0 always matches");
    match ["s1", "s2", "s3"].iter().find_map(|n| c.name(n)) {
        None => marker(kind),
        // Already redacted by a more specific rule: keep its marker.
        Some(s) if s.as_str().starts_with(MARKER_PREFIX) => whole.as_str().to_string(),
        Some(s) => {
            let h = whole.as_str();
            let (a, b) = (s.start() - whole.start(), s.end() - whole.start());
            format!("{}{}{}", &h[..a], marker(kind), &h[b..])
        }
    }
}

/// `-----BEGIN <LABEL> PRIVATE KEY-----` or `… PRIVATE KEY BLOCK-----` where
/// the label is `[ A-Z0-9]*`; returns the header's length at `s`.
fn key_armor(s: &[u8], word: &[u8]) -> Option<usize> {
    let rest = s.strip_prefix(b"-----")?.strip_prefix(word)?;
    let label = rest
        .iter()
        .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || **b == b' ')
        .count();
    let tail = &rest[label..];
    let label = &rest[..label];
    if !label.ends_with(b"PRIVATE KEY") && !label.ends_with(b"PRIVATE KEY BLOCK") {
        return None;
    }
    tail.starts_with(b"-----")
        .then_some(5 + word.len() + label.len() + 5)
}

fn redact_private_keys(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut out = String::new();
    let (mut i, mut kept) = (0, 0);
    while let Some(off) = find(&b[i..], b"-----BEGIN") {
        let start = i + off;
        let Some(h) = key_armor(&b[start..], b"BEGIN") else {
            i = start + 5;
            continue;
        };
        let mut end = b.len();
        let mut j = start + h;
        while let Some(off) = find(&b[j..], b"-----END") {
            if let Some(n) = key_armor(&b[j + off..], b"END") {
                end = j + off + n;
                break;
            }
            j += off + 5;
        }
        out.push_str(&text[kept..start]);
        out.push_str(&marker("private_key"));
        kept = end;
        i = end;
    }
    (kept > 0).then(|| {
        out.push_str(&text[kept..]);
        out
    })
}

/// Shortest bearer token redacted.
const MIN_BEARER_TOKEN: usize = 16;

fn is_bearer_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"._~+/=-".contains(&b)
}

fn redact_bearer(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut out = String::new();
    let (mut kept, mut i) = (0, 0);
    while i + 6 < b.len() {
        let Some(off) = b[i..]
            .windows(6)
            .position(|w| w.eq_ignore_ascii_case(b"bearer"))
        else {
            break;
        };
        let ws_start = i + off + 6;
        let start = ws_start
            + b[ws_start..]
                .iter()
                .take_while(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c))
                .count();
        let end = start
            + b[start..]
                .iter()
                .take_while(|c| is_bearer_byte(**c))
                .count();
        i = ws_start;
        if start == ws_start || end - start < MIN_BEARER_TOKEN {
            continue;
        }
        out.push_str(&text[kept..start]);
        out.push_str(&marker("bearer"));
        kept = end;
        i = end;
    }
    (kept > 0).then(|| {
        out.push_str(&text[kept..]);
        out
    })
}

/// After each `scheme://`, a `user:password@` before any `/`, whitespace or
/// control character is replaced (user and password together).
fn redact_url_credentials(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut out = String::new();
    let (mut kept, mut i) = (0, 0);
    while let Some(off) = find(&b[i..], b"://") {
        let start = i + off + 3;
        i = start;
        // A scheme ends with an ASCII letter or digit right before `://`.
        if start < 4 || !b[start - 4].is_ascii_alphanumeric() {
            continue;
        }
        let auth_len = b[start..]
            .iter()
            .take_while(|c| !matches!(c, b'/' | b'@' | 0..=b' ' | 0x7f))
            .count();
        let end = start + auth_len;
        let colon = b[start..end].iter().position(|c| *c == b':');
        let valid = end < b.len()
            && b[end] == b'@'
            && matches!(colon, Some(p) if p > 0 && p + 1 < auth_len);
        if !valid || b[start..].starts_with(MARKER_PREFIX.as_bytes()) {
            continue;
        }
        out.push_str(&text[kept..start]);
        out.push_str(&marker("url_credentials"));
        kept = end;
        i = end;
    }
    (kept > 0).then(|| {
        out.push_str(&text[kept..]);
        out
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// How far a key name is followed on each side of its credential word.
const MAX_KEY_BYTES: usize = 128;

fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

/// Bigram table (as [`BIGRAMS`]) of the credential words only.
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

/// For a credential word found at `at` (`len` bytes), the assignment around
/// it: (key start, value start, value end). `None` when the key is not
/// assigned a value there.
fn assignment_at(b: &[u8], at: usize, len: usize) -> Option<(usize, usize, usize)> {
    // Keys are bounded on both sides so a long run of key bytes holding many
    // credential words stays linear.
    let lo = at.saturating_sub(MAX_KEY_BYTES);
    let key_start = b[lo..at]
        .iter()
        .rposition(|c| !is_key_byte(*c))
        .map_or(lo, |p| lo + p + 1);
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
    if i < b.len() && matches!(b[i], b'"' | b'\'') {
        i += 1;
    }
    blank(&mut i);
    if i < b.len() && matches!(b[i], b':' | b'=') {
        i += 1;
        blank(&mut i);
    } else {
        // Only `--flag VALUE` may do without `:` or `=`, and only when the
        // flag ends with the credential word (`--token-file PATH` is not one).
        let flag = b[key_start..].starts_with(b"--") && key_end == at + len;
        if !(flag && i > key_end && i < b.len() && b[i] != b'-') {
            return None;
        }
    }
    let quote = (i < b.len() && matches!(b[i], b'"' | b'\'')).then(|| b[i]);
    if quote.is_some() {
        i += 1;
    }
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
    let stop: &[u8] = match quote {
        Some(b'"') => b"\"\r\n",
        Some(_) => b"'\r\n",
        None => b" \t\r\n\"',;&)}]",
    };
    let end = i + b[i..].iter().take_while(|c| !stop.contains(c)).count();
    if end == i || b[i..].starts_with(MARKER_PREFIX.as_bytes()) {
        return None;
    }
    Some((key_start, i, end))
}

fn redact_assignments(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut out = String::new();
    let (mut kept, mut i) = (0, 0);
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
        out.push_str(&text[kept..start]);
        out.push_str(&marker(kind));
        kept = end;
        i = end;
    }
    (kept > 0).then(|| {
        out.push_str(&text[kept..]);
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(kind: &str) -> String {
        format!("[REDACTED:{kind}]")
    }

    #[test]
    fn every_pattern_compiles() {
        for (i, rule) in RULES.iter().enumerate() {
            assert_eq!(warm_rule(i), Some(rule.kind));
        }
        assert_eq!(warm_rule(RULES.len()), None);
    }

    #[test]
    fn every_kind_is_listed() {
        for r in RULES
            .iter()
            .filter(|r| !matches!(r.matcher, Matcher::Assignment))
        {
            assert!(KINDS.contains(&r.kind), "{} missing from KINDS", r.kind);
        }
        for (_, k, _) in CRED_KEYS {
            assert!(KINDS.contains(k), "{k} missing from KINDS");
        }
    }

    #[test]
    fn cred_words_are_prefilter_keywords() {
        for (w, _, _) in CRED_KEYS {
            let idx = RULES
                .iter()
                .position(|r| matches!(r.matcher, Matcher::Assignment));
            assert!(
                RULES[idx.unwrap()].keywords.contains(w),
                "{w} is not a keyword"
            );
        }
    }

    /// (input, expected output) pairs: a realistic fake secret per kind.
    const CASES: &[(&str, &str)] = &[
        (
            "key AKIAQYLPMN5HHHFPZAM2 here",
            "key [REDACTED:aws_access_key] here",
        ),
        (
            "ASIAY34FZKBOKMUTVV7A,",
            "[REDACTED:aws_access_key],",
        ),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key = [REDACTED:aws_secret]",
        ),
        (
            "git clone https://ghp_R7bE3kQ9xZ2mN4pL6vT8wY1cA5sD0fG3hJ2k@github.com",
            "git clone https://[REDACTED:github_token]@github.com",
        ),
        (
            "GH=gho_16C7e42F292c6912E7710c838347Ae178B4a",
            "GH=[REDACTED:github_token]",
        ),
        (
            "t ghs_16C7e42F292c6912E7710c838347Ae178B4a ghu_16C7e42F292c6912E7710c838347Ae178B4a",
            "t [REDACTED:github_token] [REDACTED:github_token]",
        ),
        (
            "refresh ghr_1B4a2e77838347a7E420ce178F2E7c6912E169246c34E1ccbF66C46812d16D5B1A9Dc86A1498",
            "refresh [REDACTED:github_token]",
        ),
        (
            "github_pat_11ABCDEFG0123456789abc_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW",
            "[REDACTED:github_token]",
        ),
        ("glpat-xYz12_AbCdEfGhIjKlMn34", "[REDACTED:gitlab_token]"),
        (
            "SLACK xoxb-2637486131-2637486132-q7E2H8a0Xk1R4nT6yPz3vB9c",
            "SLACK [REDACTED:slack_token]",
        ),
        (
            "xapp-1-A02ABCDEF12-3456789012345-abcdef0123456789",
            "[REDACTED:slack_token]",
        ),
        (
            "stripe sk_live_51Hx8JqLk2Zq7mN9pR3sT5vW",
            "stripe [REDACTED:stripe_key]",
        ),
        (
            "rk_live_51Hx8JqLk2Zq7mN9pR3sT5vW sk_test_4eC39HqLyjWDarjtT1zdp7dc",
            "[REDACTED:stripe_key] [REDACTED:stripe_key]",
        ),
        (
            "sk-ant-api03-Qx7RkP2mZ9vT4nL8bW3cY6dF1gH5jK0sA2eU7iO4pM9qN3rX6tV8yB1zC5wD0fG-AA",
            "[REDACTED:anthropic_key]",
        ),
        (
            "OPENAI=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
            "OPENAI=[REDACTED:openai_key]",
        ),
        (
            "use sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zT3BlbkFJ now",
            "use [REDACTED:openai_key] now",
        ),
        (
            "maps AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY!",
            "maps [REDACTED:google_api_key]!",
        ),
        (
            "Authorization: Bearer abcDEF123456ghiJKL789mno",
            "Authorization: Bearer [REDACTED:bearer]",
        ),
        (
            "curl -H 'authorization: Basic dXNlcjpodW50ZXIyMjI='",
            "curl -H 'authorization: Basic [REDACTED:authorization]'",
        ),
        (
            "token type bearer 4f9a2c7e1b8d3f6a0c5e9b2d7f1a4c8e",
            "token type bearer [REDACTED:bearer]",
        ),
        (
            "id eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U end",
            "id [REDACTED:jwt] end",
        ),
        (
            "DATABASE_URL=postgres://app:s3cr3t-P4ss@db.internal:5432/app",
            "DATABASE_URL=postgres://[REDACTED:url_credentials]@db.internal:5432/app",
        ),
        ("password=hunter2!", "password=[REDACTED:password]"),
        (
            r#"{"db_password": "correct horse battery"}"#,
            r#"{"db_password": "[REDACTED:password]"}"#,
        ),
        ("passwd: 'pa ss'", "passwd: '[REDACTED:password]'"),
        ("cut off: password = 'pa s", "cut off: password = '[REDACTED:password]"),
        ("CLIENT_SECRET=abc123def", "CLIENT_SECRET=[REDACTED:secret]"),
        ("auth_token = q1w2e3r4", "auth_token = [REDACTED:token]"),
        ("export API_KEY=zz9-plural", "export API_KEY=[REDACTED:api_key]"),
        ("apiKey: 'k-123'", "apiKey: '[REDACTED:api_key]'"),
        (
            r#"{"Authorization": "Token abc12345"}"#,
            r#"{"Authorization": "Token [REDACTED:authorization]"}"#,
        ),
        (
            "Authorization: short-tok",
            "Authorization: [REDACTED:authorization]",
        ),
        (
            "url?access_token=abc.def&x=1",
            "url?access_token=[REDACTED:token]&x=1",
        ),
        ("DB_PASS=s3cr3t", "DB_PASS=[REDACTED:password]"),
        ("MYSQL_PWD='x y'", "MYSQL_PWD='[REDACTED:password]'"),
        ("dbPass: abc", "dbPass: [REDACTED:password]"),
        (
            "GOOGLE_CREDENTIALS={\"k\":1}",
            "GOOGLE_CREDENTIALS=[REDACTED:secret]\"k\":1}",
        ),
        ("PRIVATE_KEY=abc", "PRIVATE_KEY=[REDACTED:secret]"),
        (
            "mysql --password hunter2 -u root",
            "mysql --password [REDACTED:password] -u root",
        ),
    ];

    #[test]
    fn redacts_each_kind() {
        for (input, want) in CASES {
            assert_eq!(&clean(input), want, "input: {input}");
        }
    }

    #[test]
    fn private_key_blocks_closed_and_unclosed() {
        let k = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bq\nxyz==\n-----END RSA PRIVATE KEY-----";
        assert_eq!(
            clean(&format!("a\n{k}\nb")),
            format!("a\n{}\nb", redacted("private_key"))
        );
        let open = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\ncut off";
        assert_eq!(
            clean(&format!("x {open}")),
            format!("x {}", redacted("private_key"))
        );
        let pgp = "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK----- tail";
        assert_eq!(clean(pgp), format!("{} tail", redacted("private_key")));
    }

    /// Near misses: each must come out unchanged.
    const NEAR_MISSES: &[&str] = &[
        "AKIA1234 is too short",
        "akiaqylpmn5hhhfpzam2 lowercase",
        "XAKIAQYLPMN5HHHFPZAM2 glued to a word",
        "aws_secret_access_key is documented in the guide",
        "ghp_short and gho_ are prefixes",
        "github_pat_ alone",
        "glpat-abc",
        "xoxz-123456789012345 xoxb-123",
        "pk_live_51Hx8JqLk2Zq7mN9pR3sT5vW is publishable",
        "sk_live_short",
        "sk-ant-tiny",
        "sk-test is the dummy key",
        "risk-assessment-for-the-quarter-2024-final",
        "AIzaShort",
        "eyJhbGciOiJIUzI1NiJ9 alone",
        "the bearer of bad news",
        "Authorization header is missing",
        "https://example.com:8080/path and git@github.com:owner/repo.git",
        "https://user@host.example/path",
        "see https://host/a:b@c and ://x:y@z and https://:pw@h and https://u:@h",
        "the password is long",
        "password_policy",
        "tokens count",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBg\n-----END PUBLIC KEY-----",
        "--token-file /etc/app.tok and --token-count=",
        "token token token: ",
        "tests passed=12 failed=0 bypass=1 compass: north",
        "PWD=/home/dev/projects/demo OLDPWD=/home/dev",
        "keep the secret sauce; api_key rotation is due; token count 5",
        "--password --verbose",
    ];

    #[test]
    fn near_misses_are_untouched() {
        for input in NEAR_MISSES {
            assert_eq!(&clean(input), input);
        }
    }

    #[test]
    fn pathological_runs_stay_linear() {
        // Quadratic scanning would take minutes here; linear takes
        // milliseconds. Outputs are checked, times are not.
        let n = 64 * 1024;
        let words = "token".repeat(n / 5);
        assert_eq!(clean(&words), words);
        let assigned = format!("{}=v", "token".repeat(n / 5));
        assert_eq!(
            clean(&assigned),
            format!("{}=[REDACTED:token]", "token".repeat(n / 5))
        );
        let urls = "a://".repeat(n / 4);
        assert_eq!(clean(&urls), urls);
        let bearers = "bearer ".repeat(n / 7);
        assert_eq!(clean(&bearers), bearers);
        let armor = "-----BEGIN X-----END ".repeat(n / 21);
        assert_eq!(clean(&armor), armor);
        let tags = "</x".repeat(n / 3);
        assert_eq!(clean(&tags), tags);
    }

    #[test]
    fn bearer_token_length_edge() {
        let at = "a".repeat(MIN_BEARER_TOKEN);
        let under = "a".repeat(MIN_BEARER_TOKEN - 1);
        assert_eq!(clean(&format!("BEARER {at}")), "BEARER [REDACTED:bearer]");
        assert_eq!(clean(&format!("Bearer {under}")), format!("Bearer {under}"));
        assert_eq!(
            clean(&format!("bearer\n\t{at}!")),
            "bearer\n\t[REDACTED:bearer]!"
        );
        assert_eq!(clean(&format!("bearer{at}")), format!("bearer{at}"));
    }

    #[test]
    fn more_specific_marker_survives_generic_rules() {
        assert_eq!(
            clean("GITHUB_TOKEN=ghp_R7bE3kQ9xZ2mN4pL6vT8wY1cA5sD0fG3hJ2k"),
            "GITHUB_TOKEN=[REDACTED:github_token]"
        );
        assert_eq!(
            clean("password: sk-ant-api03-Qx7RkP2mZ9vT4nL8bW3cY6dF1gH5jK0s"),
            "password: [REDACTED:anthropic_key]"
        );
    }

    #[test]
    fn private_spans() {
        assert_eq!(clean("a <private>hidden</private> b"), "a  b");
        assert_eq!(clean("a <PRIVATE>x</Private>b"), "a b");
        assert_eq!(clean("keep <private>gone"), "keep ");
        assert_eq!(
            clean("a<private>x<private>y</private>z</private>b"),
            "ab",
            "nesting is counted"
        );
        assert_eq!(clean("a</private>b"), "ab");
        assert_eq!(clean("<privately> <p>"), "<privately> <p>");
        assert_eq!(
            clean("<private>AKIAQYLPMN5HHHFPZAM2</private>ok"),
            "ok",
            "private spans go before anything else"
        );
    }

    #[test]
    fn controls_ansi_bidi() {
        assert_eq!(clean("\u{1b}[31mred\u{1b}[0m"), "red");
        assert_eq!(clean("\u{1b}]0;title\u{7}text"), "text");
        assert_eq!(clean("\u{1b}]8;;http://x\u{1b}\\link"), "link");
        assert_eq!(clean("a\u{0}b\u{7f}c\u{85}d\u{9b}1mE"), "abcdE");
        assert_eq!(clean("tab\tnl\ncr\r"), "tab\tnl\ncr\r");
        assert_eq!(clean("x\u{202e}gpj.exe\u{202c}"), "xgpj.exe");
        assert_eq!(clean("a\u{2066}b\u{2069}c\u{200b}d\u{feff}e"), "abcde");
        assert_eq!(clean("emoji 👩\u{200d}💻 ok"), "emoji 👩\u{200d}💻 ok");
        assert_eq!(clean("\u{1b}(Bx"), "x");
    }

    #[test]
    fn the_control_byte_check_covers_every_stripped_char() {
        let all = (0..=0x10ffffu32).filter_map(char::from_u32);
        for c in all.filter(|c| is_stripped_control(*c)) {
            assert!(
                may_hold_controls(c.encode_utf8(&mut [0; 4])),
                "{:x}",
                c as u32
            );
        }
    }

    #[test]
    fn ansi_inside_a_secret_does_not_hide_it() {
        assert_eq!(
            clean("AKIA\u{1b}[0mQYLPMN5HHHFPZAM2"),
            "[REDACTED:aws_access_key]"
        );
        assert_eq!(
            clean("AKIAQYLPMN\u{200b}5HHHFPZAM2"),
            "[REDACTED:aws_access_key]"
        );
    }

    #[test]
    fn clean_text_is_borrowed_through() {
        let t = "plain words, nothing to see: 42 files changed";
        assert_eq!(clean(t), t);
        assert_eq!(prefilter(t), 0);
        assert!(matches!(redact_secrets(t), Cow::Borrowed(_)));
    }

    #[test]
    fn prefilter_is_case_insensitive_and_selective() {
        let hits = prefilter("PASSWORD");
        let idx = RULES
            .iter()
            .position(|r| r.keywords.contains(&"password"))
            .unwrap();
        assert_eq!(hits, 1 << idx);
    }

    #[test]
    fn utf8_around_secrets_is_kept() {
        assert_eq!(
            clean("é password=ünïcödé ok"),
            "é password=[REDACTED:password] ok"
        );
    }
}
