//! The server proves it is the owner's before `memhook ui` sends it a
//! credential (issue 23, item 4).
//!
//! Anything can answer `/healthz` on a loopback port: another local user
//! who bound it first would get the owner's bearer token with the first
//! `POST /api/login-code`. So `memhook ui` first sends a fresh random
//! challenge, `GET /healthz?challenge=<64 hex>`, and the server answers
//! with `proof` = HMAC-SHA256(key = the server's token, message =
//! [`DOMAIN`] `\n` listen address `\n` challenge), in hex. `ui` computes
//! the same from the token it reads (`AI_MEMORY_AUTH_TOKEN` or
//! `<data dir>/auth-token`) and the address it dialled, and sends nothing
//! else unless they are equal.
//!
//! - The token never travels: a squatter learns a MAC of a random
//!   challenge, which is of no use for any other challenge.
//! - The listen address is in the message, so a squatter cannot relay the
//!   challenge to the real server on another port (or address) and pass
//!   its answer on: that proof names the other address.
//! - HMAC over SHA-256 (RFC 2104) is written out here on top of the `sha2`
//!   the crate already uses, rather than adding a crate for 20 lines.

use std::net::SocketAddr;

use sha2::{Digest, Sha256};

/// What the MAC is for, so it can never be confused with another use of
/// the token.
pub const DOMAIN: &str = "memhook-serve-proof-v1";
/// The query parameter of `/healthz` that carries the challenge.
pub const CHALLENGE_PARAM: &str = "challenge";
/// Length of a challenge: 32 random bytes in lowercase hex.
pub const CHALLENGE_HEX_LEN: usize = 64;

const BLOCK: usize = 64;

/// HMAC-SHA256 (RFC 2104).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut ipad = [0x36u8; BLOCK];
    let mut opad = [0x5cu8; BLOCK];
    for i in 0..BLOCK {
        ipad[i] ^= k[i];
        opad[i] ^= k[i];
    }
    let inner = Sha256::new()
        .chain_update(ipad)
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(opad)
        .chain_update(inner)
        .finalize()
        .into()
}

/// Whether `challenge` has the shape `ui` sends (nothing else is MACed).
pub fn valid_challenge(challenge: &str) -> bool {
    challenge.len() == CHALLENGE_HEX_LEN
        && challenge
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The proof for `challenge` by the server on `listen` holding `token`, in
/// lowercase hex.
pub fn proof(token: &str, listen: SocketAddr, challenge: &str) -> String {
    let message = format!("{DOMAIN}\n{listen}\n{challenge}");
    memhook_core::hex::encode(&hmac_sha256(token.as_bytes(), message.as_bytes()))
}

/// Whether `answer` is the proof for `challenge` by the server on `listen`
/// holding `token` (compared in constant time).
pub fn verify(token: &str, listen: SocketAddr, challenge: &str, answer: &str) -> bool {
    let want = proof(token, listen, challenge);
    crate::web::same(want.as_bytes(), answer.as_bytes())
}

/// A fresh challenge.
pub fn challenge() -> String {
    crate::web::secret()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        memhook_core::hex::encode(b)
    }

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 1.
        assert_eq!(
            hex(&hmac_sha256(&[0x0b; 20], b"Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        // Test case 2.
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block is hashed first.
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn a_proof_is_bound_to_token_address_and_challenge() {
        let a: SocketAddr = "127.0.0.1:49374".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:49375".parse().unwrap();
        let c = challenge();
        assert!(valid_challenge(&c));
        let p = proof("tok", a, &c);
        assert!(verify("tok", a, &c, &p));
        assert!(!verify("other", a, &c, &p), "another token");
        assert!(!verify("tok", b, &c, &p), "relayed from another port");
        assert!(!verify("tok", a, &challenge(), &p), "another challenge");
        assert!(!verify("tok", a, &c, ""));
        for bad in ["", "ABC", &"g".repeat(64), &"a".repeat(63), &"a".repeat(65)] {
            assert!(!valid_challenge(bad), "{bad}");
        }
    }
}
