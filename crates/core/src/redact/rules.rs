//! Pass 3 of [`super::clean`]: the table of secret rules, the keyword
//! prefilter that decides which rules run, and the regex rules. The
//! hand-written matchers live in `scan`, `command` and `assign`.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::{Captures, Regex};

use super::assign::redact_assignments;
use super::command::redact_command_flags;
use super::scan::{redact_basic, redact_bearer, redact_private_keys, redact_url_credentials};
use super::{lower, starts_with_ci, Splice, MARKER_PREFIX};

/// How one rule finds secrets.
#[derive(Clone, Copy)]
pub(super) enum Matcher {
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
    /// `curl -u user:SECRET`, … (see `command::COMMAND_FLAGS`).
    CommandFlags,
    /// `key = value`, `key: value`, `"key": "value"` and `--key value` where
    /// the key names a credential (see [`CRED_KEYS`](super::assign::CRED_KEYS)).
    Assignment,
}

/// One redaction rule: keywords for the prefilter (ASCII, matched
/// case-insensitively: substrings every match of the rule contains; the
/// rarer their first two letters, the fewer places the prefilter compares
/// them), a matcher, and the kind its markers name (assignments take
/// theirs from the key).
pub(super) struct Rule {
    pub(super) keywords: &'static [&'static str],
    pub(super) matcher: Matcher,
    pub(super) kind: &'static str,
}

/// ASCII whitespace, spelled out (`\s` would be Unicode-aware).
macro_rules! ws {
    () => {
        r"[ \t\r\n\x0B\x0C]"
    };
}

/// The rules, most specific first so markers name the most precise kind.
pub(super) const RULES: &[Rule] = &[
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
        keywords: &["ypi-ag"],
        matcher: Matcher::Regex(r"pypi-AgE[A-Za-z0-9_-]{50,}"),
        kind: "pypi_token",
    },
    Rule {
        keywords: &["hf_"],
        matcher: Matcher::Word(r"hf_[A-Za-z0-9]{34,}"),
        kind: "huggingface_token",
    },
    Rule {
        keywords: &["ks.slack.com"],
        matcher: Matcher::Regex(
            r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s1>[A-Za-z0-9_/-]{16,})",
        ),
        kind: "slack_webhook",
    },
    Rule {
        keywords: &["rd.com/api/webhooks", "rdapp.com/api/webhooks"],
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
        // Tails of the command names (`mysql`, `mariadb`, `sshpass`,
        // `redis-cli`/`valkey-cli`, `login`): their first two letters are
        // rarer in ordinary text than the names' own.
        keywords: &["ysql", "iadb", "hpass", "-cli", "ogin", "curl"],
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

/// How many keywords the rules have.
const KEYWORD_COUNT: usize = {
    let (mut n, mut r) = (0, 0);
    while r < RULES.len() {
        n += RULES[r].keywords.len();
        r += 1;
    }
    n
};

/// Every (keyword, rule index) pair, grouped by the keyword's lowercased
/// first byte; the pairs starting with byte `c` are
/// `pairs[starts[c]..starts[c + 1]]`. Built at compile time (a table built
/// on first use cost every hook call 26 allocations).
struct Keywords {
    pairs: [(&'static [u8], usize); KEYWORD_COUNT],
    starts: [u16; 257],
}

static KEYWORDS: Keywords = {
    const _: () = assert!(KEYWORD_COUNT < u16::MAX as usize);
    let mut starts = [0u16; 257];
    let mut r = 0;
    while r < RULES.len() {
        let kws = RULES[r].keywords;
        let mut k = 0;
        while k < kws.len() {
            starts[lower(kws[k].as_bytes()[0]) as usize + 1] += 1;
            k += 1;
        }
        r += 1;
    }
    let mut c = 0;
    while c < 256 {
        starts[c + 1] += starts[c];
        c += 1;
    }
    let mut next = starts;
    let mut pairs: [(&'static [u8], usize); KEYWORD_COUNT] = [(&[], 0); KEYWORD_COUNT];
    let mut r = 0;
    while r < RULES.len() {
        let kws = RULES[r].keywords;
        let mut k = 0;
        while k < kws.len() {
            let first = lower(kws[k].as_bytes()[0]) as usize;
            pairs[next[first] as usize] = (kws[k].as_bytes(), r);
            next[first] += 1;
            k += 1;
        }
        r += 1;
    }
    Keywords { pairs, starts }
};

/// Bit `(a << 8) | b` is set when some keyword starts with the bytes `a b`
/// (lowercased). Built at compile time from [`KEYWORDS`]; one lookup per
/// text byte.
static BIGRAMS: [u64; 1024] = {
    let mut t = [0u64; 1024];
    let mut k = 0;
    while k < KEYWORD_COUNT {
        let kw = KEYWORDS.pairs[k].0;
        let idx = ((lower(kw[0]) as usize) << 8) | lower(kw[1]) as usize;
        t[idx / 64] |= 1 << (idx % 64);
        k += 1;
    }
    t
};

/// Which rules have a keyword in `text` (ASCII case-insensitive), as a bit
/// set over rule indices. One bigram-table lookup per byte; keywords are
/// compared only where a keyword's first two bytes occur.
pub(super) fn prefilter(text: &str) -> u64 {
    const _: () = assert!(RULES.len() <= 64);
    let b = text.as_bytes();
    let mut hits = 0u64;
    for i in 0..b.len().saturating_sub(1) {
        let idx = ((lower(b[i]) as usize) << 8) | lower(b[i + 1]) as usize;
        if BIGRAMS[idx / 64] & (1 << (idx % 64)) == 0 {
            continue;
        }
        let first = lower(b[i]) as usize;
        let (from, to) = (KEYWORDS.starts[first], KEYWORDS.starts[first + 1]);
        for &(kw, ri) in &KEYWORDS.pairs[from as usize..to as usize] {
            // The second byte first: most bigram hits fit no keyword there.
            if hits & (1 << ri) == 0
                && lower(kw[1]) == lower(b[i + 1])
                && starts_with_ci(&b[i..], kw)
            {
                hits |= 1 << ri;
            }
        }
    }
    hits
}

pub(super) fn redact_secrets(text: &str) -> Cow<'_, str> {
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
