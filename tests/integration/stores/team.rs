//! A team server's behaviour on both stores: named tokens (`memhook token`
//! against the data dir or `--database`), the token name each record
//! keeps, and the web view's JSON API (projects, a project, a session,
//! search, forget) answering the same for the same records.

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

use super::{history, Db};
use crate::support::binaries::{memhook, stderr};
use crate::support::fixtures::{key, record};
use crate::support::http::{json, request};
use crate::support::serve::{post_record, Serve};

/// The server's own token in these tests.
const OWNER: &str = "owner-token-for-the-store-tests";

impl Db {
    /// A server for `home` on this store that requires [`OWNER`] (or a
    /// named token).
    fn serve_with_auth(&self, home: &Path) -> Serve {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Serve::start_env(home, Some(OWNER), "127.0.0.1:0", &[], &env)
    }

    /// `memhook ARGS` on this store: the data dir of `home` for SQLite; for
    /// PostgreSQL `--database` without the password, which comes from a
    /// 0600 `--database-password-file` (never from argv).
    fn memhook(&self, home: &Path, args: &[&str]) -> Output {
        let mut cmd = memhook(home);
        cmd.env_remove("MEMHOOK_DATABASE_URL").args(args);
        if let Db::Pg(c, db) = self {
            use std::os::unix::fs::PermissionsExt;
            let pw = home.join("db-password");
            std::fs::write(&pw, format!("{}\n", c.password)).unwrap();
            std::fs::set_permissions(&pw, std::fs::Permissions::from_mode(0o600)).unwrap();
            cmd.args(["--database", &c.url(db), "--database-password-file"])
                .arg(&pw);
        }
        cmd.output().unwrap()
    }
}

/// `memhook token add NAME` on `db`: the token it prints once.
fn add_token(db: &Db, home: &Path, name: &str) -> String {
    let out = db.memhook(home, &["token", "add", name]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let t = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert_eq!(t.len(), 64, "{t}");
    t
}

fn revoked_named_token_gets_401_at_once_and_records_keep_their_token(db: &Db) {
    let home = tempfile::tempdir().unwrap();
    let s = db.serve_with_auth(home.path());
    // Added while the server runs: honoured without a restart.
    let alice = add_token(db, home.path(), "alice");
    let bob = add_token(db, home.path(), "bob");
    let r = |i: usize| record(&key(i), "t1", "user-prompt", None);
    assert_eq!(post_record(&s, &r(1), Some(&alice)).0, 200);
    // A replay by another token changes nothing: the first name is kept.
    let (code, text) = post_record(&s, &r(1), Some(OWNER));
    assert_eq!(code, 200, "{text}");
    assert_eq!(json(&text)["new"], false, "{text}");
    let out = db.memhook(home.path(), &["token", "revoke", "alice"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // At once: the very next request with alice's token is refused.
    let (code, text) = post_record(&s, &r(2), Some(&alice));
    assert_eq!(code, 401, "{text}");
    assert_eq!(post_record(&s, &r(3), Some(&bob)).0, 200);
    assert_eq!(post_record(&s, &r(4), Some(OWNER)).0, 200);
    assert_eq!(post_record(&s, &r(5), Some("not-a-token")).0, 401);
    assert_eq!(
        db.rows(
            &s.data,
            "SELECT key, coalesce(token_name, '-') FROM records ORDER BY key"
        ),
        vec![
            format!("{} alice", key(1)),
            format!("{} bob", key(3)),
            format!("{} owner", key(4)),
        ]
    );
    // The store keeps hashes only; the list shows names and times.
    let stored = db.rows(
        &s.data,
        "SELECT name || ' ' || hash FROM tokens ORDER BY name",
    );
    assert_eq!(stored.len(), 2);
    for (line, token) in stored.iter().zip([&alice, &bob]) {
        assert!(!line.contains(token.as_str()), "{line}");
        assert!(
            line.ends_with(&memhook_store::tokens::hash(token)),
            "{line}"
        );
    }
    let out = db.memhook(home.path(), &["token", "list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(json)
        .collect();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0]["name"], "alice");
    assert!(listed[0]["revoked"].as_str().unwrap().ends_with('Z'));
    assert!(listed[1]["revoked"].is_null());
    // Names are not reused; an unknown name is a usage error.
    let again = db.memhook(home.path(), &["token", "add", "alice"]);
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    let unknown = db.memhook(home.path(), &["token", "revoke", "zed"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", stderr(&unknown));
}

#[test]
fn sqlite_revoked_named_token_gets_401_at_once_and_records_keep_their_token() {
    revoked_named_token_gets_401_at_once_and_records_keep_their_token(&Db::Sqlite);
}

#[test]
fn postgres_revoked_named_token_gets_401_at_once_and_records_keep_their_token() {
    let Some(db) = Db::pg("postgres_revoked_named_token_gets_401_at_once") else {
        return;
    };
    revoked_named_token_gets_401_at_once_and_records_keep_their_token(&db);
}

#[test]
fn the_token_command_never_takes_the_database_password_from_argv() {
    let Some(Db::Pg(c, db)) = Db::pg("the_token_command_never_takes_the_password_from_argv") else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let with_pw = c.url_with_password(db);
    let out = memhook(home.path())
        .env_remove("MEMHOOK_DATABASE_URL")
        .args(["token", "add", "alice", "--database", &with_pw])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("MEMHOOK_DATABASE_URL"), "{err}");
    assert!(!err.contains(&c.password), "{err}");
    // From the environment (the whole URL there): used, and the token is
    // in the database, not in the data dir.
    let out = memhook(home.path())
        .env("MEMHOOK_DATABASE_URL", &with_pw)
        .args(["token", "add", "alice"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!home.path().join(".memhook-data/store.sqlite3").exists());
    let names: Vec<String> = c
        .client(db)
        .query("SELECT name FROM tokens", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(names, ["alice"]);
    // A database that cannot be reached: the work failed (exit 1).
    c.stop();
    let out = memhook(home.path())
        .env("MEMHOOK_DATABASE_URL", &with_pw)
        .args(["token", "list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!stderr(&out).contains(&c.password));
}

/// `METHOD /api/PATH` with the owner's token: (status, JSON).
fn api(s: &Serve, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let body = body.map(|b| b.to_string().into_bytes());
    let (code, text) = request(
        method,
        &format!("{}/api/{path}", s.url()),
        body.as_deref(),
        Some(OWNER),
    );
    (code, json(&text))
}

/// The records of [`history`], plus words to search for, delivered with the
/// owner's token.
fn seed(s: &Serve) {
    let mut recs = history();
    let mut long = record(&key(70), "old", "user-prompt", None);
    long.occurred_ms = 1_700_000_000_080;
    long.title = None;
    long.body = Some(format!(
        "{} zebraquokka {}",
        "alpha ".repeat(30).trim(),
        "omega ".repeat(30).trim()
    ));
    recs.push(long);
    let mut other = record(&key(71), "w1", "user-prompt", None);
    other.scope.project = "web".into();
    other.occurred_ms = 1_700_000_000_090;
    other.body = Some("the login page of the web project".into());
    recs.push(other);
    let items: Vec<Value> = recs
        .iter()
        .map(|r| {
            json!({"url": memhook_delivery::wire::hook_path(r),
                   "body": memhook_delivery::wire::hook_body(r)})
        })
        .collect();
    let body = serde_json::to_vec(&items).unwrap();
    let (code, text) = request(
        "POST",
        &format!("{}/hook/batch", s.url()),
        Some(&body),
        Some(OWNER),
    );
    assert_eq!(code, 200, "{text}");
}

/// Session row ids are each store's own numbers: name sessions by their
/// session id instead (`ids` maps one to the other).
fn normalise(v: &mut Value, ids: &[(i64, String)]) {
    match v {
        Value::Object(m) => {
            for k in ["id", "session"] {
                if let Some(n) = m.get(k).and_then(Value::as_i64) {
                    if let Some((_, sid)) = ids.iter().find(|(row, _)| *row == n) {
                        m.insert(k.into(), format!("session {sid}").into());
                    }
                }
            }
            for x in m.values_mut() {
                normalise(x, ids);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| normalise(x, ids)),
        _ => {}
    }
}

/// `GET /api/PATH`, normalised: session row ids by session id; search
/// hits by key (best match first is each engine's own ranking, bm25 or
/// ts_rank: the hits are compared, not their order).
fn get(s: &Serve, path: &str, ids: &[(i64, String)]) -> (String, Value) {
    let (code, mut v) = api(s, "GET", path, None);
    assert_eq!(code, 200, "{path}: {v}");
    normalise(&mut v, ids);
    if let Some(hits) = v.get_mut("results").and_then(Value::as_array_mut) {
        hits.sort_by_key(|h| h["id"].as_str().unwrap_or("").to_string());
    }
    (path.to_string(), v)
}

/// Every answer of the web API a user walks through, normalised.
fn walk_the_api(s: &Serve) -> Vec<(String, Value)> {
    let mut ids: Vec<(i64, String)> = Vec::new();
    for p in ["api", "web"] {
        let (_, project) = api(s, "GET", &format!("projects/acme/{p}"), None);
        ids.extend(project["sessions"].as_array().unwrap().iter().map(|x| {
            (
                x["id"].as_i64().unwrap(),
                x["session_id"].as_str().unwrap().to_string(),
            )
        }));
    }
    assert_eq!(ids.len(), 3, "{ids:?}");
    let mut paths: Vec<String> = ["projects", "projects/acme/api", "projects/acme/web"]
        .map(String::from)
        .to_vec();
    paths.extend(ids.iter().map(|(row, _)| format!("sessions/{row}")));
    for q in [
        "login",
        "mismatched types",
        "zebraquokka",
        "café_menu",
        "absent",
    ] {
        paths.push(format!("search?q={}", memhook_delivery::wire::encode(q)));
    }
    paths.push("search?q=login&project=acme%2Fweb".into());
    paths.iter().map(|p| get(s, p, &ids)).collect()
}

fn forget_through_the_api(s: &Serve) -> Vec<Value> {
    let mut out = Vec::new();
    for body in [
        json!({"session": "old", "before": "2023-11-14T22:13:20.030Z", "apply": false}),
        json!({"session": "old", "before": "2023-11-14T22:13:20.030Z", "apply": true}),
        json!({"record": key(71), "apply": true}),
        json!({"project": "acme/api", "before": "2023-11-14T22:13:20Z", "apply": true}),
    ] {
        let (code, v) = api(s, "POST", "forget", Some(body.clone()));
        assert_eq!(code, 200, "{body}: {v}");
        out.push(v);
    }
    let (code, v) = api(s, "POST", "forget", Some(json!({"record": "abc"})));
    assert_eq!(code, 409, "{v}");
    out
}

/// The same seeded records served from SQLite (home `h1`) and from `db`
/// (home `h2`), each server with the owner's token.
fn serve_seeded(db: &Db, h1: &Path, h2: &Path) -> (Serve, Serve) {
    let sqlite = Db::Sqlite.serve_with_auth(h1);
    let pg = db.serve_with_auth(h2);
    for s in [&sqlite, &pg] {
        seed(s);
    }
    (sqlite, pg)
}

#[test]
fn the_web_api_answers_the_same_from_both_stores() {
    let Some(db) = Db::pg("the_web_api_answers_the_same_from_both_stores") else {
        return;
    };
    let (h1, h2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (sqlite, pg) = serve_seeded(&db, h1.path(), h2.path());
    let from_sqlite = walk_the_api(&sqlite);
    let from_pg = walk_the_api(&pg);
    // The comparison is of answers that hold something.
    let answer = |path: &str| &from_sqlite.iter().find(|(p, _)| p == path).unwrap().1;
    assert_eq!(answer("projects")["projects"].as_array().unwrap().len(), 2);
    let hits = answer("search?q=zebraquokka")["results"]
        .as_array()
        .unwrap();
    assert_eq!(hits.len(), 1);
    let hit: Vec<&Value> = hits[0]["snippet"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["hit"] == true)
        .collect();
    assert_eq!(hit[0]["text"], "zebraquokka", "{hits:?}");
    assert_eq!(
        answer("search?q=login")["results"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    for ((path, a), (_, b)) in from_sqlite.iter().zip(&from_pg) {
        assert_eq!(
            b, a,
            "GET /api/{path}: PostgreSQL (left) and SQLite (right) differ"
        );
    }
    assert_eq!(from_pg.len(), from_sqlite.len());
    // The pages answer from PostgreSQL too, and say what forget promises there.
    let page = |path: &str| {
        let (code, text) = request("GET", &format!("{}{path}", pg.url()), None, Some(OWNER));
        assert_eq!(code, 200, "{path}: {text}");
        text
    };
    assert!(page("/").contains("acme"));
    assert!(page("/p/acme/api").contains("fix the login bug"));
    assert!(page("/search?q=zebraquokka").contains("zebraquokka"));
    assert!(page("/forget?project=acme%2Fweb").contains("VACUUM"));

    // Forget answers the same, and leaves the same records and roll-ups.
    let forgot_sqlite = forget_through_the_api(&sqlite);
    let forgot_pg = forget_through_the_api(&pg);
    assert_eq!(forgot_pg, forgot_sqlite);
    assert_eq!(forgot_sqlite[0]["records"], 8, "{forgot_sqlite:?}");
    assert_eq!(forgot_sqlite[0]["applied"], false);
    assert_eq!(forgot_sqlite[1]["records"], 8, "{forgot_sqlite:?}");
    assert_eq!(forgot_sqlite[1]["applied"], true);
    assert_eq!(forgot_sqlite[2]["projects"], 1, "{forgot_sqlite:?}");
    assert_eq!(forgot_sqlite[3]["sessions"], 1, "{forgot_sqlite:?}");
    assert_eq!(
        db.keys(&pg.data),
        Db::Sqlite.keys(&sqlite.data),
        "the same records are left"
    );
    let (rolled, recount) = db.rollups_and_recount(&pg.data);
    assert_eq!(rolled, recount);
    assert_eq!(api(&pg, "GET", "projects", None), {
        api(&sqlite, "GET", "projects", None)
    });
    // PostgreSQL logged what went, never the text.
    let log = db.rows(
        &pg.data,
        "SELECT selector || ' ' || records FROM forget_log ORDER BY at_ms, selector",
    );
    assert_eq!(log.len(), 3, "{log:?}");
    assert!(log.iter().any(|l| l.starts_with("session old")), "{log:?}");
    let bodies = db.rows(&pg.data, "SELECT coalesce(body, '') FROM records");
    assert!(!bodies.iter().any(|b| b.contains("web project")));
}

#[test]
fn export_writes_the_same_lines_from_both_stores() {
    let Some(db) = Db::pg("export_writes_the_same_lines_from_both_stores") else {
        return;
    };
    let (h1, h2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_sqlite, _pg) = serve_seeded(&db, h1.path(), h2.path());
    let export = |db: &Db, home: &Path, args: &[&str]| -> String {
        let out = db.memhook(home, &[&["export"], args].concat());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    for args in [
        &[][..],
        &["--project", "acme/web"],
        &["--since", "2023-11-14T22:13:20.050Z"],
    ] {
        let from_sqlite = export(&Db::Sqlite, h1.path(), args);
        let from_pg = export(&db, h2.path(), args);
        assert!(!from_sqlite.is_empty(), "{args:?}");
        assert_eq!(from_pg, from_sqlite, "{args:?}");
    }
    let all = export(&db, h2.path(), &[]);
    assert_eq!(all.lines().count(), history().len() + 2);
    assert!(
        all.lines().all(|l| json(l)["token_name"] == "owner"),
        "{all}"
    );
}

/// `memhook forget` on the command line: the data dir's store, or with
/// `--database` the team server's PostgreSQL database. A dry run changes
/// nothing; `--yes` forgets; the roll-ups stay equal to a recount; the
/// history lists what went. Returns each command's stdout (the times of
/// `--history` cut off) to compare the two stores.
fn forget_on_the_command_line(db: &Db) -> Vec<String> {
    let home = tempfile::tempdir().unwrap();
    let s = db.serve(home.path());
    let (code, text) = crate::support::serve::post_batch(&s, &history());
    assert_eq!(code, 200, "{text}");
    let all = db.keys(&s.data);
    let mut outputs = Vec::new();
    let mut run = |args: &[&str]| -> String {
        let out = db.memhook(home.path(), &[&["forget"], args].concat());
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        let text = String::from_utf8(out.stdout).unwrap();
        outputs.push(text.clone());
        text
    };
    let dry = run(&["--session", "old"]);
    assert!(
        dry.starts_with(
            "memhook forget: would forget 10 stored records (emptying 1 session and 0 projects)"
        ),
        "{dry}"
    );
    assert_eq!(db.keys(&s.data), all, "a dry run changes nothing");
    let done = run(&["--session", "old", "--yes"]);
    assert!(
        done.starts_with("memhook forget: forgot 10 stored records"),
        "{done}"
    );
    let before = run(&[
        "--project",
        "acme/api",
        "--before",
        "2023-11-14T22:13:20Z",
        "--yes",
    ]);
    assert!(
        before.starts_with("memhook forget: forgot 1 stored record"),
        "{before}"
    );
    let left = db.keys(&s.data);
    assert_eq!(
        left,
        vec![key(50)],
        "only the record without a session is left"
    );
    let (rolled, recount) = db.rollups_and_recount(&s.data);
    assert_eq!(rolled, recount);
    if let Db::Pg(..) = db {
        // Every table that held something of the forgotten records was
        // vacuumed by forget (not left to autovacuum), their meaning too.
        let vacuumed = db.rows(
            &s.data,
            "SELECT relname::text FROM pg_stat_user_tables
             WHERE relname IN ('records', 'sessions', 'projects', 'record_meaning')
               AND vacuum_count > 0 ORDER BY relname",
        );
        assert_eq!(
            vacuumed,
            ["projects", "record_meaning", "records", "sessions"]
        );
    }
    let log = run(&["--history"]);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2, "{log}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("forgot 10 records, 1 session")),
        "{log}"
    );
    outputs
        .into_iter()
        .map(|o| {
            o.lines()
                .map(|l| l.split_once(" forgot ").map_or(l, |(_, rest)| rest))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

#[test]
fn forget_on_the_command_line_says_and_does_the_same_on_both_stores() {
    let Some(db) = Db::pg("forget_on_the_command_line") else {
        return;
    };
    let from_sqlite = forget_on_the_command_line(&Db::Sqlite);
    let from_pg = forget_on_the_command_line(&db);
    assert_eq!(from_pg, from_sqlite);
}

#[test]
fn forget_on_an_unreachable_database_is_exit_1() {
    let home = tempfile::tempdir().unwrap();
    // Nothing listens on port 1 of the loopback.
    let out = memhook(home.path())
        .env_remove("MEMHOOK_DATABASE_URL")
        .args([
            "forget",
            "--session",
            "s",
            "--database",
            "postgres://memhook@127.0.0.1:1/team",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("database unavailable"),
        "{}",
        stderr(&out)
    );
}

/// `memhook export` writes a record's command line, exit status and plan
/// from either store, the same lines; `import` reads them back.
#[test]
fn export_carries_commands_exit_statuses_and_plans_from_both_stores() {
    let Some(db) = Db::pg("export_carries_commands_exit_statuses_and_plans") else {
        return;
    };
    let (h1, h2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let sqlite = Db::Sqlite.serve(h1.path());
    let pg = db.serve(h2.path());
    for s in [&sqlite, &pg] {
        let (code, text) = crate::support::serve::post_batch(s, &super::history_with_words());
        assert_eq!(code, 200, "{text}");
    }
    let export = |db: &Db, home: &Path| -> String {
        let out = db.memhook(home, &["export"]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let from_sqlite = export(&Db::Sqlite, h1.path());
    assert_eq!(export(&db, h2.path()), from_sqlite);
    let line = |k: usize| {
        from_sqlite
            .lines()
            .map(crate::support::http::json)
            .find(|l| l["key"] == crate::support::fixtures::key(k))
            .unwrap()
    };
    assert_eq!(line(13)["command"], "cargo test");
    assert_eq!(line(13)["exit_code"], 101);
    assert_eq!(line(22)["plan"]["items"][1]["text"], "wire the café menu");
    assert!(line(2).get("command").is_none());
    // Imported into a fresh store, the handoff still knows them.
    let fresh = tempfile::tempdir().unwrap();
    let file = fresh.path().join("export.jsonl");
    std::fs::write(&file, &from_sqlite).unwrap();
    let out = crate::support::binaries::memhook(fresh.path())
        .args(["import"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let s = Db::Sqlite.serve(fresh.path());
    let b = super::handoff(&s);
    assert!(
        b.contains("Still open in its plan: \"wire the café menu\""),
        "{b}"
    );
    assert!(b.contains("Bash \"cargo test\", exit 101"), "{b}");
}
