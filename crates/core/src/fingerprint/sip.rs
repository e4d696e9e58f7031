//! SipHash-2-4 (Aumasson and Bernstein, 2012) with a 128-bit secret key: the
//! keyed hash behind every fingerprint. Without the key a fingerprint tells
//! nothing about its line, not even whether a guessed line is in the set.

/// A 128-bit SipHash key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SipKey {
    k0: u64,
    k1: u64,
}

impl std::fmt::Debug for SipKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SipKey(..)")
    }
}

impl SipKey {
    pub fn from_bytes(b: &[u8; 16]) -> SipKey {
        let mut lo = [0u8; 8];
        let mut hi = [0u8; 8];
        lo.copy_from_slice(&b[..8]);
        hi.copy_from_slice(&b[8..]);
        SipKey {
            k0: u64::from_le_bytes(lo),
            k1: u64::from_le_bytes(hi),
        }
    }

    /// SipHash-2-4 of `data` under this key.
    pub fn hash(&self, data: &[u8]) -> u64 {
        let mut v0 = self.k0 ^ 0x736f_6d65_7073_6575;
        let mut v1 = self.k1 ^ 0x646f_7261_6e64_6f6d;
        let mut v2 = self.k0 ^ 0x6c79_6765_6e65_7261;
        let mut v3 = self.k1 ^ 0x7465_6462_7974_6573;
        let mut chunks = data.chunks_exact(8);
        for c in &mut chunks {
            let m = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            v3 ^= m;
            round(&mut v0, &mut v1, &mut v2, &mut v3);
            round(&mut v0, &mut v1, &mut v2, &mut v3);
            v0 ^= m;
        }
        let rest = chunks.remainder();
        let mut last = (data.len() as u64 & 0xff) << 56;
        for (i, b) in rest.iter().enumerate() {
            last |= u64::from(*b) << (8 * i);
        }
        v3 ^= last;
        round(&mut v0, &mut v1, &mut v2, &mut v3);
        round(&mut v0, &mut v1, &mut v2, &mut v3);
        v0 ^= last;
        v2 ^= 0xff;
        for _ in 0..4 {
            round(&mut v0, &mut v1, &mut v2, &mut v3);
        }
        v0 ^ v1 ^ v2 ^ v3
    }
}

#[inline(always)]
fn round(v0: &mut u64, v1: &mut u64, v2: &mut u64, v3: &mut u64) {
    *v0 = v0.wrapping_add(*v1);
    *v1 = v1.rotate_left(13);
    *v1 ^= *v0;
    *v0 = v0.rotate_left(32);
    *v2 = v2.wrapping_add(*v3);
    *v3 = v3.rotate_left(16);
    *v3 ^= *v2;
    *v0 = v0.wrapping_add(*v3);
    *v3 = v3.rotate_left(21);
    *v3 ^= *v0;
    *v2 = v2.wrapping_add(*v1);
    *v1 = v1.rotate_left(17);
    *v1 ^= *v2;
    *v2 = v2.rotate_left(32);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference implementation's vectors (key 00..0f, message 00..n-1).
    #[test]
    fn matches_the_reference_vectors() {
        let mut kb = [0u8; 16];
        for (i, b) in kb.iter_mut().enumerate() {
            *b = i as u8;
        }
        let key = SipKey::from_bytes(&kb);
        let msg: Vec<u8> = (0u8..64).collect();
        let expect: [(usize, u64); 6] = [
            (0, 0x726f_db47_dd0e_0e31),
            (1, 0x74f8_39c5_93dc_67fd),
            (2, 0x0d6c_8009_d9a9_4f5a),
            (7, 0xab02_00f5_8b01_d137),
            (8, 0x93f5_f579_9a93_2462),
            (15, 0xa129_ca61_49be_45e5),
        ];
        for (len, want) in expect {
            assert_eq!(key.hash(&msg[..len]), want, "length {len}");
        }
    }

    #[test]
    fn a_different_key_gives_a_different_hash() {
        let a = SipKey::from_bytes(&[1; 16]);
        let b = SipKey::from_bytes(&[2; 16]);
        assert_ne!(a.hash(b"password=hunter2"), b.hash(b"password=hunter2"));
    }
}
