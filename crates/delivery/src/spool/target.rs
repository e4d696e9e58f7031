//! Where a spooled record goes ([`SinkTarget`]) and the one check for
//! every server URL memhook sends to.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Environment variable naming the ai-memory server the hook delivers to.
pub const HOOK_URL_ENV: &str = "AI_MEMORY_HOOK_URL";

/// A server URL that cannot be used, with why (never its credentials).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlError {
    /// The URL fit to show ([`redact_url`]).
    pub url: String,
    pub problem: String,
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "server URL {:?} {} (set --server-url or AI_MEMORY_HOOK_URL to http[s]://host:port)",
            self.url, self.problem
        )
    }
}

impl std::error::Error for UrlError {}

/// Where a spooled record must be delivered. Fixed at enqueue, so whichever
/// drainer runs later delivers it to the sink that was in effect for the hook.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SinkTarget {
    /// The embedded SQLite store in the data dir.
    Store,
    /// An ai-memory compatible server (base URL, no credentials).
    Http { url: String },
}

impl SinkTarget {
    /// A short, file-name-safe id for counters: `store` or `http-<16 hex>`.
    pub fn id(&self) -> String {
        match self {
            SinkTarget::Store => "store".to_string(),
            SinkTarget::Http { url } => {
                use sha2::{Digest, Sha256};
                let d = Sha256::digest(url.as_bytes());
                format!("http-{}", memhook_core::hex::encode(&d[..8]))
            }
        }
    }

    /// Human description for status output.
    pub fn describe(&self) -> String {
        match self {
            SinkTarget::Store => "embedded store".to_string(),
            SinkTarget::Http { url } => url.clone(),
        }
    }

    /// Why this sink is not one a hook writes: an HTTP URL must pass
    /// [`check_base_url`] (http or https, a host, no
    /// credentials).
    pub fn problem(&self) -> Option<String> {
        match self {
            SinkTarget::Store => None,
            SinkTarget::Http { url } => match check_base_url(url) {
                Ok(_) => None,
                // The URL is not repeated: it came from the file.
                Err(_) => Some("sink is not a usable http(s) base URL without credentials".into()),
            },
        }
    }

    /// Where records go: `--server-url`, else `AI_MEMORY_HOOK_URL`, else the
    /// embedded store. Never the marker: a cloned repository cannot choose
    /// where data is sent.
    pub fn configured(flag: Option<&str>) -> SinkTarget {
        let url = flag
            .map(str::to_string)
            .or_else(|| std::env::var(HOOK_URL_ENV).ok())
            .filter(|u| !u.trim().is_empty());
        match url {
            Some(url) => Self::checked_server_url(&url),
            None => SinkTarget::Store,
        }
    }

    /// The server sink for `url` when it is a usable base URL; otherwise a
    /// warning (which never repeats credentials) and the embedded store, so
    /// the event is kept and nothing writes the bad URL anywhere.
    fn checked_server_url(url: &str) -> SinkTarget {
        match check_base_url(url) {
            Ok(url) => SinkTarget::Http { url },
            Err(e) => {
                eprintln!("memhook: {e}; this event goes to the embedded store");
                SinkTarget::Store
            }
        }
    }
}

/// Check and normalise a base URL: `http://` or `https://` (any case,
/// written lowercase), a host, no credentials, no query or fragment, only
/// printable ASCII; a trailing `/` is dropped. The one check for every URL
/// memhook sends to: the hook's `--server-url` / `AI_MEMORY_HOOK_URL`, the
/// sink of a spool entry, `GET /handoff`. Its error never repeats
/// credentials (see [`redact_url`]).
pub fn check_base_url(url: &str) -> Result<String, UrlError> {
    let bad = |problem: &str| UrlError {
        url: redact_url(url),
        problem: problem.to_string(),
    };
    let trimmed = url.trim().trim_end_matches('/');
    let (scheme, rest) = trimmed
        .split_once("://")
        .filter(|(s, _)| s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https"))
        .ok_or_else(|| bad("must start with http:// or https://"))?;
    let authority = rest.split('/').next().unwrap_or("");
    if authority.contains('@') {
        return Err(bad(
            "must not carry credentials; put the token in AI_MEMORY_AUTH_TOKEN or <data dir>/auth-token",
        ));
    }
    if authority.is_empty() || authority.starts_with(':') {
        return Err(bad("has no host"));
    }
    if rest.contains(['?', '#']) || trimmed.bytes().any(|b| !b.is_ascii_graphic()) {
        return Err(bad(
            "must not hold a query, a fragment, spaces or control characters",
        ));
    }
    Ok(format!("{}://{rest}", scheme.to_ascii_lowercase()))
}

/// `url` fit to show: anything before an `@` in its authority becomes
/// `***`, and it is cut to 200 printable ASCII characters.
pub fn redact_url(url: &str) -> String {
    let (head, rest) = match url.split_once("://") {
        Some((h, r)) => (format!("{h}://"), r),
        None => (String::new(), url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let shown = match rest[..end].rfind('@') {
        Some(at) => format!("{head}***{}", &rest[at..]),
        None => format!("{head}{rest}"),
    };
    shown
        .chars()
        .map(|c| if c.is_ascii_graphic() { c } else { '?' })
        .take(200)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_are_checked() {
        assert_eq!(
            check_base_url("http://127.0.0.1:9/").unwrap(),
            "http://127.0.0.1:9"
        );
        assert_eq!(
            check_base_url("https://mem.example/wiki").unwrap(),
            "https://mem.example/wiki"
        );
        for bad in [
            "127.0.0.1:9",
            "ftp://x",
            "http://",
            "http://u:p@host",
            "http://h/?a=b",
            "http://h/a b",
        ] {
            assert!(check_base_url(bad).is_err(), "{bad}");
        }
        for bad in [
            "ftp://x",
            "http://:80",
            "file:///etc/passwd",
            "http://u@h",
            "https://@h",
        ] {
            assert!(check_base_url(bad).is_err(), "{bad}");
        }
        assert_eq!(check_base_url("HTTP://H:1/").unwrap(), "http://H:1");
        // The refusal never repeats the credentials.
        for with in [
            "http://u:secret@host",
            "http://secret@host/x",
            "ftp://u:secret@x",
        ] {
            let e = check_base_url(with).unwrap_err().to_string();
            assert!(!e.contains("secret"), "{e}");
            assert!(e.contains("***@"), "{e}");
        }
        let e = check_base_url("http://u:secret@host")
            .unwrap_err()
            .to_string();
        assert!(e.contains("AI_MEMORY_AUTH_TOKEN"), "{e}");
        assert_eq!(redact_url("http://a:b@h/p@q"), "http://***@h/p@q");
    }

    #[test]
    fn sink_from_flag_trims_the_slash() {
        assert_eq!(
            SinkTarget::configured(Some(" http://127.0.0.1:9/ ")),
            SinkTarget::Http {
                url: "http://127.0.0.1:9".into()
            }
        );
        for bad in ["http://user:pw@host", "ftp://x", "http://", "host:1"] {
            assert_eq!(
                SinkTarget::configured(Some(bad)),
                SinkTarget::Store,
                "{bad}"
            );
        }
    }
}
