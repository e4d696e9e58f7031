//! The sink interface: the drainer hands each sink a batch of spool entries
//! and gets one outcome per entry back. The sinks themselves (the embedded
//! store, an ai-memory server over HTTP) are in `memhook-sinks`, so that the
//! per-event binary carries neither SQLite nor TLS.

use std::path::Path;

use crate::spool::SpoolEntry;

/// Environment variable holding the bearer token for an ai-memory server
/// (and the token `memhook serve` checks).
pub const AUTH_TOKEN_ENV: &str = "AI_MEMORY_AUTH_TOKEN";
/// The 0600 token file in the data dir, used when the variable is unset.
pub const AUTH_TOKEN_FILE: &str = "auth-token";
/// Largest token file read.
pub const MAX_AUTH_TOKEN_BYTES: u64 = 4096;

/// The live bearer token: `AI_MEMORY_AUTH_TOKEN` when non-blank, else the
/// trimmed content of `<data_dir>/auth-token` (a regular file, not a
/// symlink, at most [`MAX_AUTH_TOKEN_BYTES`]). `None` when neither holds a
/// token, or when the token holds characters an HTTP header cannot carry
/// (anything but visible ASCII). The token itself is never logged.
pub fn auth_token(data_dir: &Path) -> Option<String> {
    token_from(std::env::var_os(AUTH_TOKEN_ENV).as_deref(), data_dir)
}

/// [`auth_token`] with the variable's value passed in (testable).
fn token_from(env: Option<&std::ffi::OsStr>, data_dir: &Path) -> Option<String> {
    if let Some(v) = env {
        let v = v.to_string_lossy();
        let t = v.trim();
        if !t.is_empty() {
            return usable_token(t);
        }
    }
    let path = data_dir.join(AUTH_TOKEN_FILE);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_AUTH_TOKEN_BYTES {
        return None;
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let t = text.trim();
    if t.is_empty() {
        None
    } else {
        usable_token(t)
    }
}

/// `t` as a token, when every byte is visible ASCII (what a header can carry).
pub fn usable_token(t: &str) -> Option<String> {
    t.bytes()
        .all(|b| b.is_ascii_graphic())
        .then(|| t.to_string())
}

/// What happened to one entry handed to a sink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemOutcome {
    /// Stored (or already stored: a replay of the same key is a no-op).
    Delivered,
    /// Not delivered now; try again later. `charge` = count it as a failed
    /// attempt (a 429 is free). `reason` is for `status` (no secrets).
    Retry { charge: bool, reason: String },
    /// Never deliverable (e.g. 403): delete and count under `reason`.
    Drop { reason: String },
}

/// A delivery target.
pub trait Sink {
    /// Deliver `entries` (oldest first, same sink). Returns exactly one
    /// outcome per entry, in order.
    fn deliver(&mut self, entries: &[SpoolEntry]) -> Vec<ItemOutcome>;

    /// Whether the endpoint failed at transport level (refused, timed out,
    /// unresolvable) during this sink's life: the drainer skips it for the
    /// rest of the pass. The embedded store is never unreachable.
    fn unreachable(&self) -> bool {
        false
    }

    /// Housekeeping of the destination, one bounded slice of it, when the
    /// background drainer is idle (the spool empty): the embedded store
    /// applies retention (`memhook_store::sqlite::retention`). Never called
    /// on the hook's path. Returns whether there may be more to do.
    fn maintain(&mut self) -> bool {
        false
    }

    /// The background drainer goes off duty: what the destination keeps
    /// ready for the next session (the embedded store composes again the
    /// briefings its deliveries made stale, `memhook_core::briefing_cache`).
    /// Never called on the hook's path.
    fn settle(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn token_prefers_the_variable_then_the_file() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(token_from(None, t.path()), None);
        std::fs::write(t.path().join(AUTH_TOKEN_FILE), "  file-tok\n").unwrap();
        assert_eq!(token_from(None, t.path()).as_deref(), Some("file-tok"));
        assert_eq!(
            token_from(Some(OsStr::new(" env-tok ")), t.path()).as_deref(),
            Some("env-tok")
        );
        // A blank variable counts as unset.
        assert_eq!(
            token_from(Some(OsStr::new("  ")), t.path()).as_deref(),
            Some("file-tok")
        );
        // Header-breaking characters are refused, never sent.
        assert_eq!(token_from(Some(OsStr::new("a\r\nX: y")), t.path()), None);
    }

    #[cfg(unix)]
    #[test]
    fn token_file_must_be_a_small_regular_file() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        std::fs::write(&real, "tok").unwrap();
        std::os::unix::fs::symlink(&real, t.path().join(AUTH_TOKEN_FILE)).unwrap();
        assert_eq!(token_from(None, t.path()), None);
        std::fs::remove_file(t.path().join(AUTH_TOKEN_FILE)).unwrap();
        let big = "a".repeat(MAX_AUTH_TOKEN_BYTES as usize + 1);
        std::fs::write(t.path().join(AUTH_TOKEN_FILE), big).unwrap();
        assert_eq!(token_from(None, t.path()), None);
    }
}
