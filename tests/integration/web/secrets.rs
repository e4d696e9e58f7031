//! The web view's secrets (issue 23, item 4): `memhook ui` sends a
//! credential only to a server that proved it holds the owner's token.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::binaries::memhook;
use crate::support::serve::Serve;

/// How long a fake server keeps accepting before it stops by itself.
const SQUATTER_LIFETIME: Duration = Duration::from_secs(20);

/// A program squatting a loopback port that answers `/healthz` as memhook
/// does and anything else with a made-up login code; `relay` (the real
/// server's address) makes it forward every `/healthz` request there and
/// pass the answer on. Every request it received is kept, bytes as sent.
struct Squatter {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Squatter {
    fn start(relay: Option<SocketAddr>) -> Squatter {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&seen);
        std::thread::spawn(move || {
            let end = Instant::now() + SQUATTER_LIFETIME;
            while Instant::now() < end {
                match l.accept() {
                    Ok((s, _)) => {
                        s.set_nonblocking(false).unwrap();
                        let req = read_request(&s);
                        kept.lock().unwrap().push(req.clone());
                        answer(s, &req, relay);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Squatter { addr, seen }
    }

    fn seen(&self) -> String {
        self.seen.lock().unwrap().join("\n----\n")
    }
}

/// The head of one request (the squatter's clients send no bodies that matter).
fn read_request(mut s: &TcpStream) -> String {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") && buf.len() < 64 * 1024 {
        match s.read(&mut byte) {
            Ok(1) => buf.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

fn answer(mut s: TcpStream, req: &str, relay: Option<SocketAddr>) {
    let target = req.split_whitespace().nth(1).unwrap_or("/").to_string();
    let body = match relay {
        Some(real) if target.starts_with("/healthz") => {
            crate::web::call("GET", &format!("http://{real}{target}"), &[], None).body
        }
        _ if target.starts_with("/healthz") => {
            // What a squatter that studied memhook sends: a proof-shaped guess.
            format!(
                "{{\"status\":\"ok\",\"version\":\"9.9.9\",\"proof\":\"{}\"}}",
                "ab".repeat(32)
            )
        }
        _ => "{\"login_path\":\"/login?code=squatted\"}".to_string(),
    };
    let _ = write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
}

fn write_token(home: &std::path::Path, token: &str) {
    let dir = home.join(".memhook-data");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("auth-token"), format!("{token}\n")).unwrap();
}

/// Run `memhook ui --no-open` against `addr`: (success, stdout, stderr).
fn ui(home: &std::path::Path, addr: SocketAddr) -> (bool, String, String) {
    let out = memhook(home)
        .args(["ui", "--no-open", "--listen", &addr.to_string()])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn memhook_ui_never_sends_the_token_to_a_port_squatter() {
    let home = tempfile::tempdir().unwrap();
    let token = "owner-token-that-must-stay-home-0123456789";
    write_token(home.path(), token);
    let squatter = Squatter::start(None);
    let (ok, out, err) = ui(home.path(), squatter.addr);
    let seen = squatter.seen();
    assert!(!ok, "{err}");
    assert!(!seen.contains(token), "the squatter got the token:\n{seen}");
    assert!(!seen.contains("/api/login-code"), "{seen}");
    assert!(!seen.contains("Authorization"), "{seen}");
    assert!(seen.contains("/healthz?challenge="), "{seen}");
    assert!(
        err.contains("did not prove it is your memhook serve")
            && err.contains("proof does not match")
            && err.contains("nothing was sent to it"),
        "{err}"
    );
    assert!(out.trim().is_empty(), "no link printed: {out}");
}

#[test]
fn a_squatter_relaying_the_challenge_to_the_real_server_fails_too() {
    let home = tempfile::tempdir().unwrap();
    // The real server (the owner's, same token) on another port.
    let real = Serve::start(home.path(), None);
    let token = std::fs::read_to_string(home.path().join(".memhook-data/auth-token")).unwrap();
    let token = token.trim();
    let squatter = Squatter::start(Some(real.addr()));
    let (ok, _, err) = ui(home.path(), squatter.addr);
    let seen = squatter.seen();
    assert!(!ok, "{err}");
    assert!(!seen.contains(token), "{seen}");
    assert!(!seen.contains("/api/login-code"), "{seen}");
    assert!(err.contains("proof does not match"), "{err}");
    // The same real server, asked directly, proves itself.
    let (ok, out, err) = ui(home.path(), real.addr());
    assert!(ok, "{err}");
    assert!(out.contains("/login?code="), "{out}");
}

#[test]
fn memhook_ui_without_a_token_sends_nothing() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".memhook-data")).unwrap();
    let squatter = Squatter::start(None);
    let (ok, _, err) = ui(home.path(), squatter.addr);
    assert!(!ok, "{err}");
    assert!(!squatter.seen().contains("/api/login-code"));
    assert!(err.contains("no token to check the server"), "{err}");
}

/// Log in through `memhook ui` as a browser would: (the cookie's
/// `name=value`, the URL of the page the login sent the browser to).
fn browser_login(home: &std::path::Path, s: &Serve) -> (String, String) {
    let link = crate::web::ui_link(home, s);
    let got = crate::web::call("GET", &link, &[], None);
    assert_eq!(got.code, 303, "{}", got.body);
    let set = got.header("set-cookie").expect("a cookie").to_string();
    let cookie = set.split(';').next().unwrap().trim().to_string();
    let to = got.header("location").expect("a redirect").to_string();
    (cookie, format!("{}{to}", s.url()))
}

/// A form of `html` by its class: its action and its fields (`name=value`,
/// as the page holds them).
fn form_of(html: &str, class: &str) -> (String, Vec<(String, String)>) {
    let at = html
        .find(&format!("class=\"{class}\""))
        .unwrap_or_else(|| panic!("a {class} form in {html}"));
    let start = html[..at].rfind("<form").unwrap();
    let end = at + html[at..].find("</form>").unwrap();
    let form = &html[start..end];
    let attr = |tag: &str, name: &str| -> Option<String> {
        let i = tag.find(&format!("{name}=\""))? + name.len() + 2;
        Some(tag[i..i + tag[i..].find('"')?].to_string())
    };
    let action = attr(form, "action").unwrap();
    let fields = form
        .split("<input")
        .skip(1)
        .filter_map(|t| Some((attr(t, "name")?, attr(t, "value").unwrap_or_default())))
        .collect();
    (action, fields)
}

#[test]
fn a_cookie_replayed_by_another_local_server_is_refused() {
    let home = tempfile::tempdir().unwrap();
    crate::web::seed(home.path(), "");
    let s = Serve::start(home.path(), None);
    let (cookie, page) = browser_login(home.path(), &s);
    // The browser itself, on the page the login sent it to: logged in.
    let got = crate::web::call("GET", &page, &[("Cookie", &cookie)], None);
    assert_eq!(got.code, 200, "{}", got.body);
    assert!(got.body.contains("default / demo"), "{}", got.body);
    // Another local server the browser visited got the cookie (cookies
    // ignore ports) and replays it with a raw client, with every header a
    // browser on this origin would send.
    let own = s.url();
    let host = s.addr().to_string();
    let forged: Vec<(&str, &str)> = vec![
        ("Cookie", &cookie),
        ("Host", &host),
        ("Origin", &own),
        ("Sec-Fetch-Site", "same-origin"),
    ];
    for path in ["/", "/api/projects", "/p/default/demo", "/api/sessions/1"] {
        let got = crate::web::call("GET", &format!("{own}{path}"), &forged, None);
        assert_eq!(got.code, 401, "{path}: {}", got.body);
        assert!(!got.body.contains("default / demo"), "{path}: {}", got.body);
    }
    // Under a made-up session prefix it is nobody too.
    let wrong = format!("{own}/s/{}/api/projects", "0".repeat(64));
    assert_eq!(crate::web::call("GET", &wrong, &forged, None).code, 401);
    // A forget posted with the replayed cookie (CSRF token unknown) changes nothing.
    let got = crate::web::call(
        "POST",
        &format!("{own}/api/forget"),
        &forged,
        Some("{\"project\":\"default/demo\"}"),
    );
    assert!(got.code == 401 || got.code == 403, "{}", got.body);
}

#[test]
fn the_session_cookie_is_scoped_to_its_session_path() {
    let home = tempfile::tempdir().unwrap();
    let s = Serve::start(home.path(), None);
    let link = crate::web::ui_link(home.path(), &s);
    let got = crate::web::call("GET", &link, &[], None);
    let set = got.header("set-cookie").unwrap().to_string();
    let to = got.header("location").unwrap();
    assert!(
        to.starts_with("/s/") && to.ends_with('/') && to.len() == 3 + 64 + 1,
        "{to}"
    );
    let path = format!("Path={}", to.trim_end_matches('/'));
    assert!(set.split("; ").any(|f| f == path), "{path} in {set}");
    assert!(!set.split("; ").any(|f| f == "Path=/"), "{set}");
}

#[test]
fn logging_out_with_the_pages_own_form_ends_the_session() {
    let home = tempfile::tempdir().unwrap();
    crate::web::seed(home.path(), "");
    let s = Serve::start(home.path(), None);
    let (cookie, page) = browser_login(home.path(), &s);
    let got = crate::web::call("GET", &page, &[("Cookie", &cookie)], None);
    assert_eq!(got.code, 200, "{}", got.body);
    // Submit the header's Log out form exactly as the page holds it, with
    // what a browser adds to a same-origin form post under no-referrer.
    let (action, fields) = form_of(&got.body, "logout");
    let body: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let got = crate::web::call(
        "POST",
        &format!("{}{action}", s.url()),
        &[
            ("Cookie", &cookie),
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Origin", "null"),
            ("Sec-Fetch-Site", "same-origin"),
        ],
        Some(&body.join("&")),
    );
    assert_eq!(got.code, 200, "{}", got.body);
    assert!(got.body.contains("Logged out"), "{}", got.body);
    let clear = got.header("set-cookie").expect("the cookie is cleared");
    assert!(clear.contains("Max-Age=0"), "{clear}");
    // The session is over on the server, whatever the browser keeps.
    let got = crate::web::call("GET", &page, &[("Cookie", &cookie)], None);
    assert_eq!(got.code, 401, "{}", got.body);
}
