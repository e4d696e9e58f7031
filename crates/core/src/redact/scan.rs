//! Hand-written matchers for secrets with a fixed frame: private key
//! blocks (PEM, base64-encoded PEM, PuTTY), `Bearer` and `Basic`
//! credentials, URL credentials. They are plain scanners because their
//! keywords are common in tool output or their frame spans lines.

use super::{starts_with_ci, Splice, MARKER_PREFIX};

/// `-----BEGIN <LABEL> PRIVATE KEY-----` or `… PRIVATE KEY BLOCK-----` where
/// the label is `[ A-Z0-9]*`; returns the header's length at `s`.
fn key_armor(s: &[u8], word: &[u8]) -> Option<usize> {
    let rest = s.strip_prefix(b"-----")?.strip_prefix(word)?;
    let label = rest
        .iter()
        .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || **b == b' ')
        .count();
    let tail = &rest[label..];
    let label = &rest[..label];
    if !label.ends_with(b"PRIVATE KEY") && !label.ends_with(b"PRIVATE KEY BLOCK") {
        return None;
    }
    tail.starts_with(b"-----")
        .then_some(5 + word.len() + label.len() + 5)
}

pub(super) fn redact_private_keys(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut sp = Splice::default();
    let mut i = 0;
    while let Some(off) = find(&b[i..], b"-----BEGIN") {
        let start = i + off;
        let Some(h) = key_armor(&b[start..], b"BEGIN") else {
            i = start + 5;
            continue;
        };
        let mut end = b.len();
        let mut j = start + h;
        while let Some(off) = find(&b[j..], b"-----END") {
            if let Some(n) = key_armor(&b[j + off..], b"END") {
                end = j + off + n;
                break;
            }
            j += off + 5;
        }
        sp.redact(text, start, end, "private_key");
        i = end;
    }
    sp.finish(text)
}

/// Where a line break starts at `at` (a newline, CRLF, or the literal `\n`
/// or `\r\n` escape of a JSON string), the position after it.
fn line_break(b: &[u8], at: usize) -> Option<usize> {
    let rest = &b[at..];
    [&b"\r\n"[..], b"\n", b"\r", b"\\r\\n", b"\\n"]
        .iter()
        .find(|sep| rest.starts_with(sep))
        .map(|sep| at + sep.len())
}

fn is_base64_std(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=')
}

/// Most `Private-Lines:` a PuTTY key is followed through.
const MAX_PUTTY_LINES: usize = 1024;

/// A PuTTY private key file (`.ppk`, versions 1–3): from `Private-Lines: N`
/// through its (at most N) base64 lines and the `Private-MAC:` (or
/// version 1's `Private-Hash:`) line after them. The header, comment and
/// public lines before it are public and kept.
pub(super) fn redact_putty_keys(text: &str) -> Option<String> {
    const HEADER: &[u8] = b"Private-Lines:";
    let b = text.as_bytes();
    let blanks = |j: usize| {
        j + b[j..]
            .iter()
            .take_while(|c| matches!(c, b' ' | b'\t'))
            .count()
    };
    let mut sp = Splice::default();
    let mut i = 0;
    while let Some(off) = find(&b[i..], HEADER) {
        let start = i + off;
        let mut j = blanks(start + HEADER.len());
        let digits = b[j..].iter().take_while(|c| c.is_ascii_digit()).count();
        i = j;
        let Ok(n) = text[j..j + digits].parse::<usize>() else {
            continue;
        };
        j += digits;
        let mut end = j;
        let mut lines = 0;
        while lines < n.min(MAX_PUTTY_LINES) {
            let Some(next) = line_break(b, end) else {
                break;
            };
            let len = b[next..].iter().take_while(|c| is_base64_std(**c)).count();
            if len == 0 {
                break;
            }
            end = next + len;
            lines += 1;
        }
        if lines == 0 {
            continue;
        }
        if let Some(next) = line_break(b, end) {
            for tag in [&b"Private-MAC:"[..], b"Private-Hash:"] {
                if b[next..].starts_with(tag) {
                    let k = blanks(next + tag.len());
                    end = k + b[k..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
                }
            }
        }
        sp.redact(text, start, end, "private_key");
        i = end;
    }
    sp.finish(text)
}

/// `-----BEGIN ` in base64: the start of an encoded PEM block.
const BASE64_BEGIN: &[u8] = b"LS0tLS1CRUdJTi";

/// Base64 characters decoded to check an encoded block's header: enough
/// for `-----BEGIN <label> PRIVATE KEY-----` (72 bytes).
const BASE64_HEADER_CHARS: usize = 96;

/// Shortest first line of an encoded block that may be wrapped: `base64`
/// wraps at 76 columns, `openssl base64` at 64. The lines that follow, as
/// long as the first, and one shorter last line, are the block's.
const MIN_WRAPPED_LINE: usize = 60;

/// A PEM private key encoded in base64 (a Kubernetes secret's `tls.key`,
/// `base64 key.pem`): a base64 run starting `LS0tLS1CRUdJTi` that decodes
/// to a private key header (see [`key_armor`]), with the lines that
/// continue it when it is wrapped. Encoded certificates and public keys
/// are kept.
pub(super) fn redact_base64_private_keys(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let run = |from: usize| b[from..].iter().take_while(|c| is_base64_std(**c)).count();
    let mut sp = Splice::default();
    let mut i = 0;
    while let Some(off) = find(&b[i..], BASE64_BEGIN) {
        let start = i + off;
        i = start + BASE64_BEGIN.len();
        if start > 0 && is_base64_std(b[start - 1]) {
            continue; // inside another base64 run
        }
        let mut end = start + run(start);
        let head = (end - start).min(BASE64_HEADER_CHARS) / 4 * 4;
        let header = base64_decode(&b[start..start + head]);
        if header.is_none_or(|h| key_armor(&h, b"BEGIN").is_none()) {
            continue;
        }
        // Wrapped: the lines after a full one (as long as the first), up
        // to the first shorter one.
        let width = end - start;
        let mut line = width;
        while width >= MIN_WRAPPED_LINE && line == width && b[end - 1] != b'=' {
            let Some(next) = line_break(b, end) else {
                break;
            };
            let from = next + b[next..].iter().take_while(|c| **c == b' ').count();
            line = run(from);
            let line_ends = from + line == b.len() || line_break(b, from + line).is_some();
            if line == 0 || line > width || !line_ends {
                break;
            }
            end = from + line;
        }
        sp.redact(text, start, end, "private_key");
        i = end;
    }
    sp.finish(text)
}

/// Shortest bearer token redacted.
pub(super) const MIN_BEARER_TOKEN: usize = 16;

fn is_bearer_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"._~+/=-".contains(&b)
}

/// After each occurrence of `word` (ASCII case-insensitive), the blanks and
/// then the run of bytes `token` accepts: (word end, token start, token end).
fn word_then_token(
    b: &[u8],
    from: usize,
    word: &[u8],
    token: fn(u8) -> bool,
) -> Option<(usize, usize, usize)> {
    let word_end = from + find_ci(&b[from..], word)? + word.len();
    let start = word_end
        + b[word_end..]
            .iter()
            .take_while(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c))
            .count();
    let end = start + b[start..].iter().take_while(|c| token(**c)).count();
    Some((word_end, start, end))
}

pub(super) fn redact_bearer(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut sp = Splice::default();
    let mut i = 0;
    while let Some((word_end, start, end)) = word_then_token(b, i, b"bearer", is_bearer_byte) {
        i = word_end;
        if start == word_end || end - start < MIN_BEARER_TOKEN {
            continue;
        }
        sp.redact(text, start, end, "bearer");
        i = end;
    }
    sp.finish(text)
}

/// Shortest `Basic` credential redacted (base64 of 6 bytes or more).
const MIN_BASIC_CREDENTIAL: usize = 8;

fn is_base64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"+/=-_".contains(&b)
}

/// `Basic <base64>` anywhere (the word not glued to a letter before it)
/// when the base64 decodes to `user:password`, as HTTP Basic
/// authentication sends it. `Basic realm=…` and prose ("basic knowledge")
/// do not decode that way and are kept.
pub(super) fn redact_basic(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut sp = Splice::default();
    let mut i = 0;
    while let Some((word_end, start, end)) = word_then_token(b, i, b"basic", is_base64_byte) {
        i = word_end;
        let glued = word_end > 5 && b[word_end - 6].is_ascii_alphanumeric();
        if glued
            || start == word_end
            || end - start < MIN_BASIC_CREDENTIAL
            || !base64_decode(&b[start..end]).is_some_and(|d| is_user_password(&d))
        {
            continue;
        }
        sp.redact(text, start, end, "authorization");
        i = end;
    }
    sp.finish(text)
}

/// `user:password` with a non-empty password.
fn is_user_password(d: &[u8]) -> bool {
    d.iter()
        .position(|c| *c == b':')
        .is_some_and(|p| p + 1 < d.len())
}

/// Standard or URL-safe base64, padded or not; `None` when it is not.
pub(super) fn base64_decode(s: &[u8]) -> Option<Vec<u8>> {
    let s = s
        .strip_suffix(b"==")
        .or_else(|| s.strip_suffix(b"="))
        .unwrap_or(s);
    if s.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in s {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Longest `user:password` looked at after a `scheme://`.
const MAX_USERINFO_BYTES: usize = 256;

/// After each `scheme://`, a `user:password@` part is replaced (user and
/// password together). The password may hold `/` and `@`: the part ends at
/// the first `@` that a host follows.
pub(super) fn redact_url_credentials(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut sp = Splice::default();
    let mut i = 0;
    while let Some(off) = find(&b[i..], b"://") {
        let start = i + off + 3;
        i = start;
        // A scheme ends with an ASCII letter or digit right before `://`.
        if start < 4 || !b[start - 4].is_ascii_alphanumeric() {
            continue;
        }
        if b[start..].starts_with(MARKER_PREFIX.as_bytes()) {
            continue;
        }
        let Some(len) = userinfo_len(&b[start..]) else {
            continue;
        };
        sp.redact(text, start, start + len, "url_credentials");
        i = start + len;
    }
    sp.finish(text)
}

/// In `rest` (what follows `scheme://`), the length of a `user:password`
/// part ending right before an `@` that a host follows. The user may be
/// empty (`redis://:pw@host`), the password may not; `host:port/…@…` is
/// not credentials.
fn userinfo_len(rest: &[u8]) -> Option<usize> {
    let limit = rest.len().min(MAX_USERINFO_BYTES);
    let url_end = rest[..limit]
        .iter()
        .position(|&c| c <= b' ' || c == 0x7f || b"\"'<>`\\".contains(&c))
        .unwrap_or(limit);
    let url = &rest[..url_end];
    let colon = url
        .iter()
        .position(|&c| matches!(c, b':' | b'/' | b'?' | b'#' | b'@'))?;
    if url[colon] != b':' {
        return None;
    }
    let mut at = colon + 1;
    while let Some(off) = url[at..].iter().position(|&c| c == b'@') {
        let p = at + off;
        if p == colon + 1 {
            return None; // empty password
        }
        if host_follows(&url[p + 1..]) {
            let pass = &url[colon + 1..p];
            let digits = pass.iter().take_while(|c| c.is_ascii_digit()).count();
            // `host:8080/path@x` is a port and a path, not a password; a
            // password a more precise rule redacted keeps its marker.
            if digits > 0 && pass.get(digits) == Some(&b'/')
                || pass.starts_with(MARKER_PREFIX.as_bytes())
            {
                return None;
            }
            return Some(p);
        }
        at = p + 1;
    }
    None
}

/// Does `s` start with a host (name or `[v6]`, optional `:port`) that ends
/// the authority? `ss@host` and `ss:word@host` do not.
fn host_follows(s: &[u8]) -> bool {
    let host = if s.first() == Some(&b'[') {
        s.iter().position(|&c| c == b']').map_or(0, |p| p + 1)
    } else {
        s.iter()
            .take_while(|&&c| c.is_ascii_alphanumeric() || b".-_~%".contains(&c))
            .count()
    };
    if host == 0 {
        return false;
    }
    let mut rest = &s[host..];
    if let Some(port) = rest.strip_prefix(b":") {
        let n = port.iter().take_while(|c| c.is_ascii_digit()).count();
        rest = &port[n..];
    }
    !rest
        .first()
        .is_some_and(|&c| c == b'@' || c == b':' || c.is_ascii_alphanumeric())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// [`find`] for a lowercase ASCII `needle`, ASCII case-insensitive: a
/// cheap first-byte test, then the comparison.
fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let first = needle[0];
    let last = hay.len().checked_sub(needle.len())?;
    (0..=last).find(|&i| (hay[i] | 0x20) == first && starts_with_ci(&hay[i..], needle))
}
