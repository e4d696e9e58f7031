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
    "npm_token",
    "pypi_token",
    "huggingface_token",
    "slack_webhook",
    "discord_webhook",
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
///
/// The one entry point: every surface that stores text (the hook's
/// records, MCP memory writes, `memhook serve`'s ingest) calls it on that
/// text, whatever its source, before any cap. It never fails and is
/// idempotent: cleaning cleaned text changes nothing.
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

fn is_stripped_control(c: char) -> bool {
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
    /// A regex whose match must stand alone: no ASCII letter or digit glued
    /// to either side. A literal escape (`\n`, `\r`, `\t`, `\uXXXX`) right
    /// before it counts as a separator, so a key at the start of a line
    /// inside a JSON-escaped string is found; `_` counts too (`KEY_old`).
    Word(&'static str),
    /// `-----BEGIN … PRIVATE KEY-----` through its END line, or to the end of
    /// the text when the END line is missing.
    PrivateKey,
    /// `Bearer <token>` (ASCII case-insensitive, token of 16 or more
    /// `[A-Za-z0-9._~+/=-]`): the token.
    Bearer,
    /// `Basic <base64>` where the base64 decodes to `user:password`: the
    /// base64 (see [`redact_basic`]).
    Basic,
    /// `scheme://user:password@host`: the `user:password` part.
    UrlCredentials,
    /// Password flags of known commands: `mysql -pSECRET`,
    /// `curl -u user:SECRET`, … (see [`COMMAND_FLAGS`]).
    CommandFlags,
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

/// The rules, most specific first so markers name the most precise kind.
const RULES: &[Rule] = &[
    Rule {
        keywords: &["private key"],
        matcher: Matcher::PrivateKey,
        kind: "private_key",
    },
    Rule {
        keywords: &["akia", "asia", "abia", "acca"],
        matcher: Matcher::Word(r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}"),
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
        matcher: Matcher::Word(r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        kind: "openai_key",
    },
    Rule {
        keywords: &["npm_"],
        matcher: Matcher::Word(r"npm_[A-Za-z0-9]{36,}"),
        kind: "npm_token",
    },
    Rule {
        keywords: &["pypi-ag"],
        matcher: Matcher::Regex(r"pypi-AgE[A-Za-z0-9_-]{50,}"),
        kind: "pypi_token",
    },
    Rule {
        keywords: &["hf_"],
        matcher: Matcher::Word(r"hf_[A-Za-z0-9]{34,}"),
        kind: "huggingface_token",
    },
    Rule {
        keywords: &["hooks.slack.com"],
        matcher: Matcher::Regex(
            r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s1>[A-Za-z0-9_/-]{16,})",
        ),
        kind: "slack_webhook",
    },
    Rule {
        keywords: &["discord.com/api/webhooks", "discordapp.com/api/webhooks"],
        matcher: Matcher::Regex(
            r"discord(?:app)?\.com/api/webhooks/(?P<s1>[0-9]{5,}/[A-Za-z0-9_-]{20,})",
        ),
        kind: "discord_webhook",
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
        keywords: &["basic"],
        matcher: Matcher::Basic,
        kind: "authorization",
    },
    Rule {
        keywords: &["://"],
        matcher: Matcher::UrlCredentials,
        kind: "url_credentials",
    },
    Rule {
        keywords: &[
            "mysql",
            "mariadb",
            "sshpass",
            "redis-cli",
            "valkey-cli",
            "login",
            "curl",
        ],
        matcher: Matcher::CommandFlags,
        kind: "password",
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
    let (Matcher::Regex(pattern) | Matcher::Word(pattern)) = RULES[i].matcher else {
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
            Matcher::Word(_) => redact_words(compiled(i).expect("a regex rule"), rule.kind, &cur),
            Matcher::PrivateKey => redact_private_keys(&cur),
            Matcher::Basic => redact_basic(&cur),
            Matcher::UrlCredentials => redact_url_credentials(&cur),
            Matcher::CommandFlags => redact_command_flags(&cur),
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

/// Is `b[start..end]` free of letters and digits glued to either side? A
/// literal `\n`, `\r`, `\t` or `\uXXXX` escape right before it separates.
fn stands_alone(b: &[u8], start: usize, end: usize) -> bool {
    let glued = |c: u8| c.is_ascii_alphanumeric();
    let escaped = |n: usize| {
        start >= n
            && b[start - n] == b'\\'
            && match n {
                2 => matches!(b[start - 1], b'n' | b'r' | b't'),
                _ => b[start - 5] == b'u' && b[start - 4..start].iter().all(u8::is_ascii_hexdigit),
            }
    };
    let before = start == 0 || !glued(b[start - 1]) || escaped(2) || escaped(6);
    let after = end == b.len() || !glued(b[end]);
    before && after
}

/// Replace every match of `re` that [`stands_alone`]. A match glued to a
/// word is skipped and the search goes on from its next byte, so a real
/// secret overlapping it is still found.
fn redact_words(re: &Regex, kind: &str, text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut sp = Splice::default();
    let mut at = 0;
    while let Some(m) = re.find_at(text, at) {
        if stands_alone(b, m.start(), m.end()) {
            sp.redact(text, m.start(), m.end(), kind);
            at = m.end();
        } else {
            // Every pattern starts with an ASCII byte: +1 is a char boundary.
            at = m.start() + 1;
        }
    }
    sp.finish(text)
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

/// Builds the redacted copy of a text: the kept stretches and the markers
/// that replace secrets, in order. Every scanner uses one.
#[derive(Default)]
struct Splice {
    out: String,
    kept: usize,
}

impl Splice {
    /// Replace `text[start..end]` (at or after everything replaced so far)
    /// with the marker of `kind`.
    fn redact(&mut self, text: &str, start: usize, end: usize, kind: &str) {
        self.out.push_str(&text[self.kept..start]);
        self.out.push_str(MARKER_PREFIX);
        self.out.push_str(kind);
        self.out.push(']');
        self.kept = end;
    }

    /// The redacted text, or `None` when nothing was replaced.
    fn finish(mut self, text: &str) -> Option<String> {
        (self.kept > 0).then(|| {
            self.out.push_str(&text[self.kept..]);
            self.out
        })
    }
}

fn redact_private_keys(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut sp = Splice::default();
    let mut i = 0;
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
        sp.redact(text, start, end, "private_key");
        i = end;
    }
    sp.finish(text)
}

/// Shortest bearer token redacted.
const MIN_BEARER_TOKEN: usize = 16;

fn is_bearer_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"._~+/=-".contains(&b)
}

/// After each occurrence of `word` (ASCII case-insensitive), the blanks and
/// then the run of bytes `token` accepts: (word end, token start, token end).
fn word_then_token(
    b: &[u8],
    from: usize,
    word: &[u8],
    token: fn(u8) -> bool,
) -> Option<(usize, usize, usize)> {
    let word_end = from + find_ci(&b[from..], word)? + word.len();
    let start = word_end
        + b[word_end..]
            .iter()
            .take_while(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c))
            .count();
    let end = start + b[start..].iter().take_while(|c| token(**c)).count();
    Some((word_end, start, end))
}

fn redact_bearer(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut sp = Splice::default();
    let mut i = 0;
    while let Some((word_end, start, end)) = word_then_token(b, i, b"bearer", is_bearer_byte) {
        i = word_end;
        if start == word_end || end - start < MIN_BEARER_TOKEN {
            continue;
        }
        sp.redact(text, start, end, "bearer");
        i = end;
    }
    sp.finish(text)
}

/// Shortest `Basic` credential redacted (base64 of 6 bytes or more).
const MIN_BASIC_CREDENTIAL: usize = 8;

fn is_base64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"+/=-_".contains(&b)
}

/// `Basic <base64>` anywhere (the word not glued to a letter before it)
/// when the base64 decodes to `user:password`, as HTTP Basic
/// authentication sends it. `Basic realm=…` and prose ("basic knowledge")
/// do not decode that way and are kept.
fn redact_basic(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut sp = Splice::default();
    let mut i = 0;
    while let Some((word_end, start, end)) = word_then_token(b, i, b"basic", is_base64_byte) {
        i = word_end;
        let glued = word_end > 5 && b[word_end - 6].is_ascii_alphanumeric();
        if glued
            || start == word_end
            || end - start < MIN_BASIC_CREDENTIAL
            || !base64_decode(&b[start..end]).is_some_and(|d| is_user_password(&d))
        {
            continue;
        }
        sp.redact(text, start, end, "authorization");
        i = end;
    }
    sp.finish(text)
}

/// `user:password` with a non-empty password.
fn is_user_password(d: &[u8]) -> bool {
    d.iter()
        .position(|c| *c == b':')
        .is_some_and(|p| p + 1 < d.len())
}

/// Standard or URL-safe base64, padded or not; `None` when it is not.
fn base64_decode(s: &[u8]) -> Option<Vec<u8>> {
    let s = s
        .strip_suffix(b"==")
        .or_else(|| s.strip_suffix(b"="))
        .unwrap_or(s);
    if s.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in s {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Longest `user:password` looked at after a `scheme://`.
const MAX_USERINFO_BYTES: usize = 256;

/// After each `scheme://`, a `user:password@` part is replaced (user and
/// password together). The password may hold `/` and `@`: the part ends at
/// the first `@` that a host follows.
fn redact_url_credentials(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut sp = Splice::default();
    let mut i = 0;
    while let Some(off) = find(&b[i..], b"://") {
        let start = i + off + 3;
        i = start;
        // A scheme ends with an ASCII letter or digit right before `://`.
        if start < 4 || !b[start - 4].is_ascii_alphanumeric() {
            continue;
        }
        if b[start..].starts_with(MARKER_PREFIX.as_bytes()) {
            continue;
        }
        let Some(len) = userinfo_len(&b[start..]) else {
            continue;
        };
        sp.redact(text, start, start + len, "url_credentials");
        i = start + len;
    }
    sp.finish(text)
}

/// In `rest` (what follows `scheme://`), the length of a `user:password`
/// part ending right before an `@` that a host follows. The user may be
/// empty (`redis://:pw@host`), the password may not; `host:port/…@…` is
/// not credentials.
fn userinfo_len(rest: &[u8]) -> Option<usize> {
    let limit = rest.len().min(MAX_USERINFO_BYTES);
    let url_end = rest[..limit]
        .iter()
        .position(|&c| c <= b' ' || c == 0x7f || b"\"'<>`\\".contains(&c))
        .unwrap_or(limit);
    let url = &rest[..url_end];
    let colon = url
        .iter()
        .position(|&c| matches!(c, b':' | b'/' | b'?' | b'#' | b'@'))?;
    if url[colon] != b':' {
        return None;
    }
    let mut at = colon + 1;
    while let Some(off) = url[at..].iter().position(|&c| c == b'@') {
        let p = at + off;
        if p == colon + 1 {
            return None; // empty password
        }
        if host_follows(&url[p + 1..]) {
            let pass = &url[colon + 1..p];
            let digits = pass.iter().take_while(|c| c.is_ascii_digit()).count();
            // `host:8080/path@x` is a port and a path, not a password; a
            // password a more precise rule redacted keeps its marker.
            if digits > 0 && pass.get(digits) == Some(&b'/')
                || pass.starts_with(MARKER_PREFIX.as_bytes())
            {
                return None;
            }
            return Some(p);
        }
        at = p + 1;
    }
    None
}

/// Does `s` start with a host (name or `[v6]`, optional `:port`) that ends
/// the authority? `ss@host` and `ss:word@host` do not.
fn host_follows(s: &[u8]) -> bool {
    let host = if s.first() == Some(&b'[') {
        s.iter().position(|&c| c == b']').map_or(0, |p| p + 1)
    } else {
        s.iter()
            .take_while(|&&c| c.is_ascii_alphanumeric() || b".-_~%".contains(&c))
            .count()
    };
    if host == 0 {
        return false;
    }
    let mut rest = &s[host..];
    if let Some(port) = rest.strip_prefix(b":") {
        let n = port.iter().take_while(|c| c.is_ascii_digit()).count();
        rest = &port[n..];
    }
    !rest
        .first()
        .is_some_and(|&c| c == b'@' || c == b':' || c.is_ascii_alphanumeric())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// [`find`] for a lowercase ASCII `needle`, ASCII case-insensitive: a
/// cheap first-byte test, then the comparison.
fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let first = needle[0];
    let last = hay.len().checked_sub(needle.len())?;
    (0..=last).find(|&i| (hay[i] | 0x20) == first && starts_with_ci(&hay[i..], needle))
}

// ---------------------------------------------------------------------------
// Password flags of known commands

/// How a command's flag carries its secret.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FlagValue {
    /// Glued to the flag only (`mysql -pSECRET`; `-p SECRET` names a
    /// database and prompts for the password).
    Glued,
    /// Glued or as the next word (`sshpass -p SECRET`).
    GluedOrNext,
    /// `user:SECRET`, glued, after `=` or as the next word
    /// (`curl -u admin:SECRET`): the part after the first `:`.
    UserColon,
}

/// (commands, flag, how its value comes). A command word is matched on
/// its file name (`/usr/bin/mysql`), so `docker login`, `podman login`,
/// `helm registry login` all activate `login`'s flags.
const COMMAND_FLAGS: &[(&[&str], &str, FlagValue)] = &[
    (
        &[
            "mysql",
            "mysqldump",
            "mysqladmin",
            "mysqlimport",
            "mysqlcheck",
            "mysqlsh",
            "mariadb",
            "mariadb-dump",
            "mariadb-admin",
        ],
        "-p",
        FlagValue::Glued,
    ),
    (&["sshpass"], "-p", FlagValue::GluedOrNext),
    (&["redis-cli", "valkey-cli"], "-a", FlagValue::GluedOrNext),
    (&["login"], "-p", FlagValue::GluedOrNext),
    (&["curl"], "-u", FlagValue::UserColon),
    (&["curl"], "--user", FlagValue::UserColon),
    (&["curl"], "-U", FlagValue::UserColon),
    (&["curl"], "--proxy-user", FlagValue::UserColon),
];

/// A cheap test run on every word before the table is searched: the
/// length and first byte of some command of [`COMMAND_FLAGS`].
fn could_be_command(name: &[u8]) -> bool {
    const fn shortest_longest() -> (usize, usize) {
        let (mut lo, mut hi) = (usize::MAX, 0);
        let mut i = 0;
        while i < COMMAND_FLAGS.len() {
            let cmds = COMMAND_FLAGS[i].0;
            let mut j = 0;
            while j < cmds.len() {
                let n = cmds[j].len();
                if n < lo {
                    lo = n;
                }
                if n > hi {
                    hi = n;
                }
                j += 1;
            }
            i += 1;
        }
        (lo, hi)
    }
    const LENGTHS: (usize, usize) = shortest_longest();
    static FIRST: [bool; 256] = {
        let mut t = [false; 256];
        let mut i = 0;
        while i < COMMAND_FLAGS.len() {
            let cmds = COMMAND_FLAGS[i].0;
            let mut j = 0;
            while j < cmds.len() {
                t[cmds[j].as_bytes()[0] as usize] = true;
                j += 1;
            }
            i += 1;
        }
        t
    };
    (LENGTHS.0..=LENGTHS.1).contains(&name.len()) && FIRST[name[0] as usize]
}

/// Bytes at which a shell word may end (see [`word_end`]): a table, so the
/// scan over ordinary word bytes is one lookup per byte.
static WORD_STOP: [bool; 256] = {
    let mut t = [false; 256];
    let stops = b" \t\n\r\x0b\x0c;|)`\"'&\\";
    let mut i = 0;
    while i < stops.len() {
        t[stops[i] as usize] = true;
        i += 1;
    }
    t
};

/// Where a shell word outside quotes ends: at whitespace, `;`, `|`, `)`,
/// a backtick, a quote, or `&` before a blank or another `&` (a lone `&`
/// inside a word is part of it). A literal `\n`, `\r`, `\t` or `\"`
/// escape (text holding a JSON-escaped string) ends it too.
fn word_end(b: &[u8], from: usize) -> usize {
    let mut j = from;
    loop {
        j += b[j..]
            .iter()
            .take_while(|&&c| !WORD_STOP[c as usize])
            .count();
        let next = b.get(j + 1);
        match b.get(j) {
            Some(b'&') if next.is_some_and(|n| !n.is_ascii_whitespace() && *n != b'&') => j += 1,
            Some(b'\\') if !matches!(next, Some(b'n' | b'r' | b't' | b'"')) => j += 1,
            _ => return j,
        }
    }
}

/// The value starting at `i`: a quoted string (to its closing quote, or the
/// end of the line when it is missing) or a shell word. Returns the span
/// to redact (inside the quotes) and where the word ends.
fn flag_value(b: &[u8], i: usize) -> (usize, usize, usize) {
    match b.get(i) {
        Some(&q @ (b'"' | b'\'')) => {
            let start = i + 1;
            let end = start
                + b[start..]
                    .iter()
                    .take_while(|&&c| c != q && c != b'\n' && c != b'\r')
                    .count();
            (start, end, (end + 1).min(b.len()))
        }
        _ => {
            let end = word_end(b, i);
            (i, end, end)
        }
    }
}

/// Does a shell command end at `b[j]` (flags seen so far stop applying)?
fn ends_command(b: &[u8], j: usize) -> bool {
    match b[j] {
        b'\n' | b'\r' => j == 0 || b[j - 1] != b'\\', // not a continuation
        b';' | b'|' | b'&' => true,
        b'\\' => matches!(b.get(j + 1), Some(b'n' | b'r')),
        _ => false,
    }
}

/// One pass over the words of `text`: a word naming a command of
/// [`COMMAND_FLAGS`] turns its flags on until the command ends (newline,
/// `;`, `|`, `&`); a flag that is on has its value redacted.
fn redact_command_flags(text: &str) -> Option<String> {
    const _: () = assert!(COMMAND_FLAGS.len() <= 32);
    let b = text.as_bytes();
    let mut sp = Splice::default();
    let mut on = 0u32;
    let mut j = 0;
    while j < b.len() {
        if ends_command(b, j) {
            on = 0;
        }
        if b[j] == b'\\' && matches!(b.get(j + 1), Some(b'n' | b'r' | b't')) {
            j += 2; // a literal escape separates words
            continue;
        }
        if !(b[j].is_ascii_graphic()) || b"\"'`(;|&".contains(&b[j]) {
            j += 1;
            continue;
        }
        let end = word_end(b, j);
        if end == j {
            j += 1;
            continue;
        }
        let word = &b[j..end];
        let name = match word.iter().rposition(|&c| c == b'/') {
            Some(p) => &word[p + 1..],
            None => word,
        };
        if could_be_command(name) {
            for (k, (cmds, _, _)) in COMMAND_FLAGS.iter().enumerate() {
                if cmds.iter().any(|c| c.as_bytes() == name) {
                    on |= 1 << k;
                }
            }
        }
        let mut next = end;
        if on != 0 && word[0] == b'-' {
            if let Some((start, stop, after)) = flag_secret(b, j, end, on) {
                if start < stop && !b[start..].starts_with(MARKER_PREFIX.as_bytes()) {
                    sp.redact(text, start, stop, "password");
                }
                next = after.max(end);
            }
        }
        j = next;
    }
    sp.finish(text)
}

/// For the flag word `b[j..end]` (one of the flags in `on`), the secret:
/// (start, end, where scanning resumes).
fn flag_secret(b: &[u8], j: usize, end: usize, on: u32) -> Option<(usize, usize, usize)> {
    for (k, (_, flag, how)) in COMMAND_FLAGS.iter().enumerate() {
        if on & (1 << k) == 0 || !b[j..end].starts_with(flag.as_bytes()) {
            continue;
        }
        let g = j + flag.len();
        let long = flag.starts_with("--");
        let value_at = if g < end {
            // Glued: `-pSECRET`, `-uadmin:pw`, `--user=admin:pw`; but
            // `--username` is another flag.
            match (long, b[g]) {
                (true, b'=') => g + 1,
                (true, _) => continue,
                (false, _) => g,
            }
        } else if matches!(b.get(g), Some(b'"' | b'\'')) {
            g // `-p'SECRET'`
        } else if *how == FlagValue::Glued {
            continue;
        } else {
            // The next word, unless it is another flag.
            let n = b[g..]
                .iter()
                .take_while(|c| matches!(c, b' ' | b'\t'))
                .count();
            if n == 0 || g + n >= b.len() || b[g + n] == b'-' {
                return None;
            }
            g + n
        };
        let (start, stop, after) = flag_value(b, value_at);
        if *how == FlagValue::UserColon {
            let colon = b[start..stop].iter().position(|&c| c == b':')?;
            return Some((start + colon + 1, stop, after));
        }
        return Some((start, stop, after));
    }
    None
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

fn redact_assignments(text: &str) -> Option<String> {
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
            "GOOGLE_CREDENTIALS=[REDACTED:secret]",
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
        "see https://host/a:b@c and ://x:y@z and https://u:@h",
        "http://localhost:3000/users/@me and https://medium.com/@user/post",
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
            clean("é password=ünïcödé\nok"),
            "é password=[REDACTED:password]\nok"
        );
        assert_eq!(
            clean("é password='ünï cödé' ok"),
            "é password='[REDACTED:password]' ok"
        );
    }

    // --- Reproductions from the "Trust" issue: each was stored verbatim. ---

    /// A secret right after a literal `\n` escape (text holding a
    /// JSON-escaped string) and one glued to an `_suffix`.
    #[test]
    fn key_after_a_literal_escape_or_before_an_underscore() {
        assert_eq!(
            clean(r#""x\nAKIAQYLPMN5HHHFPZAM2""#),
            r#""x\n[REDACTED:aws_access_key]""#
        );
        assert_eq!(
            clean(r#""keys:\nsk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z""#),
            r#""keys:\n[REDACTED:openai_key]""#
        );
        assert_eq!(
            clean(r"a\tASIAY34FZKBOKMUTVV7A\r"),
            r"a\t[REDACTED:aws_access_key]\r"
        );
        assert_eq!(
            clean("AKIAQYLPMN5HHHFPZAM2_old"),
            "[REDACTED:aws_access_key]_old"
        );
    }

    /// URL credentials whose password holds a `/` or an `@`.
    #[test]
    fn url_passwords_with_slash_or_at() {
        assert_eq!(
            clean("redis://default:ab/cd@cache.internal:6379"),
            "redis://[REDACTED:url_credentials]@cache.internal:6379"
        );
        assert_eq!(
            clean("https://bob:p@ss@host/"),
            "https://[REDACTED:url_credentials]@host/"
        );
    }

    /// An unquoted value runs to the end of its line, not its first word.
    #[test]
    fn unquoted_value_with_spaces() {
        assert_eq!(
            clean("password: correct horse battery staple\nnext: line"),
            "password: [REDACTED:password]\nnext: line"
        );
    }

    /// An escaped quote inside a JSON string does not end the value.
    #[test]
    fn json_value_with_escaped_quotes() {
        assert_eq!(
            clean(r#"{"password": "abc\"def\"ghi"}"#),
            r#"{"password": "[REDACTED:password]"}"#
        );
    }

    /// `mysql -pSECRET`: the password glued to `-p`.
    #[test]
    fn mysql_glued_password_flag() {
        assert_eq!(
            clean("mysql -u root -pS3cretPw! mydb"),
            "mysql -u root -p[REDACTED:password] mydb"
        );
    }

    /// `curl -u user:SECRET`: the password after the user's colon.
    #[test]
    fn curl_user_password_flag() {
        assert_eq!(
            clean("curl -u admin:Tr0ub4dor&3x https://api.internal/v1"),
            "curl -u admin:[REDACTED:password] https://api.internal/v1"
        );
    }

    /// A Slack incoming-webhook URL is itself the credential.
    #[test]
    fn slack_webhook_url() {
        assert_eq!(
            clean("POST https://hooks.slack.com/services/T024BE7LD/B01ABCDEF12/q7E2H8a0Xk1R4nT6yPz3vB9c ok"),
            "POST https://hooks.slack.com/services/[REDACTED:slack_webhook] ok"
        );
    }

    /// `Authorization: Basic …` in its usual places.
    #[test]
    fn basic_authorization_headers() {
        for (input, want) in [
            (
                "curl -H \"Authorization: Basic YWRtaW46aHVudGVyMg==\" http://x",
                "curl -H \"Authorization: Basic [REDACTED:authorization]\" http://x",
            ),
            (
                "> Authorization: Basic YWRtaW46aHVudGVyMg==\r\n> Host: x",
                "> Authorization: Basic [REDACTED:authorization]\r\n> Host: x",
            ),
            (
                "Proxy-Authorization: basic YWRtaW46aHVudGVyMg==",
                "Proxy-Authorization: basic [REDACTED:authorization]",
            ),
            (
                r#"{\"headers\":{\"Authorization\":\"Basic YWRtaW46aHVudGVyMg==\"}}"#,
                r#"{\"headers\":{\"Authorization\":\"Basic [REDACTED:authorization]\"}}"#,
            ),
            (
                "WWW-Authenticate: Basic realm=x; sent Basic YWRtaW46aHVudGVyMg==",
                "WWW-Authenticate: Basic realm=x; sent Basic [REDACTED:authorization]",
            ),
        ] {
            assert_eq!(clean(input), want, "input: {input}");
        }
    }

    /// Lines of a corpus file under `fixtures/secrets/`, parsed.
    fn corpus(name: &str) -> Vec<serde_json::Value> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/secrets")
            .join(name);
        std::fs::read_to_string(&p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{name}: {e}: {l}")))
            .collect()
    }

    #[test]
    fn every_corpus_secret_is_redacted_with_its_kind() {
        let entries = corpus("secrets.jsonl");
        assert!(entries.len() >= 60, "the corpus holds {}", entries.len());
        for e in entries {
            let (text, middle) = (e["text"].as_str().unwrap(), e["middle"].as_str().unwrap());
            let kind = e["kind"].as_str().unwrap();
            assert!(KINDS.contains(&kind), "unknown kind {kind}");
            let out = clean(text);
            assert!(!out.contains(middle), "{kind} leaked: {text:?} -> {out:?}");
            assert!(
                out.contains(&redacted(kind)),
                "{kind} not marked: {text:?} -> {out:?}"
            );
        }
    }

    /// `memhook serve` may clean a record the hook already cleaned: a second
    /// pass must change nothing.
    #[test]
    fn cleaning_is_idempotent() {
        let mut texts: Vec<String> = corpus("secrets.jsonl")
            .iter()
            .map(|e| e["text"].as_str().unwrap().to_string())
            .collect();
        texts.extend(CASES.iter().map(|(input, _)| input.to_string()));
        texts.push(texts.join("\n"));
        for t in texts {
            let once = clean(&t);
            assert_eq!(clean(&once), once, "input: {t:?}");
        }
    }

    #[test]
    fn every_corpus_near_miss_survives() {
        for e in corpus("near_misses.jsonl") {
            let text = e["text"].as_str().unwrap();
            assert_eq!(clean(text), text, "{}", e["note"]);
        }
    }

    /// The whole corpus on one line per secret, and all of it on one line:
    /// rules must not interfere with each other's neighbours.
    #[test]
    fn corpus_secrets_joined_still_redact() {
        let entries = corpus("secrets.jsonl");
        for sep in ["\n", "\\n", " ; "] {
            let all: Vec<&str> = entries
                .iter()
                .map(|e| e["text"].as_str().unwrap())
                .collect();
            let out = clean(&all.join(sep));
            for e in &entries {
                let middle = e["middle"].as_str().unwrap();
                assert!(
                    !out.contains(middle),
                    "{middle} leaked with separator {sep:?}"
                );
            }
        }
    }

    #[test]
    fn escaped_json_keys_and_values() {
        assert_eq!(
            clean(r#"{\"db_password\": \"p\\\"q\"}"#),
            r#"{\"db_password\": \"[REDACTED:password]\"}"#
        );
        assert_eq!(
            clean(r#"\"token\":12345,\"x\":1"#),
            r#"\"token\":[REDACTED:token],\"x\":1"#
        );
        assert_eq!(
            clean(r#"{"cfg": "password: a b c\nuser: bob"}"#),
            r#"{"cfg": "password: [REDACTED:password]\nuser: bob"}"#
        );
    }

    #[test]
    fn separators_and_comparisons() {
        assert_eq!(
            clean("'password' => 'x y',"),
            "'password' => '[REDACTED:password]',"
        );
        assert_eq!(clean("token := \"abc\""), "token := \"[REDACTED:token]\"");
        assert_eq!(clean("if password == x {"), "if password == x {");
        assert_eq!(clean("crate::token::Kind"), "crate::token::Kind");
        assert_eq!(clean("\"max_tokens\": 4096"), "\"max_tokens\": 4096");
        assert_eq!(clean("tokenizer: bpe"), "tokenizer: bpe");
        assert_eq!(
            clean("session_token: abc"),
            "session_token: [REDACTED:token]"
        );
    }

    #[test]
    fn yaml_block_scalars() {
        assert_eq!(
            clean("data:\n  password: |\n    line one\n\n    line two\n  user: app\n"),
            "data:\n  password: [REDACTED:password]\n  user: app\n"
        );
        assert_eq!(
            clean("secret: >-\n  folded\n  text"),
            "secret: [REDACTED:secret]"
        );
        assert_eq!(
            clean("password: |x\nnext"),
            "password: [REDACTED:password]\nnext"
        );
    }

    #[test]
    fn command_flag_forms() {
        for (input, want) in [
            ("mysql -p'a b' db", "mysql -p'[REDACTED:password]' db"),
            (
                "/usr/bin/mysqldump -pX1 db",
                "/usr/bin/mysqldump -p[REDACTED:password] db",
            ),
            ("mysql -p db", "mysql -p db"),
            ("mysql db; ls -pX", "mysql db; ls -pX"),
            ("sshpass -pX2 ssh h", "sshpass -p[REDACTED:password] ssh h"),
            (
                "redis-cli -a X3 ping",
                "redis-cli -a [REDACTED:password] ping",
            ),
            (
                "podman login -u u -p X4 r.io",
                "podman login -u u -p [REDACTED:password] r.io",
            ),
            ("curl -uadmin:X5 h", "curl -uadmin:[REDACTED:password] h"),
            (
                "curl --user=admin:X6 h",
                "curl --user=admin:[REDACTED:password] h",
            ),
            ("curl --user-agent a:b h", "curl --user-agent a:b h"),
            ("curl -u admin h", "curl -u admin h"),
            (
                "curl -s \\\n  -u admin:X7 h",
                "curl -s \\\n  -u admin:[REDACTED:password] h",
            ),
            ("docker run -p 80:80 x", "docker run -p 80:80 x"),
            (
                "mkdir -p a && mysql -pX8",
                "mkdir -p a && mysql -p[REDACTED:password]",
            ),
        ] {
            assert_eq!(clean(input), want, "input: {input}");
        }
    }

    #[test]
    fn basic_credentials_must_decode_to_user_password() {
        assert_eq!(
            base64_decode(b"YWRtaW46aHVudGVyMg==").unwrap(),
            b"admin:hunter2"
        );
        assert_eq!(
            base64_decode(b"YWRtaW46aHVudGVyMg").unwrap(),
            b"admin:hunter2"
        );
        assert_eq!(base64_decode(b"YWRtaW46aHVudGVyM"), None);
        assert_eq!(base64_decode(b"a.b"), None);
        // "user:" has no password; "nocolon" no colon.
        for kept in [
            "Basic dXNlcjo=",
            "Basic bm9jb2xvbg==",
            "basic knowledge",
            "xbasic YWRtaW46aHVudGVyMg==",
        ] {
            assert_eq!(clean(kept), kept);
        }
        let at = "Basic YWRtaW46aHVudGVyMg==";
        assert_eq!(clean(at), "Basic [REDACTED:authorization]");
    }

    #[test]
    fn word_boundaries_of_prefixed_keys() {
        assert_eq!(
            clean("k=AKIAQYLPMN5HHHFPZAM2."),
            "k=[REDACTED:aws_access_key]."
        );
        assert_eq!(
            clean(r"\u003dAKIAQYLPMN5HHHFPZAM2"),
            r"\u003d[REDACTED:aws_access_key]"
        );
        assert_eq!(clean("AKIAQYLPMN5HHHFPZAM2x"), "AKIAQYLPMN5HHHFPZAM2x");
        assert_eq!(
            clean("XAKIAAKIAQYLPMN5HHHFPZAM2 AKIAQYLPMN5HHHFPZAM2"),
            "XAKIAAKIAQYLPMN5HHHFPZAM2 [REDACTED:aws_access_key]"
        );
    }

    #[test]
    fn url_credentials_edges() {
        for (input, want) in [
            (
                "redis://:pw@h:6379",
                "redis://[REDACTED:url_credentials]@h:6379",
            ),
            (
                "https://u:pw@host/p?mail=a@b.com",
                "https://[REDACTED:url_credentials]@host/p?mail=a@b.com",
            ),
            (
                "https://u:p@ss:word@h/",
                "https://[REDACTED:url_credentials]@h/",
            ),
            ("http://[::1]:80/x", "http://[::1]:80/x"),
            (
                "s://u:pw@[::1]:6379",
                "s://[REDACTED:url_credentials]@[::1]:6379",
            ),
            ("https://host:8080/@user", "https://host:8080/@user"),
            ("https://u:1234@h", "https://[REDACTED:url_credentials]@h"),
        ] {
            assert_eq!(clean(input), want, "input: {input}");
        }
    }

    #[test]
    fn new_token_kinds() {
        let npm = format!("npm_{}", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8");
        assert_eq!(clean(&format!("t={npm}")), "t=[REDACTED:npm_token]");
        let hf = format!("hf_{}", "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567");
        assert_eq!(clean(&format!("x {hf}")), "x [REDACTED:huggingface_token]");
        let pypi = format!("pypi-AgEIcHlwaS5vcmc{}", "x".repeat(60));
        assert_eq!(clean(&pypi), "[REDACTED:pypi_token]");
        assert_eq!(
            clean(
                "https://discord.com/api/webhooks/123456789012345678/abcdefghijklmnopqrstuvwx_-Z"
            ),
            "https://discord.com/api/webhooks/[REDACTED:discord_webhook]"
        );
    }
}
