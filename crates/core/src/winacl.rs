//! Windows: the owner-only promise of the data dir (DESIGN §14). On Unix a
//! directory is 0700 and a file 0600; on Windows the same promise is an
//! access-control list that names only the current user, protected from
//! inheriting anything looser from the parent, and inherited by everything
//! created inside (so a spool entry or token file written there is
//! owner-only without a call per file).

use std::ffi::OsStr;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::path::Path;
use std::ptr;

use windows_sys::Win32::Foundation::{CloseHandle, LocalFree, HANDLE};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW,
    GetNamedSecurityInfoW, SDDL_REVISION_1, SE_FILE_OBJECT,
};
use windows_sys::Win32::Security::{
    EqualSid, GetTokenInformation, SetFileSecurityW, TokenOwner, TokenUser,
    DACL_SECURITY_INFORMATION, OWNER_SECURITY_INFORMATION, PROTECTED_DACL_SECURITY_INFORMATION,
    PSECURITY_DESCRIPTOR, PSID, TOKEN_QUERY,
};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

fn wide(s: &OsStr) -> Vec<u16> {
    s.encode_wide().chain(std::iter::once(0)).collect()
}

/// The process token's user SID and default owner SID (an elevated
/// administrator's new files are owned by the Administrators group).
struct Token {
    user: Vec<u8>,
    owner: Vec<u8>,
}

/// The SID at the head of a token-information buffer (TOKEN_USER and
/// TOKEN_OWNER both start with a pointer to their SID, which lies inside
/// the same buffer), copied out while the buffer is alive.
fn token_sid(token: HANDLE, class: i32) -> io::Result<Vec<u8>> {
    let mut len = 0u32;
    // SAFETY: a size query with a null buffer; `len` receives the size.
    unsafe { GetTokenInformation(token, class, ptr::null_mut(), 0, &mut len) };
    if len == 0 {
        return Err(io::Error::last_os_error());
    }
    // u64 elements: the buffer holds pointers and must be aligned for them.
    let mut buf = vec![0u64; (len as usize).div_ceil(8)];
    // SAFETY: `buf` has room for `len` bytes.
    let ok = unsafe { GetTokenInformation(token, class, buf.as_mut_ptr().cast(), len, &mut len) };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the buffer starts with an aligned PSID into `buf` (alive
    // here); a SID is 8 bytes plus 4 per sub-authority, the count at byte 1.
    unsafe {
        let sid = *buf.as_ptr().cast::<PSID>() as *const u8;
        let n = 8 + 4 * usize::from(*sid.add(1));
        Ok(std::slice::from_raw_parts(sid, n).to_vec())
    }
}

fn token() -> io::Result<Token> {
    let mut h: HANDLE = ptr::null_mut();
    // SAFETY: the pseudo-handle of this process; `h` receives a handle we close.
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut h) } == 0 {
        return Err(io::Error::last_os_error());
    }
    let res = (|| {
        let user = token_sid(h, TokenUser)?;
        let owner = token_sid(h, TokenOwner)?;
        Ok(Token { user, owner })
    })();
    // SAFETY: `h` came from OpenProcessToken.
    unsafe { CloseHandle(h) };
    res
}

fn sid_string(sid: &[u8]) -> io::Result<String> {
    let mut out: *mut u16 = ptr::null_mut();
    // SAFETY: `sid` is a valid SID; `out` receives a LocalAlloc'd string.
    if unsafe { ConvertSidToStringSidW(sid.as_ptr() as PSID, &mut out) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `out` is NUL-terminated; freed right after.
    let s = unsafe {
        let mut n = 0;
        while *out.add(n) != 0 {
            n += 1;
        }
        let s = String::from_utf16_lossy(std::slice::from_raw_parts(out, n));
        LocalFree(out.cast());
        s
    };
    Ok(s)
}

/// Give `path` an ACL that grants full control to the current user only,
/// protected from the parent's entries and inherited by what is created
/// inside (`OICI`): the Windows form of mode 0700 / 0600.
pub fn restrict_to_owner(path: &Path) -> io::Result<()> {
    let me = sid_string(&token()?.user)?;
    let sddl = wide(OsStr::new(&format!("D:P(A;OICI;FA;;;{me})")));
    let mut sd: PSECURITY_DESCRIPTOR = ptr::null_mut();
    // SAFETY: a NUL-terminated SDDL string; `sd` is LocalAlloc'd and freed below.
    let ok = unsafe {
        ConvertStringSecurityDescriptorToSecurityDescriptorW(
            sddl.as_ptr(),
            SDDL_REVISION_1,
            &mut sd,
            ptr::null_mut(),
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    let name = wide(path.as_os_str());
    // SAFETY: a NUL-terminated path and the descriptor built above.
    let ok = unsafe {
        SetFileSecurityW(
            name.as_ptr(),
            DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
            sd,
        )
    };
    let err = io::Error::last_os_error();
    // SAFETY: `sd` came from ConvertStringSecurityDescriptorToSecurityDescriptorW.
    unsafe { LocalFree(sd) };
    if ok == 0 {
        return Err(err);
    }
    Ok(())
}

/// Whether `path` is owned by this process's user (or by its default
/// owner, the Administrators group for an elevated process). Returns the
/// owner's SID string when it is not.
pub fn foreign_owner(path: &Path) -> io::Result<Option<String>> {
    let t = token()?;
    let name = wide(path.as_os_str());
    let mut owner: PSID = ptr::null_mut();
    let mut sd: PSECURITY_DESCRIPTOR = ptr::null_mut();
    // SAFETY: out-pointers for the owner SID (inside `sd`) and `sd` (freed below).
    let rc = unsafe {
        GetNamedSecurityInfoW(
            name.as_ptr(),
            SE_FILE_OBJECT,
            OWNER_SECURITY_INFORMATION,
            &mut owner,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
            &mut sd,
        )
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc as i32));
    }
    // SAFETY: `owner` points into `sd`, both valid until LocalFree.
    let res = unsafe {
        if owner.is_null()
            || EqualSid(owner, t.user.as_ptr() as PSID) != 0
            || EqualSid(owner, t.owner.as_ptr() as PSID) != 0
        {
            Ok(None)
        } else {
            let n = 8 + 4 * usize::from(*(owner as *const u8).add(1));
            let sid = std::slice::from_raw_parts(owner as *const u8, n).to_vec();
            sid_string(&sid).map(Some)
        }
    };
    // SAFETY: `sd` came from GetNamedSecurityInfoW.
    unsafe { LocalFree(sd) };
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restricted_directory_is_ours_and_still_usable() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("data");
        std::fs::create_dir(&d).unwrap();
        restrict_to_owner(&d).unwrap();
        assert_eq!(foreign_owner(&d).unwrap(), None);
        std::fs::write(d.join("f"), b"x").unwrap();
        assert_eq!(std::fs::read(d.join("f")).unwrap(), b"x");
    }
}
