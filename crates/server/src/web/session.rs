//! Browser logins for the web view: one-time login codes, the session
//! cookies they become, and the CSRF token bound to each session.
//!
//! `memhook ui` asks the server for a code over `POST /api/login-code`
//! with the bearer token (so only someone who can read the token can log a
//! browser in); the browser opens `/login?code=…`, which spends the code
//! (once, within [`LOGIN_CODE_TTL`]) and sets an HttpOnly, SameSite=Strict
//! cookie. Everything lives in the server's memory: a restart logs every
//! browser out. Codes and session ids are kept as SHA-256 digests and
//! compared in constant time.
//!
//! The cookie is only half of a login. Browsers do not keep cookies apart
//! by port, so any other server on 127.0.0.1 that the browser visits could
//! receive a cookie scoped to `/` and replay it with a raw client (forging
//! `Host`, `Origin` and `Sec-Fetch-Site` at will). So each session also has
//! a random **path key**: the login sends the browser to `/s/<key>/`, every
//! page of the session lives under that prefix, and the cookie is scoped to
//! `Path=/s/<key>` — the browser does not even send it elsewhere, and a
//! cookie replayed without its session's key (which only ever appears in
//! URLs of this origin, never in a cookie or a `Referer`) is nobody.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// How long a login code can be spent.
pub const LOGIN_CODE_TTL: Duration = Duration::from_secs(120);
/// Test knob: a shorter code lifetime in milliseconds (never longer than
/// [`LOGIN_CODE_TTL`]).
pub const LOGIN_CODE_TTL_ENV: &str = "MEMHOOK_LOGIN_CODE_TTL_MS";
/// Codes waiting to be spent; issuing one more drops the oldest.
pub const MAX_LOGIN_CODES: usize = 8;
/// How long a browser stays logged in (from the login, not the last use).
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// Browser sessions kept; one more logs out the oldest.
pub const MAX_SESSIONS: usize = 32;
/// Random bytes in a code, a session id and a CSRF token (hex: twice as many
/// characters).
pub const SECRET_BYTES: usize = 32;
/// Name of the session cookie, followed by `_<port>`: cookies are not kept
/// apart by port, so two servers on one host would overwrite each other's.
pub const COOKIE_PREFIX: &str = "memhook_session";

/// A fresh random secret as lowercase hex.
pub fn secret() -> String {
    let mut bytes = [0u8; SECRET_BYTES];
    // A platform without a random source cannot serve logins at all.
    memhook_core::entropy::fill(&mut bytes).expect("the operating system's random source");
    memhook_core::hex::encode(&bytes)
}

fn digest(s: &str) -> [u8; 32] {
    Sha256::digest(s.as_bytes()).into()
}

/// Constant-time equality of two byte strings.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

struct Session {
    id: [u8; 32],
    /// Digest of the path key (`/s/<key>/…`).
    key: [u8; 32],
    csrf: String,
    expires: Instant,
}

#[derive(Default)]
struct Inner {
    /// (digest of the code, when it expires), oldest first.
    codes: Vec<([u8; 32], Instant)>,
    /// Oldest first.
    sessions: Vec<Session>,
}

/// The server's login codes and browser sessions.
pub struct Sessions {
    inner: Mutex<Inner>,
    code_ttl: Duration,
}

impl Sessions {
    /// Codes live `code_ttl` (at most [`LOGIN_CODE_TTL`]).
    pub fn new(code_ttl: Duration) -> Sessions {
        Sessions {
            inner: Mutex::new(Inner::default()),
            code_ttl: code_ttl.min(LOGIN_CODE_TTL),
        }
    }

    /// [`LOGIN_CODE_TTL`], or less when [`LOGIN_CODE_TTL_ENV`] says so.
    pub fn code_ttl_from_env() -> Duration {
        std::env::var(LOGIN_CODE_TTL_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(LOGIN_CODE_TTL, |ms| {
                Duration::from_millis(ms).min(LOGIN_CODE_TTL)
            })
    }

    pub fn code_ttl(&self) -> Duration {
        self.code_ttl
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new single-use login code.
    pub fn issue_code(&self, now: Instant) -> String {
        let code = secret();
        let mut inner = self.lock();
        inner.codes.retain(|(_, exp)| *exp > now);
        if inner.codes.len() >= MAX_LOGIN_CODES {
            inner.codes.remove(0);
        }
        inner.codes.push((digest(&code), now + self.code_ttl));
        code
    }

    /// Spend `code`: `Some(session id, path key)` (the cookie's value and
    /// the prefix the session's pages live under) when it was issued, not
    /// spent and not expired. A code is gone after one try that names it,
    /// whether it had expired or not.
    pub fn redeem(&self, code: &str, now: Instant) -> Option<(String, String)> {
        let d = digest(code.trim());
        let mut inner = self.lock();
        let at = inner.codes.iter().position(|(c, _)| same(c, &d))?;
        let (_, expires) = inner.codes.remove(at);
        if expires <= now {
            return None;
        }
        let id = secret();
        let key = secret();
        inner.sessions.retain(|s| s.expires > now);
        if inner.sessions.len() >= MAX_SESSIONS {
            inner.sessions.remove(0);
        }
        inner.sessions.push(Session {
            id: digest(&id),
            key: digest(&key),
            csrf: secret(),
            expires: now + SESSION_TTL,
        });
        Some((id, key))
    }

    /// The CSRF token of the live session `id` whose path key is `key`:
    /// the cookie without its key (or with another session's) is nobody.
    pub fn csrf(&self, id: &str, key: &str, now: Instant) -> Option<String> {
        let d = digest(id);
        let k = digest(key);
        let inner = self.lock();
        inner
            .sessions
            .iter()
            .find(|s| same(&s.id, &d) && s.expires > now)
            .filter(|s| same(&s.key, &k))
            .map(|s| s.csrf.clone())
    }

    /// Log the session `id` out.
    pub fn end(&self, id: &str) {
        let d = digest(id);
        self.lock().sessions.retain(|s| !same(&s.id, &d));
    }
}

/// The cookie's name for a server on `port`.
pub fn cookie_name(port: u16) -> String {
    format!("{COOKIE_PREFIX}_{port}")
}

/// The value of cookie `name` in a `Cookie` header.
pub fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k.trim() == name).then(|| v.trim())
    })
}

/// The prefix of a session's pages: `/s/<key>`.
pub fn base(key: &str) -> String {
    format!("{SESSION_PREFIX}{key}")
}

/// The start of every path of a logged-in browser's pages.
pub const SESSION_PREFIX: &str = "/s/";

/// `path` split into the session's path key and the page's path:
/// `/s/<key>/p/a/b` → (`Some(key)`, `/p/a/b`), `/s/<key>` → (`Some(key)`,
/// `/`). A path without the prefix, or whose key is not 64 lowercase hex
/// digits, has no key.
pub fn split_base(path: &str) -> (Option<&str>, &str) {
    let Some(rest) = path.strip_prefix(SESSION_PREFIX) else {
        return (None, path);
    };
    let (key, inner) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let hex = key.len() == SECRET_BYTES * 2
        && key
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if hex {
        (Some(key), inner)
    } else {
        (None, path)
    }
}

/// The `Set-Cookie` value that logs a browser in: scoped to the session's
/// path, so the browser sends it nowhere else (no other port's server
/// knows that path).
pub fn set_cookie(name: &str, id: &str, key: &str) -> String {
    format!(
        "{name}={id}; HttpOnly; SameSite=Strict; Path={}; Max-Age={}",
        base(key),
        SESSION_TTL.as_secs()
    )
}

/// The `Set-Cookie` value that logs a browser out.
pub fn clear_cookie(name: &str, key: &str) -> String {
    format!(
        "{name}=; HttpOnly; SameSite=Strict; Path={}; Max-Age=0",
        base(key)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_is_spent_once_and_expires_at_its_edge() {
        let s = Sessions::new(LOGIN_CODE_TTL);
        let t0 = Instant::now();
        let code = s.issue_code(t0);
        assert_eq!(code.len(), SECRET_BYTES * 2);
        let id = s.redeem(&code, t0 + LOGIN_CODE_TTL - Duration::from_millis(1));
        let (id, key) = id.expect("spent just inside its lifetime");
        assert!(s.redeem(&code, t0).is_none(), "spent twice");
        let late = s.issue_code(t0);
        assert!(s.redeem(&late, t0 + LOGIN_CODE_TTL).is_none(), "expired");
        assert!(s.redeem("nonsense", t0).is_none());
        let csrf = s.csrf(&id, &key, t0).expect("a live session");
        assert_eq!(csrf.len(), SECRET_BYTES * 2);
        let login = t0 + LOGIN_CODE_TTL - Duration::from_millis(1);
        assert!(s
            .csrf(&id, &key, login + SESSION_TTL - Duration::from_millis(1))
            .is_some());
        assert!(
            s.csrf(&id, &key, login + SESSION_TTL).is_none(),
            "session expired"
        );
        s.end(&id);
        assert!(s.csrf(&id, &key, t0).is_none(), "logged out");
    }

    #[test]
    fn codes_and_sessions_are_bounded() {
        let s = Sessions::new(LOGIN_CODE_TTL);
        let t0 = Instant::now();
        let first = s.issue_code(t0);
        let rest: Vec<String> = (0..MAX_LOGIN_CODES).map(|_| s.issue_code(t0)).collect();
        assert!(
            s.redeem(&first, t0).is_none(),
            "the oldest code was dropped"
        );
        assert!(s.redeem(&rest[0], t0).is_some());
        let mut ids = Vec::new();
        for _ in 0..MAX_SESSIONS + 1 {
            let c = s.issue_code(t0);
            ids.push(s.redeem(&c, t0).unwrap());
        }
        assert!(
            s.csrf(&ids[0].0, &ids[0].1, t0).is_none(),
            "the oldest session was dropped"
        );
        let (id, key) = &ids[MAX_SESSIONS];
        assert!(s.csrf(id, key, t0).is_some());
    }

    #[test]
    fn the_code_lifetime_can_only_be_shortened() {
        assert_eq!(Sessions::new(LOGIN_CODE_TTL * 2).code_ttl(), LOGIN_CODE_TTL);
        assert_eq!(
            Sessions::new(Duration::from_millis(5)).code_ttl(),
            Duration::from_millis(5)
        );
    }

    #[test]
    fn cookies_parse_and_carry_the_flags() {
        let h = "a=1; memhook_session_80=abc ; other=x=y";
        assert_eq!(cookie(h, "memhook_session_80"), Some("abc"));
        assert_eq!(cookie(h, "memhook_session_81"), None);
        assert_eq!(cookie(h, "other"), Some("x=y"));
        let c = set_cookie(&cookie_name(80), "abc", "k");
        assert!(c.starts_with("memhook_session_80=abc;"), "{c}");
        for flag in ["HttpOnly", "SameSite=Strict", "Path=/s/k;"] {
            assert!(c.contains(flag), "{c}");
        }
        let clear = clear_cookie("n", "k");
        assert!(clear.contains("Max-Age=0") && clear.contains("Path=/s/k;"));
    }

    #[test]
    fn a_cookie_without_its_path_key_is_nobody() {
        let s = Sessions::new(LOGIN_CODE_TTL);
        let t0 = Instant::now();
        let (a, ka) = s.redeem(&s.issue_code(t0), t0).unwrap();
        let (b, kb) = s.redeem(&s.issue_code(t0), t0).unwrap();
        assert_ne!(ka, kb);
        assert!(s.csrf(&a, &ka, t0).is_some());
        assert!(s.csrf(&a, &kb, t0).is_none(), "another session's key");
        assert!(s.csrf(&a, "", t0).is_none(), "no key");
        assert!(s.csrf(&b, &ka, t0).is_none());
    }

    #[test]
    fn session_paths_split_only_on_a_well_formed_key() {
        let k = "0123456789abcdef".repeat(4);
        assert_eq!(
            split_base(&format!("/s/{k}/p/a/b")),
            (Some(&k[..]), "/p/a/b")
        );
        assert_eq!(split_base(&format!("/s/{k}")), (Some(&k[..]), "/"));
        assert_eq!(split_base(&format!("/s/{k}/")), (Some(&k[..]), "/"));
        assert_eq!(split_base("/p/a/b"), (None, "/p/a/b"));
        let upper = k.to_uppercase();
        for bad in [
            format!("/s/{upper}/x"),
            "/s/abc/x".into(),
            format!("/s/{k}0/x"),
        ] {
            assert_eq!(split_base(&bad).0, None, "{bad}");
        }
    }
}
