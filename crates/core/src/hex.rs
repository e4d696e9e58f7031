//! Lowercase hexadecimal, for keys, digests, tokens and file names.
//!
//! One table lookup per nibble into a string sized once: the hook formats
//! about 60 bytes this way per call, and `format!("{b:02x}")` per byte cost
//! an allocation and the formatting machinery each time.

/// `bytes` as lowercase hex, two digits per byte.
pub fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_as_format_writes_it() {
        let all: Vec<u8> = (0..=255).collect();
        let expected: String = all.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(encode(&all), expected);
        assert_eq!(encode(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
        assert_eq!(encode(&[]), "");
    }
}
