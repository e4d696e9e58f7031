//! Named tokens for a team server: what `memhook token add NAME` / `list` /
//! `revoke NAME` do to a store, and the check `memhook serve` makes with them.
//!
//! A token is [`TOKEN_BYTES`] random bytes shown once as hex; the store keeps
//! only its SHA-256 (lowercase hex), never the token. The server's own
//! token (`AI_MEMORY_AUTH_TOKEN` or `<data dir>/auth-token`) is called
//! [`OWNER`] and is not stored here. Every store (SQLite, PostgreSQL)
//! implements the four methods of [`TokenStore`]; everything else —
//! names, randomness, hashing, the constant-time check — is here, once.

use memhook_core::hex::encode as hex;
use std::fmt;

use sha2::{Digest, Sha256};

pub use crate::model::{TokenInfo, TokenStore};

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

/// The stored form of a token: SHA-256 of its bytes, lowercase hex.
pub fn hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// A fresh token: [`TOKEN_BYTES`] from the OS as lowercase hex.
pub fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    memhook_core::entropy::fill(&mut bytes)?;
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
            memhook_core::term::line(name)
        ));
    }
    if !ok_first || !ok_rest {
        return Err(format!(
            "token name {:?} is not valid: use lowercase letters, digits, '.', '_' or '-', \
             starting with a letter or digit (e.g. alice or ci-runner)",
            memhook_core::term::line(name)
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
    let created = memhook_core::timefmt::rfc3339_ms(memhook_core::timefmt::now_ms());
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
    use crate::sqlite::Store;

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
