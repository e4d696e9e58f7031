//! The same behaviour from both stores behind `memhook serve`: the
//! embedded SQLite store and PostgreSQL (`--database`). Each behaviour is
//! one function taking a [`Db`], run once per store; the PostgreSQL runs
//! start their own cluster (`pg.rs`). PostgreSQL-only behaviour (a
//! database that goes away, migrations under a lock, password sources) is
//! below them.

use std::path::Path;
use std::time::{Duration, Instant};

use memhook_core::record::{Record, RecordTool};
use memhook_store::sqlite::Store;
use memhook_store_pg::config::Env;
use memhook_store_pg::PgStore;

use crate::support::binaries::memhook;
use crate::support::fixtures::{key, record};
use crate::support::http::{json, request};
use crate::support::pg::Cluster;
use crate::support::serve::{post_batch, post_record, Serve};

mod storm;
mod team;

/// Events that make a session count as having worked (the store's rule).
const WORK: &str = "('user-prompt', 'pre-tool-use', 'post-tool-use', 'post-tool-use-failure', \
                    'pre-compact', 'post-compact')";
/// Longest a test waits for a server to come back with its database.
const RECOVERY: Duration = Duration::from_secs(60);

/// The store a test server uses.
enum Db {
    Sqlite,
    Pg(Cluster, &'static str),
}

impl Db {
    /// A PostgreSQL cluster with an empty database, or `None` (skipped).
    fn pg(test: &str) -> Option<Db> {
        let c = Cluster::start(test)?;
        c.create_db("team");
        Some(Db::Pg(c, "team"))
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        match self {
            Db::Sqlite => vec![],
            Db::Pg(c, db) => vec![("MEMHOOK_DATABASE_URL", c.url_with_password(db))],
        }
    }

    /// A `--no-auth` server for `home` on this store.
    fn serve(&self, home: &Path) -> Serve {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Serve::start_env(home, None, "127.0.0.1:0", &["--no-auth"], &env)
    }

    /// Rows of `sql` as text lines (the same query text on both engines).
    fn rows(&self, data: &Path, sql: &str) -> Vec<String> {
        match self {
            Db::Sqlite => {
                let conn = rusqlite::Connection::open(data.join("store.sqlite3")).unwrap();
                memhook_store::sqlite::register_functions(&conn).unwrap();
                let mut st = conn.prepare(sql).unwrap();
                let n = st.column_count();
                st.query_map([], |r| {
                    let mut cols = Vec::new();
                    for i in 0..n {
                        cols.push(match r.get_ref(i)? {
                            rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                            rusqlite::types::ValueRef::Text(t) => {
                                String::from_utf8_lossy(t).into_owned()
                            }
                            other => format!("{other:?}"),
                        });
                    }
                    Ok(cols.join(" "))
                })
                .unwrap()
                .map(Result::unwrap)
                .collect()
            }
            Db::Pg(c, db) => c
                .client(db)
                .query(sql, &[])
                .unwrap()
                .iter()
                .map(|r| {
                    (0..r.len())
                        .map(|i| match r.columns()[i].type_().name() {
                            "int8" => r.get::<_, i64>(i).to_string(),
                            _ => r.get::<_, String>(i),
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect(),
        }
    }

    fn keys(&self, data: &Path) -> Vec<String> {
        self.rows(data, "SELECT key FROM records ORDER BY key")
    }

    /// Session and project roll-ups, and the same worked out again from
    /// the records: they must be equal.
    fn rollups_and_recount(&self, data: &Path) -> (Vec<String>, Vec<String>) {
        let mut rolled = self.rows(
            data,
            "SELECT 's', s.id, s.events, s.work, s.first_ms, s.last_ms FROM sessions s
             ORDER BY s.id",
        );
        rolled.extend(self.rows(
            data,
            "SELECT 'p', p.id, p.first_ms, p.last_ms, p.records FROM projects p ORDER BY p.id",
        ));
        let mut recount = self.rows(
            data,
            &format!(
                "SELECT 's', s.id, count(*), sum(CASE WHEN r.event IN {WORK} THEN 1 ELSE 0 END),
                        min(r.occurred_ms), max(r.occurred_ms)
                 FROM sessions s JOIN records r ON r.session_row = s.id
                 GROUP BY s.id ORDER BY s.id"
            ),
        );
        recount.extend(self.rows(
            data,
            "SELECT 'p', p.id, min(r.occurred_ms), max(r.occurred_ms), count(*)
             FROM projects p JOIN records r ON r.project_id = p.id GROUP BY p.id ORDER BY p.id",
        ));
        // PostgreSQL's sum() is numeric: compare as text of integers.
        let norm = |v: Vec<String>| -> Vec<String> {
            v.into_iter().map(|l| l.replace(".0", "")).collect()
        };
        (norm(rolled), norm(recount))
    }
}

fn at(mut r: Record, ms: u64) -> Record {
    r.occurred_ms = ms;
    r
}

/// Varied records of two sessions: prompts, tool calls with files, a
/// failure, a session start, and one without a session.
fn history() -> Vec<Record> {
    let mut out = Vec::new();
    let t0 = 1_700_000_000_000;
    out.push(at(record(&key(1), "old", "session-start", None), t0));
    out.push(at(record(&key(2), "old", "user-prompt", None), t0 + 1));
    for i in 0..6usize {
        let mut r = record(&key(10 + i), "old", "post-tool-use", Some(&format!("c{i}")));
        let tool = r.tool.as_mut().unwrap();
        if i % 2 == 0 {
            *tool = RecordTool {
                family: "file".into(),
                name: Some(if i == 0 { "Read" } else { "Edit" }.into()),
                call_id: Some(format!("f{i}")),
                outcome: Some("success".into()),
                exit_code: None,
            };
            r.files = vec![format!("src/mod{}.rs", i % 4), "README.md".into()];
        }
        if i == 3 {
            r.event = "post-tool-use-failure".into();
            r.native_event = "PostToolUseFailure".into();
            tool.outcome = Some("error".into());
            r.body = Some("\n  error[E0308]: mismatched types\nmore".into());
        }
        out.push(at(r, t0 + 10 + i as u64));
    }
    let mut second = at(record(&key(30), "old", "user-prompt", None), t0 + 50);
    second.title = Some("now the café_menu tests".into());
    second.body = Some("now the café_menu tests\nplease".into());
    out.push(second);
    out.push(at(record(&key(31), "old", "stop", None), t0 + 60));
    out.push(at(
        record(&key(40), "older", "user-prompt", None),
        t0 - 1000,
    ));
    let mut none = at(record(&key(50), "x", "notification", None), t0 + 70);
    none.session_id = None;
    out.push(none);
    out
}

/// [`history`] with the agent's own words and what its commands did: the
/// failing call has its command line and exit status, a command failed and
/// then passed, a plan keeps one item open, and the session's last stop
/// carries the agent's final message.
fn history_with_words() -> Vec<Record> {
    let mut out = history();
    let t0 = 1_700_000_000_000;
    for r in out.iter_mut() {
        if r.event == "post-tool-use-failure" {
            r.tool.as_mut().unwrap().exit_code = Some(101);
            r.command = Some("cargo test".into());
        }
        if r.key == key(31) {
            r.body = Some("The types were wrong in mod3; the menu wiring is next.".into());
        }
    }
    // A command that failed, then passed (not standing), and a plan with
    // one item still open.
    for (i, ok) in [(20usize, false), (21, true)] {
        let mut r = record(&key(i), "old", "post-tool-use", Some(&format!("b{i}")));
        let tool = r.tool.as_mut().unwrap();
        tool.outcome = Some(if ok { "success" } else { "error" }.into());
        tool.exit_code = Some(i64::from(!ok));
        r.command = Some("cargo build --locked".into());
        out.push(at(r, t0 + i as u64));
    }
    let mut plan = record(&key(22), "old", "post-tool-use", Some("todo1"));
    plan.tool.as_mut().unwrap().family = "unknown".into();
    plan.tool.as_mut().unwrap().name = Some("TodoWrite".into());
    plan.plan = Some(memhook_core::record::RecordPlan {
        full: true,
        items: ["fix the types", "wire the café menu"]
            .iter()
            .zip(["done", "pending"])
            .map(|(t, st)| memhook_core::record::PlanItem {
                id: None,
                text: Some(t.to_string()),
                status: st.into(),
            })
            .collect(),
    });
    out.push(at(plan, t0 + 22));
    out
}

// ---- the same behaviour, both stores ----

fn ingest_is_exactly_once_and_rollups_match_a_recount(db: &Db) {
    let home = tempfile::tempdir().unwrap();
    let s = db.serve(home.path());
    let h = history();
    for _ in 0..2 {
        let (code, text) = post_record(&s, &h[0], None);
        assert_eq!(code, 200, "{text}");
        assert_eq!(json(&text)["accepted"], 1);
    }
    // A batch that repeats a key inside itself, then the whole batch again.
    let mut batch = h[1..].to_vec();
    batch.push(h[2].clone());
    for _ in 0..2 {
        let (code, text) = post_batch(&s, &batch);
        assert_eq!(code, 200, "{text}");
    }
    let mut want: Vec<String> = h.iter().map(|r| r.key.clone()).collect();
    want.sort();
    assert_eq!(db.keys(&s.data), want);
    let (rolled, recount) = db.rollups_and_recount(&s.data);
    assert_eq!(rolled, recount);
    assert_eq!(rolled.len(), 2 + 1, "{rolled:?}");
}

#[test]
fn sqlite_ingest_is_exactly_once_and_rollups_match_a_recount() {
    ingest_is_exactly_once_and_rollups_match_a_recount(&Db::Sqlite);
}

#[test]
fn postgres_ingest_is_exactly_once_and_rollups_match_a_recount() {
    let Some(db) = Db::pg("postgres_ingest_is_exactly_once") else {
        return;
    };
    ingest_is_exactly_once_and_rollups_match_a_recount(&db);
}

/// Two servers on one store, clients sending every key to both at once.
fn two_servers_store_each_key_once(db: &Db) {
    let home = tempfile::tempdir().unwrap();
    let a = db.serve(home.path());
    let b = db.serve(home.path());
    let records: Vec<Record> = (0..240usize)
        .map(|i| {
            let session = format!("s{}", i % 7);
            let event = ["user-prompt", "post-tool-use", "stop"][i % 3];
            let mut r = record(&key(1000 + i), &session, event, Some(&format!("c{i}")));
            r.occurred_ms = 1_700_000_000_000 + (i as u64 * 7919) % 1000;
            r
        })
        .collect();
    std::thread::scope(|scope| {
        for t in 0..4usize {
            let (a, b, records) = (&a, &b, &records);
            scope.spawn(move || {
                // Each thread walks all records in chunks, alternating servers.
                for (n, chunk) in records.chunks(16 + t).enumerate() {
                    let s = if (n + t) % 2 == 0 { a } else { b };
                    let (code, text) = post_batch(s, chunk);
                    assert_eq!(code, 200, "{text}");
                }
            });
        }
    });
    let mut want: Vec<String> = records.iter().map(|r| r.key.clone()).collect();
    want.sort();
    assert_eq!(db.keys(&a.data), want);
    let (rolled, recount) = db.rollups_and_recount(&a.data);
    assert_eq!(rolled, recount);
}

#[test]
fn sqlite_two_servers_store_each_key_once() {
    two_servers_store_each_key_once(&Db::Sqlite);
}

#[test]
fn postgres_two_servers_store_each_key_once() {
    let Some(db) = Db::pg("postgres_two_servers_store_each_key_once") else {
        return;
    };
    two_servers_store_each_key_once(&db);
}

/// Retention as `memhook serve` applies it (docs/retention.md): the data
/// dir's policy, and a project's own, the same on both stores.
fn retention_applies_the_data_dirs_and_a_projects_policy(db: &Db) {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join(".memhook-data");
    std::fs::create_dir(&data).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    std::fs::write(
        data.join("retention.conf"),
        "tool-calls = 30\n[acme/kept]\ntool-calls = 0\n[acme/short]\neverything-else = 5\n",
    )
    .unwrap();
    let day = 86_400_000u64;
    let now = memhook_core::timefmt::now_ms();
    let mut records = Vec::new();
    let mut n = 0;
    for project in ["api", "kept", "short"] {
        for (event, days) in [
            ("pre-tool-use", 31),
            ("pre-tool-use", 29),
            ("user-prompt", 6),
        ] {
            n += 1;
            let mut r = record(&key(2000 + n), &format!("s-{project}"), event, Some("c"));
            r.scope.project = project.into();
            r.occurred_ms = now - days * day;
            records.push(r);
        }
    }
    let env = db.env();
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push(("MEMHOOK_TEST_RETENTION_EVERY_MS", "200"));
    let s = Serve::start_env(home.path(), None, "127.0.0.1:0", &["--no-auth"], &env);
    let (code, text) = post_batch(&s, &records);
    assert_eq!(code, 200, "{text}");
    // api: the 31-day call goes; kept: nothing; short: the 31-day call
    // (the data dir's 30 days) and the 6-day prompt (its own 5).
    let gone = [key(2001), key(2007), key(2009)];
    let mut want: Vec<String> = records
        .iter()
        .map(|r| r.key.clone())
        .filter(|k| !gone.contains(k))
        .collect();
    want.sort();
    let deadline = Instant::now() + Duration::from_secs(30);
    while db.keys(&s.data) != want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(db.keys(&s.data), want, "{}", s.stderr());
    let (rolled, recount) = db.rollups_and_recount(&s.data);
    assert_eq!(rolled, recount);
    // The books: per class, the data dir's key and each project's.
    let books = db.rows(
        &s.data,
        "SELECT class, removed FROM retention WHERE removed > 0 ORDER BY class",
    );
    assert_eq!(
        books,
        vec![
            "everything-else acme/short 1",
            "tool-calls 1",
            "tool-calls acme/short 1"
        ]
    );
}

#[test]
fn sqlite_retention_applies_the_data_dirs_and_a_projects_policy() {
    retention_applies_the_data_dirs_and_a_projects_policy(&Db::Sqlite);
}

#[test]
fn postgres_retention_applies_the_data_dirs_and_a_projects_policy() {
    let Some(db) = Db::pg("postgres_retention_applies_policies") else {
        return;
    };
    retention_applies_the_data_dirs_and_a_projects_policy(&db);
}

/// The briefing of a scope, as `GET /handoff` gives it (with the digest).
fn handoff(s: &Serve) -> String {
    let url = format!(
        "{}/handoff?workspace=acme&project=api&session_id=new&briefing=1&briefing_budget=20000",
        s.url()
    );
    let (code, text) = request("GET", &url, None, None);
    assert_eq!(code, 200, "{text}");
    text
}

#[test]
fn the_handoff_is_the_same_text_from_both_stores() {
    let Some(db) = Db::pg("the_handoff_is_the_same_text_from_both_stores") else {
        return;
    };
    let (h1, h2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let sqlite = Db::Sqlite.serve(h1.path());
    let pg = db.serve(h2.path());
    for s in [&sqlite, &pg] {
        let (code, text) = post_batch(s, &history_with_words());
        assert_eq!(code, 200, "{text}");
    }
    let from_sqlite = handoff(&sqlite);
    let from_pg = handoff(&pg);
    // The briefing says something about every part of the session.
    for needle in [
        "fix the login bug",
        "café_menu",
        "Bash \"cargo test\", exit 101: \"error[E0308]: mismatched types\"",
        "mod2.rs",
        "The agent concluded: \"The types were wrong in mod3; the menu wiring is next.\"",
        "Still open in its plan: \"wire the café menu\"",
    ] {
        assert!(from_sqlite.contains(needle), "{needle}: {from_sqlite}");
    }
    // Failed, then passed: said so, not as a standing failure.
    assert!(
        from_sqlite.contains("- Failed, then passed: Bash \"cargo build --locked\", exit 1"),
        "{from_sqlite}"
    );
    assert!(
        !from_sqlite.contains("not fixed since: Bash \"cargo build"),
        "{from_sqlite}"
    );
    assert_eq!(from_pg, from_sqlite);
}

#[test]
fn search_finds_the_same_records_in_both_stores() {
    let Some(Db::Pg(c, db)) = Db::pg("search_finds_the_same_records_in_both_stores") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let mut sqlite = Store::open(t.path()).unwrap();
    let pg = pg_store(&c, db, t.path());
    let mut recs = history();
    let mut other = record(&key(60), "o", "user-prompt", None);
    other.scope.project = "web".into();
    other.title = Some("Fox-jumps over the lazy dog".into());
    other.body = Some("THE QUICK brown fox; snake_case_name x1 2024-01-02".into());
    recs.push(other);
    let mut code = record(&key(61), "o", "post-tool-use", None);
    code.scope.project = "web".into();
    code.title = None;
    code.body = Some("added retries to parseDate and HttpClient; the failing tests".into());
    code.files = vec!["src/rate-limiter.ts".into()];
    recs.push(code);
    sqlite.insert_all(recs.iter()).unwrap();
    pg.insert_each(recs.iter()).unwrap();
    let keys = |v: Vec<memhook_store::sqlite::StoredRecord>| {
        let mut k: Vec<String> = v.into_iter().map(|r| r.key).collect();
        k.sort();
        k
    };
    let queries = [
        "login",
        "LOGIN bug",
        "fox-jumps",
        "quick fox",
        "snake_case",
        "case_name",
        "snake_name",
        "mod2",
        "src/mod0.rs",
        "readme md",
        "mismatched types",
        "E0308",
        "café_menu",
        "2024 01",
        "x1",
        "\"over",
        "'; DROP TABLE records; --",
        "absent",
        "-- \" '",
        "retry",
        "retried",
        "parse date",
        "parse_date",
        "ParseDate",
        "http client",
        "fail test",
        "rate limiter",
        "rateLimiter",
        "the",
    ];
    for q in queries {
        for scope in [None, Some(("acme", "api")), Some(("acme", "web"))] {
            let want = keys(sqlite.search(scope, q, 100).unwrap());
            let got = keys(pg.search(scope, q, 100).unwrap());
            assert_eq!(got, want, "query {q:?} in {scope:?}");
        }
    }
    // Something is found at all (the comparison is not of two empty lists).
    assert_eq!(
        keys(pg.search(None, "snake_case", 10).unwrap()),
        vec![key(60)]
    );
    // Two records of identical text: one row that says so.
    let login = pg.search(None, "login", 100).unwrap();
    assert_eq!((login.len(), login[0].identical), (1, 1));
    // Other inflections and split identifiers are found.
    for q in [
        "retry",
        "parse date",
        "ParseDate",
        "fail test",
        "rateLimiter",
    ] {
        assert_eq!(keys(pg.search(None, q, 10).unwrap()), vec![key(61)], "{q}");
    }
    // Each hit says why it matched, on both stores.
    let hits = [
        pg.search(None, "retry", 1).unwrap(),
        sqlite.search(None, "retry", 1).unwrap(),
    ];
    for hit in hits.iter().map(|h| &h[0]) {
        let why = hit.matched.as_deref().unwrap_or("");
        assert!(why.contains("added **retries** to parseDate"), "{why}");
    }
    assert_eq!(pg.recent(None, 1).unwrap()[0].matched, None);
    // Newest first, the same order.
    let order = |v: Vec<memhook_store::sqlite::StoredRecord>| -> Vec<String> {
        v.into_iter().map(|r| r.key).collect()
    };
    assert_eq!(
        order(pg.recent(None, 100).unwrap()),
        order(sqlite.recent(None, 100).unwrap())
    );
    assert_eq!(pg.count().unwrap(), sqlite.count().unwrap());
    // And whole records come back as they went in.
    assert_eq!(
        pg.recent(Some(("acme", "api")), 100).unwrap(),
        sqlite.recent(Some(("acme", "api")), 100).unwrap()
    );
}

#[test]
fn search_by_meaning_finds_paraphrases_and_collapses_identical_texts_in_both_stores() {
    let Some(Db::Pg(c, db)) = Db::pg("search_by_meaning_finds_paraphrases_in_both_stores") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let mut sqlite = Store::open(t.path()).unwrap();
    let pg = pg_store(&c, db, t.path());
    let texts = [
        "add a retry with exponential backoff to the download client",
        "cache the price table in memory for an hour",
        "FAILED tests/test_calendar.py::test_leap_year - AssertionError",
        "cargo test: 42 passed; 0 failed",
        "cargo test: 42 passed; 0 failed",
        "cargo test: 42 passed; 0 failed",
        "cargo test: 42 passed; 0 failed",
        "git status: nothing to commit, working tree clean",
    ];
    let recs: Vec<Record> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut r = record(&key(70 + i), "m", "post-tool-use", None);
            r.occurred_ms += i as u64 * 1000;
            r.title = None;
            r.files = Vec::new();
            r.body = Some((*text).into());
            r
        })
        .collect();
    sqlite.insert_all(recs.iter()).unwrap();
    pg.insert_each(recs.iter()).unwrap();
    // The same rows (the engines' word ranks differ, so not the order).
    let keys = |v: &[memhook_store::sqlite::StoredRecord]| -> Vec<(String, u64, bool)> {
        let mut k: Vec<(String, u64, bool)> = v
            .iter()
            .map(|r| {
                let by_meaning = r.matched.as_deref() == Some(memhook_store::meaning::BY_MEANING);
                (r.key.clone(), r.identical, by_meaning)
            })
            .collect();
        k.sort();
        k
    };
    for (q, want) in [
        ("make downloads survive flaky networks", 0usize),
        ("speed up repeated lookups", 1),
        ("failing test", 2),
    ] {
        let from_sqlite = sqlite.search_fused(None, q, 3).unwrap();
        let from_pg = pg.search_fused(None, q, 3).unwrap();
        assert_eq!(keys(&from_pg), keys(&from_sqlite), "{q}");
        assert!(
            from_sqlite.iter().any(|r| r.key == key(70 + want)),
            "{q}: {:?}",
            keys(&from_sqlite)
        );
    }
    // The web view's search (Browse) too, its snippet saying why.
    let q = "make downloads survive flaky networks";
    let from_pg = pg
        .read(|r| memhook_store::model::Browse::browse_search(r, None, q, 3))
        .unwrap();
    let from_sqlite = memhook_store::model::Browse::browse_search(&sqlite, None, q, 3).unwrap();
    let hits = |v: &[memhook_store::model::SearchHit]| -> Vec<(String, String)> {
        let mut k: Vec<(String, String)> = v
            .iter()
            .map(|h| (h.key.clone(), h.snippet.clone()))
            .collect();
        k.sort();
        k
    };
    assert_eq!(hits(&from_pg), hits(&from_sqlite));
    let first = from_sqlite.iter().find(|h| h.key == key(70)).unwrap();
    assert_eq!(first.snippet, format!("(by meaning) {}", texts[0]));
    // The four identical results are one row that says so.
    let found = pg.search(None, "cargo test passed", 10).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].identical, 3);
    assert_eq!(
        keys(&found),
        keys(&sqlite.search(None, "cargo test passed", 10).unwrap())
    );
}

#[test]
fn only_records_with_text_of_their_own_keep_a_meaning_in_both_stores() {
    let Some(Db::Pg(c, db)) = Db::pg("only_records_with_text_keep_a_meaning") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let mut sqlite = Store::open(t.path()).unwrap();
    let pg = pg_store(&c, db, t.path());
    // (event, title, body, files): the last three have text of their own.
    let cases: [(&str, &str, Option<&str>, bool); 6] = [
        ("pre-tool-use", "Bash (shell)", None, false),
        ("session-start", "session start: startup", None, false),
        ("stop", "stop", None, false),
        ("post-tool-use", "Bash: cargo test → exit 0", None, false),
        ("post-tool-use", "Edit src/download.rs", None, true),
        (
            "stop",
            "stop",
            Some("the download retries with backoff now"),
            false,
        ),
    ];
    let recs: Vec<Record> = cases
        .iter()
        .enumerate()
        .map(|(i, (event, title, body, files))| {
            let mut r = record(&key(90 + i), "m", event, None);
            r.occurred_ms += i as u64 * 1000;
            r.title = Some((*title).into());
            r.body = body.map(str::to_string);
            r.files = if *files {
                vec!["src/download.rs".into()]
            } else {
                Vec::new()
            };
            r
        })
        .collect();
    sqlite.insert_all(recs.iter()).unwrap();
    pg.insert_each(recs.iter()).unwrap();
    let want: Vec<String> = (3..6).map(|i| key(90 + i)).collect();
    let mut in_pg: Vec<String> = c
        .client(db)
        .query(
            "SELECT r.key FROM record_meaning m JOIN records r ON r.id = m.id",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    in_pg.sort();
    assert_eq!(in_pg, want, "PostgreSQL");
    let conn = rusqlite::Connection::open(t.path().join("store.sqlite3")).unwrap();
    let mut in_sqlite: Vec<String> = conn
        .prepare("SELECT lower(hex(r.key)) FROM record_meaning m JOIN record_rows r ON r.id = m.id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    in_sqlite.sort();
    assert_eq!(in_sqlite, want, "SQLite");
    // A store of an earlier version kept a meaning for every record: the
    // migration (PostgreSQL's 8th) removes those without text of their own.
    let mut client = c.client(db);
    client
        .batch_execute(
            "INSERT INTO record_meaning (id, project_id, occurred_ms, vector)
             SELECT id, project_id, occurred_ms, '\\x00'::bytea FROM records
             ON CONFLICT (id) DO NOTHING",
        )
        .unwrap();
    let count = |client: &mut postgres::Client| -> i64 {
        client
            .query_one("SELECT count(*) FROM record_meaning", &[])
            .unwrap()
            .get(0)
    };
    assert_eq!(count(&mut client), 6);
    client
        .batch_execute(memhook_store_pg::schema::MIGRATIONS[7])
        .unwrap();
    let mut after: Vec<String> = client
        .query(
            "SELECT r.key FROM record_meaning m JOIN records r ON r.id = m.id",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    after.sort();
    assert_eq!(after, want, "PostgreSQL, migrated");
}

// ---- PostgreSQL only ----

/// POST one record until the server takes it (bounded by [`RECOVERY`]).
fn until_stored(s: &Serve, r: &Record) {
    let start = Instant::now();
    loop {
        let (code, text) = post_record(s, r, None);
        if code == 200 {
            return;
        }
        assert_eq!(code, 503, "{text}");
        assert!(start.elapsed() < RECOVERY, "no recovery: {}", s.stderr());
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_database_that_goes_away_gets_503_and_serve_recovers() {
    let Some(db) = Db::pg("a_database_that_goes_away_gets_503_and_serve_recovers") else {
        return;
    };
    let Db::Pg(c, _) = &db else { unreachable!() };
    let home = tempfile::tempdir().unwrap();
    let s = db.serve(home.path());
    let h = history();
    assert_eq!(post_batch(&s, &h[..4]).0, 200);
    let before = handoff(&s);
    assert!(before.contains("fix the login bug"), "{before}");
    c.stop();
    let (code, text) = post_record(&s, &h[5], None);
    assert_eq!(code, 503, "{text}");
    let url = format!("{}/handoff?workspace=acme&project=api", s.url());
    assert_eq!(request("GET", &url, None, None).0, 503);
    // Health is about the server, not the database.
    assert_eq!(
        request("GET", &format!("{}/healthz", s.url()), None, None).0,
        200
    );
    c.restart();
    until_stored(&s, &h[5]);
    let after = handoff(&s);
    assert!(after.contains("fix the login bug"), "{after}");
    let mut want: Vec<String> = [&h[..4], &h[5..6]]
        .concat()
        .iter()
        .map(|r| r.key.clone())
        .collect();
    want.sort();
    assert_eq!(db.keys(&s.data), want);
    // The URL's password never reached the log.
    assert!(!s.stderr().contains(&c.password), "{}", s.stderr());
}

#[test]
fn serve_started_while_the_database_is_down_waits_for_it() {
    let Some(db) = Db::pg("serve_started_while_the_database_is_down_waits_for_it") else {
        return;
    };
    let Db::Pg(c, _) = &db else { unreachable!() };
    c.stop();
    let home = tempfile::tempdir().unwrap();
    let s = db.serve(home.path());
    assert!(s.stderr().contains("answering 503"), "{}", s.stderr());
    let r = record(&key(1), "s", "user-prompt", None);
    assert_eq!(post_record(&s, &r, None).0, 503);
    c.restart();
    until_stored(&s, &r);
    assert_eq!(db.keys(&s.data), vec![key(1)]);
}

#[test]
fn servers_starting_at_once_migrate_once() {
    let Some(db) = Db::pg("servers_starting_at_once_migrate_once") else {
        return;
    };
    let homes: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut env = db.env();
    // Each waits between reading the schema version and migrating (debug
    // builds only): without the advisory lock all three would read "none"
    // and migrate, and two would fail or report a migration.
    env.push((memhook_store_pg::schema::TEST_PAUSE_ENV, "700".into()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // All three spawned before any is waited for: they migrate at once.
    let starting: Vec<_> = homes
        .iter()
        .map(|h| Serve::spawn_env(h.path(), None, "127.0.0.1:0", &["--no-auth"], &env))
        .collect();
    let servers: Vec<Serve> = starting.into_iter().map(|s| s.wait()).collect();
    let versions = db.rows(
        &servers[0].data,
        "SELECT version::bigint FROM memhook_migrations ORDER BY version",
    );
    let want: Vec<String> = (1..=memhook_store_pg::schema::SCHEMA_VERSION)
        .map(|v| v.to_string())
        .collect();
    assert_eq!(versions, want);
    let applied = servers
        .iter()
        .filter(|s| s.stderr().contains("schema migration"))
        .count();
    assert_eq!(applied, 1);
    // All three serve the one database.
    for (i, s) in servers.iter().enumerate() {
        assert_eq!(
            post_record(s, &record(&key(i), "s", "stop", None), None).0,
            200
        );
    }
    assert_eq!(db.keys(&servers[0].data).len(), 3);
}

#[test]
fn the_password_never_comes_from_the_command_line() {
    let Some(Db::Pg(c, db)) = Db::pg("the_password_never_comes_from_the_command_line") else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    // In --database: refused before anything is tried, the fix named.
    let with_pw = c.url_with_password(db);
    let out = memhook(home.path())
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--no-auth",
            "--database",
            &with_pw,
        ])
        .env_remove("MEMHOOK_DATABASE_URL")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("MEMHOOK_DATABASE_URL"), "{err}");
    assert!(!err.contains(&c.password), "{err}");
    // No password anywhere: the database refuses the login, exit 2.
    let url = c.url(db);
    let out = memhook(home.path())
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--no-auth",
            "--database",
            &url,
        ])
        .env_remove("MEMHOOK_DATABASE_URL")
        .env("PGPASSFILE", home.path().join("none"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    // ~/.pgpass, private: used.
    use std::os::unix::fs::PermissionsExt;
    let pgpass = home.path().join(".pgpass");
    std::fs::write(
        &pgpass,
        format!("127.0.0.1:{}:*:memhook:{}\n", c.port, c.password),
    )
    .unwrap();
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let s = Serve::start_env(
        home.path(),
        None,
        "127.0.0.1:0",
        &["--no-auth", "--database", &url],
        &[],
    );
    assert_eq!(
        post_record(&s, &record(&key(1), "s", "stop", None), None).0,
        200
    );
    drop(s);
    // A password file others may read is refused, named.
    let pwfile = home.path().join("pw");
    std::fs::write(&pwfile, format!("{}\n", c.password)).unwrap();
    std::fs::set_permissions(&pwfile, std::fs::Permissions::from_mode(0o644)).unwrap();
    let pw_arg = pwfile.to_str().unwrap();
    let out = memhook(home.path())
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--no-auth",
            "--database",
            &url,
        ])
        .args(["--database-password-file", pw_arg])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("chmod 600"), "{err}");
    std::fs::set_permissions(&pwfile, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::remove_file(&pgpass).unwrap();
    let s = Serve::start_env(
        home.path(),
        None,
        "127.0.0.1:0",
        &[
            "--no-auth",
            "--database",
            &url,
            "--database-password-file",
            pw_arg,
        ],
        &[],
    );
    assert_eq!(
        post_record(&s, &record(&key(2), "s", "stop", None), None).0,
        200
    );
    assert!(!s.stderr().contains(&c.password));
}

/// A PostgreSQL store on `c`'s database `db` (the library, as serve uses it).
fn pg_store(c: &Cluster, db: &str, dir: &Path) -> PgStore {
    let env = Env {
        url: Some(c.url_with_password(db)),
        ..Env::default()
    };
    let target = memhook_store_pg::config::resolve(None, None, &env)
        .unwrap()
        .unwrap();
    PgStore::new(target, dir)
}

#[test]
fn export_streams_past_its_chunk_in_order() {
    let Some(Db::Pg(c, db)) = Db::pg("export_streams_past_its_chunk_in_order") else {
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let pg = pg_store(&c, db, t.path());
    let n = memhook_store_pg::export::EXPORT_CHUNK as usize + 1;
    // Keys in reverse of time: the order is by time, then key.
    let recs: Vec<Record> = (0..n)
        .map(|i| at(record(&key(n - i), "s", "stop", None), 1_000 + i as u64 / 2))
        .collect();
    pg.insert_each(recs.iter()).unwrap();
    let mut seen = Vec::new();
    let count = pg
        .export_each(&Default::default(), |r, _| {
            seen.push((r.occurred_ms, r.key));
            Ok::<(), memhook_store::sqlite::StoreError>(())
        })
        .unwrap();
    assert_eq!(count as usize, n);
    let mut want = seen.clone();
    want.sort();
    assert_eq!(seen, want);
    assert_eq!(seen.len(), n);
}

#[test]
fn forget_under_concurrent_ingest_keeps_rollups_equal_to_a_recount() {
    let Some(db) = Db::pg("forget_under_concurrent_ingest_keeps_rollups") else {
        return;
    };
    let Db::Pg(c, name) = &db else { unreachable!() };
    let t = tempfile::tempdir().unwrap();
    let pg = pg_store(c, name, t.path());
    let cutoff = 1_700_000_000_500;
    let batch = |b: usize| -> Vec<Record> {
        (0..20)
            .map(|i| {
                let mut r = record(
                    &key(b * 100 + i),
                    &format!("s{}", (b + i) % 9),
                    "stop",
                    None,
                );
                r.occurred_ms = 1_700_000_000_000 + ((b * 37 + i * 11) % 1000) as u64;
                r
            })
            .collect()
    };
    for b in 0..5 {
        pg.insert_each(batch(b).iter()).unwrap();
    }
    let sel = memhook_store::sqlite::Selector {
        project: Some(("acme".into(), "api".into())),
        before_ms: Some(cutoff),
        ..Default::default()
    };
    let mut forgot = 0;
    std::thread::scope(|scope| {
        let pg = &pg;
        let writer = scope.spawn(move || {
            for b in 5..60 {
                // A batch that meets a forget's locks may fail; it is retried
                // as a drainer would (a 503 from serve).
                let recs = batch(b);
                let mut tries = 0;
                while let Err(e) = pg.insert_each(recs.iter()) {
                    tries += 1;
                    assert!(tries < 20, "{e}");
                }
            }
        });
        for _ in 0..10 {
            forgot += pg.forget(&sel, true).unwrap().records;
        }
        writer.join().unwrap();
    });
    assert!(forgot > 0);
    let (rolled, recount) = db.rollups_and_recount(t.path());
    assert_eq!(rolled, recount);
    // What is left of the scope is from the cutoff on, plus whatever
    // arrived after the last forget.
    forgot += pg.forget(&sel, true).unwrap().records;
    let left = db.rows(t.path(), "SELECT count(*) FROM records");
    assert_eq!(
        left,
        [(60 * 20 - forgot as usize).to_string()],
        "every record is either forgotten or kept, once"
    );
    let (rolled, recount) = db.rollups_and_recount(t.path());
    assert_eq!(rolled, recount);
}

#[test]
fn a_database_of_version_3_is_indexed_anew_with_stems_and_identifier_words() {
    let Some(Db::Pg(c, db)) =
        Db::pg("a_database_of_version_3_is_indexed_anew_with_stems_and_identifier_words")
    else {
        return;
    };
    let mut client = c.client(db);
    // The schema and one record as memhook wrote them before migration 4.
    client
        .batch_execute("CREATE TABLE memhook_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
        .unwrap();
    for (i, step) in memhook_store_pg::schema::MIGRATIONS[..3].iter().enumerate() {
        client.batch_execute(step).unwrap();
        client
            .execute(
                "INSERT INTO memhook_migrations (version) VALUES ($1)",
                &[&(i as i32 + 1)],
            )
            .unwrap();
    }
    client
        .batch_execute(
            "INSERT INTO projects (workspace, project, first_ms, last_ms)
                VALUES ('acme', 'api', 1, 1);
             INSERT INTO records (key, occurred_ms, project_id, agent, event, native_event,
                disposition, body, files, search)
             SELECT 'k1', 1, id, 'claude-code', 'stop', 'Stop', 'kept',
                'renamed loadConfig; retries kept', '[\"src/RateLimiter.rs\"]',
                to_tsvector('simple', 'renamed loadconfig retries kept src ratelimiter rs')
             FROM projects",
        )
        .unwrap();
    let t = tempfile::tempdir().unwrap();
    let pg = pg_store(&c, db, t.path());
    pg.ensure_schema().unwrap();
    for q in ["load config", "retry", "rate limiter", "loadConfig"] {
        let found: Vec<String> = pg
            .search(None, q, 10)
            .unwrap()
            .into_iter()
            .map(|r| r.key)
            .collect();
        assert_eq!(found, ["k1"], "{q}");
    }
}
