//! HTTP on the loopback: a client for tests, one exchange, a free port.

use std::net::TcpListener;
use std::time::Duration;

/// An HTTP client for tests: statuses are answers, not errors; no proxy;
/// every request ends within `secs`.
pub fn client(secs: u64) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .proxy(None)
        .timeout_global(Some(Duration::from_secs(secs)))
        .build()
        .new_agent()
}

/// One HTTP exchange with the server under test: (status, body).
pub fn request(method: &str, url: &str, body: Option<&[u8]>, token: Option<&str>) -> (u16, String) {
    let agent = client(20);
    let auth = token.map(|t| format!("Bearer {t}"));
    let res = if method == "GET" {
        let mut r = agent.get(url);
        if let Some(a) = &auth {
            r = r.header("Authorization", a);
        }
        r.call()
    } else {
        let mut r = agent.post(url).header("Content-Type", "application/json");
        if let Some(a) = &auth {
            r = r.header("Authorization", a);
        }
        r.send(body.unwrap_or(b""))
    };
    let mut resp = res.expect("request");
    let code = resp.status().as_u16();
    let text = resp
        .body_mut()
        .with_config()
        .limit(1 << 20)
        .read_to_string()
        .unwrap_or_default();
    (code, text)
}

/// `text` as JSON, or a failure that shows it.
pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// A 127.0.0.1 port free right now (a server may still take it first).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
