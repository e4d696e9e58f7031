//! Named tokens for a team server: `memhook token add NAME` / `list` /
//! `revoke NAME`, and the check `memhook serve` makes with them.
//!
//! A token is [`TOKEN_BYTES`] random bytes shown once as hex; the store keeps
//! only its SHA-256 (lowercase hex), never the token. The server's own
//! token (`AI_MEMORY_AUTH_TOKEN` or `<data dir>/auth-token`) is called
//! [`OWNER`] and is not stored here. Every store (SQLite, PostgreSQL)
//! implements the four methods of [`TokenStore`]; everything else —
//! names, randomness, hashing, the constant-time check — is here, once.

use crate::hex::encode as hex;
use std::fmt;
use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use sha2::{Digest, Sha256};

use crate::cmd::CmdResult;
use crate::sink::store::Store;

/// Random bytes in a generated token (shown as twice as many hex digits).
pub const TOKEN_BYTES: usize = 32;
/// Longest token name.
pub const MAX_TOKEN_NAME_LEN: usize = 64;
/// Most tokens (revoked ones included) a store holds: each request with a
/// named token compares against every live one.
pub const MAX_TOKENS: usize = 1_000;
/// The name records delivered with the server's own token carry (reserved:
/// `token add owner` is refused).
pub const OWNER: &str = "owner";

/// One named token as listed (never the token or its hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInfo {
    pub name: String,
    /// RFC 3339 UTC.
    pub created: String,
    /// RFC 3339 UTC, when revoked.
    pub revoked: Option<String>,
}

/// What a store does for named tokens. Table `tokens(name TEXT PRIMARY KEY,
/// hash TEXT NOT NULL, created TEXT NOT NULL, revoked TEXT)`; `hash` is
/// [`hash`] of the token.
pub trait TokenStore {
    type Error: fmt::Display;
    /// Add a token; `Ok(false)` when the name is taken (revoked or not).
    fn add_token(&mut self, name: &str, hash: &str, created: &str) -> Result<bool, Self::Error>;
    /// Every token, by name.
    fn list_tokens(&self) -> Result<Vec<TokenInfo>, Self::Error>;
    /// Mark `name` revoked at `at` (a revoked token stays revoked, its first
    /// time kept). `Ok(None)` when there is no such token.
    fn revoke_token(&mut self, name: &str, at: &str) -> Result<Option<TokenInfo>, Self::Error>;
    /// `(name, hash)` of every token not revoked: read on each request that
    /// needs it, never cached, so a revocation holds at once.
    fn active_tokens(&self) -> Result<Vec<(String, String)>, Self::Error>;
}

/// The stored form of a token: SHA-256 of its bytes, lowercase hex.
pub fn hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// A fresh token: [`TOKEN_BYTES`] from the OS as lowercase hex.
pub fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    crate::entropy::fill(&mut bytes)?;
    Ok(hex(&bytes))
}

/// Constant-time equality of two byte strings (the time depends on the
/// lengths only).
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The name of the live token `presented` is, comparing its hash with every
/// live token's in constant time (no early exit).
pub fn verify<S: TokenStore + ?Sized>(
    store: &S,
    presented: &str,
) -> Result<Option<String>, S::Error> {
    let given = hash(presented);
    let mut found = None;
    for (name, stored) in store.active_tokens()? {
        if ct_eq(given.as_bytes(), stored.as_bytes()) && found.is_none() {
            found = Some(name);
        }
    }
    Ok(found)
}

/// Whether `name` may name a token: 1–[`MAX_TOKEN_NAME_LEN`] of
/// `a-z 0-9 . _ -`, starting with a letter or digit, and not [`OWNER`].
pub fn check_name(name: &str) -> Result<(), String> {
    let ok_first = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let ok_rest = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'));
    if name.len() > MAX_TOKEN_NAME_LEN {
        return Err(format!(
            "token name {:?} is longer than {MAX_TOKEN_NAME_LEN} characters",
            crate::term::line(name)
        ));
    }
    if !ok_first || !ok_rest {
        return Err(format!(
            "token name {:?} is not valid: use lowercase letters, digits, '.', '_' or '-', \
             starting with a letter or digit (e.g. alice or ci-runner)",
            crate::term::line(name)
        ));
    }
    if name == OWNER {
        return Err(format!(
            "token name {OWNER:?} is reserved for the server's own token \
             (AI_MEMORY_AUTH_TOKEN or <data dir>/auth-token); pick another name"
        ));
    }
    Ok(())
}

#[derive(Debug, Args)]
pub struct TokenArgs {
    #[command(subcommand)]
    pub action: TokenAction,
    /// The team server's PostgreSQL store (default: the data dir's SQLite
    /// file, or MEMHOOK_DATABASE_URL when set).
    #[command(flatten)]
    pub db: crate::sink::pg::config::DatabaseArgs,
}

#[derive(Debug, Subcommand)]
pub enum TokenAction {
    /// Create a token for NAME and print it once on stdout (only its hash
    /// is kept).
    Add {
        /// Who or what uses it: lowercase letters, digits, '.', '_', '-'.
        name: String,
    },
    /// List tokens: name, created, revoked (never a token).
    List {
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Revoke NAME's token: the server refuses it from the next request on.
    Revoke { name: String },
}

/// `memhook token …` on the server's store: the SQLite store of the data
/// dir (run it where `memhook serve` runs, with the same `--data-dir`), or
/// the PostgreSQL database `--database` / `MEMHOOK_DATABASE_URL` names (from
/// any machine that reaches it; the password as for `serve`, never in argv).
/// A store that cannot be reached is exit 1.
pub fn run(args: &TokenArgs, data_dir: Option<&Path>) -> CmdResult {
    let dir = crate::data_dir::resolve(data_dir)?;
    if let TokenAction::Add { name } = &args.action {
        check_name(name)?;
    }
    match args.db.target()? {
        None => {
            let mut store = Store::open(&dir)?;
            run_on(&mut store, &args.action)
        }
        Some(target) => {
            let mut pg = crate::sink::pg::PgStore::new(target, &dir);
            run_on(&mut pg, &args.action)
        }
    }
}

/// One token action on `store`.
fn run_on<S: TokenStore>(store: &mut S, action: &TokenAction) -> CmdResult {
    let failed = |e: &dyn fmt::Display| {
        eprintln!("memhook: token: {e}");
        Ok(ExitCode::from(1))
    };
    match action {
        TokenAction::Add { name } => {
            let out = match add(store, name) {
                Ok(out) => out,
                Err(e) => return failed(&e),
            };
            match out {
                Added::Token(token) => {
                    println!("{token}");
                    eprintln!(
                        "memhook: token {name:?} added; it is shown only this once — give it \
                         to its user for AI_MEMORY_AUTH_TOKEN (`memhook token revoke {name}` \
                         ends it)"
                    );
                    Ok(ExitCode::SUCCESS)
                }
                Added::Taken => Err(format!(
                    "a token named {name:?} exists (or existed: names are not reused, so \
                     records keep meaning one token); pick another name"
                )
                .into()),
                Added::Full => Err(format!(
                    "this store holds {MAX_TOKENS} tokens, the most it keeps; nothing added"
                )
                .into()),
            }
        }
        TokenAction::List { json } => {
            let tokens = match store.list_tokens() {
                Ok(t) => t,
                Err(e) => return failed(&e),
            };
            for t in tokens {
                if *json {
                    println!(
                        "{}",
                        serde_json::json!({"name": t.name, "created": t.created,
                            "revoked": t.revoked})
                    );
                } else {
                    println!(
                        "{}\tcreated {}\t{}",
                        crate::term::line(&t.name),
                        crate::term::line(&t.created),
                        t.revoked
                            .as_deref()
                            .map_or("active".to_string(), |r| format!(
                                "revoked {}",
                                crate::term::line(r)
                            ))
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        TokenAction::Revoke { name } => {
            let at = crate::timefmt::rfc3339_ms(crate::timefmt::now_ms());
            match store.revoke_token(name, &at) {
                Ok(Some(t)) => {
                    let when = t.revoked.unwrap_or(at);
                    println!("revoked {} ({when})", crate::term::line(name));
                    Ok(ExitCode::SUCCESS)
                }
                Ok(None) => Err(format!(
                    "no token named {:?} (`memhook token list` shows them)",
                    crate::term::line(name)
                )
                .into()),
                Err(e) => failed(&e),
            }
        }
    }
}

/// What [`add`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Added {
    /// The new token (to show once).
    Token(String),
    /// The name is taken.
    Taken,
    /// [`MAX_TOKENS`] are stored already.
    Full,
}

/// Add a token named `name` (already checked) to `store`.
pub fn add<S: TokenStore + ?Sized>(store: &mut S, name: &str) -> Result<Added, String>
where
    S::Error: fmt::Display,
{
    let known = store.list_tokens().map_err(|e| e.to_string())?;
    if known.iter().any(|t| t.name == name) {
        return Ok(Added::Taken);
    }
    if known.len() >= MAX_TOKENS {
        return Ok(Added::Full);
    }
    let token = random_token().map_err(|e| format!("no randomness for a token: {e}"))?;
    let created = crate::timefmt::rfc3339_ms(crate::timefmt::now_ms());
    if store
        .add_token(name, &hash(&token), &created)
        .map_err(|e| e.to_string())?
    {
        Ok(Added::Token(token))
    } else {
        Ok(Added::Taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_at_their_edges() {
        for ok in ["a", "0", "alice", "ci-runner.2", "a_b"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        assert!(check_name(&"a".repeat(MAX_TOKEN_NAME_LEN)).is_ok());
        let e = check_name(&"a".repeat(MAX_TOKEN_NAME_LEN + 1)).unwrap_err();
        assert!(e.contains("longer"), "{e}");
        for bad in ["", "A", "-a", "a b", "a/b", "é", "a\u{1b}[2J", "a\n"] {
            let e = check_name(bad).unwrap_err();
            assert!(!e.contains('\u{1b}') && !e.contains('\n'), "{e:?}");
        }
        assert!(check_name(OWNER).unwrap_err().contains("reserved"));
    }

    #[test]
    fn tokens_are_random_hex_and_hashes_are_sha256_hex() {
        let a = random_token().unwrap();
        let b = random_token().unwrap();
        assert_eq!(a.len(), TOKEN_BYTES * 2);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert_eq!(
            hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn equality_is_whole() {
        assert!(ct_eq(b"abc", b"abc"));
        assert!(!ct_eq(b"abc", b"abd"));
        assert!(!ct_eq(b"abc", b"ab"));
        assert!(ct_eq(b"", b""));
    }

    #[test]
    fn the_store_keeps_hashes_and_revocation_holds() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let Added::Token(alice) = add(&mut s, "alice").unwrap() else {
            panic!("added")
        };
        let Added::Token(bob) = add(&mut s, "bob").unwrap() else {
            panic!("added")
        };
        assert_eq!(add(&mut s, "alice").unwrap(), Added::Taken);
        assert_eq!(verify(&s, &alice).unwrap().as_deref(), Some("alice"));
        assert_eq!(verify(&s, &bob).unwrap().as_deref(), Some("bob"));
        assert_eq!(verify(&s, "nope").unwrap(), None);
        // Only the hash is stored.
        let raw = std::fs::read(s.path()).unwrap();
        assert!(!raw.windows(alice.len()).any(|w| w == alice.as_bytes()));
        let first = s.revoke_token("alice", "2026-01-01T00:00:00.000Z").unwrap();
        assert_eq!(
            first.unwrap().revoked.as_deref(),
            Some("2026-01-01T00:00:00.000Z")
        );
        // Revoking again keeps the first time; an unknown name is None.
        let again = s.revoke_token("alice", "2027-01-01T00:00:00.000Z").unwrap();
        assert_eq!(
            again.unwrap().revoked.as_deref(),
            Some("2026-01-01T00:00:00.000Z")
        );
        assert_eq!(s.revoke_token("carol", "x").unwrap(), None);
        assert_eq!(verify(&s, &alice).unwrap(), None);
        assert_eq!(verify(&s, &bob).unwrap().as_deref(), Some("bob"));
        // A revoked name is not reused.
        assert_eq!(add(&mut s, "alice").unwrap(), Added::Taken);
        let names: Vec<_> = s
            .list_tokens()
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, ["alice", "bob"]);
    }

    #[test]
    fn the_token_count_is_bounded_at_its_edge() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        for i in 0..MAX_TOKENS - 1 {
            assert!(s
                .add_token(&format!("t{i}"), &hash(&i.to_string()), "x")
                .unwrap());
        }
        assert!(matches!(add(&mut s, "last").unwrap(), Added::Token(_)));
        assert_eq!(add(&mut s, "over").unwrap(), Added::Full);
    }
}
