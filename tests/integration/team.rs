//! A team server and moving memory between machines, through the real
//! binary: records made by real hook events (fixtures/agents) and delivered,
//! `memhook export` / `import` between data dirs and into a real
//! `memhook serve` on 127.0.0.1, and named tokens (`memhook token`) that a
//! running server honours and stops honouring at once when revoked.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use memhook::transfer::Line;
use memhook_delivery::wire;
use memhook_store::sqlite::Store;

use crate::support::binaries::{memhook, run_with_stdin, stderr};
use crate::support::files::{contains, walk};
use crate::support::fixtures::fixture;
use crate::support::home::data_dir;
use crate::support::http::request;
use crate::support::serve::Serve;

/// A secret a prompt carries; what is stored (and exported) is redacted.
const SECRET: &str = "AKIAIOSFODNN7EXAMPLE";

/// A fixture payload of `agent`, moved under `home`'s project `project`.
fn payload(agent: &str, name: &str, home: &Path, project: &str, session: &str) -> Value {
    let version = match agent {
        "codex" => "0.171.0",
        _ => "2.1.328",
    };
    let dir = home.join("projects").join(project);
    let text = std::fs::read_to_string(fixture(&format!("agents/{agent}/{version}/{name}.json")))
        .unwrap()
        .replace("/home/dev/projects/demo", dir.to_str().unwrap());
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["session_id"] = session.into();
    std::fs::create_dir_all(v["cwd"].as_str().unwrap()).unwrap();
    v
}

/// Run the real hook on `p` (spooled only, unless `env` names a server).
fn hook(home: &Path, agent: &str, p: &Value, env: &[(&str, &str)], args: &[&str]) {
    let mut f = tempfile::tempfile().unwrap();
    f.write_all(p.to_string().as_bytes()).unwrap();
    std::io::Seek::rewind(&mut f).unwrap();
    let mut c = memhook(home);
    c.args(["hook", "--agent", agent])
        .args(args)
        .env(memhook_delivery::drain::NO_HOOK_DELIVERY_ENV, "1")
        .current_dir(p["cwd"].as_str().unwrap())
        .stdin(f);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// Two projects, two agents, a failure, a secret: captured by the real
/// hook and delivered into `home`'s store by `memhook drain`.
fn seed(home: &Path) {
    let mut prompt = payload("claude-code", "UserPromptSubmit", home, "alpha", "s1");
    prompt["prompt"] = format!("deploy with {SECRET} please").into();
    for name in [
        "PostToolUse-Bash",
        "PostToolUse-Edit",
        "PostToolUseFailure-Bash-exit1",
    ] {
        let p = payload("claude-code", name, home, "alpha", "s1");
        hook(home, "claude-code", &p, &[], &[]);
    }
    hook(home, "claude-code", &prompt, &[], &[]);
    for name in [
        "SessionStart-startup",
        "UserPromptSubmit",
        "PostToolUse-Bash",
        "Stop",
    ] {
        let p = payload("codex", name, home, "beta", "s2");
        hook(home, "codex", &p, &[], &[]);
    }
    let out = memhook(home).arg("drain").output().unwrap();
    assert!(out.status.success(), "{out:?}");
}

fn run(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = memhook(home);
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// `memhook export ARGS` of `home`: its stdout, checked to succeed.
fn export(home: &Path, args: &[&str]) -> String {
    let mut all = vec!["export"];
    all.extend_from_slice(args);
    let out = run(home, &all, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The rolled-up sessions of a scope, without their row ids.
fn sessions(home: &Path, project: &str) -> Vec<(String, String, u64, u64, u64, u64)> {
    Store::open(&data_dir(home))
        .unwrap()
        .sessions(("default", project), None, 100)
        .unwrap()
        .into_iter()
        .map(|s| {
            (
                s.agent,
                s.session_id,
                s.first_ms,
                s.last_ms,
                s.events,
                s.work,
            )
        })
        .collect()
}

#[test]
fn export_then_import_twice_and_in_any_order_gives_the_same_store() {
    let a = tempfile::tempdir().unwrap();
    seed(a.path());
    let exported = export(a.path(), &[]);
    let all = lines(&exported);
    assert!(all.len() >= 8, "{exported}");
    assert!(all.iter().all(|l| l["v"] == 1 && l["token_name"].is_null()));
    assert!(!exported.contains(SECRET) && exported.contains("REDACTED"));
    let file = a.path().join("a.jsonl");
    std::fs::write(&file, &exported).unwrap();

    // Into another data dir, twice: the second import stores nothing new.
    let b = tempfile::tempdir().unwrap();
    let first = run(b.path(), &["import", file.to_str().unwrap()], &[]);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let n = all.len();
    assert!(
        stderr(&first).contains(&format!("imported {n} records ({n} new, 0 already stored)")),
        "{}",
        stderr(&first)
    );
    // The import leaves the WAL empty: a session start that finds a full WAL
    // and no other connection rebuilds the WAL's index from every frame.
    let wal = data_dir(b.path()).join(format!("{}-wal", memhook_store::sqlite::STORE_FILE));
    assert_eq!(
        std::fs::metadata(&wal).map_or(0, |m| m.len()),
        0,
        "{}",
        wal.display()
    );
    let again = run(b.path(), &["import", file.to_str().unwrap()], &[]);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert!(stderr(&again).contains(&format!("(0 new, {n} already stored)")));
    // Byte for byte the same records: keys, times, scope, texts.
    assert_eq!(export(b.path(), &[]), exported);

    // The second half first, then the first half, from stdin.
    let c = tempfile::tempdir().unwrap();
    let text: Vec<&str> = exported.lines().collect();
    let (head, tail) = text.split_at(n / 2);
    for part in [tail, head] {
        let out = run_with_stdin(
            {
                let mut m = memhook(c.path());
                m.args(["import", "-"]);
                m
            },
            format!("{}\n", part.join("\n")).as_bytes(),
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    assert_eq!(export(c.path(), &[]), exported);
    // The roll-ups the briefing reads are the same too.
    for project in ["alpha", "beta"] {
        let want = sessions(a.path(), project);
        assert!(!want.is_empty(), "{project}");
        assert_eq!(sessions(b.path(), project), want, "{project}");
        assert_eq!(sessions(c.path(), project), want, "{project}");
    }

    // --project: exactly that project's lines.
    let alpha = export(a.path(), &["--project", "default/alpha"]);
    let want: Vec<&str> = exported
        .lines()
        .filter(|l| l.contains("\"project\":\"alpha\""))
        .collect();
    assert!(!want.is_empty() && want.len() < n);
    assert_eq!(alpha.lines().collect::<Vec<_>>(), want);
    // --since: the lines at or after a time (to the millisecond).
    let cut = all[n / 2]["occurred_at"].as_str().unwrap().to_string();
    let since = export(a.path(), &["--since", &cut]);
    let want: Vec<&str> = exported
        .lines()
        .zip(&all)
        .filter(|(_, v)| v["occurred_at"].as_str().unwrap() >= cut.as_str())
        .map(|(l, _)| l)
        .collect();
    assert!(!want.is_empty() && want.len() < n, "{cut}");
    assert_eq!(since.lines().collect::<Vec<_>>(), want);
    // Both at once.
    let both = export(a.path(), &["--project", "default/beta", "--since", &cut]);
    assert!(lines(&both)
        .iter()
        .all(|l| l["project"] == "beta" && l["occurred_at"].as_str().unwrap() >= cut.as_str()));
}

#[test]
fn import_into_a_real_serve_keeps_keys_and_times_and_names_the_importing_token() {
    let a = tempfile::tempdir().unwrap();
    seed(a.path());
    let exported = export(a.path(), &[]);
    let file = a.path().join("a.jsonl");
    std::fs::write(&file, &exported).unwrap();

    let server = tempfile::tempdir().unwrap();
    let added = run(server.path(), &["token", "add", "carol"], &[]);
    assert_eq!(code(&added), 0, "{}", stderr(&added));
    let carol = String::from_utf8(added.stdout).unwrap().trim().to_string();
    let s = Serve::start(server.path(), None);
    let client = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        let out = run(
            client.path(),
            &["import", file.to_str().unwrap(), "--server", &s.url()],
            &[("AI_MEMORY_AUTH_TOKEN", &carol)],
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(stderr(&out).contains("0 not taken"), "{}", stderr(&out));
    }
    // A wrong token is reported at once as a 401, not retried.
    let out = run(
        client.path(),
        &["import", file.to_str().unwrap(), "--server", &s.url()],
        &[("AI_MEMORY_AUTH_TOKEN", "not-a-token")],
    );
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("(401)"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("tries"), "{}", stderr(&out));
    // The server holds each record once, with its own key, time and
    // scope; the delivering token is the importer's.
    let on_server = lines(&export(server.path(), &[]));
    let mut want = lines(&exported);
    for l in &mut want {
        l["token_name"] = "carol".into();
    }
    assert_eq!(on_server, want);
    // Nothing went to the importing machine's own store.
    assert!(!data_dir(client.path()).join("store.sqlite3").exists());
}

#[test]
fn a_revoked_token_gets_401_at_once_and_each_record_names_its_token() {
    let server = tempfile::tempdir().unwrap();
    let s = Serve::start(server.path(), None);
    let owner = std::fs::read_to_string(data_dir(server.path()).join("auth-token"))
        .unwrap()
        .trim()
        .to_string();
    // Tokens added while the server runs are honoured without a restart.
    let mut tokens = Vec::new();
    for name in ["alice", "bob"] {
        let out = run(server.path(), &["token", "add", name], &[]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let t = String::from_utf8(out.stdout).unwrap().trim().to_string();
        assert_eq!(t.len(), 64, "{t}");
        tokens.push(t);
    }
    let (alice, bob) = (tokens[0].clone(), tokens[1].clone());

    // A member's machine: real hook events delivered with alice's token.
    let member = tempfile::tempdir().unwrap();
    let env = [("AI_MEMORY_AUTH_TOKEN", alice.as_str())];
    let url = s.url();
    for name in ["UserPromptSubmit", "PostToolUse-Bash"] {
        let p = payload("claude-code", name, member.path(), "gamma", "m1");
        hook(
            member.path(),
            "claude-code",
            &p,
            &env,
            &["--server-url", &url],
        );
    }
    let drained = run(member.path(), &["drain"], &env);
    assert_eq!(code(&drained), 0, "{}", stderr(&drained));
    let hooked = lines(&export(server.path(), &[]));
    assert_eq!(hooked.len(), 2, "{hooked:?}");
    assert!(
        hooked.iter().all(|l| l["token_name"] == "alice"),
        "{hooked:?}"
    );

    // One more record each way, straight to /hook.
    let record = |key: &str| {
        let mut l = lines(&export(server.path(), &[]))[0].clone();
        l["key"] = key.into();
        l["token_name"] = Value::Null;
        let (r, _) = Line::parse(&l.to_string()).unwrap().into_record().unwrap();
        r
    };
    let post = |key: &str, token: &str| {
        let r = record(key);
        let body = serde_json::to_vec(&wire::hook_body(&r)).unwrap();
        request(
            "POST",
            &format!("{url}{}", wire::hook_path(&r)),
            Some(&body),
            Some(token),
        )
        .0
    };
    let key = |i: u32| format!("{i:032x}");
    assert_eq!(post(&key(1), &alice), 200);
    let revoked = run(server.path(), &["token", "revoke", "alice"], &[]);
    assert_eq!(code(&revoked), 0, "{}", stderr(&revoked));
    // At once: the very next request with alice's token is refused.
    assert_eq!(post(&key(2), &alice), 401);
    assert_eq!(post(&key(3), &bob), 200);
    assert_eq!(post(&key(4), &owner), 200);
    // Revoking an unknown name is a usage error.
    assert_eq!(
        code(&run(server.path(), &["token", "revoke", "zed"], &[])),
        2
    );

    // Each record remembers the token that delivered it.
    let stored = lines(&export(server.path(), &[]));
    let name_of = |k: &str| {
        stored
            .iter()
            .find(|l| l["key"] == k)
            .map(|l| l["token_name"].clone())
    };
    for l in &hooked {
        assert_eq!(name_of(l["key"].as_str().unwrap()), Some("alice".into()));
    }
    assert_eq!(name_of(&key(1)), Some("alice".into()));
    assert_eq!(name_of(&key(2)), None);
    assert_eq!(name_of(&key(3)), Some("bob".into()));
    assert_eq!(name_of(&key(4)), Some("owner".into()));

    // The list names tokens and never shows one.
    let list = run(server.path(), &["token", "list"], &[]);
    let json = run(server.path(), &["token", "list", "--json"], &[]);
    for out in [&list, &json] {
        assert_eq!(code(out), 0);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("alice") && text.contains("bob"), "{text}");
        for t in [&alice, &bob, &owner] {
            assert!(!text.contains(t.as_str()));
        }
    }
    let listed = lines(&String::from_utf8_lossy(&json.stdout));
    assert!(!listed[0]["revoked"].is_null() && listed[1]["revoked"].is_null());

    // The named tokens are in no file of either machine, nor in the log.
    let mut files = Vec::new();
    walk(server.path(), &mut files);
    walk(member.path(), &mut files);
    for t in [&alice, &bob] {
        let holding: Vec<&PathBuf> = files
            .iter()
            .filter(|(_, b)| contains(b, t))
            .map(|(p, _)| p)
            .collect();
        assert!(holding.is_empty(), "{holding:?}");
        assert!(!s.stderr().contains(t.as_str()));
    }
    assert!(!s.stderr().contains(owner.as_str()));
}

#[test]
fn hostile_lines_are_reported_by_number_cleaned_and_never_stored_raw() {
    let a = tempfile::tempdir().unwrap();
    seed(a.path());
    let exported = export(a.path(), &[]);
    let mut good: Value = lines(&exported)[0].clone();
    good["key"] = "feedfacefeedfacefeedfacefeedface".into();
    good["body"] = format!("see {SECRET} and \u{1b}]0;pwned\u{7} here").into();
    good["title"] = "\u{1b}[2Jtitle".into();
    let mut bad_scope = good.clone();
    bad_scope["key"] = "0000000000000000000000000000beef".into();
    bad_scope["project"] = "Not/A Name".into();
    let mut newer = good.clone();
    newer["v"] = 2.into();
    let long = format!("{{\"v\":1,\"body\":\"{}\"}}", "x".repeat(3 * 1024 * 1024));
    let text = [
        good.to_string(),
        "not json at all".into(),
        newer.to_string(),
        long,
        bad_scope.to_string(),
        String::new(),
    ]
    .join("\n");
    let file = a.path().join("hostile.jsonl");
    std::fs::write(&file, text).unwrap();
    let b = tempfile::tempdir().unwrap();
    let out = run(b.path(), &["import", file.to_str().unwrap()], &[]);
    let err = stderr(&out);
    assert_eq!(code(&out), 1, "{err}");
    for n in 2..=5 {
        assert!(err.contains(&format!("hostile.jsonl:{n}: ")), "{n}: {err}");
    }
    assert!(!err.contains("hostile.jsonl:1:"), "{err}");
    assert!(
        err.contains("newer") && err.contains("longer than"),
        "{err}"
    );
    assert!(
        err.contains("1 new") && err.contains("4 bad lines"),
        "{err}"
    );
    let stored = export(b.path(), &[]);
    let stored = lines(&stored);
    assert_eq!(stored.len(), 1);
    let body = stored[0]["body"].as_str().unwrap();
    assert!(
        !body.contains(SECRET) && body.contains("REDACTED"),
        "{body}"
    );
    assert!(
        !body.contains('\u{1b}') && !body.contains('\u{7}'),
        "{body:?}"
    );
    assert_eq!(stored[0]["title"], "title");

    // Usage errors exit 2 and name the fix.
    let missing = run(b.path(), &["import", "/nonexistent/file.jsonl"], &[]);
    assert_eq!(code(&missing), 2);
    let since = run(b.path(), &["export", "--since", "last week"], &[]);
    assert_eq!(code(&since), 2);
    assert!(stderr(&since).contains("--since"));
    let project = run(b.path(), &["export", "--project", "alpha"], &[]);
    assert_eq!(code(&project), 2);
    assert!(stderr(&project).contains("WORKSPACE/PROJECT"));
    let url = run(
        b.path(),
        &["import", file.to_str().unwrap(), "--server", "ftp://x"],
        &[],
    );
    assert_eq!(code(&url), 2, "{}", stderr(&url));
    for bad in ["owner", "Bad Name", &"a".repeat(65)] {
        let out = run(b.path(), &["token", "add", bad], &[]);
        assert_eq!(code(&out), 2, "{bad}");
        assert!(out.stdout.is_empty());
    }
}
