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
    if !b
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

fn strip_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_stripped_control) {
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

/// How a match is rewritten.
#[derive(Clone, Copy)]
enum Kind {
    /// Every match is this kind.
    Fixed(&'static str),
    /// The kind follows from the key the value is assigned to.
    FromKey,
}

/// One redaction rule: keywords for the prefilter (ASCII, matched
/// case-insensitively), a pattern, and its kind. When the pattern has groups
/// named `s1`, `s2`, … only those are replaced (names, quotes and
/// separators around them stay); otherwise the whole match is.
struct Rule {
    keywords: &'static [&'static str],
    pattern: &'static str,
    kind: Kind,
}

/// ASCII whitespace, spelled out (`\s` would be Unicode-aware).
macro_rules! ws {
    () => {
        r"[ \t\r\n\x0B\x0C]"
    };
}

/// Keys that name a credential in `key = value` assignments.
macro_rules! cred_key {
    () => {
        r"(?i-u:password|passwd|secret|token|api[_-]?key|apikey|access[_-]?key)"
    };
}

/// The rules, most specific first so markers name the most precise kind.
const RULES: &[Rule] = &[
    Rule {
        keywords: &["private key"],
        pattern: concat!(
            r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)",
            r"(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\z)"
        ),
        kind: Kind::Fixed("private_key"),
    },
    Rule {
        keywords: &["akia", "asia", "abia", "acca"],
        pattern: r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?-u:\b)",
        kind: Kind::Fixed("aws_access_key"),
    },
    Rule {
        keywords: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        pattern: r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})",
        kind: Kind::Fixed("github_token"),
    },
    Rule {
        keywords: &["glpat-"],
        pattern: r"glpat-[A-Za-z0-9_-]{20,}",
        kind: Kind::Fixed("gitlab_token"),
    },
    Rule {
        keywords: &["xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xapp-"],
        pattern: r"(?:xox[abprs]-[A-Za-z0-9-]{10,}|xapp-[0-9]+-[A-Za-z0-9-]{10,})",
        kind: Kind::Fixed("slack_token"),
    },
    Rule {
        keywords: &["sk_live_", "rk_live_", "sk_test_", "rk_test_"],
        pattern: r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
        kind: Kind::Fixed("stripe_key"),
    },
    Rule {
        keywords: &["sk-ant-"],
        pattern: r"sk-ant-[A-Za-z0-9_-]{20,}",
        kind: Kind::Fixed("anthropic_key"),
    },
    Rule {
        keywords: &["sk-"],
        pattern: r"(?-u:\b)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        kind: Kind::Fixed("openai_key"),
    },
    Rule {
        keywords: &["aiza"],
        pattern: r"AIza[A-Za-z0-9_-]{35}",
        kind: Kind::Fixed("google_api_key"),
    },
    Rule {
        keywords: &["eyj"],
        pattern: r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        kind: Kind::Fixed("jwt"),
    },
    Rule {
        keywords: &["authorization"],
        pattern: concat!(
            r#"(?i-u:authorization)["']?"#,
            ws!(),
            r"*[:=]",
            ws!(),
            r#"*["']?(?:(?i-u:bearer|basic|token|digest)"#,
            ws!(),
            r"+)?(?P<s1>[A-Za-z0-9._~+/=-]{8,})"
        ),
        kind: Kind::Fixed("authorization"),
    },
    Rule {
        keywords: &["bearer"],
        pattern: concat!(r"(?i-u:bearer)", ws!(), r"+(?P<s1>[A-Za-z0-9._~+/=-]{16,})"),
        kind: Kind::Fixed("bearer"),
    },
    Rule {
        keywords: &["://"],
        pattern: r"[A-Za-z][A-Za-z0-9+.-]*://(?P<s1>[^/@:\x00-\x20]+:[^/@\x00-\x20]+)@",
        kind: Kind::Fixed("url_credentials"),
    },
    Rule {
        keywords: &["aws_secret", "secret_access_key", "secretaccesskey"],
        pattern: concat!(
            r#"(?i-u:aws_?secret(?:_?access)?_?key)["']?"#,
            ws!(),
            r"*[:=]",
            ws!(),
            r#"*["']?(?P<s1>[A-Za-z0-9/+=]{30,})"#
        ),
        kind: Kind::Fixed("aws_secret"),
    },
    Rule {
        keywords: &[
            "password",
            "passwd",
            "secret",
            "token",
            "api_key",
            "api-key",
            "apikey",
            "access_key",
            "access-key",
        ],
        pattern: concat!(
            r"(?P<key>[A-Za-z0-9_.-]*",
            cred_key!(),
            r#"[A-Za-z0-9_.-]*)["']?[ \t]*[:=][ \t]*"#,
            r#"(?:"(?P<s1>[^"\r\n]+)"|'(?P<s2>[^'\r\n]+)'|(?P<s3>[^ \t\r\n"',;&)}\]]+))"#
        ),
        kind: Kind::FromKey,
    },
    Rule {
        keywords: &["--"],
        pattern: concat!(
            r"(?P<key>--(?:[A-Za-z0-9]+-)*",
            cred_key!(),
            r")[ \t]+",
            r#"(?:"(?P<s1>[^"\r\n]+)"|'(?P<s2>[^'\r\n]+)'|(?P<s3>[^- \t\r\n"'][^ \t\r\n"']*))"#
        ),
        kind: Kind::FromKey,
    },
];

/// The kind of an assignment, from the key's name.
fn kind_from_key(key: &str) -> &'static str {
    let k = key.to_ascii_lowercase();
    if k.contains("passw") {
        "password"
    } else if k.contains("secret") {
        "secret"
    } else if k.contains("token") {
        "token"
    } else {
        "api_key"
    }
}

fn compiled(i: usize) -> &'static Regex {
    static CELLS: [OnceLock<Regex>; RULES.len()] = [const { OnceLock::new() }; RULES.len()];
    CELLS[i].get_or_init(|| {
        Regex::new(RULES[i].pattern).expect("redaction patterns are valid (unit-tested)")
    })
}

/// Which rules have a keyword in `text` (one pass, ASCII case-insensitive).
fn prefilter(text: &str) -> u64 {
    const _: () = assert!(RULES.len() <= 64);
    struct Index {
        /// For each lowercased first byte, (keyword, rule index) pairs.
        by_first: Vec<Vec<(&'static [u8], usize)>>,
    }
    static INDEX: OnceLock<Index> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut by_first = vec![Vec::new(); 256];
        for (ri, rule) in RULES.iter().enumerate() {
            for kw in rule.keywords {
                let kw = kw.as_bytes();
                by_first[kw[0].to_ascii_lowercase() as usize].push((kw, ri));
            }
        }
        Index { by_first }
    });
    let b = text.as_bytes();
    let mut hits = 0u64;
    for i in 0..b.len() {
        let cands = &index.by_first[b[i].to_ascii_lowercase() as usize];
        for &(kw, ri) in cands {
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
        let re = compiled(i);
        if let Cow::Owned(s) = re.replace_all(&cur, |c: &Captures<'_>| rewrite(rule, c)) {
            cur = Cow::Owned(s);
        }
    }
    cur
}

/// The replacement text for one match.
fn rewrite(rule: &Rule, c: &Captures<'_>) -> String {
    let whole = c.get(0).expect("group 0 always matches");
    let kind = match rule.kind {
        Kind::Fixed(k) => k,
        Kind::FromKey => kind_from_key(c.name("key").map_or("", |m| m.as_str())),
    };
    let marker = format!("{MARKER_PREFIX}{kind}]");
    let secret = ["s1", "s2", "s3"].iter().find_map(|n| c.name(n));
    match secret {
        None => marker,
        // Already redacted by a more specific rule: keep its marker.
        Some(s) if s.as_str().starts_with(MARKER_PREFIX) => whole.as_str().to_string(),
        Some(s) => {
            let h = whole.as_str();
            let (a, b) = (s.start() - whole.start(), s.end() - whole.start());
            format!("{}{marker}{}", &h[..a], &h[b..])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(kind: &str) -> String {
        format!("[REDACTED:{kind}]")
    }

    #[test]
    fn every_pattern_compiles() {
        for i in 0..RULES.len() {
            compiled(i);
        }
    }

    #[test]
    fn every_kind_is_listed() {
        for r in RULES {
            if let Kind::Fixed(k) = r.kind {
                assert!(KINDS.contains(&k), "{k} missing from KINDS");
            }
        }
        for k in ["password", "secret", "token", "api_key"] {
            assert!(KINDS.contains(&k));
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
            "Authorization: Bearer [REDACTED:authorization]",
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
        ("CLIENT_SECRET=abc123def", "CLIENT_SECRET=[REDACTED:secret]"),
        ("auth_token = q1w2e3r4", "auth_token = [REDACTED:token]"),
        ("export API_KEY=zz9-plural", "export API_KEY=[REDACTED:api_key]"),
        ("apiKey: 'k-123'", "apiKey: '[REDACTED:api_key]'"),
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
        "the password is long",
        "password_policy",
        "tokens count",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBg\n-----END PUBLIC KEY-----",
        "--token-file /etc/app.tok and --token-count=",
    ];

    #[test]
    fn near_misses_are_untouched() {
        for input in NEAR_MISSES {
            assert_eq!(&clean(input), input);
        }
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
