//! Who may talk to `memhook serve`: the server's own bearer token (on by
//! default, kept in a 0600 file in the data dir; its records are named
//! [`OWNER`]) or any named token not revoked (`memhook token`, looked up in
//! the store on every request that needs it), and the `Host` and `Origin`
//! checks that keep web pages out (DNS rebinding, cross-origin posts).

use std::fs::OpenOptions;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::http::Head;
use memhook_delivery::sink::{usable_token, AUTH_TOKEN_ENV, AUTH_TOKEN_FILE, MAX_AUTH_TOKEN_BYTES};
use memhook_store::tokens::{ct_eq, random_token, OWNER};

/// Where the server's token came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// `AI_MEMORY_AUTH_TOKEN`.
    Env,
    /// `<data dir>/auth-token`, `created` on this start.
    File { path: PathBuf, created: bool },
}

impl TokenSource {
    /// How the start-up line names it (never the token itself).
    pub fn describe(&self) -> String {
        match self {
            TokenSource::Env => format!("bearer token from {AUTH_TOKEN_ENV}"),
            TokenSource::File {
                path,
                created: true,
            } => format!("bearer token, new, in {}", path.display()),
            TokenSource::File { path, .. } => format!("bearer token from {}", path.display()),
        }
    }
}

/// The token the server requires: `AI_MEMORY_AUTH_TOKEN` when set and not
/// blank, else the token file in `data_dir`, written (random, mode 0600,
/// never through a symlink) when there is none. A token file that is a
/// symlink, not ours, open to other users, empty, too big or unusable in a
/// header is an error naming the file and the fix.
pub fn server_token(data_dir: &Path) -> Result<(String, TokenSource), String> {
    if let Some(v) = std::env::var_os(AUTH_TOKEN_ENV) {
        let v = v.to_string_lossy();
        if !v.trim().is_empty() {
            let t = usable_token(v.trim()).ok_or_else(|| {
                format!(
                    "{AUTH_TOKEN_ENV} holds characters an HTTP header cannot carry; \
                     use visible ASCII only"
                )
            })?;
            return Ok((t, TokenSource::Env));
        }
    }
    let path = data_dir.join(AUTH_TOKEN_FILE);
    match read_token_file(&path)? {
        Some(t) => Ok((
            t,
            TokenSource::File {
                path,
                created: false,
            },
        )),
        None => match create_token_file(&path) {
            Ok(t) => Ok((
                t,
                TokenSource::File {
                    path,
                    created: true,
                },
            )),
            // Another server created it first: use theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_token_file(&path)?
                .map(|t| {
                    (
                        t,
                        TokenSource::File {
                            path: path.clone(),
                            created: false,
                        },
                    )
                })
                .ok_or_else(|| format!("{}: appeared empty while starting", path.display())),
            Err(e) => Err(format!(
                "{}: cannot create the token file: {e}",
                path.display()
            )),
        },
    }
}

/// The token in an existing token file (`None` when there is no file).
fn read_token_file(path: &Path) -> Result<Option<String>, String> {
    let shown = path.display();
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{shown}: {e}")),
    };
    if meta.file_type().is_symlink() || !meta.is_file() {
        return Err(format!(
            "{shown}: not a regular file (a symlink or a directory); memhook refuses it \
             (remove it and start again to get a new token)"
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions.
        if meta.uid() != unsafe { libc::geteuid() } {
            return Err(format!(
                "{shown}: owned by another user; memhook refuses it (remove it)"
            ));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(format!(
                "{shown}: other users can read or write it (mode {:o}); run `chmod 600 {shown}`, \
                 or remove it to get a new token",
                meta.mode() & 0o777
            ));
        }
    }
    // Windows: the file inherits the data dir's owner-only ACL; its owner
    // must be this user.
    #[cfg(windows)]
    if let Ok(Some(sid)) = memhook_core::winacl::foreign_owner(path) {
        return Err(format!(
            "{shown}: owned by {sid}, not by you; memhook refuses it (remove it)"
        ));
    }
    if meta.len() > MAX_AUTH_TOKEN_BYTES {
        return Err(format!(
            "{shown}: over {MAX_AUTH_TOKEN_BYTES} bytes; it should hold one token"
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
    if text.trim().is_empty() {
        return Err(format!(
            "{shown}: empty; write a token into it or remove it to get a new one"
        ));
    }
    usable_token(text.trim()).map(Some).ok_or_else(|| {
        format!(
            "{shown}: the token holds characters an HTTP header cannot carry (visible ASCII only)"
        )
    })
}

/// Write a fresh random token to `path`: created exclusively (never over a
/// file or through a symlink), mode 0600, synced.
fn create_token_file(path: &Path) -> std::io::Result<String> {
    let token = random_token()?;
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    // Windows: no mode; the data dir's owner-only ACL is inherited, and
    // `create_new` fails on any existing name (a link included).
    let mut f = opts.open(path)?;
    let written = f
        .write_all(format!("{token}\n").as_bytes())
        .and_then(|_| f.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(token)
}

/// The bearer credentials of an `Authorization` value: the scheme is
/// matched case-insensitively (RFC 7235), the token as sent.
pub fn bearer(value: &str) -> Option<&str> {
    let (scheme, rest) = value.trim().split_once([' ', '\t'])?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| rest.trim())
        .filter(|t| !t.is_empty())
}

/// Why a request was refused before routing.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    pub code: u16,
    pub message: String,
}

fn refuse(code: u16, message: impl Into<String>) -> Refusal {
    Refusal {
        code,
        message: message.into(),
    }
}

/// The request checks that do not depend on the route.
#[derive(Debug)]
pub struct Guard {
    /// SHA-256 of the token, when auth is on.
    digest: Option<[u8; 32]>,
    /// The listen address `Host` must name (with `localhost`); `None`
    /// when listening beyond loopback, where names are the operator's.
    host: Option<SocketAddr>,
    /// `--allow-origin` values, normalised (lowercase, no trailing `/`).
    origins: Vec<String>,
    /// This server's own origins (`http://<listen>`, and
    /// `http://localhost:<port>` on loopback): the web view's pages post
    /// to them, and browsers send `Origin` on every POST.
    own: Vec<String>,
}

impl Guard {
    pub fn new(token: Option<&str>, listen: SocketAddr, origins: Vec<String>) -> Guard {
        let mut own = vec![normalize_origin(&format!("http://{listen}"))];
        if listen.ip().is_loopback() {
            own.push(format!("http://localhost:{}", listen.port()));
        }
        Guard {
            digest: token.map(|t| Sha256::digest(t.as_bytes()).into()),
            host: listen.ip().is_loopback().then_some(listen),
            origins,
            own,
        }
    }

    /// `Host`, and an `Origin` that is absent or this server's own: the web
    /// view and its API answer no other site (no CORS, whatever
    /// `--allow-origin` says).
    pub fn check_same_site(&self, head: &Head) -> Result<(), Refusal> {
        self.check_host(head)?;
        // What the browser says about where the request comes from (absent
        // from non-browser clients and old browsers).
        let fetch_site = head.header("Sec-Fetch-Site");
        if head.method == "POST" && fetch_site.is_some_and(|s| !matches!(s, "same-origin" | "none"))
        {
            return Err(refuse(
                403,
                "a request from another site: the web view accepts changes from its own pages \
                 only",
            ));
        }
        match head.header("Origin") {
            None => Ok(()),
            Some(o) if self.own.contains(&normalize_origin(o)) => Ok(()),
            // Our pages send `Referrer-Policy: no-referrer`, under which a
            // browser sends `Origin: null` with a form post; it then says
            // where the post came from in `Sec-Fetch-Site`.
            Some("null") if fetch_site == Some("same-origin") => Ok(()),
            Some(o) => Err(refuse(
                403,
                format!(
                    "Origin {o:?} is not this server: the web view accepts requests from its \
                     own pages only"
                ),
            )),
        }
    }

    fn check_host(&self, head: &Head) -> Result<(), Refusal> {
        if head.count("Host") > 1 {
            return Err(refuse(400, "more than one Host header"));
        }
        if let Some(listen) = self.host {
            let host = head.header("Host").unwrap_or("");
            if !host_allowed(host, listen) {
                return Err(refuse(
                    403,
                    format!(
                        "Host {host:?} is not this server: use http://{listen} or \
                         http://localhost:{} (other names are refused against DNS rebinding)",
                        listen.port()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `Host` and `Origin`: `Ok(Some(origin))` for an allowed cross-origin
    /// request (its answers carry CORS headers), `Ok(None)` without one.
    pub fn check_site(&self, head: &Head) -> Result<Option<String>, Refusal> {
        self.check_host(head)?;
        match head.header("Origin") {
            None => Ok(None),
            // Our own pages: same origin, no CORS headers needed.
            Some(o) if self.own.contains(&normalize_origin(o)) => Ok(None),
            Some(o) => {
                let norm = normalize_origin(o);
                if self.origins.contains(&norm) {
                    Ok(Some(o.to_string()))
                } else {
                    Err(refuse(
                        403,
                        format!(
                            "Origin {o:?} is not allowed: web pages may not use this server \
                             (start it with --allow-origin {o} to allow that one)"
                        ),
                    ))
                }
            }
        }
    }

    /// Whether the request carries the server's own token (always, with
    /// auth off). Named tokens deliver records; only the owner's token may
    /// mint a web login.
    pub fn authorized(&self, head: &Head) -> bool {
        let Some(expected) = &self.digest else {
            return true;
        };
        let given = head.header("Authorization").and_then(bearer).unwrap_or("");
        ct_eq(&Sha256::digest(given.as_bytes()), expected)
    }

    /// Who sent the request: the server's own token ([`OWNER`]), else the
    /// named token `named` finds live for the bearer credentials (asked
    /// only then, once per request: a revocation holds from the next
    /// request on). With auth off every request is let in, unnamed.
    pub fn caller<E: std::fmt::Display>(
        &self,
        head: &Head,
        named: impl FnOnce(&str) -> Result<Option<String>, E>,
    ) -> Result<Caller, Denied> {
        let Some(expected) = &self.digest else {
            return Ok(Caller { token_name: None });
        };
        let given = head.header("Authorization").and_then(bearer).unwrap_or("");
        if ct_eq(&Sha256::digest(given.as_bytes()), expected) {
            return Ok(Caller {
                token_name: Some(OWNER.to_string()),
            });
        }
        if given.is_empty() || given.len() as u64 > MAX_AUTH_TOKEN_BYTES {
            return Err(Denied::Unauthorized);
        }
        match named(given) {
            Ok(Some(name)) => Ok(Caller {
                token_name: Some(name),
            }),
            Ok(None) => Err(Denied::Unauthorized),
            Err(e) => Err(Denied::Unavailable(format!(
                "cannot check the token against the store: {e}"
            ))),
        }
    }
}

/// Who sent an authenticated request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The token's name ([`OWNER`] for the server's own); `None` with auth off.
    pub token_name: Option<String>,
}

/// Why a request was not let in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// No token, a wrong one, or a revoked one: 401.
    Unauthorized,
    /// The store that holds the named tokens cannot answer now: 503.
    Unavailable(String),
}

/// `Host` names the listen address or `localhost`, with its port if any.
fn host_allowed(host: &str, listen: SocketAddr) -> bool {
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return false;
        };
        (format!("[{v6}]"), after.strip_prefix(':'))
    } else {
        match host.rsplit_once(':') {
            Some((n, p)) => (n.to_string(), Some(p)),
            None => (host.to_string(), None),
        }
    };
    if port.is_some_and(|p| p.parse::<u16>().ok() != Some(listen.port())) {
        return false;
    }
    let ip = match listen {
        SocketAddr::V4(a) => a.ip().to_string(),
        SocketAddr::V6(a) => format!("[{}]", a.ip()),
    };
    name.eq_ignore_ascii_case("localhost") || name.eq_ignore_ascii_case(&ip)
}

/// An origin as compared: ASCII lowercase, no trailing `/`.
pub fn normalize_origin(o: &str) -> String {
    o.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// Check an `--allow-origin` value: `scheme://host[:port]`, nothing else.
pub fn check_origin_arg(o: &str) -> Result<String, String> {
    let norm = normalize_origin(o);
    let rest = norm
        .strip_prefix("http://")
        .or_else(|| norm.strip_prefix("https://"));
    match rest {
        Some(r) if !r.is_empty() && !r.contains(['/', '?', '#', '@', ' ']) => Ok(norm),
        _ => Err(format!(
            "--allow-origin {o:?}: expected an origin like http://localhost:3000 \
             (scheme, host and port; no path)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn bearer_scheme_is_case_insensitive() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer abc"), Some("abc"));
        assert_eq!(bearer("BEARER \t abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer"), None);
        assert_eq!(bearer("Bearer   "), None);
        assert_eq!(bearer("Bearerabc"), None);
    }

    fn head(auth: Option<&str>) -> Head {
        let mut text = "GET /handoff HTTP/1.1\r\nHost: 127.0.0.1:1".to_string();
        if let Some(a) = auth {
            text.push_str(&format!("\r\nAuthorization: {a}"));
        }
        super::super::http::parse_head(text.as_bytes()).unwrap()
    }

    #[test]
    fn callers_are_the_owner_a_named_token_or_nobody() {
        let listen: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let g = Guard::new(Some("owner-secret"), listen, vec![]);
        let table = |t: &str| -> Result<Option<String>, String> {
            Ok((t == "alice-secret").then(|| "alice".to_string()))
        };
        let owner = g.caller(&head(Some("Bearer owner-secret")), table);
        assert_eq!(owner.unwrap().token_name.as_deref(), Some(OWNER));
        let alice = g.caller(&head(Some("bearer alice-secret")), table);
        assert_eq!(alice.unwrap().token_name.as_deref(), Some("alice"));
        for bad in [None, Some("Bearer nope"), Some("Basic owner-secret")] {
            assert_eq!(g.caller(&head(bad), table), Err(Denied::Unauthorized));
        }
        // No credentials, or credentials too long to be a token: the store
        // is not asked.
        let never = |_: &str| -> Result<Option<String>, String> { panic!("asked") };
        assert_eq!(g.caller(&head(None), never), Err(Denied::Unauthorized));
        let long = format!("Bearer {}", "a".repeat(MAX_AUTH_TOKEN_BYTES as usize + 1));
        assert_eq!(
            g.caller(&head(Some(&long)), never),
            Err(Denied::Unauthorized)
        );
        // A store that cannot answer is a 503, not a 401 (drainers retry free).
        let down = |_: &str| -> Result<Option<String>, String> { Err("locked".into()) };
        assert!(matches!(
            g.caller(&head(Some("Bearer x")), down),
            Err(Denied::Unavailable(_))
        ));
        // Auth off: everyone, unnamed.
        let open = Guard::new(None, listen, vec![]);
        assert_eq!(open.caller(&head(None), never).unwrap().token_name, None);
    }

    #[test]
    fn hosts_must_name_this_server() {
        let v4: SocketAddr = "127.0.0.1:49374".parse().unwrap();
        for ok in [
            "127.0.0.1:49374",
            "127.0.0.1",
            "localhost:49374",
            "LOCALHOST",
        ] {
            assert!(host_allowed(ok, v4), "{ok}");
        }
        for bad in [
            "",
            "evil.example:49374",
            "127.0.0.1:1",
            "127.0.0.2:49374",
            "localhost.evil.example:49374",
            "127.0.0.1:49374:1",
            "[::1]:49374",
        ] {
            assert!(!host_allowed(bad, v4), "{bad}");
        }
        let v6: SocketAddr = "[::1]:8080".parse().unwrap();
        assert!(host_allowed("[::1]:8080", v6));
        assert!(host_allowed("localhost:8080", v6));
        assert!(!host_allowed("[::1", v6));
        assert!(!host_allowed("[::2]:8080", v6));
    }

    #[test]
    fn own_origin_passes_and_the_web_view_allows_no_other() {
        let listen: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let g = Guard::new(None, listen, vec!["http://allowed.example".into()]);
        let head = |origin: &str| {
            super::super::http::parse_head(
                format!("POST / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nOrigin: {origin}").as_bytes(),
            )
            .unwrap()
        };
        for own in [
            "http://127.0.0.1:8080",
            "http://localhost:8080",
            "HTTP://LOCALHOST:8080/",
        ] {
            assert_eq!(g.check_site(&head(own)), Ok(None), "{own}");
            assert_eq!(g.check_same_site(&head(own)), Ok(()), "{own}");
        }
        assert_eq!(
            g.check_site(&head("http://allowed.example")),
            Ok(Some("http://allowed.example".into()))
        );
        for other in ["http://allowed.example", "http://127.0.0.1:8081", "null"] {
            let e = g.check_same_site(&head(other)).unwrap_err();
            assert_eq!(e.code, 403, "{other}");
        }
        // A form post from our own page under `no-referrer`: Origin null,
        // and the browser's word that it came from the same origin.
        let with_site = |origin: &str, site: &str| {
            super::super::http::parse_head(
                format!(
                    "POST / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nOrigin: {origin}\r\n\
                     Sec-Fetch-Site: {site}"
                )
                .as_bytes(),
            )
            .unwrap()
        };
        assert_eq!(g.check_same_site(&with_site("null", "same-origin")), Ok(()));
        for site in ["cross-site", "same-site"] {
            assert!(
                g.check_same_site(&with_site("null", site)).is_err(),
                "{site}"
            );
            let own = "http://127.0.0.1:8080";
            assert!(g.check_same_site(&with_site(own, site)).is_err(), "{site}");
        }
    }

    #[test]
    fn origin_arguments_are_origins() {
        assert_eq!(
            check_origin_arg("HTTP://Localhost:3000/").unwrap(),
            "http://localhost:3000"
        );
        for bad in ["localhost:3000", "http://", "http://a/b", "*", "null"] {
            assert!(check_origin_arg(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_new_token_file_is_private_and_kept() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join(AUTH_TOKEN_FILE);
        assert_eq!(read_token_file(&path), Ok(None));
        let tok = create_token_file(&path).unwrap();
        assert_eq!(tok.len(), memhook_store::tokens::TOKEN_BYTES * 2);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(read_token_file(&path), Ok(Some(tok.clone())));
        // Never over an existing file.
        assert!(create_token_file(&path).is_err());
        assert_eq!(read_token_file(&path), Ok(Some(tok)));
    }

    #[test]
    fn unsafe_token_files_are_refused_with_the_fix() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join(AUTH_TOKEN_FILE);
        std::fs::write(&path, "tok\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = read_token_file(&path).unwrap_err();
        assert!(e.contains("chmod 600") && !e.contains("tok\n"), "{e}");
        std::fs::remove_file(&path).unwrap();
        let real = t.path().join("real");
        std::fs::write(&real, "tok").unwrap();
        std::os::unix::fs::symlink(&real, &path).unwrap();
        assert!(read_token_file(&path).unwrap_err().contains("symlink"));
        assert!(create_token_file(&path).is_err(), "never through a symlink");
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "  \n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(read_token_file(&path).unwrap_err().contains("empty"));
        let big = "a".repeat(MAX_AUTH_TOKEN_BYTES as usize + 1);
        std::fs::write(&path, big).unwrap();
        assert!(read_token_file(&path).unwrap_err().contains("bytes"));
    }
}
