//! Unit tests of the redactor: every kind, the near misses, the corpus of
//! `fixtures/secrets/`, and the reproductions of the issues it fixed.

use std::borrow::Cow;

use super::assign::*;
use super::hygiene::*;
use super::rules::*;
use super::scan::*;
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
    let pgp =
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK----- tail";
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

/// The drainer refuses a spool entry whose text holds a character `clean`
/// strips; the byte check in front must never hide one, wherever it sits.
#[test]
fn holds_stripped_control_finds_every_stripped_char_anywhere() {
    let all = (0..=0x10ffffu32).filter_map(char::from_u32);
    for c in all {
        let alone = c.to_string();
        let inside = format!("{}{c}{}", "plain text ".repeat(7), " and more");
        for text in [&alone, &inside] {
            assert_eq!(
                super::holds_stripped_control(text),
                is_stripped_control(c),
                "{:x} in {text:?}",
                c as u32
            );
        }
    }
    assert!(!super::holds_stripped_control(
        "tab\tnl\ncr\r é ü 中文 👩\u{200d}💻"
    ));
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

/// Every keyword of every rule, alone in neutral text, in either case,
/// sets its rule's bit: the compile-time keyword table misses none.
#[test]
fn every_keyword_reaches_its_rule() {
    for (ri, rule) in RULES.iter().enumerate() {
        for kw in rule.keywords {
            for text in [
                format!("zz {kw} zz"),
                format!("zz {} zz", kw.to_ascii_uppercase()),
            ] {
                assert_ne!(prefilter(&text) & (1 << ri), 0, "{kw:?} in {text:?}");
            }
        }
    }
}

/// A prefixed token rule runs only when one of its keywords occurs: each
/// of its prefixes must hold one.
#[test]
fn every_prefix_holds_a_keyword() {
    for rule in RULES {
        let Matcher::Prefixed(t) = rule.matcher else {
            continue;
        };
        for p in t.prefixes {
            let p = p.to_ascii_lowercase();
            assert!(
                rule.keywords
                    .iter()
                    .any(|k| p.contains(&k.to_ascii_lowercase())),
                "{p} holds none of {:?}",
                rule.keywords
            );
        }
    }
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
    let p = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("fixtures/secrets")
        .join(name);
    std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{name}: {e}: {l}")))
        .collect()
}

/// Every shape of the corpus is redacted and marked with its kind. All
/// failures are listed at once, with their count: "N of M survive".
#[test]
fn every_corpus_secret_is_redacted_with_its_kind() {
    let entries = corpus("secrets.jsonl");
    assert!(entries.len() >= 150, "the corpus holds {}", entries.len());
    let mut failures = Vec::new();
    for e in &entries {
        let (text, middle) = (e["text"].as_str().unwrap(), e["middle"].as_str().unwrap());
        let kind = e["kind"].as_str().unwrap();
        assert!(
            text.contains(middle),
            "{kind}: the middle is not in {text:?}"
        );
        let out = clean(text);
        if !KINDS.contains(&kind) {
            failures.push(format!("unknown kind {kind}: {text:?}"));
        } else if out.contains(middle) {
            failures.push(format!("{kind} leaked: {text:?} -> {out:?}"));
        } else if !out.contains(&redacted(kind)) {
            failures.push(format!("{kind} not marked: {text:?} -> {out:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} shapes survive:\n{}",
        failures.len(),
        entries.len(),
        failures.join("\n")
    );
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

/// Every near miss comes out unchanged; all failures are listed at once.
#[test]
fn every_corpus_near_miss_survives() {
    let entries = corpus("near_misses.jsonl");
    let mut failures = Vec::new();
    for e in &entries {
        let text = e["text"].as_str().unwrap();
        let out = clean(text);
        if out != text {
            failures.push(format!("{}: {text:?} -> {out:?}", e["note"]));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} near misses changed:\n{}",
        failures.len(),
        entries.len(),
        failures.join("\n")
    );
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
    assert_eq!(clean("memhook::token::Kind"), "memhook::token::Kind");
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
        clean("https://discord.com/api/webhooks/123456789012345678/abcdefghijklmnopqrstuvwx_-Z"),
        "https://discord.com/api/webhooks/[REDACTED:discord_webhook]"
    );
}

// --- Issue 23, item 5: credential shapes an attack pass found surviving ---

/// Every prefixed token rule at the edges of its body length, standing
/// alone and glued to a word: `min` is redacted, `min - 1` and `max + 1`
/// are kept, and so is a token glued to a letter before it.
#[test]
fn prefixed_tokens_at_their_length_edges() {
    for rule in RULES {
        let Matcher::Prefixed(t) = rule.matcher else {
            continue;
        };
        // A body every rule accepts: hex digits are letters or digits too.
        let body = |n: usize| "a7".repeat(n.div_ceil(2))[..n].to_string();
        for p in t.prefixes {
            let at_min = format!("{p}{}", body(t.min));
            assert_eq!(
                clean(&format!("x {at_min} y")),
                format!("x {} y", redacted(rule.kind)),
                "{p} with {} body bytes",
                t.min
            );
            for kept in [
                format!("x {p}{} y", body(t.min - 1)),
                format!("x z{at_min} y"),
            ] {
                assert_eq!(clean(&kept), kept, "{}", rule.kind);
            }
            if t.max != usize::MAX {
                let at_max = format!("x {p}{} y", body(t.max));
                assert_eq!(clean(&at_max), format!("x {} y", redacted(rule.kind)));
                let over = format!("x {p}{} y", body(t.max + 1));
                assert_eq!(clean(&over), over, "{}", rule.kind);
            }
        }
    }
}

/// The prefix search finds every start, at either end of the text and
/// beyond the 32-byte chunks it skips through.
#[test]
fn prefix_search_finds_every_start() {
    let long = format!("{}ops_eyJ{}ops_eyJ", "x".repeat(40), "y".repeat(33));
    for (text, needle, want) in [
        ("SKSK", "SK", vec![0, 2]),
        ("xSK", "SK", vec![1]),
        ("ops_eyJ", "ops_eyJ", vec![0]),
        ("eyJ ops_eyj", "ops_eyJ", vec![]),
        (long.as_str(), "ops_eyJ", vec![40, 80]),
        ("a secret_ b secret_", "secret_", vec![2, 12]),
    ] {
        assert_eq!(starts_of(text, needle), want, "{needle} in {text}");
    }
}

/// Prefixes are case-sensitive (the prefilter is not): `sk` + 32 hex is
/// not a Twilio key; a body ending a sentence keeps its full stop.
#[test]
fn prefixed_token_case_and_full_stop() {
    let hex = "0123456789abcdef0123456789abcdef";
    assert_eq!(clean(&format!("sk{hex}")), format!("sk{hex}"));
    assert_eq!(clean(&format!("SK{hex}.")), "[REDACTED:twilio_key].");
    let sg = format!("SG.{}.{}", "a".repeat(22), "b".repeat(43));
    assert_eq!(clean(&format!("key {sg}.")), "key [REDACTED:sendgrid_key].");
}

#[test]
fn random_value_length_edge() {
    // 16 distinct letters and digits: 4 bits per character.
    let at = "a1b2c3d4e5f6g7h8";
    assert_eq!(at.len(), MIN_RANDOM_LEN);
    assert!(looks_random(at.as_bytes()));
    assert!(!looks_random(&at.as_bytes()[..MIN_RANDOM_LEN - 1]));
    assert_eq!(
        clean(&format!("SIGNING_KEY={at}")),
        "SIGNING_KEY=[REDACTED:secret]"
    );
    let under = &at[..MIN_RANDOM_LEN - 1];
    assert_eq!(
        clean(&format!("SIGNING_KEY={under}")),
        format!("SIGNING_KEY={under}")
    );
}

#[test]
fn log2_without_libm_agrees_with_std() {
    // Every ratio the entropy takes (k/n for values up to 4,096 bytes),
    // and powers of two exactly.
    for n in [1u32, 2, 3, 7, 16, 17, 100, 255, 256, 1000, 4096] {
        for k in 1..=n {
            let p = f64::from(k) / f64::from(n);
            let (ours, std) = (crate::mathlog::log2(p), p.log2());
            assert!(
                (ours - std).abs() <= 4.0 * f64::EPSILON * std.abs().max(1.0),
                "{k}/{n}: {ours} vs {std}"
            );
        }
    }
    for e in -60..60 {
        assert_eq!(crate::mathlog::log2(2f64.powi(e)), f64::from(e));
    }
}

#[test]
fn random_value_entropy_edge() {
    // 8 symbols, twice each: exactly the threshold.
    let at = b"aabbccdd11223344";
    assert_eq!(bits_per_char(at), MIN_RANDOM_BITS_PER_CHAR);
    assert!(looks_random(at));
    // 7 symbols (one four times): 2.75 bits.
    let under = b"aabbccdd11223333";
    assert!(bits_per_char(under) < MIN_RANDOM_BITS_PER_CHAR);
    assert!(!looks_random(under));
    assert_eq!(
        clean("ENCRYPTION_KEY=aabbccdd11223333"),
        "ENCRYPTION_KEY=aabbccdd11223333"
    );
    assert_eq!(
        clean("ENCRYPTION_KEY=aabbccdd11223344"),
        "ENCRYPTION_KEY=[REDACTED:secret]"
    );
}

/// Letters and a digit, token bytes only, not a path or a file name.
#[test]
fn random_value_character_classes() {
    for kept in [
        "abcdefghijklmnopqrstuvwx",      // no digit
        "1234567890123456789",           // no letter
        "a1b2c3d4e5f6 g7h8i9j0",         // a blank
        "${SECRET_SIGNING_KEY_2024}",    // a placeholder
        "/etc/keys/prod-2024/signing",   // a path
        "keys/signing-2024-rotated.pem", // a file name
        "https://vault.acme.io/v1/k2",   // a URL
    ] {
        assert!(!looks_random(kept.as_bytes()), "{kept}");
    }
    for random in [
        "3f9c0a51e2b84d7c9a06b1e4f2d8c735", // hex
        "/9j/4AAQSkZJRgABAQEASABIAAD+2wBD", // base64 starting with `/`
        "dGhpcyBpcyBub3QgYSBwYXNzd29yZA==", // base64
        "kR7_x-Q2mZ.v9pL~w3",               // base64url and `.~`
    ] {
        assert!(looks_random(random.as_bytes()), "{random}");
    }
}

/// `…_KEY` and `…AUTH` names: a random value goes, anything else stays.
#[test]
fn random_key_names() {
    let v = "Zq8vN2kLw5Xr7Tb3Hc9Mj4Pd";
    for (input, want) in [
        (
            format!("ENCRYPTION_KEY={v}"),
            "ENCRYPTION_KEY=[REDACTED:secret]",
        ),
        (
            format!("accountKey: \"{v}\""),
            "accountKey: \"[REDACTED:secret]\"",
        ),
        (format!("SSHKey={v}"), "SSHKey=[REDACTED:secret]"),
        (format!("tls.key: {v}"), "tls.key: [REDACTED:secret]"),
        (format!("NPM_AUTH={v}"), "NPM_AUTH=[REDACTED:authorization]"),
        (
            "\"auth\": \"dXNlcjpodW50ZXIy\"".to_string(),
            "\"auth\": \"[REDACTED:authorization]\"",
        ),
    ] {
        assert_eq!(clean(&input), want, "input: {input}");
    }
    for kept in [
        format!("key: {v}"),           // `key` alone
        format!("PUBLIC_KEY={v}"),     // public
        format!("cache_key={v}"),      // a database's key
        format!("monkey={v}"),         // not a segment
        format!("KEYS={v}"),           // not the word
        format!("SIGNING_KEY_ID={v}"), // not the last segment
        "SIGNING_KEY=dev".to_string(), // too short
        "auth: true".to_string(),
        "\"auth\": \"dXNlcjo=\"".to_string(), // `user:`, no password
    ] {
        assert_eq!(clean(&kept), kept);
    }
}

/// A credential word followed by a setting's name: only a random value.
#[test]
fn credential_settings() {
    for kept in [
        "PASSWORD_MIN_LENGTH=12",
        "passwordMinLength: 12",
        "TOKEN_TTL=3600",
        "token_type: Bearer",
        "PASSWORD_FILE=/run/secrets/db",
        "SECRET_NAME=prod/db/credentials",
    ] {
        assert_eq!(clean(kept), kept);
    }
    let v = "vUW44bKpDcw15NMHY9ihqzv0bLQkjg";
    assert_eq!(clean(&format!("TOKEN_ID={v}")), "TOKEN_ID=[REDACTED:token]");
    // Not a setting: any value, as before.
    assert_eq!(
        clean("DB_PASSWORD_PROD=hunter2"),
        "DB_PASSWORD_PROD=[REDACTED:password]"
    );
    assert_eq!(
        clean("password_reset_token=x"),
        "password_reset_token=[REDACTED:password]"
    );
}

#[test]
fn netrc_entries() {
    for (input, want) in [
        (
            "machine h login u password p4ss",
            "machine h login u password [REDACTED:password]",
        ),
        (
            "machine api.heroku.com\n  login me@acme.io\n  password p4ss\n",
            "machine api.heroku.com\n  login me@acme.io\n  password [REDACTED:password]\n",
        ),
        (
            "machine ftp.acme.io password p4ss",
            "machine ftp.acme.io password [REDACTED:password]",
        ),
        (
            "default login anonymous password me@acme.io",
            "default login anonymous password [REDACTED:password]",
        ),
        (
            r"x\nmachine h login u password p4ss",
            r"x\nmachine h login u password [REDACTED:password]",
        ),
    ] {
        assert_eq!(clean(input), want, "input: {input}");
    }
    for kept in [
        "Machine learning password is hard",
        "the machine ftp.acme.io password is set",
        "Log in with your login password today",
        "machine h login u password",
    ] {
        assert_eq!(clean(kept), kept);
    }
}

#[test]
fn xml_elements() {
    for (input, want) in [
        (
            "<password>p4 ss</password>",
            "<password>[REDACTED:password]</password>",
        ),
        (
            "<ns:token>t0k</ns:token>",
            "<ns:token>[REDACTED:token]</ns:token>",
        ),
        (
            "<gpg.passphrase>x</gpg.passphrase>",
            "<gpg.passphrase>[REDACTED:password]</gpg.passphrase>",
        ),
        ("<password>open", "<password>[REDACTED:password]"),
    ] {
        assert_eq!(clean(input), want, "input: {input}");
    }
    for kept in [
        "<password/>",
        "<password></password>",
        "</password>",
        "<passwordPolicy>strict</passwordPolicy>",
    ] {
        assert_eq!(clean(kept), kept);
    }
}

#[test]
fn connection_strings() {
    for (input, want) in [
        (
            "Server=db;Uid=sa;Pwd=S3cr3t!;Encrypt=yes",
            "Server=db;Uid=sa;Pwd=[REDACTED:password];Encrypt=yes",
        ),
        (
            "Uid=sa;PWD={a;b}c};Encrypt=yes",
            "Uid=sa;PWD=[REDACTED:password]c};Encrypt=yes",
        ),
        (
            "connect(\"DSN=x;UID=u;PWD=S3cr3t\")",
            "connect(\"DSN=x;UID=u;PWD=[REDACTED:password]\")",
        ),
        ("Pwd=S3cr3t", "Pwd=[REDACTED:password]"),
    ] {
        assert_eq!(clean(input), want, "input: {input}");
    }
    for kept in [
        "PWD=/home/dev",
        "PWD=C:\\Users\\dev",
        "OLDPWD=~/src",
        "PWD=$HOME/x",
    ] {
        assert_eq!(clean(kept), kept);
    }
}

#[test]
fn aws_configure_set() {
    let v = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    assert_eq!(
        clean(&format!("aws configure set aws_secret_access_key {v}")),
        "aws configure set aws_secret_access_key [REDACTED:aws_secret]"
    );
    assert_eq!(
        clean(&format!("aws configure set aws_session_token {v}{v}")),
        "aws configure set aws_session_token [REDACTED:aws_secret]"
    );
    let kept = "aws configure get aws_secret_access_key --profile ci";
    assert_eq!(clean(kept), kept);
}

#[test]
fn putty_private_keys() {
    let key = "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: c\n\
               Public-Lines: 1\nAAAAC3NzaC1lZDI1NTE5AAAAIO\n\
               Private-Lines: 2\nAAAAIG9wZW5zc2gta2V5LXYx\nAAAAbm9uZQ==\n\
               Private-MAC: 0123456789abcdef\nafter";
    assert_eq!(
        clean(key),
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: c\n\
         Public-Lines: 1\nAAAAC3NzaC1lZDI1NTE5AAAAIO\n[REDACTED:private_key]\nafter"
    );
    // Cut off after one of its two lines: what is there goes.
    assert_eq!(
        clean("Private-Lines: 2\r\nAAAAIG9wZW5zc2gta2V5LXYx"),
        "[REDACTED:private_key]"
    );
    for kept in [
        "Private-Lines: 2",
        "Private-Lines: x\nAAAA",
        "Private-Lines: 1\n\nAAAA",
    ] {
        assert_eq!(clean(kept), kept);
    }
}

#[test]
fn base64_private_keys() {
    let enc = |pem: &str| {
        use std::fmt::Write;
        let (b, mut out) = (pem.as_bytes(), String::new());
        const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        for c in b.chunks(3) {
            let n = c.iter().fold(0u32, |a, &x| (a << 8) | u32::from(x)) << (8 * (3 - c.len()));
            for i in 0..4 {
                let ch = if i <= c.len() {
                    T[(n >> (18 - 6 * i)) as usize & 63]
                } else {
                    b'='
                };
                write!(out, "{}", ch as char).unwrap();
            }
        }
        out
    };
    let key = enc("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIze4bv/prq9Ebs4n1wAJJ42y4ge7BnLp\n-----END EC PRIVATE KEY-----\n");
    assert_eq!(
        clean(&format!("  tls.key: {key}\n  x: y")),
        "  tls.key: [REDACTED:private_key]\n  x: y"
    );
    // Wrapped at 76 columns: every line goes.
    let wrapped: Vec<&str> = key
        .as_bytes()
        .chunks(76)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    assert!(wrapped.len() > 1);
    assert_eq!(
        clean(&format!("{}\ndone", wrapped.join("\n"))),
        "[REDACTED:private_key]\ndone"
    );
    // A certificate and a public key are public.
    for pem in [
        "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n",
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYI\n-----END PUBLIC KEY-----\n",
    ] {
        let kept = format!("tls.crt: {}", enc(pem));
        assert_eq!(clean(&kept), kept);
    }
    // Inside another base64 run it is not the start of an encoding.
    let glued = format!("QUJD{key}");
    assert_eq!(clean(&glued), glued);
}

#[test]
fn azure_and_google_shapes() {
    let k =
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
    assert_eq!(
        clean(&format!(
            "AccountName=a;AccountKey={k};EndpointSuffix=core.windows.net"
        )),
        "AccountName=a;AccountKey=[REDACTED:azure_key];EndpointSuffix=core.windows.net"
    );
    assert_eq!(
        clean("https://a.blob.core.windows.net/c?sp=r&sig=Ab3dEf6hIj9kLm2nOp5q%2BRs8tUv%3D"),
        "https://a.blob.core.windows.net/c?sp=r&sig=[REDACTED:azure_sas]"
    );
    for kept in ["sig=0.05", "where sig = 1/(1+exp(-x))", "&sig=short"] {
        assert_eq!(clean(kept), kept);
    }
    assert_eq!(
        clean("token ya29.a0AfB_byC1d2E3f4G5h6I7j8K9"),
        "token [REDACTED:google_oauth_token]"
    );
    assert_eq!(clean("ya29 and ya29.short"), "ya29 and ya29.short");
}
