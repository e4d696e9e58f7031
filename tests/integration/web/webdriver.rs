//! A minimal W3C WebDriver client over HTTP (ureq + JSON) for headless
//! Chromium through chromedriver, which the test starts on a free
//! 127.0.0.1 port and kills when done.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The key of an element reference in WebDriver answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// How long chromedriver has to answer `/status`.
const DRIVER_START: Duration = Duration::from_secs(30);
/// Longest wait for the page a click leads to.
const NAVIGATION_WAIT: Duration = Duration::from_secs(15);

/// A running chromedriver with one browser session; both end on drop.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    agent: ureq::Agent,
}

impl Browser {
    /// Start `chromedriver` and a headless `chromium` with a fresh profile
    /// in `profile`.
    pub fn start(chromium: &Path, chromedriver: &Path, profile: &Path) -> Browser {
        let port = crate::support::http::free_port();
        let mut cmd = Command::new(chromedriver);
        cmd.arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        crate::support::process::die_with_parent(&mut cmd);
        let driver = cmd.spawn().expect("start chromedriver");
        let agent = crate::support::http::client(60);
        let base = format!("http://127.0.0.1:{port}");
        let mut b = Browser {
            driver,
            base,
            session: String::new(),
            agent,
        };
        let start = Instant::now();
        loop {
            let ready = b
                .agent
                .get(format!("{}/status", b.base))
                .call()
                .ok()
                .and_then(|mut r| r.body_mut().read_to_string().ok())
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .is_some_and(|v| v["value"]["ready"] == true);
            if ready {
                break;
            }
            assert!(start.elapsed() < DRIVER_START, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1280,900",
            &format!("--user-data-dir={}", profile.display()),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let v = b.cmd("POST", "/session", Some(caps));
        b.session = v["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no browser session: {v}"))
            .to_string();
        b
    }

    /// One WebDriver command: its `value`, or a panic naming the error.
    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let v = self.try_cmd(method, path, body);
        if let Some(err) = v.get("error") {
            panic!("webdriver {method} {path}: {err}: {}", v["message"]);
        }
        v
    }

    /// One command; an error is returned as the `value` object.
    fn try_cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.base);
        let res = match method {
            "GET" => self.agent.get(&url).call(),
            "DELETE" => self.agent.delete(&url).call(),
            _ => self
                .agent
                .post(&url)
                .header("Content-Type", "application/json")
                .send(body.unwrap_or(json!({})).to_string()),
        };
        let mut resp = res.unwrap_or_else(|e| panic!("webdriver {method} {path}: {e}"));
        let text = resp
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .unwrap_or_else(|e| panic!("webdriver {method} {path}: {e}"));
        let v: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("webdriver {method} {path}: not JSON: {e}: {text}"));
        v["value"].clone()
    }

    fn s(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    pub fn goto(&self, url: &str) {
        self.cmd("POST", &self.s("/url"), Some(json!({ "url": url })));
    }

    pub fn url(&self) -> String {
        self.cmd("GET", &self.s("/url"), None)
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    /// The first element matching `css` (panics when there is none).
    pub fn find(&self, css: &str) -> String {
        let v = self.cmd(
            "POST",
            &self.s("/element"),
            Some(json!({"using": "css selector", "value": css})),
        );
        v[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("{css}: {v}"))
            .to_string()
    }

    /// Every element matching `css`.
    pub fn find_all(&self, css: &str) -> Vec<String> {
        let v = self.cmd(
            "POST",
            &self.s("/elements"),
            Some(json!({"using": "css selector", "value": css})),
        );
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e[ELEMENT].as_str().unwrap().to_string())
            .collect()
    }

    /// Click the element `css` and wait until the page it leads to has
    /// loaded: every click in these tests follows a link or submits a
    /// form, and WebDriver may answer a click before a form's POST has
    /// brought the next page.
    pub fn click(&self, css: &str) {
        let e = self.find(css);
        self.eval("window.__memhookOldPage = true; return null;");
        self.cmd("POST", &self.s(&format!("/element/{e}/click")), None);
        let deadline = Instant::now() + NAVIGATION_WAIT;
        loop {
            let v = self.try_cmd(
                "POST",
                &self.s("/execute/sync"),
                Some(json!({
                    "script": "return window.__memhookOldPage === undefined \
                               && document.readyState === 'complete';",
                    "args": []
                })),
            );
            // During the navigation the script may fail (no document yet):
            // an error object, not `true`.
            if v == json!(true) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "clicking {css} brought no new page within {NAVIGATION_WAIT:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Click the element `css` where the click leads nowhere (no new page
    /// is waited for).
    pub fn click_in_place(&self, css: &str) {
        let e = self.find(css);
        self.cmd("POST", &self.s(&format!("/element/{e}/click")), None);
    }

    /// Replace the text of the input or textarea `css` with `text`.
    pub fn type_into(&self, css: &str, text: &str) {
        let e = self.find(css);
        self.cmd("POST", &self.s(&format!("/element/{e}/clear")), None);
        self.cmd(
            "POST",
            &self.s(&format!("/element/{e}/value")),
            Some(json!({ "text": text })),
        );
    }

    /// The rendered text of element `e`.
    pub fn text_of(&self, e: &str) -> String {
        self.cmd("GET", &self.s(&format!("/element/{e}/text")), None)
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    /// The rendered text of the page.
    pub fn page_text(&self) -> String {
        let body = self.find("body");
        self.text_of(&body)
    }

    /// Run `script` in the page (through DevTools, not as page script).
    pub fn eval(&self, script: &str) -> Value {
        self.cmd(
            "POST",
            &self.s("/execute/sync"),
            Some(json!({"script": script, "args": []})),
        )
    }

    /// The text of an open alert/confirm/prompt dialog, if one is open.
    pub fn dialog(&self) -> Option<String> {
        let v = self.try_cmd("GET", &self.s("/alert/text"), None);
        match v.get("error") {
            Some(e) if e == "no such alert" => None,
            Some(e) => panic!("webdriver alert: {e}: {}", v["message"]),
            None => Some(v.as_str().unwrap_or("").to_string()),
        }
    }

    /// A PNG screenshot of the page, written to `path`.
    pub fn screenshot(&self, path: &Path) {
        let v = self.cmd("GET", &self.s("/screenshot"), None);
        let png = base64_decode(v.as_str().expect("base64 PNG"));
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
        std::fs::write(path, png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self
                .agent
                .delete(format!("{}/session/{}", self.base, self.session))
                .call();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Standard base64 (with padding, whitespace ignored) to bytes.
pub fn base64_decode(text: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c:?}"),
        }
    };
    let clean: Vec<u8> = text
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= val(c) << (18 - 6 * i);
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..chunk.len() - 1]);
    }
    out
}

#[test]
fn base64_decodes_every_padding() {
    assert_eq!(base64_decode(""), b"");
    assert_eq!(base64_decode("Zg=="), b"f");
    assert_eq!(base64_decode("Zm8="), b"fo");
    assert_eq!(base64_decode("Zm9v"), b"foo");
    assert_eq!(base64_decode("Zm9v\nYmFy"), b"foobar");
    assert_eq!(base64_decode("+/8="), [0xfb, 0xff]);
}
