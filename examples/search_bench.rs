//! Recall of lexical search over captured records (run by hand; see
//! docs/benchmarks.md, "Search recall").
//!
//! `cargo run --locked --example search_bench`
//!
//! Builds twelve sessions of records in a fresh embedded store, each with a
//! known fact (a retry with backoff, `parse_date`, `loadConfig`, …) among
//! ordinary records, then asks questions the way a model would call
//! `activity_search` (the same store query, the project's scope) and counts
//! a question found when a record of the session that holds the fact is
//! among the first three rows. Three kinds of question: the fact's own
//! words (control), other inflections and split identifiers (lexical),
//! and paraphrases with none of the fact's words (semantic: not a goal of
//! lexical search, reported as it is).
//!
//! Rows found by meaning (`(by meaning)`, after the rows the words found)
//! are counted apart: "words" is what lexical search alone puts in the
//! first three, "fused" what the search returns.
//! `SEARCH_BENCH_DATABASE_URL=postgres://…` runs the same on a PostgreSQL
//! database (emptied first) instead of the embedded store.
//!
//! With `SEARCH_BENCH_FILLER=N`, N more ordinary records (spread over a
//! year, in other sessions) are stored first, and the time of each question
//! is printed: what ranking every match costs in a large store.
//! `SEARCH_BENCH_DIR=DIR` keeps the store in DIR (new, or emptied first).

use memhook_core::record::Record;
use memhook_store::meaning::BY_MEANING;
use memhook_store::sqlite::samples::rec;
use memhook_store::sqlite::{Store, StoredRecord};
use memhook_store_pg::PgStore;

/// The store under test: the embedded one, or PostgreSQL.
enum Bench {
    Sqlite(Box<Store>),
    Pg(Box<PgStore>),
}

impl Bench {
    fn insert_all(&mut self, recs: &[Record]) {
        match self {
            Bench::Sqlite(s) => {
                s.insert_all(recs.iter()).expect("insert");
            }
            Bench::Pg(s) => {
                s.insert_each(recs.iter()).expect("insert");
            }
        }
    }

    fn search(&self, q: &str) -> Vec<StoredRecord> {
        let scope = Some(("default", "bench"));
        match self {
            Bench::Sqlite(s) => s
                .search_between_fused(scope, q, None, None, 3)
                .expect("search"),
            Bench::Pg(s) => s.search_fused(scope, q, 3).expect("search"),
        }
    }
}

/// Each session: its id, and the texts of its records (prompt first).
const SESSIONS: &[(&str, &[&str])] = &[
    (
        "s01",
        &[
            "add a retry with exponential backoff to the download client",
            "def fetch(url):\n    for attempt in range(5):\n        retry after sleep(2 ** attempt)",
        ],
    ),
    (
        "s02",
        &[
            "the invoice dates come out wrong",
            "def parse_date(text):\n    return datetime.strptime(text, '%Y-%m-%d')",
        ],
    ),
    (
        "s03",
        &[
            "read the settings file once",
            "export function loadConfig(path: string): Settings { return JSON.parse(read(path)) }",
        ],
    ),
    (
        "s04",
        &[
            "wrap requests in one client",
            "pub struct HttpClient { inner: reqwest::Client }",
        ],
    ),
    (
        "s05",
        &[
            "fix the leap year bug",
            "FAILED tests/test_calendar.py::test_leap_year - AssertionError",
        ],
    ),
    (
        "s06",
        &[
            "log out should end the session",
            "renamed src/user-session.ts; the cookie is cleared on logout",
        ],
    ),
    (
        "s07",
        &[
            "lookups of the price table are slow",
            "cache the price table in memory for an hour",
        ],
    ),
    (
        "s08",
        &[
            "add the orders column",
            "migrate the schema: ALTER TABLE orders ADD COLUMN note TEXT",
        ],
    ),
    (
        "s09",
        &[
            "the upload hangs",
            "set a timeout of 30 s on the upload socket",
        ],
    ),
    (
        "s10",
        &[
            "protect the public endpoint",
            "impl RateLimiter { fn allow(&mut self, key: &str) -> bool { self.bucket(key).take() } }",
        ],
    ),
    (
        "s11",
        &[
            "split source text into words",
            "the tokenizer keeps underscores inside identifiers",
        ],
    ),
    (
        "s12",
        &[
            "update the docs",
            "parse the arguments, then print the date and the config path of the client",
        ],
    ),
];

/// Ordinary records every session also has (they match many queries a
/// little, as real tool output does).
const ORDINARY: &[&str] = &[
    "cargo test: 42 passed; 0 failed",
    "Read src/lib.rs",
    "git status: nothing to commit, working tree clean",
];

/// (kind, question, session that holds the answer)
const QUESTIONS: &[(&str, &str, &str)] = &[
    ("control", "exponential backoff", "s01"),
    ("control", "parse_date", "s02"),
    ("control", "leap year", "s05"),
    ("lexical", "retries", "s01"),
    ("lexical", "parse date", "s02"),
    ("lexical", "parsed dates", "s02"),
    ("lexical", "load config", "s03"),
    ("lexical", "http client", "s04"),
    ("lexical", "failing test", "s05"),
    ("lexical", "user session", "s06"),
    ("lexical", "caching", "s07"),
    ("lexical", "migrations", "s08"),
    ("lexical", "timeouts", "s09"),
    ("lexical", "rate limiter", "s10"),
    ("lexical", "tokenize", "s11"),
    ("paraphrase", "make downloads survive flaky networks", "s01"),
    ("paraphrase", "speed up repeated lookups", "s07"),
    ("paraphrase", "stop callers from hammering the API", "s10"),
    ("paraphrase", "read settings at startup", "s03"),
];

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    // SEARCH_BENCH_DIR keeps the store there, to look at afterwards.
    let at = std::env::var_os("SEARCH_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().to_path_buf());
    let mut store = match std::env::var("SEARCH_BENCH_DATABASE_URL") {
        Ok(url) => {
            let env = memhook_store_pg::config::Env {
                url: Some(url),
                ..Default::default()
            };
            let target = memhook_store_pg::config::resolve(None, None, &env)
                .expect("database url")
                .expect("a database");
            let pg = PgStore::new(target, &at);
            pg.ensure_schema().expect("schema");
            let mut c = postgres::Client::connect(
                &std::env::var("SEARCH_BENCH_DATABASE_URL").unwrap(),
                postgres::NoTls,
            )
            .expect("connect");
            c.batch_execute(
                "TRUNCATE records, sessions, projects CASCADE; UPDATE meaning_fill SET below = 0",
            )
            .expect("empty the database");
            Bench::Pg(Box::new(pg))
        }
        Err(_) => Bench::Sqlite(Box::new(Store::open(&at).expect("store"))),
    };
    let mut n = 0u64;
    let filler: u64 = std::env::var("SEARCH_BENCH_FILLER")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if filler > 0 {
        let t = std::time::Instant::now();
        let year = 365 * 86_400_000u64;
        let now = 1_000_000 + year;
        let recs: Vec<_> = (0..filler)
            .map(|i| {
                n += 1;
                let mut r = rec(
                    &format!("{n:032x}"),
                    now - year + i * year / filler,
                    "bench",
                    &format!("f{}", i / 50),
                    "post-tool-use",
                );
                r.title = None;
                r.files = Vec::new();
                r.body = Some(format!(
                    "{} step {i}: edited src/mod{}.rs; the test client config passed",
                    ORDINARY[(i % 3) as usize],
                    i % 97
                ));
                r
            })
            .collect();
        for chunk in recs.chunks(1000) {
            store.insert_all(chunk);
        }
        println!(
            "{filler} filler records stored in {:.1} s ({:.0} µs each)\n",
            t.elapsed().as_secs_f64(),
            t.elapsed().as_micros() as f64 / filler as f64
        );
    }
    for (i, (session, texts)) in SESSIONS.iter().enumerate() {
        let start = 1_000_000 + i as u64 * 60_000;
        let all = texts.iter().chain(ORDINARY.iter());
        for (j, text) in all.enumerate() {
            n += 1;
            let event = if j == 0 {
                "user-prompt"
            } else {
                "post-tool-use"
            };
            let mut r = rec(
                &format!("{n:032x}"),
                start + j as u64,
                "bench",
                session,
                event,
            );
            if j == 0 {
                r.tool = None;
            }
            r.title = None;
            r.body = Some((*text).to_string());
            r.files = Vec::new();
            store.insert_all(std::slice::from_ref(&r));
        }
    }
    // (kind, found by words, found, asked)
    let mut score: Vec<(&str, usize, usize, usize)> = Vec::new();
    for (kind, question, want) in QUESTIONS {
        let t = std::time::Instant::now();
        let found = store.search(question);
        let took = t.elapsed();
        let by_meaning = |r: &StoredRecord| r.matched.as_deref() == Some(BY_MEANING);
        let sessions: Vec<String> = found
            .iter()
            .map(|r| {
                let s = r.session_id.clone().unwrap_or_default();
                if by_meaning(r) {
                    format!("{s}~")
                } else {
                    s
                }
            })
            .collect();
        let hit = found.iter().any(|r| r.session_id.as_deref() == Some(*want));
        let by_words = found
            .iter()
            .any(|r| !by_meaning(r) && r.session_id.as_deref() == Some(*want));
        println!(
            "{:<10} {:<40} want {want}  top 3 {:?}  {}{}",
            kind,
            question,
            sessions,
            match (by_words, hit) {
                (true, _) => "found",
                (false, true) => "found by meaning",
                _ => "MISSED",
            },
            if filler > 0 {
                format!("  {:.1} ms", took.as_secs_f64() * 1000.0)
            } else {
                String::new()
            }
        );
        match score.iter_mut().find(|(k, ..)| k == kind) {
            Some(s) => {
                s.1 += usize::from(by_words);
                s.2 += usize::from(hit);
                s.3 += 1;
            }
            None => score.push((kind, usize::from(by_words), usize::from(hit), 1)),
        }
    }
    println!("\n(`~`: found by meaning)\n");
    for (kind, words, hits, of) in score {
        println!("recall@3 {kind:<10} words {words} of {of}, fused {hits} of {of}");
    }
}
