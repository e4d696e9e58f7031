//! Document content hygiene and versions.
//!
//! Text written to memory is read back by a model, so characters a human
//! reviewer cannot see (zero-width, bidi controls, Unicode tag characters)
//! are stripped, other control characters become U+FFFD, and line endings
//! become `\n`. A version is a hash of the stored bytes.

use sha2::{Digest, Sha256};

/// Largest document, in bytes (after normalisation).
pub const MAX_DOC_BYTES: usize = 100 * 1024;
/// Hex digits of SHA-256 kept as a document version.
pub const VERSION_HEX_DIGITS: usize = 16;

/// Characters that render as nothing or reorder text: soft hyphen, Arabic
/// letter mark, Mongolian vowel separator, zero-width space/joiners and
/// directional marks, bidi embeddings/overrides/isolates, word joiner and
/// invisible operators, BOM, and the Unicode tag block (used to smuggle
/// invisible ASCII into prompts).
pub fn is_invisible(c: char) -> bool {
    matches!(c as u32,
        0x00AD
        | 0x061C
        | 0x180E
        | 0x200B..=0x200F
        | 0x202A..=0x202E
        | 0x2060..=0x206F
        | 0xFEFF
        | 0xE0000..=0xE007F)
}

/// Normalise document text: CRLF and lone CR become LF, invisible characters
/// are removed, and control characters other than `\n` and `\t` become
/// U+FFFD.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push('\n');
            }
            '\n' | '\t' => out.push(c),
            c if is_invisible(c) => {}
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// The version token of stored bytes: the first 16 hex digits of SHA-256.
pub fn version_of(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    memhook_core::hex::encode(&digest[..VERSION_HEX_DIGITS / 2])
}

/// The largest index `<= i` that is a char boundary of `s`.
pub fn floor_char_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    let mut i = i;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_endings_become_lf() {
        assert_eq!(normalize("a\r\nb\rc\nd"), "a\nb\nc\nd");
        assert_eq!(normalize("\r\r\n"), "\n\n");
    }

    #[test]
    fn invisible_characters_are_stripped() {
        let sneaky = "ig\u{200B}nore \u{202E}txt.exe\u{202C} \u{FEFF}x\u{2066}y\u{2069}\u{00AD}z\u{E0041}\u{E0042}";
        assert_eq!(normalize(sneaky), "ignore txt.exe xyz");
        for c in [
            0x061Cu32, 0x180E, 0x200C, 0x200D, 0x200E, 0x200F, 0x2060, 0x206F, 0xE007F,
        ] {
            let c = char::from_u32(c).unwrap();
            assert!(is_invisible(c), "U+{:04X}", c as u32);
            assert_eq!(normalize(&format!("a{c}b")), "ab");
        }
        // Neighbours of the ranges are ordinary text.
        for c in ['\u{200A}', '\u{2010}', '\u{2070}', 'é', '中', '😀'] {
            assert!(!is_invisible(c));
        }
    }

    #[test]
    fn other_controls_become_replacement_character() {
        assert_eq!(
            normalize("a\0b\x1b[31mc\x7fd\u{85}e\tf"),
            "a\u{FFFD}b\u{FFFD}[31mc\u{FFFD}d\u{FFFD}e\tf"
        );
    }

    #[test]
    fn versions_are_stable_short_hex() {
        let v = version_of(b"hello\n");
        assert_eq!(v.len(), VERSION_HEX_DIGITS);
        assert!(v.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(v, version_of(b"hello\n"));
        assert_ne!(v, version_of(b"hello"));
        // SHA-256("abc") starts with ba7816bf8f01cfea.
        assert_eq!(version_of(b"abc"), "ba7816bf8f01cfea");
    }

    #[test]
    fn floor_boundary_never_splits() {
        let s = "aé€😀";
        for i in 0..=s.len() + 2 {
            let j = floor_char_boundary(s, i);
            assert!(s.is_char_boundary(j) && j <= i.max(s.len()));
        }
        assert_eq!(floor_char_boundary(s, 2), 1);
    }
}
