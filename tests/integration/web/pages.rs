//! The pages of issue 26 item 4 over plain HTTP: a session read like a log,
//! the project page (goals, endings, the next briefing, the chart), the
//! preview of the next briefing — the very text session start prints —
//! hostile stored text kept inert on them, and `memhook ui --stop` /
//! `memhook serve` on a port memhook already holds.

use std::io::Write;
use std::path::Path;

use serde_json::Value;

use super::{call, token, Got, PROJECT, SESSION};
use crate::support::binaries::{drain, memhook};
use crate::support::fixtures::claude_payload as payload;
use crate::support::process::TermOnDrop;
use crate::support::serve::Serve;

/// What the goal of the seeded session says.
pub(crate) const GOAL: &str = "make the greeting friendlier";

/// A session as Claude Code records it: a prompt, a shell call and its
/// result, a failing call and its failure, an edit, the final message.
pub(crate) fn seed_log(home: &Path, session: &str) {
    let mut prompt = payload("UserPromptSubmit", home, session);
    prompt["prompt"] = GOAL.into();
    let names = [
        "PreToolUse-Bash",
        "PostToolUse-Bash",
        "PreToolUse-Bash-exit1",
        "PostToolUseFailure-Bash-exit1",
        "PreToolUse-Edit",
        "PostToolUse-Edit",
        "Stop",
    ];
    super::hook(home, &prompt);
    for n in names {
        super::hook(home, &payload(n, home, session));
    }
    drain(home);
}

fn get(s: &Serve, bearer: &str, path: &str) -> Got {
    call(
        "GET",
        &format!("{}{path}", s.url()),
        &[("Authorization", bearer)],
        None,
    )
}

/// HTML text back to what it stands for (the entities `escape` writes).
pub(crate) fn unescape(html: &str) -> String {
    html.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The text between `start` and the next `end` after it.
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let at = text
        .find(start)
        .unwrap_or_else(|| panic!("{start:?} in {text}"));
    let rest = &text[at + start.len()..];
    &rest[..rest.find(end).unwrap()]
}

#[test]
fn a_session_page_reads_like_a_log() {
    let home = tempfile::tempdir().unwrap();
    seed_log(home.path(), SESSION);
    let s = Serve::start(home.path(), None);
    let bearer = format!("Bearer {}", token(home.path()));
    let got = get(&s, &bearer, &format!("/p/{PROJECT}/s/{SESSION}"));
    assert_eq!(got.code, 200, "{}", got.body);
    let log = between(&got.body, "<ol class=\"log\">", "</ol>");
    // Calls are folded into their results: one line per step.
    let steps = log.matches("<li ").count();
    assert_eq!(steps, 5, "prompt, 2 results, edit, stop: {log}");
    assert!(!log.contains("no result"), "{log}");
    assert!(log.contains("<span class=\"kind\">prompt</span>"), "{log}");
    assert!(log.contains(GOAL), "{log}");
    assert!(log.contains("<code class=\"cmd\">$ ls -la</code>"), "{log}");
    assert!(log.contains("<span class=\"ok\">→"), "{log}");
    assert!(
        log.contains("$ echo failing &gt;&amp;2; exit 1</code></span> <span class=\"failed\">→"),
        "the failing command and its outcome on one line: {log}"
    );
    // The edit's file, relative to the session's directory.
    assert!(
        log.contains("<code class=\"file\">src/app.py</code>"),
        "{log}"
    );
    assert!(!log.contains(&home.path().display().to_string()), "{log}");
    // The final message.
    assert!(
        log.contains("<span class=\"kind\">agent</span>") && log.contains("All done."),
        "{log}"
    );
    // How it ended, above the log.
    assert!(
        got.body.contains(
            "<p class=\"ended\">How it ended: <span class=\"said\">“All done.”</span> \
             <span class=\"failed\">(1 failure not fixed)</span></p>"
        ),
        "{}",
        got.body
    );
    // Ids are short, the whole id in the title.
    assert!(
        got.body.contains(&format!(
            "<h1>Session <code class=\"id\" title=\"{SESSION}\">{}</code></h1>",
            &SESSION[..8]
        )),
        "{}",
        got.body
    );
    // A prefix of the id finds the page; the old row address leads there.
    let by_prefix = get(&s, &bearer, &format!("/p/{PROJECT}/s/{}", &SESSION[..8]));
    assert_eq!(by_prefix.code, 200);
    assert_eq!(between(&by_prefix.body, "<ol class=\"log\">", "</ol>"), log);
    let row = get(&s, &bearer, &format!("/api/projects/{PROJECT}")).json()["sessions"][0]["id"]
        .as_i64()
        .unwrap();
    let old = get(&s, &bearer, &format!("/sessions/{row}"));
    assert_eq!(old.code, 303);
    assert_eq!(
        old.header("location"),
        Some(&format!("/p/{PROJECT}/s/{SESSION}")[..])
    );
    assert_eq!(get(&s, &bearer, &format!("/p/{PROJECT}/s/nope")).code, 404);
}

/// The `additionalContext` Claude Code gets from `memhook hook` at the
/// start of a new session of the seeded project.
fn session_start_briefing(home: &Path) -> String {
    let p = payload("SessionStart-startup", home, "the-next-session");
    let mut f = tempfile::tempfile().unwrap();
    f.write_all(p.to_string().as_bytes()).unwrap();
    std::io::Seek::rewind(&mut f).unwrap();
    let out = memhook(home)
        .args(["hook", "--agent", "claude-code"])
        .env("MEMHOOK_NO_HOOK_DELIVERY", "1")
        .stdin(f)
        .current_dir(p["cwd"].as_str().unwrap())
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("no briefing: {v}"))
        .to_string()
}

#[test]
fn the_project_page_shows_goals_endings_the_next_briefing_and_a_chart() {
    let home = tempfile::tempdir().unwrap();
    seed_log(home.path(), SESSION);
    let s = Serve::start(home.path(), None);
    let bearer = format!("Bearer {}", token(home.path()));
    let got = get(&s, &bearer, &format!("/p/{PROJECT}"));
    assert_eq!(got.code, 200, "{}", got.body);
    let row = between(&got.body, "<tbody>", "</tbody>");
    assert!(
        row.contains(&format!("<td class=\"goal\">{GOAL}</td>")),
        "{row}"
    );
    assert!(
        row.contains("<td class=\"ended\"><span class=\"said\">“All done.”</span>"),
        "{row}"
    );
    assert!(row.contains("(1 failure not fixed)"), "{row}");
    assert!(
        row.contains(&format!(
            "title=\"{SESSION}\"><code>{}</code>",
            &SESSION[..8]
        )),
        "{row}"
    );
    // The chart: one day with one session and its failure.
    let svg = between(&got.body, "<svg class=\"chart\"", "</svg>");
    assert_eq!(svg.matches("class=\"bar s\"").count(), 1, "{svg}");
    assert_eq!(svg.matches("class=\"bar f\"").count(), 1, "{svg}");
    assert!(svg.contains(": 1 session, 1 failure</title>"), "{svg}");
    // The next briefing's size, as its first line states it, and the
    // preview: the text session start prints, escaped.
    let briefing = session_start_briefing(home.path());
    let size = briefing.lines().next().unwrap();
    assert!(
        size.starts_with("memhook briefing for default/demo: "),
        "{size}"
    );
    assert!(
        got.body
            .contains(&format!("<code class=\"size\">{size}</code>")),
        "{}",
        got.body
    );
    let preview = get(&s, &bearer, &format!("/p/{PROJECT}/briefing"));
    assert_eq!(preview.code, 200);
    let shown = between(&preview.body, "<pre class=\"briefing\">", "</pre>");
    assert_eq!(unescape(shown), briefing);
    assert!(briefing.contains(GOAL), "{briefing}");
    // What MEMORY.md is, where it is edited.
    for page in [
        preview.body,
        get(&s, &bearer, &format!("/p/{PROJECT}/memory")).body,
    ] {
        assert!(
            page.contains("is this project&#39;s memory index")
                || page.contains("is this project's memory index"),
            "{page}"
        );
        assert!(page.contains("first 200 lines (at most 25 KiB)"), "{page}");
    }
}

#[test]
fn hostile_text_stays_inert_in_goals_commands_and_the_briefing_preview() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join(".memhook-data");
    std::fs::create_dir_all(&data).unwrap();
    let evil = "</svg></pre><script>alert('x')</script>\u{202E}gnp.exe\u{2066}";
    {
        // Straight into the store: the page must hold even for text that
        // the hook's hygiene would have cleaned.
        use crate::support::fixtures::{key, record};
        let mut store = memhook_store::sqlite::Store::open(&data).unwrap();
        let mut prompt = record(&key(1), "evil-session", "user-prompt", None);
        prompt.title = Some(format!("goal {evil}"));
        prompt.body = Some(format!("goal {evil}"));
        store.insert(&prompt).unwrap();
        let mut bash = record(&key(2), "evil-session", "post-tool-use", Some("c1"));
        bash.command = Some(format!("echo {evil}"));
        bash.body = Some(format!("out {evil}"));
        bash.occurred_ms += 1;
        store.insert(&bash).unwrap();
        let mut stop = record(&key(3), "evil-session", "stop", None);
        stop.tool = None;
        stop.body = Some(format!("done {evil}"));
        stop.occurred_ms += 2;
        store.insert(&stop).unwrap();
    }
    let s = Serve::start(home.path(), None);
    let bearer = format!("Bearer {}", token(home.path()));
    for path in [
        "/p/acme/api",
        "/p/acme/api/s/evil-session",
        "/p/acme/api/briefing",
    ] {
        let got = get(&s, &bearer, path);
        assert_eq!(got.code, 200, "{path}: {}", got.body);
        let b = &got.body;
        assert!(!b.contains("<script>alert"), "{path}: {b}");
        assert!(!b.contains("</svg></pre>"), "{path}: {b}");
        assert!(
            !b.contains(['\u{202E}', '\u{2066}']),
            "{path}: a bidi control reached the page"
        );
        assert_eq!(
            b.matches("<svg").count(),
            b.matches("</svg>").count(),
            "{path}"
        );
        assert_eq!(
            b.matches("<pre").count(),
            b.matches("</pre>").count(),
            "{path}"
        );
        assert!(
            b.contains("&lt;/svg&gt;&lt;/pre&gt;&lt;script&gt;alert(&#39;x&#39;)"),
            "{path}: shown as text: {b}"
        );
    }
}

/// A free loopback port.
fn free_listen() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("127.0.0.1:{port}")
}

#[test]
fn ui_stop_stops_the_server_ui_started_and_serve_names_it() {
    let home = tempfile::tempdir().unwrap();
    let listen = free_listen();
    let out = memhook(home.path())
        .args(["ui", "--no-open", "--listen", &listen])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let pid: Option<i32> = err
        .split("(pid ")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .and_then(|p| p.parse().ok());
    let _stop = TermOnDrop(pid);
    assert!(out.status.success(), "{err}");
    let pid = pid.unwrap_or_else(|| panic!("{err}"));
    assert!(err.contains("`memhook ui --stop` stops it"), "{err}");
    // Used again: its pid, each time.
    let out = memhook(home.path())
        .args(["ui", "--no-open", "--listen", &listen])
        .output()
        .unwrap();
    let again = String::from_utf8_lossy(&out.stderr);
    assert!(
        again.contains(&format!(
            "using the memhook serve on http://{listen} (pid {pid}; `memhook ui --stop` stops it)"
        )),
        "{again}"
    );
    // `serve` on the same port names the server and how to stop it.
    let out = memhook(home.path())
        .args(["serve", "--listen", &listen])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "memhook is already serving on {listen} (pid {pid}); stop it with \
             `memhook ui --stop --listen {listen}`"
        )),
        "{err}"
    );
    assert!(!err.contains("Address already in use"), "{err}");
    // Stop it.
    let out = memhook(home.path())
        .args(["ui", "--stop", "--listen", &listen])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("stopped memhook serve on {listen} (pid {pid})")),
        "{err}"
    );
    assert!(
        std::net::TcpStream::connect(&listen).is_err(),
        "the port is free"
    );
    assert!(!home.path().join(".memhook-data/ui-server.json").exists());
    // Again: nothing to stop.
    let out = memhook(home.path())
        .args(["ui", "--stop", "--listen", &listen])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to stop"));
}

#[test]
fn ui_stop_leaves_a_server_it_did_not_start() {
    let home = tempfile::tempdir().unwrap();
    let s = Serve::start(home.path(), None);
    let listen = s.addr().to_string();
    let out = memhook(home.path())
        .args(["ui", "--stop", "--listen", &listen])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("was not started by `memhook ui"), "{err}");
    let got = call("GET", &format!("{}/healthz", s.url()), &[], None);
    assert_eq!(got.code, 200, "still serving");
    // And `serve` on its port says it is this data dir's server.
    let out = memhook(home.path())
        .args(["serve", "--listen", &listen])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("memhook is already serving on {listen} (pid "))
            && err.contains("not started by `memhook ui`"),
        "{err}"
    );
}

#[test]
fn a_prefix_naming_several_sessions_lists_them() {
    let home = tempfile::tempdir().unwrap();
    seed_log(home.path(), "web-session-1");
    seed_log(home.path(), "web-session-2");
    let s = Serve::start(home.path(), None);
    let bearer = format!("Bearer {}", token(home.path()));
    let got = get(&s, &bearer, &format!("/p/{PROJECT}/s/web-sess"));
    assert_eq!(got.code, 200, "{}", got.body);
    assert!(got.body.contains("<h1>Which session?</h1>"), "{}", got.body);
    for id in ["web-session-1", "web-session-2"] {
        assert!(
            got.body.contains(&format!(
                "<a href=\"/p/{PROJECT}/s/{id}\"><code>{id}</code></a>"
            )),
            "{}",
            got.body
        );
    }
    let one = get(&s, &bearer, &format!("/p/{PROJECT}/s/web-session-2"));
    assert!(one.body.contains("<ol class=\"log\">"), "{}", one.body);
}
