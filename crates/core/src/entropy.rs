//! Random bytes from the operating system, for keys, tokens and unique file
//! names.
//!
//! On Linux this is the `getrandom(2)` system call through libc, called
//! directly. The `getrandom` crate finds that function with `dlsym`, which
//! a static build cannot answer, so there it fell back to opening and
//! polling `/dev/random` and reading `/dev/urandom` on every hook call: six
//! system calls instead of one. Other systems, and kernels without the
//! call, use the crate.

use std::io;

/// Fill `buf` from the kernel's random source (blocking only until the
/// source is first seeded, at boot).
pub fn fill(buf: &mut [u8]) -> io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let mut done = 0;
        while done < buf.len() {
            let rest = &mut buf[done..];
            // SAFETY: `rest` is valid for writes of `rest.len()` bytes.
            let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    // No such call (kernel < 3.17) or a seccomp filter.
                    Some(libc::ENOSYS | libc::EPERM) => return crate_fill(buf),
                    _ => return Err(e),
                }
            }
            done += n as usize;
        }
        Ok(())
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    crate_fill(buf)
}

fn crate_fill(buf: &mut [u8]) -> io::Result<()> {
    getrandom::fill(buf).map_err(|e| io::Error::other(format!("no random source: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_every_byte_and_differs_between_calls() {
        // 64 bytes all zero, or two draws alike, has probability 2^-512.
        let (mut a, mut b) = ([0u8; 64], [0u8; 64]);
        fill(&mut a).unwrap();
        fill(&mut b).unwrap();
        assert_ne!(a, [0u8; 64]);
        assert_ne!(a, b);
        let mut empty = [];
        fill(&mut empty).unwrap();
    }

    #[test]
    fn the_fallback_fills_too() {
        let mut a = [0u8; 32];
        crate_fill(&mut a).unwrap();
        assert_ne!(a, [0u8; 32]);
    }
}
