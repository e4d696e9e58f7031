//! Pass 3 of [`super::clean`]: the table of secret rules, the keyword
//! prefilter that decides which rules run, and the regex rules. The
//! hand-written matchers live in `scan`, `command` and `assign`.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::{Captures, Regex};

use super::assign::redact_assignments;
use super::assign::redact_random_assignments;
use super::command::redact_command_flags;
use super::scan::{
    redact_base64_private_keys, redact_basic, redact_bearer, redact_private_keys,
    redact_putty_keys, redact_url_credentials,
};
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
    /// A literal prefix and a run of body bytes (see [`Token`]): no regex
    /// to compile, so a rule whose keyword is a common pair of letters
    /// (`SK`) costs one substring search when it hits.
    Prefixed(Token),
    /// PuTTY private key files: the `Private-Lines:` header, its lines and
    /// the `Private-MAC:` line (see [`redact_putty_keys`]).
    PuttyKey,
    /// A PEM private key block encoded in base64 (`LS0tLS1CRUdJTi…`, as in
    /// a Kubernetes secret's `tls.key`), when it decodes to a private key
    /// header (see [`redact_base64_private_keys`]).
    Base64PrivateKey,
    /// `key = value`, `key: value`, `"key": "value"` and `--key value` where
    /// the key names a credential (see [`CRED_KEYS`](super::assign::CRED_KEYS)).
    Assignment,
    /// The same assignments where the key only looks like a credential's
    /// name (`…_KEY`, `…AUTH`): the value is redacted only when it looks
    /// random (see [`RANDOM_KEYS`](super::assign::RANDOM_KEYS)).
    RandomAssignment,
}

/// A token with a literal prefix: one of `prefixes` (case-sensitive), then
/// a body of `min..=max` bytes that `hex` (hex digits, else letters and
/// digits) or `extra` accept. Like [`Matcher::Word`], it must stand alone:
/// no letter or digit glued to either side. A body that may hold `.` does
/// not end with one (the full stop of a sentence).
#[derive(Clone, Copy)]
pub(super) struct Token {
    pub(super) prefixes: &'static [&'static str],
    pub(super) hex: bool,
    pub(super) extra: &'static str,
    pub(super) min: usize,
    pub(super) max: usize,
}

impl Token {
    fn accepts(&self, c: u8) -> bool {
        (if self.hex {
            c.is_ascii_hexdigit()
        } else {
            c.is_ascii_alphanumeric()
        }) || self.extra.as_bytes().contains(&c)
    }
}

/// A rule for a [`Token`] whose prefixes are also its keywords.
const fn token(
    prefixes: &'static [&'static str],
    hex: bool,
    extra: &'static str,
    (min, max): (usize, usize),
    kind: &'static str,
) -> Rule {
    Rule {
        keywords: prefixes,
        matcher: Matcher::Prefixed(Token {
            prefixes,
            hex,
            extra,
            min,
            max,
        }),
        kind,
    }
}

/// `rule` with other keywords: substrings of its prefixes whose first two
/// letters are rarer in ordinary text than the prefixes' own (`hpat_` for
/// `shpat_`: `sh` is in `https`), or already start another rule's keyword
/// (`eyj` for `ops_eyJ`). Every prefix must hold one (unit-tested).
const fn keyed(keywords: &'static [&'static str], rule: Rule) -> Rule {
    Rule { keywords, ..rule }
}

/// Body lengths: exactly `n`, or `n` and more.
const fn exactly(n: usize) -> (usize, usize) {
    (n, n)
}
const fn at_least(n: usize) -> (usize, usize) {
    (n, usize::MAX)
}

/// Body bytes besides letters and digits.
const URL_SAFE: &str = "_-";
const BASE64: &str = "+/=_";

/// One redaction rule: keywords for the prefilter (ASCII, at least two
/// bytes, matched case-insensitively: every match of the rule contains one
/// of them; the rarer their first two letters, the fewer places the
/// prefilter compares them), a matcher, and the kind its markers name
/// (assignments take theirs from the key).
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
        keywords: &["private-lines"],
        matcher: Matcher::PuttyKey,
        kind: "private_key",
    },
    Rule {
        // base64 of `-----BEGIN ` but its first letter (the prefilter
        // ignores case).
        keywords: &["s0tls1crudjtib"],
        matcher: Matcher::Base64PrivateKey,
        kind: "private_key",
    },
    token(
        &["AGE-SECRET-KEY-1"],
        false,
        "",
        exactly(58),
        "age_secret_key",
    ),
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
        keywords: &[
            "glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glimt-", "glsoat-", "gloas-",
            "glagent-", "glffct-", "glcbt-", "r1348941",
        ],
        matcher: Matcher::Regex(concat!(
            r"gl(?:pat|dt|rt|ptt|ft|imt|soat|oas|agent|ffct)-[A-Za-z0-9_-]{20,}(?:\.[0-9a-z]{9})?",
            r"|glcbt-[0-9A-Za-z]{1,5}_[A-Za-z0-9_-]{20,}",
            r"|GR1348941[A-Za-z0-9_-]{20,}"
        )),
        kind: "gitlab_token",
    },
    Rule {
        keywords: &[
            "xoxa-", "xoxb-", "xoxo-", "xoxp-", "xoxr-", "xoxs-", "xoxe", "xapp-",
        ],
        matcher: Matcher::Regex(concat!(
            r"xox[abopsr]-[A-Za-z0-9-]{10,}|xapp-[0-9]+-[A-Za-z0-9-]{10,}",
            r"|xoxe(?:\.xox[bp])?-[0-9]-[A-Za-z0-9-]{10,}"
        )),
        kind: "slack_token",
    },
    Rule {
        keywords: &[
            "sk_live_", "rk_live_", "sk_test_", "rk_test_", "sk_prod_", "rk_prod_", "hsec_",
        ],
        matcher: Matcher::Regex(
            r"[sr]k_(?:live|test|prod)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,}",
        ),
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
        keywords: &["hf_", "_org_"],
        matcher: Matcher::Word(r"(?:hf|api_org)_[A-Za-z0-9]{34,}"),
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
    keyed(
        &["a29."],
        token(
            &["ya29."],
            false,
            URL_SAFE,
            at_least(20),
            "google_oauth_token",
        ),
    ),
    keyed(
        &["px-"],
        token(
            &["GOCSPX-"],
            false,
            URL_SAFE,
            at_least(24),
            "google_client_secret",
        ),
    ),
    token(
        &["1//"],
        false,
        URL_SAFE,
        at_least(30),
        "google_refresh_token",
    ),
    // `SG.` + 22 + `.` + 43.
    token(&["SG."], false, "_-.", exactly(66), "sendgrid_key"),
    // Twilio API key SIDs: `SK` + 32 hex digits. `sk` is a common pair of
    // letters (`task`, `disk`): a hand matcher, no regex to compile.
    token(&["SK"], true, "", exactly(32), "twilio_key"),
    token(
        &["hvs.", "hvb.", "hvr."],
        false,
        URL_SAFE,
        at_least(24),
        "vault_token",
    ),
    keyed(
        &["_v1_"],
        token(
            &["dop_v1_", "doo_v1_", "dor_v1_"],
            true,
            "",
            exactly(64),
            "digitalocean_token",
        ),
    ),
    token(
        &["dckr_pat_", "dckr_oat_"],
        false,
        URL_SAFE,
        at_least(27),
        "dockerhub_token",
    ),
    // Atlassian API tokens and Bitbucket app passwords.
    keyed(
        &["t3", "tbb"],
        token(
            &["ATATT3", "ATCTT3", "ATBB"],
            false,
            "_-=",
            at_least(28),
            "atlassian_token",
        ),
    ),
    keyed(
        &["y-"],
        token(&["key-"], true, "", exactly(32), "mailgun_key"),
    ),
    keyed(
        &["n_api_", "n_oauth_"],
        token(
            &["lin_api_", "lin_oauth_"],
            false,
            "",
            at_least(40),
            "linear_key",
        ),
    ),
    token(
        &[
            "dp.pt.",
            "dp.st.",
            "dp.ct.",
            "dp.sa.",
            "dp.scim.",
            "dp.audit.",
        ],
        false,
        "._-",
        at_least(40),
        "doppler_token",
    ),
    keyed(
        &["ul-"],
        token(&["pul-"], true, "", exactly(40), "pulumi_token"),
    ),
    token(
        &["glc_", "glsa_", "eyJrIjoi"],
        false,
        BASE64,
        at_least(32),
        "grafana_token",
    ),
    token(
        &["sntrys_", "sntryu_"],
        false,
        BASE64,
        at_least(40),
        "sentry_token",
    ),
    token(&["nfp_"], false, "", at_least(36), "netlify_token"),
    token(&["HRKU-"], false, URL_SAFE, at_least(58), "heroku_key"),
    token(&["dapi"], true, "", exactly(32), "databricks_token"),
    keyed(
        &["gd_"],
        token(&["figd_"], false, URL_SAFE, at_least(40), "figma_token"),
    ),
    // `PMAK-` + 24 hex + `-` + 34 hex.
    keyed(
        &["ak-"],
        token(&["PMAK-"], true, "-", exactly(59), "postman_key"),
    ),
    keyed(
        &["hpat_", "hpss_", "hpca_", "hppa_"],
        token(
            &["shpat_", "shpss_", "shpca_", "shppa_"],
            true,
            "",
            exactly(32),
            "shopify_token",
        ),
    ),
    token(
        &["sbp_", "sb_secret_"],
        false,
        URL_SAFE,
        at_least(30),
        "supabase_key",
    ),
    keyed(
        &["scale_"],
        token(
            &["pscale_tkn_", "pscale_pw_", "pscale_oauth_"],
            false,
            "_=.-",
            at_least(32),
            "planetscale_token",
        ),
    ),
    token(&["tskey-"], false, "-", at_least(30), "tailscale_key"),
    keyed(
        &["eyj"],
        token(
            &["ops_eyJ"],
            false,
            "+/=_-",
            at_least(100),
            "onepassword_token",
        ),
    ),
    keyed(
        &["256~"],
        token(
            &["sha256~"],
            false,
            URL_SAFE,
            at_least(43),
            "openshift_token",
        ),
    ),
    token(&["gsk_"], false, "", at_least(48), "groq_key"),
    token(&["r8_"], false, "", at_least(37), "replicate_token"),
    keyed(
        &["lx-"],
        token(&["pplx-"], false, "", at_least(48), "perplexity_key"),
    ),
    token(&["xai-"], false, "", at_least(70), "xai_key"),
    token(&["LTAI"], false, "", (16, 30), "alibaba_key"),
    token(&["bkua_"], true, "", exactly(40), "buildkite_token"),
    // `dt0c01.` + 24 + `.` + 64.
    token(&["dt0c01."], false, ".", exactly(89), "dynatrace_token"),
    keyed(
        &["ubygems_"],
        token(&["rubygems_"], true, "", exactly(48), "rubygems_key"),
    ),
    token(
        &["CFPAT-"],
        false,
        URL_SAFE,
        at_least(43),
        "contentful_token",
    ),
    token(&["sgp_"], false, "_", at_least(40), "sourcegraph_token"),
    // Secret Mapbox tokens (`pk.eyJ…` ones are public).
    keyed(
        &["eyj"],
        token(&["sk.eyJ"], false, "._-", at_least(80), "mapbox_token"),
    ),
    keyed(
        &["$production$", "$sandbox$"],
        token(
            &["access_token$production$", "access_token$sandbox$"],
            false,
            "$",
            at_least(40),
            "braintree_token",
        ),
    ),
    // Plaid access tokens: the prefix and a UUID.
    keyed(
        &["s-sandbox-", "s-development-", "s-production-"],
        token(
            &[
                "access-sandbox-",
                "access-development-",
                "access-production-",
            ],
            true,
            "-",
            exactly(36),
            "plaid_token",
        ),
    ),
    keyed(
        &["sv2_"],
        token(
            &["lsv2_pt_", "lsv2_sk_"],
            false,
            "_",
            at_least(40),
            "langsmith_key",
        ),
    ),
    keyed(
        &["tn_", "secret_"],
        token(&["ntn_", "secret_"], false, "", (43, 46), "notion_token"),
    ),
    keyed(
        &["o1_", "fm1a_", "fm1r_", "fm2_"],
        token(
            &["fo1_", "fm1a_", "fm1r_", "fm2_"],
            false,
            "+/=_-",
            at_least(43),
            "flyio_token",
        ),
    ),
    token(&["pcsk_"], false, "_", at_least(40), "pinecone_key"),
    token(
        &["AKCp", "cmVmdGtu"],
        false,
        "",
        at_least(56),
        "jfrog_token",
    ),
    // Cloudflare Origin CA keys: `v1.0-` + 24 hex + `-` + 146 hex.
    token(&["v1.0-"], true, "-", exactly(171), "cloudflare_key"),
    token(&["EZAK", "EZTK"], false, "", exactly(54), "easypost_key"),
    keyed(
        &["ojars_"],
        token(&["CLOJARS_"], false, "", exactly(60), "clojars_token"),
    ),
    Rule {
        // A 1Password account's Secret Key.
        keywords: &["a3-"],
        matcher: Matcher::Word(concat!(
            r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})",
            r"-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}"
        )),
        kind: "onepassword_token",
    },
    Rule {
        // Azure Storage and Service Bus / Event Hubs connection strings.
        keywords: &["ccountkey", "ccesskey"],
        matcher: Matcher::Regex(concat!(
            r"(?i-u:accountkey|sharedaccesskey)[ \t]*=[ \t]*",
            r"(?P<s1>[A-Za-z0-9+/]{20,}={0,2})"
        )),
        kind: "azure_key",
    },
    Rule {
        // The signature of an Azure SAS URL or token (URL-encoded base64),
        // after `?`, `&`, `;` or a JSON `\u0026`: `sig=0.05` is kept.
        keywords: &["sig="],
        matcher: Matcher::Regex(r"(?:[?&;]|\\u0026)(?i-u:sig)=(?P<s1>[A-Za-z0-9%+/=]{20,})"),
        kind: "azure_sas",
    },
    Rule {
        // Microsoft Entra ID (Azure AD) client secrets: `xxx8Q~…`.
        keywords: &["q~"],
        matcher: Matcher::Word(r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}"),
        kind: "azure_client_secret",
    },
    Rule {
        // Discord bot tokens have no prefix: only within 64 printable
        // ASCII characters after `discord` on its line (a `Bot`
        // authorization header is an assignment). Not `[^\r\n]`: a
        // Unicode class repeated 64 times compiles in about 1 ms.
        keywords: &["discord"],
        matcher: Matcher::Regex(concat!(
            r"(?i-u:discord)[\t -~]{0,64}?",
            r"(?P<s1>[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40})"
        )),
        kind: "discord_token",
    },
    Rule {
        // `<bot id>:AA…`, also in a Bot API URL (`/bot<id>:AA…/getMe`).
        keywords: &[":aa"],
        matcher: Matcher::Word(r"(?:bot)?[0-9]{5,16}:AA[A-Za-z0-9_-]{33}"),
        kind: "telegram_bot_token",
    },
    Rule {
        keywords: &["-us"],
        matcher: Matcher::Word(r"[0-9a-f]{32}-us[0-9]{1,2}"),
        kind: "mailchimp_key",
    },
    Rule {
        keywords: &["q0atp-", "q0csp-", "eaaa"],
        matcher: Matcher::Word(
            r"sq0atp-[A-Za-z0-9_-]{22,}|sq0csp-[A-Za-z0-9_-]{43,}|EAAA[A-Za-z0-9_-]{60,}",
        ),
        kind: "square_token",
    },
    Rule {
        keywords: &["nrak-", "nraa-", "nrii-", "nriq-", "nral"],
        matcher: Matcher::Word(r"NR(?:AK|AA|II|IQ)-[A-Za-z0-9_-]{27,}|[A-Fa-f0-9]{36}NRAL"),
        kind: "newrelic_key",
    },
    Rule {
        // HCP Terraform / Terraform Enterprise API tokens.
        keywords: &["tlasv1"],
        matcher: Matcher::Word(r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}"),
        kind: "terraform_token",
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
        // `aws_secret_access_key = V`, and `aws configure set
        // aws_secret_access_key V` (a blank for a separator); the same
        // for the session token.
        keywords: &[
            "aws_secret",
            "secret_access_key",
            "secretaccesskey",
            "session_token",
            "sessiontoken",
        ],
        matcher: Matcher::Regex(concat!(
            r#"(?i-u:aws_?secret(?:_?access)?_?key|aws_?session_?token)["']?"#,
            r"(?:",
            ws!(),
            r"*[:=]",
            ws!(),
            r"*|[ \t]+)",
            r#"["']?(?P<s1>[A-Za-z0-9/+=]{30,})"#
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
    Rule {
        // The word and what may follow a key: a separator, a quote, a
        // blank, `>` or `\` (`\"key\"`). `Authorization` is not one.
        keywords: &[
            "key=", "key:", "key\"", "key'", "key ", "key\t", "key>", "key\\", "auth=", "auth:",
            "auth\"", "auth'", "auth ", "auth\t", "auth>", "auth\\",
        ],
        matcher: Matcher::RandomAssignment,
        kind: "secret",
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

/// The bigram of a keyword or of the text at a byte: its first two bytes,
/// lowercased, as `(a << 8) | b`.
const fn bigram(a: u8, b: u8) -> usize {
    ((lower(a) as usize) << 8) | lower(b) as usize
}

/// Bit `bigram` is set when some keyword starts with that bigram. Built at
/// compile time; one lookup per text byte.
static BIGRAMS: [u64; 1024] = {
    let mut t = [0u64; 1024];
    let mut r = 0;
    while r < RULES.len() {
        let kws = RULES[r].keywords;
        let mut k = 0;
        while k < kws.len() {
            let kw = kws[k].as_bytes();
            let idx = bigram(kw[0], kw[1]);
            t[idx / 64] |= 1 << (idx % 64);
            k += 1;
        }
        r += 1;
    }
    t
};

/// For each word of [`BIGRAMS`], how many bits are set in the words before
/// it: a set bigram's rank is this plus the bits set below it in its word.
static RANK: [u16; 1025] = {
    let mut t = [0u16; 1025];
    let mut w = 0;
    while w < 1024 {
        t[w + 1] = t[w] + BIGRAMS[w].count_ones() as u16;
        w += 1;
    }
    t
};

/// How many distinct bigrams the keywords start with.
const BIGRAM_COUNT: usize = RANK[1024] as usize;

/// The rank of a set bigram (see [`RANK`]).
const fn rank(idx: usize) -> usize {
    let word = BIGRAMS[idx / 64];
    RANK[idx / 64] as usize + (word & ((1 << (idx % 64)) - 1)).count_ones() as usize
}

/// Every (keyword, rule index) pair, grouped by the keyword's bigram: the
/// pairs of the bigram of rank `n` are `pairs[starts[n]..starts[n + 1]]`,
/// so a bigram found in the text is compared with the keywords that start
/// with it and no others. Built at compile time (a table built on first
/// use cost every hook call 26 allocations).
struct Keywords {
    pairs: [(&'static [u8], usize); KEYWORD_COUNT],
    starts: [u16; BIGRAM_COUNT + 1],
}

static KEYWORDS: Keywords = {
    const _: () = assert!(KEYWORD_COUNT < u16::MAX as usize);
    let mut starts = [0u16; BIGRAM_COUNT + 1];
    let mut r = 0;
    while r < RULES.len() {
        let kws = RULES[r].keywords;
        let mut k = 0;
        while k < kws.len() {
            let kw = kws[k].as_bytes();
            starts[rank(bigram(kw[0], kw[1])) + 1] += 1;
            k += 1;
        }
        r += 1;
    }
    let mut n = 0;
    while n < BIGRAM_COUNT {
        starts[n + 1] += starts[n];
        n += 1;
    }
    let mut next = starts;
    let mut pairs: [(&'static [u8], usize); KEYWORD_COUNT] = [(&[], 0); KEYWORD_COUNT];
    let mut r = 0;
    while r < RULES.len() {
        let kws = RULES[r].keywords;
        let mut k = 0;
        while k < kws.len() {
            let kw = kws[k].as_bytes();
            let n = rank(bigram(kw[0], kw[1]));
            pairs[next[n] as usize] = (kw, r);
            next[n] += 1;
            k += 1;
        }
        r += 1;
    }
    Keywords { pairs, starts }
};

/// Which rules have a keyword in `text` (ASCII case-insensitive), as a bit
/// set over rule indices. One bigram-table lookup per byte; keywords are
/// compared only where their own first two bytes occur.
pub(super) fn prefilter(text: &str) -> u128 {
    const _: () = assert!(RULES.len() <= 128);
    let b = text.as_bytes();
    let mut hits = 0u128;
    for i in 0..b.len().saturating_sub(1) {
        let idx = bigram(b[i], b[i + 1]);
        if BIGRAMS[idx / 64] & (1 << (idx % 64)) == 0 {
            continue;
        }
        let n = rank(idx);
        let (from, to) = (KEYWORDS.starts[n], KEYWORDS.starts[n + 1]);
        for &(kw, ri) in &KEYWORDS.pairs[from as usize..to as usize] {
            if hits & (1 << ri) == 0 && starts_with_ci(&b[i + 2..], &kw[2..]) {
                hits |= 1u128 << ri;
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
            Matcher::Prefixed(t) => redact_prefixed(&t, rule.kind, &cur),
            Matcher::PuttyKey => redact_putty_keys(&cur),
            Matcher::Base64PrivateKey => redact_base64_private_keys(&cur),
            Matcher::PrivateKey => redact_private_keys(&cur),
            Matcher::Basic => redact_basic(&cur),
            Matcher::UrlCredentials => redact_url_credentials(&cur),
            Matcher::CommandFlags => redact_command_flags(&cur),
            Matcher::Bearer => redact_bearer(&cur),
            Matcher::Assignment => redact_assignments(&cur),
            Matcher::RandomAssignment => redact_random_assignments(&cur),
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

/// The first `c` in `h` at or after `from`. A branch-free test per 32
/// bytes (which the compiler vectorises) skips the chunks without one.
fn find_byte(h: &[u8], from: usize, c: u8) -> Option<usize> {
    const CHUNK: usize = 32;
    let mut i = from;
    while i + CHUNK <= h.len() {
        let chunk = &h[i..i + CHUNK];
        if chunk.iter().fold(false, |a, &x| a | (x == c)) {
            return chunk.iter().position(|&x| x == c).map(|p| i + p);
        }
        i += CHUNK;
    }
    h.get(i..)?.iter().position(|&x| x == c).map(|p| i + p)
}

/// Where `needle` starts in `h`. A needle with a capital or a digit (rare
/// in ordinary text: `SK`, `ops_eyJ`, `1//`) is found by searching for
/// that byte, then comparing; any other by `str::match_indices`, which is
/// faster when every byte of the needle is common.
pub(super) fn starts_of(text: &str, needle: &str) -> Vec<usize> {
    let (h, n) = (text.as_bytes(), needle.as_bytes());
    let Some(off) = n
        .iter()
        .position(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    else {
        return text.match_indices(needle).map(|(i, _)| i).collect();
    };
    let mut out = Vec::new();
    let mut i = off;
    while let Some(at) = find_byte(h, i, n[off]) {
        if h[at - off..].starts_with(n) {
            out.push(at - off);
        }
        i = at + 1;
    }
    out
}

/// Replace every [`Token`] that stands alone. The prefixes are searched one
/// after another; the spans are then put in order and overlaps dropped.
fn redact_prefixed(t: &Token, kind: &str, text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut spans = Vec::new();
    for p in t.prefixes {
        for start in starts_of(text, p) {
            let body = start + p.len();
            let mut end = body + b[body..].iter().take_while(|c| t.accepts(**c)).count();
            if t.extra.contains('.') {
                while end > body && b[end - 1] == b'.' {
                    end -= 1;
                }
            }
            if (t.min..=t.max).contains(&(end - body)) && stands_alone(b, start, end) {
                spans.push((start, end));
            }
        }
    }
    if spans.is_empty() {
        return None;
    }
    spans.sort_unstable();
    let mut sp = Splice::default();
    let mut last = 0;
    for (start, end) in spans {
        if start >= last {
            sp.redact(text, start, end, kind);
            last = end;
        }
    }
    sp.finish(text)
}
