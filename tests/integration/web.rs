//! The web view of `memhook serve` over plain HTTP: real hook events from
//! the fixtures delivered into a real store, a real server on 127.0.0.1,
//! `memhook ui` for the login link. The browser test is in `web/browser.rs`.

mod browser;
mod pages;
mod secrets;
mod webdriver;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::support::binaries::{drain, memhook, stderr};
use crate::support::files::files_holding;
use crate::support::fixtures::claude_payload as payload;
use crate::support::process::{eventually, TermOnDrop};
use crate::support::serve::Serve;

/// A word only the seeded prompt holds (what the search looks for).
pub(crate) const SEARCH_WORD: &str = "zebraquokka";
/// Stored markup that must never become markup on a page.
pub(crate) const SCRIPT_PAYLOAD: &str = "<script>alert('xss-script')</script>";
pub(crate) const IMG_PAYLOAD: &str = "<img src=x onerror=alert('xss-img') id=injected>";
/// The session the seed writes.
pub(crate) const SESSION: &str = "web-session-1";
/// The project the fixtures' cwd names.
pub(crate) const PROJECT: &str = "default/demo";

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Run the hook on `p`; it only spools (delivery is the test's `drain`).
fn hook(home: &Path, p: &Value) {
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
}

/// Seed `home`'s store through real hook events: a prompt carrying the
/// search word and a `<script>` payload, a shell result carrying an
/// `<img onerror>` payload, an edit; plus `extra` in the prompt.
pub(crate) fn seed(home: &Path, extra: &str) {
    let mut prompt = payload("UserPromptSubmit", home, SESSION);
    prompt["prompt"] =
        format!("{SCRIPT_PAYLOAD} please fix the {SEARCH_WORD} parser {extra}").into();
    let mut bash = payload("PostToolUse-Bash", home, SESSION);
    bash["tool_response"]["stdout"] = format!("build output {IMG_PAYLOAD}\nok\n").into();
    let edit = payload("PostToolUse-Edit", home, SESSION);
    for p in [&prompt, &bash, &edit] {
        hook(home, p);
    }
    drain(home);
}

/// `memhook ui --no-open` against `s`: the login link it prints.
pub(crate) fn ui_link(home: &Path, s: &Serve) -> String {
    let out = memhook(home)
        .args(["ui", "--no-open", "--listen", &s.addr().to_string()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("using the memhook serve"), "{err}");
    let link = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        link.starts_with(&format!("{}/login?code=", s.url())),
        "{link}"
    );
    link
}

/// One answer: status, headers (lowercase names, in order), body.
pub(crate) struct Got {
    pub code: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Got {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == &name.to_ascii_lowercase())
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// One request without following redirects. `headers`: extra headers
/// (e.g. `Cookie`, `Origin`, `Authorization`).
pub(crate) fn call(method: &str, url: &str, headers: &[(&str, &str)], body: Option<&str>) -> Got {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .new_agent();
    let res = if method == "GET" {
        let mut r = agent.get(url);
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        r.call()
    } else {
        let mut r = agent.post(url);
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        r.send(body.unwrap_or(""))
    };
    let mut resp = res.expect("request");
    let code = resp.status().as_u16();
    let headers = resp
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                v.to_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let body = resp
        .body_mut()
        .with_config()
        .limit(4 << 20)
        .read_to_string()
        .unwrap_or_default();
    Got {
        code,
        headers,
        body,
    }
}

/// Spend a login link: the `name=value` of the cookie it sets, and the
/// base URL of the session's pages (`http://ADDR/s/KEY`: the cookie counts
/// only there).
pub(crate) fn login(link: &str) -> (String, String) {
    let got = call("GET", link, &[], None);
    assert_eq!(got.code, 303, "{}", got.body);
    let to = got.header("location").expect("a redirect");
    assert!(to.starts_with("/s/") && to.ends_with('/'), "{to}");
    let origin = &link[..link.find("/login?").unwrap()];
    let base = format!("{origin}{}", to.trim_end_matches('/'));
    let set = got.header("set-cookie").expect("a cookie").to_string();
    (set.split(';').next().unwrap().trim().to_string(), base)
}

/// The CSRF token in a page's forms.
fn csrf_of(html: &str) -> String {
    let at = html
        .find("name=\"csrf\" value=\"")
        .expect("a form with a CSRF token");
    let rest = &html[at + "name=\"csrf\" value=\"".len()..];
    rest[..rest.find('"').unwrap()].to_string()
}

fn token(home: &Path) -> String {
    std::fs::read_to_string(home.join(".memhook-data/auth-token"))
        .unwrap()
        .trim()
        .to_string()
}

/// The seeded session's row id, through the API.
fn session_row(s: &Serve, bearer: &str) -> i64 {
    let got = call(
        "GET",
        &format!("{}/api/projects/{PROJECT}", s.url()),
        &[("Authorization", bearer)],
        None,
    );
    assert_eq!(got.code, 200, "{}", got.body);
    let v = got.json();
    v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["session_id"] == SESSION)
        .expect("the seeded session")["id"]
        .as_i64()
        .unwrap()
}

#[test]
fn a_login_code_works_once_and_becomes_a_strict_http_only_cookie() {
    let home = tempfile::tempdir().unwrap();
    seed(home.path(), "");
    let s = Serve::start(home.path(), None);
    // Nothing without a login: pages explain, the API says 401.
    let got = call("GET", &format!("{}/", s.url()), &[], None);
    assert_eq!(got.code, 401);
    assert!(got.body.contains("memhook ui"), "{}", got.body);
    assert!(!got.body.contains("demo"), "no data before login");
    let got = call("GET", &format!("{}/api/projects", s.url()), &[], None);
    assert_eq!(got.code, 401);
    assert!(got.json()["error"].is_string());

    let link = ui_link(home.path(), &s);
    let got = call("GET", &link, &[], None);
    assert_eq!(got.code, 303, "{}", got.body);
    let set = got.header("set-cookie").unwrap().to_string();
    let port = s.addr().port();
    assert!(
        set.starts_with(&format!("memhook_session_{port}=")),
        "{set}"
    );
    for flag in ["HttpOnly", "SameSite=Strict"] {
        assert!(set.split("; ").any(|f| f == flag), "{flag} in {set}");
    }
    let cookie = set.split(';').next().unwrap().to_string();
    let to = got.header("location").unwrap().trim_end_matches('/');
    assert!(set.split("; ").any(|f| f == format!("Path={to}")), "{set}");
    let base = format!("{}{to}", s.url());
    // Single use.
    let again = call("GET", &link, &[], None);
    assert_eq!(again.code, 401);
    assert!(again.header("set-cookie").is_none());
    assert!(again.body.contains("memhook ui"), "{}", again.body);
    // The cookie opens the pages and the API under the session's prefix.
    let got = call("GET", &format!("{base}/"), &[("Cookie", &cookie)], None);
    assert_eq!(got.code, 200);
    assert!(got.body.contains("default / demo"), "{}", got.body);
    let got = call(
        "GET",
        &format!("{base}/api/projects"),
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(got.code, 200);
    // A made-up cookie is nobody.
    let fake = format!("memhook_session_{port}={}", "a".repeat(64));
    let got = call("GET", &format!("{base}/"), &[("Cookie", &fake)], None);
    assert_eq!(got.code, 401);
    // A cookie cannot mint login codes; only the token can.
    let path = format!("{}/api/login-code", s.url());
    assert_eq!(call("POST", &path, &[("Cookie", &cookie)], None).code, 401);
    let bearer = format!("Bearer {}", token(home.path()));
    let got = call("POST", &path, &[("Authorization", &bearer)], None);
    assert_eq!(got.code, 200);
    assert!(got.json()["expires_in_ms"].as_u64().unwrap() <= 120_000);
    // Logging out ends the session.
    let csrf = csrf_for(&base, &cookie);
    let got = call(
        "POST",
        &format!("{base}/logout"),
        &[
            ("Cookie", &cookie),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        Some(&format!("csrf={csrf}")),
    );
    assert_eq!(got.code, 200, "{}", got.body);
    assert!(got.header("set-cookie").unwrap().contains("Max-Age=0"));
    let got = call("GET", &format!("{base}/"), &[("Cookie", &cookie)], None);
    assert_eq!(got.code, 401);
}

/// The CSRF token of a logged-in browser (from a page with a form).
fn csrf_for(base: &str, cookie: &str) -> String {
    let got = call(
        "GET",
        &format!("{base}/p/{PROJECT}/memory"),
        &[("Cookie", cookie)],
        None,
    );
    csrf_of(&got.body)
}

#[test]
fn an_expired_login_code_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let s = Serve::start_env(
        home.path(),
        None,
        "127.0.0.1:0",
        &[],
        &[("MEMHOOK_LOGIN_CODE_TTL_MS", "1")],
    );
    let link = ui_link(home.path(), &s);
    std::thread::sleep(Duration::from_millis(50));
    let got = call("GET", &link, &[], None);
    assert_eq!(got.code, 401, "{}", got.body);
    assert!(got.header("set-cookie").is_none());
    assert!(
        got.body.contains("works once, for a short time"),
        "{}",
        got.body
    );
}

/// `memhook ui --no-open` on a free loopback port, where nothing answers:
/// it starts a server, which is stopped (by its pid) when the guard goes.
/// Returns the address, `ui`'s output and the guard.
fn ui_on_a_free_port(home: &Path) -> (String, std::process::Output, TermOnDrop) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let out = memhook(home)
        .args(["ui", "--no-open", "--listen", &listen])
        .output()
        .unwrap();
    let err = stderr(&out);
    let pid: Option<i32> = err
        .split("(pid ")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .and_then(|p| p.parse().ok());
    let stop = TermOnDrop(pid);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("started memhook serve"), "{err}");
    assert!(pid.is_some(), "{err}");
    (listen, out, stop)
}

#[test]
fn memhook_ui_starts_a_server_when_none_answers() {
    let home = tempfile::tempdir().unwrap();
    seed(home.path(), "");
    let (listen, out, _stop) = ui_on_a_free_port(home.path());
    let link = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let (cookie, base) = login(&link);
    assert!(base.starts_with(&format!("http://{listen}/s/")), "{base}");
    let got = call(
        "GET",
        &format!("{base}/api/projects"),
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(got.code, 200, "{}", got.body);
    assert_eq!(got.json()["projects"][0]["project"], "demo");
    assert!(home.path().join(".memhook-data/logs/serve.log").exists());
    // A second `memhook ui` reuses it.
    let out = memhook(home.path())
        .args(["ui", "--no-open", "--listen", &listen])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.contains("using the memhook serve"),
        "{err}"
    );
}

/// The log of a server `memhook ui` started stays within its cap while the
/// server runs, not only when the next `ui` starts one: the server rotates
/// it before the line that would take it past the cap.
#[cfg(unix)]
#[test]
fn a_running_server_keeps_its_log_within_the_cap() {
    let home = tempfile::tempdir().unwrap();
    seed(home.path(), "");
    let (listen, _, _stop) = ui_on_a_free_port(home.path());
    let log = home.path().join(".memhook-data/logs/serve.log");
    let old = log.with_file_name("serve.log.old");
    assert!(
        fs_len(&log) > 0 && !old.exists(),
        "the server logged its start"
    );
    // Months of lines, all while it runs.
    let cap = memhook_server::log::MAX_SERVE_LOG_BYTES;
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    f.write_all(&vec![b'x'; cap as usize]).unwrap();
    drop(f);
    // Its next line (the one it writes when it stops) goes to a fresh log.
    let out = memhook(home.path())
        .args(["ui", "--stop", "--listen", &listen])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let stopped = eventually(Duration::from_secs(10), || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("memhook serve: stopped"))
    });
    assert!(
        stopped,
        "no `stopped` line in a fresh serve.log; serve.log holds {} bytes, serve.log.old {}",
        fs_len(&log),
        fs_len(&old)
    );
    assert!(fs_len(&log) < 1024, "serve.log: {} bytes", fs_len(&log));
    assert!(fs_len(&old) > cap, "the full log was kept as serve.log.old");
}

fn fs_len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

#[test]
fn every_page_carries_the_security_headers_and_no_cors() {
    let home = tempfile::tempdir().unwrap();
    seed(home.path(), "");
    let s = Serve::start_with(
        home.path(),
        None,
        &["--allow-origin", "http://localhost:3000"],
    );
    let (cookie, base) = login(&ui_link(home.path(), &s));
    let bearer = format!("Bearer {}", token(home.path()));
    let row = session_row(&s, &bearer);
    let pages = [
        ("/", 200),
        (&format!("/p/{PROJECT}")[..], 200),
        (&format!("/sessions/{row}")[..], 303),
        (&format!("/p/{PROJECT}/s/{SESSION}")[..], 200),
        (&format!("/p/{PROJECT}/briefing")[..], 200),
        (&format!("/search?q={SEARCH_WORD}")[..], 200),
        (&format!("/p/{PROJECT}/memory")[..], 200),
        (
            &format!("/forget?session={SESSION}&project={PROJECT}")[..],
            200,
        ),
        ("/assets/style.css", 200),
        ("/assets/app.js", 200),
        ("/api/projects", 200),
        (&format!("/api/sessions/{row}")[..], 200),
        ("/nope", 404),
        ("/sessions/999999", 404),
        ("/login?code=bogus", 401),
    ];
    for (path, want) in pages {
        let got = call(
            "GET",
            &format!("{base}{path}"),
            &[("Cookie", &cookie)],
            None,
        );
        assert_eq!(got.code, want, "{path}: {}", got.body);
        assert_eq!(got.header("content-security-policy"), Some(CSP), "{path}");
        assert_eq!(
            got.header("x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
        assert_eq!(got.header("referrer-policy"), Some("no-referrer"), "{path}");
        assert_eq!(got.header("cache-control"), Some("no-store"), "{path}");
        assert!(
            got.header("access-control-allow-origin").is_none(),
            "{path}"
        );
        if got
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/html"))
        {
            assert!(!got.body.contains("<script>"), "{path}: no inline script");
            assert!(!got.body.contains("style=\""), "{path}: no inline style");
        }
    }
    // Not logged in: the same headers on the explanation page.
    let got = call("GET", &format!("{base}/"), &[], None);
    assert_eq!(got.header("content-security-policy"), Some(CSP));
    // An origin allowed for the hook protocol gets no CORS on the web view.
    let got = call(
        "GET",
        &format!("{base}/api/projects"),
        &[("Cookie", &cookie), ("Origin", "http://localhost:3000")],
        None,
    );
    assert_eq!(got.code, 403);
    assert!(got.header("access-control-allow-origin").is_none());
}

#[test]
fn cross_site_and_tokenless_posts_are_refused() {
    let home = tempfile::tempdir().unwrap();
    seed(home.path(), "");
    let s = Serve::start(home.path(), None);
    let (cookie, base) = login(&ui_link(home.path(), &s));
    let page = call(
        "GET",
        &format!("{base}/forget?session={SESSION}&project={PROJECT}"),
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(page.code, 200);
    assert!(
        page.body.contains("This forgets 3 stored records"),
        "{}",
        page.body
    );
    let csrf = csrf_of(&page.body);
    let form = format!("csrf={csrf}&session={SESSION}&project={PROJECT}");
    let form_ct = ("Content-Type", "application/x-www-form-urlencoded");
    let own = s.url();
    type Headers<'a> = Vec<(&'a str, &'a str)>;
    let refused: [(&str, Headers, String); 5] = [
        (
            "Origin null from another site",
            vec![
                ("Cookie", &cookie),
                form_ct,
                ("Origin", "null"),
                ("Sec-Fetch-Site", "cross-site"),
            ],
            form.clone(),
        ),
        (
            "another site's Origin",
            vec![
                ("Cookie", &cookie),
                form_ct,
                ("Origin", "http://evil.example"),
            ],
            form.clone(),
        ),
        (
            "no CSRF token",
            vec![("Cookie", &cookie), form_ct, ("Origin", &own)],
            format!("session={SESSION}&project={PROJECT}"),
        ),
        (
            "a wrong CSRF token",
            vec![("Cookie", &cookie), form_ct],
            format!(
                "csrf={}&session={SESSION}&project={PROJECT}",
                "0".repeat(64)
            ),
        ),
        ("no cookie", vec![form_ct, ("Origin", &own)], form.clone()),
    ];
    for (why, headers, body) in &refused {
        let got = call("POST", &format!("{base}/forget"), headers, Some(body));
        assert!(
            got.code == 403 || got.code == 401,
            "{why}: {} {}",
            got.code,
            got.body
        );
        let left = memhook(home.path())
            .args(["search", SEARCH_WORD, "--all"])
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&left.stdout).contains("user-prompt"),
            "{why}: the session is still there"
        );
    }
    // With the cookie and the token, from its own page (a browser under
    // `no-referrer` sends Origin null and says same-origin), the form works.
    let got = call(
        "POST",
        &format!("{base}/forget"),
        &[
            ("Cookie", &cookie),
            form_ct,
            ("Origin", "null"),
            ("Sec-Fetch-Site", "same-origin"),
        ],
        Some(&form),
    );
    assert_eq!(got.code, 200, "{}", got.body);
    assert!(got.body.contains("Forgot 3 stored records"), "{}", got.body);
}

#[test]
fn forget_before_a_date_counts_only_older_records_and_needs_the_date() {
    let home = tempfile::tempdir().unwrap();
    seed(home.path(), "");
    let s = Serve::start(home.path(), None);
    let bearer = format!("Bearer {}", token(home.path()));
    let page = |q: &str| {
        call(
            "GET",
            &format!("{}/forget?project={PROJECT}&{q}", s.url()),
            &[("Authorization", &bearer)],
            None,
        )
    };
    let got = page("before=");
    assert_eq!(got.code, 400, "an empty date is not 'everything'");
    assert!(got.body.contains("choose a date"), "{}", got.body);
    let got = page("before=2000-01-01");
    assert_eq!(got.code, 200);
    assert!(
        got.body.contains("This forgets 0 stored records"),
        "{}",
        got.body
    );
    let got = page("before=2999-01-01");
    assert!(
        got.body.contains("This forgets 3 stored records"),
        "{}",
        got.body
    );
    assert!(
        got.body.contains("before 2999-01-01T00:00:00.000Z"),
        "{}",
        got.body
    );
}

#[test]
fn web_request_bodies_are_bounded_at_their_edge() {
    let home = tempfile::tempdir().unwrap();
    let s = Serve::start(home.path(), None);
    let bearer = format!("Bearer {}", token(home.path()));
    let max = memhook_server::MAX_FORM_BYTES as usize;
    let post = |len: usize| {
        call(
            "POST",
            &format!("{}/api/forget", s.url()),
            &[
                ("Authorization", &bearer),
                ("Content-Type", "application/json"),
            ],
            Some(&" ".repeat(len)),
        )
    };
    let at = post(max);
    assert_eq!(
        at.code, 400,
        "read, and refused as no JSON object: {}",
        at.body
    );
    let over = post(max + 1);
    assert_eq!(over.code, 413, "{}", over.body);
}

#[test]
fn stored_markup_is_escaped_on_every_page() {
    let home = tempfile::tempdir().unwrap();
    seed(home.path(), "");
    let s = Serve::start(home.path(), None);
    let bearer = format!("Bearer {}", token(home.path()));
    for path in [
        format!("/p/{PROJECT}"),
        format!("/p/{PROJECT}/s/{SESSION}"),
        format!("/p/{PROJECT}/briefing"),
        format!("/search?q={SEARCH_WORD}"),
        "/search?q=onerror".to_string(),
    ] {
        let got = call(
            "GET",
            &format!("{}{path}", s.url()),
            &[("Authorization", &bearer)],
            None,
        );
        assert_eq!(got.code, 200, "{path}");
        for raw in [
            "<script>alert",
            "<img src=x",
            "onerror=alert('xss-img') id=injected>",
        ] {
            assert!(!got.body.contains(raw), "{path} holds {raw:?} unescaped");
        }
        assert!(
            got.body
                .contains("&lt;script&gt;alert(&#39;xss-script&#39;)&lt;/script&gt;")
                || got.body.contains("&lt;img src=x "),
            "{path}: the payload is shown, escaped: {}",
            got.body
        );
    }
}

#[test]
fn the_api_answers_in_its_documented_shapes() {
    let home = tempfile::tempdir().unwrap();
    seed(home.path(), "");
    let s = Serve::start(home.path(), None);
    let bearer = format!("Bearer {}", token(home.path()));
    let auth = [("Authorization", bearer.as_str())];
    let get = |path: &str| call("GET", &format!("{}{path}", s.url()), &auth, None);

    let v = get("/api/projects").json();
    let p = &v["projects"][0];
    assert_eq!(
        (p["workspace"].as_str(), p["project"].as_str()),
        (Some("default"), Some("demo"))
    );
    assert_eq!(
        (p["sessions"].as_u64(), p["records"].as_u64()),
        (Some(1), Some(3))
    );
    assert!(p["last_at"].as_str().unwrap().ends_with('Z'));

    let v = get(&format!("/api/projects/{PROJECT}")).json();
    let sess = &v["sessions"][0];
    assert_eq!(sess["session_id"], SESSION);
    assert_eq!(sess["agent"], "claude-code");
    assert_eq!(
        (sess["events"].as_u64(), sess["prompts"].as_u64()),
        (Some(3), Some(1))
    );
    assert!(sess["length_ms"].is_u64() && sess["failures"].is_u64());
    let families: Vec<&str> = sess["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["family"].as_str().unwrap())
        .collect();
    assert_eq!(families.len(), 2, "{sess}");
    assert!(sess["first_prompt"].as_str().unwrap().contains(SEARCH_WORD));
    assert!(v["memory"].as_array().unwrap().is_empty());
    let row = sess["id"].as_i64().unwrap();

    let v = get(&format!("/api/sessions/{row}")).json();
    let events: Vec<&str> = v["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["user-prompt", "post-tool-use", "post-tool-use"]);
    let r = &v["records"][1];
    for k in [
        "id",
        "at",
        "tool_family",
        "files",
        "outcome",
        "excerpt",
        "failed",
    ] {
        assert!(r.get(k).is_some(), "{k} in {r}");
    }
    assert_eq!(r["id"].as_str().unwrap().len(), 32);

    let v = get(&format!("/api/search?q={SEARCH_WORD}&project={PROJECT}")).json();
    let hit = &v["results"][0];
    assert_eq!(hit["session"].as_i64(), Some(row));
    let pieces = hit["snippet"].as_array().unwrap();
    assert!(pieces
        .iter()
        .any(|p| p["hit"] == true && p["text"] == SEARCH_WORD));
    assert_eq!(get("/api/search?q=x&project=Bad").code, 400);
    assert_eq!(
        get(&format!("/api/search?q={SEARCH_WORD}&limit=50")).code,
        200
    );
    assert_eq!(
        get(&format!("/api/search?q={SEARCH_WORD}&limit=51")).code,
        400
    );
    assert_eq!(
        get(&format!("/api/search?q={SEARCH_WORD}&limit=0")).code,
        400
    );
    assert_eq!(get("/api/search").code, 400);
    assert_eq!(get("/api/sessions/424242").code, 404);
    assert_eq!(get("/api/projects/default/nothing-here").code, 404);

    // Memory: create, read, a stale write is a 409 with both versions.
    let mem = format!("{}/api/memory/{PROJECT}", s.url());
    let post = |body: Value| {
        call(
            "POST",
            &mem,
            &[
                ("Authorization", &bearer),
                ("Content-Type", "application/json"),
            ],
            Some(&body.to_string()),
        )
    };
    let got =
        post(serde_json::json!({"path": "/MEMORY.md", "content": "# one\n", "if_version": "new"}));
    assert_eq!(got.code, 200, "{}", got.body);
    let v1 = got.json()["version"].as_str().unwrap().to_string();
    let got = get(&format!("/api/memory/{PROJECT}?path=/MEMORY.md"));
    assert_eq!(got.json()["content"], "# one\n");
    assert_eq!(got.json()["version"], v1.as_str());
    let got =
        post(serde_json::json!({"path": "/MEMORY.md", "content": "# two\n", "if_version": v1}));
    assert_eq!(got.code, 200);
    let got =
        post(serde_json::json!({"path": "/MEMORY.md", "content": "# stale\n", "if_version": v1}));
    assert_eq!(got.code, 409);
    let c = got.json();
    assert_eq!(c["outcome"], "conflict");
    assert_eq!(c["currentContent"], "# two\n");
    assert!(c["currentVersion"].is_string());
    assert_eq!(post(serde_json::json!({"path": "/x.md"})).code, 400);
    let v = get(&format!("/api/projects/{PROJECT}")).json();
    assert_eq!(v["memory"][0]["path"], "/MEMORY.md");
}

#[test]
fn forget_through_the_api_leaves_the_text_in_no_file() {
    const SENTINEL: &str = "qzvwebforgetsentinel";
    let home = tempfile::tempdir().unwrap();
    let data: PathBuf = home.path().join(".memhook-data");
    seed(home.path(), SENTINEL);
    // One more record of the session, still waiting in the spool.
    let mut late = payload("UserPromptSubmit", home.path(), SESSION);
    late["prompt"] = format!("and {SENTINEL} again").into();
    hook(home.path(), &late);
    let s = Serve::start(home.path(), None);
    let bearer = format!("Bearer {}", token(home.path()));
    assert!(!files_holding(&data, SENTINEL).is_empty(), "seeded");
    let forget = |apply: bool| {
        call(
            "POST",
            &format!("{}/api/forget", s.url()),
            &[
                ("Authorization", &bearer),
                ("Content-Type", "application/json"),
            ],
            Some(
                &serde_json::json!({"session": SESSION, "project": PROJECT, "apply": apply})
                    .to_string(),
            ),
        )
    };
    let dry = forget(false);
    assert_eq!(dry.code, 200, "{}", dry.body);
    let d = dry.json();
    assert_eq!(d["applied"], false);
    assert_eq!(
        (d["records"].as_u64(), d["pending"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(
        d["selector"],
        format!("session {SESSION}, project {PROJECT}")
    );
    assert!(
        !files_holding(&data, SENTINEL).is_empty(),
        "a dry run changes nothing"
    );

    let done = forget(true);
    assert_eq!(done.code, 200, "{}", done.body);
    let d = done.json();
    assert_eq!(d["applied"], true);
    assert_eq!(
        (
            d["records"].as_u64(),
            d["sessions"].as_u64(),
            d["projects"].as_u64(),
            d["pending"].as_u64()
        ),
        (Some(3), Some(1), Some(1), Some(1))
    );
    assert_eq!(d["wal_emptied"], true, "{d}");
    assert_eq!(files_holding(&data, SENTINEL), Vec::<PathBuf>::new());
    let v = call(
        "GET",
        &format!("{}/api/projects", s.url()),
        &[("Authorization", &bearer)],
        None,
    )
    .json();
    assert!(v["projects"].as_array().unwrap().is_empty(), "{v}");
    // Bad selectors are a 400 naming the fix.
    let got = call(
        "POST",
        &format!("{}/api/forget", s.url()),
        &[("Authorization", &bearer)],
        Some("{\"project\": \"nope\"}"),
    );
    assert_eq!(got.code, 400);
    assert!(got.body.contains("WORKSPACE/PROJECT"), "{}", got.body);
}

#[test]
fn no_auth_serves_pages_without_a_login_but_still_checks_origin_and_csrf() {
    let home = tempfile::tempdir().unwrap();
    seed(home.path(), "");
    let s = Serve::start_with(home.path(), None, &["--no-auth"]);
    let got = call("GET", &format!("{}/", s.url()), &[], None);
    assert_eq!(got.code, 200);
    assert!(got.body.contains("default / demo"));
    let got = call(
        "POST",
        &format!("{}/forget", s.url()),
        &[("Content-Type", "application/x-www-form-urlencoded")],
        Some(&format!("session={SESSION}&project={PROJECT}")),
    );
    assert_eq!(got.code, 403, "no CSRF token: {}", got.body);
}

/// A team member's named token delivers records but opens no page, no API
/// and no login: the web view can edit and forget, so only the server's own
/// token can.
#[test]
fn named_tokens_cannot_use_the_web_view() {
    let home = tempfile::tempdir().unwrap();
    seed(home.path(), "");
    let s = Serve::start(home.path(), None);
    let out = memhook(home.path())
        .args(["token", "add", "alice"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let alice = format!("Bearer {}", String::from_utf8_lossy(&out.stdout).trim());
    let owner = format!("Bearer {}", token(home.path()));
    // Alice's token is live: it is accepted by the hook protocol.
    let got = call(
        "GET",
        &format!("{}/handoff?workspace=default&project=demo", s.url()),
        &[("Authorization", &alice)],
        None,
    );
    assert_eq!(got.code, 200, "{}", got.body);
    for (method, path) in [
        ("GET", "/"),
        ("GET", "/api/projects"),
        ("POST", "/api/login-code"),
    ] {
        let url = format!("{}{path}", s.url());
        let got = call(method, &url, &[("Authorization", &alice)], Some("{}"));
        assert_eq!(got.code, 401, "{method} {path}: {}", got.body);
        let got = call(method, &url, &[("Authorization", &owner)], Some("{}"));
        assert!(
            got.code < 300,
            "{method} {path} as owner: {} {}",
            got.code,
            got.body
        );
    }
}

#[test]
fn forgetting_a_project_says_its_memory_documents_are_kept() {
    let home = tempfile::tempdir().unwrap();
    seed(home.path(), "");
    let s = Serve::start(home.path(), None);
    let bearer = format!("Bearer {}", token(home.path()));
    let got = call(
        "POST",
        &format!("{}/api/memory/{PROJECT}", s.url()),
        &[
            ("Authorization", &bearer),
            ("Content-Type", "application/json"),
        ],
        Some(
            &serde_json::json!({"path": "/MEMORY.md", "content": "x", "if_version": "new"})
                .to_string(),
        ),
    );
    assert_eq!(got.code, 200, "{}", got.body);
    let got = call(
        "GET",
        &format!("{}/forget?project={PROJECT}", s.url()),
        &[("Authorization", &bearer)],
        None,
    );
    assert_eq!(got.code, 200, "{}", got.body);
    assert!(
        got.body.contains("Its 1 memory documents are kept") && got.body.contains("--memory --yes"),
        "{}",
        got.body
    );
}

/// Counts on the pages are in the right number: `1 session`, `1 prompt`.
#[test]
fn pages_count_in_the_right_number() {
    let home = tempfile::tempdir().unwrap();
    seed(home.path(), "");
    let s = Serve::start(home.path(), None);
    let bearer = format!("Bearer {}", token(home.path()));
    let row = session_row(&s, &bearer);
    let get = |path: &str| {
        call(
            "GET",
            &format!("{}{path}", s.url()),
            &[("Authorization", &bearer)],
            None,
        )
    };
    let project = get(&format!("/p/{PROJECT}"));
    assert!(
        project.body.contains("1 session, newest first."),
        "{}",
        project.body
    );
    let failures = get(&format!("/api/projects/{PROJECT}")).json()["sessions"][0]["failures"]
        .as_u64()
        .unwrap();
    let _ = row;
    let session = get(&format!("/p/{PROJECT}/s/{SESSION}"));
    let want = format!(
        " · 3 records · 1 prompt · {failures} failure{} · in <code>",
        if failures == 1 { "" } else { "s" }
    );
    assert!(session.body.contains(&want), "{want}: {}", session.body);
}
