//! Lexical path normalisation shared by patterns and candidates. No
//! filesystem access: symlinks are not resolved, nothing is canonicalised.
//!
//! `\` becomes `/`; roots are `/` (POSIX), `X:/` (drive, upper-cased) and
//! `//server/share` (UNC); empty and `.` segments go, `..` pops one segment
//! and never climbs above the root. Windows-flavour paths (drive or UNC)
//! compare ASCII case-insensitively. A path starting `//` is UNC only when
//! it was written with backslashes or its base is Windows-flavour; on a
//! POSIX base it collapses to `/` (otherwise `//etc/x` would escape every
//! POSIX pattern).

/// Longest candidate path, in characters (DESIGN §3).
pub const MAX_CANDIDATE_CHARS: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    Posix,
    Windows,
}

/// A normalised absolute path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormPath {
    pub flavour: Flavour,
    /// `/`, `X:/` or `//server/share/` followed by the segments joined by `/`
    /// (no trailing `/` unless the path is its root).
    pub text: String,
    /// Length in bytes of the root (`/`, `X:/`, `//server/share/`).
    pub root_len: usize,
}

impl NormPath {
    /// Segments after the root.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.text[self.root_len..]
            .split('/')
            .filter(|s| !s.is_empty())
    }

    pub fn root(&self) -> &str {
        &self.text[..self.root_len]
    }

    /// Characters (Unicode scalars), the unit of every bound.
    pub fn chars(&self) -> usize {
        self.text.chars().count()
    }

    /// The text as compared: case-folded ([`fold`]) where the file system
    /// compares names without regard to case ([`folds`]).
    pub fn key(&self) -> std::borrow::Cow<'_, str> {
        if folds(self.flavour) {
            fold(&self.text).into()
        } else {
            std::borrow::Cow::Borrowed(&self.text)
        }
    }
}

/// Are paths of this flavour the ones this system opens (Windows paths on
/// Windows, POSIX paths elsewhere)? Only those are looked up on disk (the
/// fingerprint walk, markers below the working directory).
pub fn native(flavour: Flavour) -> bool {
    (flavour == Flavour::Windows) == cfg!(windows)
}

/// Does the file system compare names of this flavour without regard to
/// case? Windows paths always; POSIX paths on macOS, whose file systems
/// are case-insensitive by default (DESIGN §3: `SECRET/key.txt` is
/// `secret/key.txt` there).
pub fn folds(flavour: Flavour) -> bool {
    flavour == Flavour::Windows || posix_folds()
}

#[cfg(not(test))]
fn posix_folds() -> bool {
    cfg!(target_os = "macos")
}

#[cfg(test)]
thread_local! {
    /// Tests on any host can ask for the macOS behaviour.
    pub static FOLD_POSIX: std::cell::Cell<bool> = const { std::cell::Cell::new(cfg!(target_os = "macos")) };
}

#[cfg(test)]
fn posix_folds() -> bool {
    FOLD_POSIX.with(|f| f.get())
}

/// One character as Windows paths compare it: its lowercase form when
/// that is a single character of the same UTF-8 length (`É` → `é`, `Ω` →
/// `ω`), else itself. Windows compares names through a one-to-one
/// upper-case table, so folding letter by letter matches it for the
/// letters people type; keeping the length keeps byte offsets between a
/// text and its folded key equal.
pub fn fold_char(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    let mut lower = c.to_lowercase();
    match (lower.next(), lower.next()) {
        (Some(l), None) if l.len_utf8() == c.len_utf8() => l,
        _ => c,
    }
}

/// [`fold_char`] over a whole text; the result has the same length in bytes.
pub fn fold(s: &str) -> String {
    s.chars().map(fold_char).collect()
}

/// `a` and `b` are equal once folded.
pub fn eq_folded(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.chars().map(fold_char).eq(b.chars().map(fold_char))
}

/// Why a string cannot become a usable path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unusable {
    Blank,
    TooLong,
    /// `C:foo`: relative to a drive's current directory, unknowable here.
    DriveRelative,
    /// Relative, and no absolute base to join it to.
    NoBase,
    /// `~/…` and no home directory.
    NoHome,
    /// `\\server` without a share.
    BadUnc,
}

fn is_drive(b: &[u8]) -> bool {
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

/// Normalise `raw`, joining a relative path to `base` and expanding `~/`
/// with `home`. `max_chars` bounds `raw` (and the result).
pub fn normalize(
    raw: &str,
    base: Option<&NormPath>,
    home: Option<&NormPath>,
    max_chars: usize,
) -> Result<NormPath, Unusable> {
    if raw.trim().is_empty() {
        return Err(Unusable::Blank);
    }
    if raw.chars().count() > max_chars {
        return Err(Unusable::TooLong);
    }
    let unc_hint = raw.starts_with("\\\\");
    let s = raw.replace('\\', "/");
    let bytes = s.as_bytes();

    // Home expansion: `~` alone or `~/…`.
    if s == "~" || s.starts_with("~/") {
        let home = home.ok_or(Unusable::NoHome)?;
        let joined = format!("{}/{}", home.text, &s[1..]);
        return finish(
            home.flavour,
            home.root(),
            &joined[home.root_len..],
            max_chars,
        );
    }

    if s.starts_with("//") {
        let windows_base = base.is_some_and(|b| b.flavour == Flavour::Windows);
        if unc_hint || windows_base {
            let rest = s.trim_start_matches('/');
            let mut it = rest.splitn(3, '/');
            let server = it.next().unwrap_or("");
            let share = it.next().unwrap_or("");
            if server.is_empty() || share.is_empty() {
                return Err(Unusable::BadUnc);
            }
            let root = format!("//{server}/{share}/");
            return finish(Flavour::Windows, &root, it.next().unwrap_or(""), max_chars);
        }
        return finish(Flavour::Posix, "/", s.trim_start_matches('/'), max_chars);
    }
    if is_drive(bytes) {
        if bytes.get(2) != Some(&b'/') {
            return Err(Unusable::DriveRelative);
        }
        let root = format!("{}:/", (bytes[0] as char).to_ascii_uppercase());
        return finish(Flavour::Windows, &root, &s[3..], max_chars);
    }
    if let Some(rest) = s.strip_prefix('/') {
        // Rooted without a drive (`\secret\key.txt`): on a Windows base it
        // names that drive's (or share's) path, as Windows opens it from
        // there, so it meets the Windows patterns a marker there yields.
        if let Some(b) = base.filter(|b| b.flavour == Flavour::Windows) {
            return finish(Flavour::Windows, b.root(), rest, max_chars);
        }
        return finish(Flavour::Posix, "/", rest, max_chars);
    }
    let base = base.ok_or(Unusable::NoBase)?;
    if is_plain_relative(&s) {
        // Nothing to clean up: join and stop (most shell words and output
        // tokens take this path).
        let mut text = String::with_capacity(base.text.len() + 1 + s.len());
        text.push_str(&base.text);
        if !text.ends_with('/') {
            text.push('/');
        }
        text.push_str(s.trim_end_matches('/'));
        if text.chars().count() > max_chars {
            return Err(Unusable::TooLong);
        }
        return Ok(NormPath {
            flavour: base.flavour,
            text,
            root_len: base.root_len,
        });
    }
    let joined = format!("{}/{}", &base.text[base.root_len..], s);
    finish(base.flavour, base.root(), &joined, max_chars)
}

/// Git Bash's spelling of a drive, `/c/Users/me` for `C:\Users\me`. On a
/// Windows base a rooted path whose first segment is one letter names a
/// directory on the base's drive for cmd and PowerShell ([`normalize`]),
/// and that drive for Git Bash (where Claude Code runs its commands on
/// Windows). This is the Git Bash reading, a second candidate to check
/// (privacy fails closed); `None` for any other path or base. Only `/`
/// spellings: Git Bash reads `\c\…` as an escape.
pub fn msys_drive(raw: &str, base: Option<&NormPath>, max_chars: usize) -> Option<NormPath> {
    base.filter(|b| b.flavour == Flavour::Windows)?;
    let rest = raw.strip_prefix('/')?;
    let (seg, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let letter = match seg.as_bytes() {
        [l] if l.is_ascii_alphabetic() => l.to_ascii_uppercase() as char,
        _ => return None,
    };
    normalize(&format!("{letter}:/{tail}"), None, None, max_chars).ok()
}

/// A relative path with no empty, `.` or `..` segment (a trailing `/`
/// aside): joining it to a normalised base needs no clean-up.
fn is_plain_relative(s: &str) -> bool {
    s.trim_end_matches('/')
        .split('/')
        .all(|seg| !seg.is_empty() && seg != "." && seg != "..")
}

fn finish(
    flavour: Flavour,
    root: &str,
    rest: &str,
    max_chars: usize,
) -> Result<NormPath, Unusable> {
    let mut segs: Vec<&str> = Vec::new();
    for seg in rest.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                segs.pop();
            }
            s => segs.push(s),
        }
    }
    let mut text = String::with_capacity(root.len() + rest.len());
    text.push_str(root);
    text.push_str(&segs.join("/"));
    if text.chars().count() > max_chars {
        return Err(Unusable::TooLong);
    }
    Ok(NormPath {
        flavour,
        text,
        root_len: root.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_is_letter_by_letter_and_keeps_the_length() {
        assert_eq!(fold("C:/Users/ÉMILE/ΣΩ/Straße"), "c:/users/émile/σω/straße");
        for s in ["İstanbul", "ǅ", "ẞ", "ﬀ", "日本", "K"] {
            assert_eq!(fold(s).len(), s.len(), "{s}");
        }
        assert!(eq_folded("ÉMILE", "émile"));
        assert!(!eq_folded("émile", "emile"));
        assert!(!eq_folded("a", "ab"));
    }

    fn n(raw: &str, base: Option<&str>) -> Result<String, Unusable> {
        let base = base.map(|b| normalize(b, None, None, MAX_CANDIDATE_CHARS).unwrap());
        let home = normalize("/home/u", None, None, MAX_CANDIDATE_CHARS).unwrap();
        normalize(raw, base.as_ref(), Some(&home), MAX_CANDIDATE_CHARS).map(|p| p.text)
    }

    #[test]
    fn posix_paths() {
        assert_eq!(n("/a/./b//c/../d", None).unwrap(), "/a/b/d");
        assert_eq!(n("/../..", None).unwrap(), "/");
        assert_eq!(n("x/../y", Some("/w")).unwrap(), "/w/y");
        assert_eq!(n("../../../..", Some("/w/v")).unwrap(), "/");
        assert_eq!(n("~/notes", None).unwrap(), "/home/u/notes");
        assert_eq!(n("~", None).unwrap(), "/home/u");
        assert_eq!(n("rel", None), Err(Unusable::NoBase));
        assert_eq!(n("  ", Some("/w")), Err(Unusable::Blank));
    }

    #[test]
    fn plain_relative_paths_join_like_the_general_case() {
        for raw in ["a", "a/b", "a/b/", "a.b/c-d", "é/x"] {
            for base in ["/", "/w/v", "C:/w"] {
                let fast = n(raw, Some(base)).unwrap();
                let joined = format!("{base}/{raw}");
                let slow = normalize(&joined, None, None, MAX_CANDIDATE_CHARS).unwrap();
                assert_eq!(fast, slow.text, "{raw} on {base}");
            }
        }
        assert!(!is_plain_relative("a//b") && !is_plain_relative("./a"));
        assert!(!is_plain_relative("a/..") && !is_plain_relative(""));
    }

    #[test]
    fn posix_double_slash_collapses_instead_of_becoming_unc() {
        assert_eq!(n("//etc/passwd", Some("/w")).unwrap(), "/etc/passwd");
        assert_eq!(n("//etc/passwd", None).unwrap(), "/etc/passwd");
    }

    #[test]
    fn windows_paths() {
        let p = normalize("c:\\Users\\Me\\..\\X\\f.txt", None, None, 100).unwrap();
        assert_eq!(
            (p.flavour, p.text.as_str()),
            (Flavour::Windows, "C:/Users/X/f.txt")
        );
        assert_eq!(p.key(), "c:/users/x/f.txt");
        assert_eq!(
            n("\\\\srv\\share\\a\\..\\..\\b", None).unwrap(),
            "//srv/share/b"
        );
        assert_eq!(n("//srv/share/x", Some("C:/w")).unwrap(), "//srv/share/x");
        assert_eq!(n("sub\\f", Some("C:\\w")).unwrap(), "C:/w/sub/f");
        assert_eq!(n("C:foo", Some("/w")), Err(Unusable::DriveRelative));
        assert_eq!(n("\\\\srv", None), Err(Unusable::BadUnc));
    }

    /// `\x` on Windows is `x` at the root of the current drive (or share):
    /// resolved against a Windows base it takes that base's root, so an
    /// exclusion under a marker on that drive still holds for it.
    #[test]
    fn rooted_paths_without_a_drive_take_the_drive_of_a_windows_base() {
        assert_eq!(
            n("\\proj\\secret\\k", Some("C:\\proj")).unwrap(),
            "C:/proj/secret/k"
        );
        assert_eq!(n("/proj/../x", Some("d:/w")).unwrap(), "D:/x");
        assert_eq!(
            n("\\x", Some("\\\\srv\\share\\w")).unwrap(),
            "//srv/share/x"
        );
        assert_eq!(n("/x", Some("/w")).unwrap(), "/x");
        assert_eq!(n("/x", None).unwrap(), "/x");
    }

    #[test]
    fn git_bash_drive_spellings_are_a_second_reading_on_a_windows_base() {
        let m = |raw: &str, base: &str| {
            let b = normalize(base, None, None, MAX_CANDIDATE_CHARS).unwrap();
            msys_drive(raw, Some(&b), MAX_CANDIDATE_CHARS).map(|p| p.text)
        };
        assert_eq!(
            m("/c/Users/me/p/secret/k", "C:/w").as_deref(),
            Some("C:/Users/me/p/secret/k")
        );
        assert_eq!(m("/d", "C:/w").as_deref(), Some("D:/"));
        assert_eq!(m("/d/../e/x", "C:/w").as_deref(), Some("D:/e/x"));
        for (raw, base) in [
            ("/cc/x", "C:/w"),
            ("/c/x", "/w"),
            ("c/x", "C:/w"),
            ("//c/x", "C:/w"),
            (r"\c\x", "C:/w"),
            ("/1/x", "C:/w"),
        ] {
            assert_eq!(m(raw, base), None, "{raw} on {base}");
        }
        assert_eq!(msys_drive("/c/x", None, MAX_CANDIDATE_CHARS), None);
    }

    #[test]
    fn candidate_length_bound_at_its_edge() {
        let at = format!("/{}", "a".repeat(MAX_CANDIDATE_CHARS - 1));
        assert!(normalize(&at, None, None, MAX_CANDIDATE_CHARS).is_ok());
        let over = format!("/{}", "a".repeat(MAX_CANDIDATE_CHARS));
        assert_eq!(
            normalize(&over, None, None, MAX_CANDIDATE_CHARS),
            Err(Unusable::TooLong)
        );
        // A short relative path whose joined form passes the bound.
        let base = normalize(&at, None, None, MAX_CANDIDATE_CHARS).unwrap();
        assert_eq!(
            normalize("b", Some(&base), None, MAX_CANDIDATE_CHARS),
            Err(Unusable::TooLong)
        );
    }
}
