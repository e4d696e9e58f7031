//! Virtual document paths: `/MEMORY.md`, `/notes/build.md`.
//!
//! A virtual path is what the agent sees; it never contains a host path and
//! maps onto the scope's directory one segment at a time. Every rule here is
//! checked before the file system is touched; symlinks are checked by the
//! store while walking.
//!
//! Names are meant to be read by people and models and to be files on any
//! system, so one name must not pass for another:
//! - segments are normalised to Unicode NFC (an NFD `é` and an NFC `é` are
//!   one name; a file on disk whose name is not NFC is not a document);
//! - a run of letters that mixes Latin with Cyrillic or Greek, or is made
//!   only of Cyrillic/Greek letters that look like Latin ones (`СОМ`,
//!   `МЕМОRY`), and fullwidth or mathematical Latin letters are refused as
//!   look-alikes of ASCII names; all-Cyrillic or all-Greek words are fine;
//! - Windows device names (`CON`, `PRN`, `AUX`, `NUL`, `COM0`–`COM9`,
//!   `LPT0`–`LPT9`, with any extension, in any case), the characters Windows
//!   forbids in names (`: < > " | ? *`) and a trailing `.` or space are refused;
//! - two names that differ only in case are one name (the store refuses to
//!   create `/memory.md` beside `/MEMORY.md`, see `MemError::CaseTwin`).

use std::fmt;

use unicode_normalization::UnicodeNormalization;

use super::content::is_invisible;

/// Longest virtual path, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// Longest single segment, in bytes: below the usual 255-byte file-name
/// limit with room for the hidden temp name an atomic write uses.
pub const MAX_SEGMENT_BYTES: usize = 200;
/// Most segments in one path (`/a/b/c.md` has three).
pub const MAX_DEPTH: usize = 16;
/// Segment names agents treat as executable configuration. Refused as any
/// segment, compared without regard to ASCII case (a case-insensitive file
/// system would otherwise let `/Hooks/x` land in `hooks/`).
pub const RESERVED_SEGMENTS: [&str; 4] = ["skills", "commands", "agents", "hooks"];

/// A validated virtual path: zero segments is the root (`/`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct VirtualPath {
    segments: Vec<String>,
}

/// Why a virtual path is refused. Each variant has its own machine code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    NotAbsolute,
    TooLong {
        bytes: usize,
    },
    TooDeep {
        segments: usize,
    },
    SegmentTooLong {
        bytes: usize,
    },
    Backslash,
    Control,
    Invisible {
        code: u32,
    },
    EmptySegment,
    DotSegment(String),
    Hidden(String),
    Reserved(String),
    Root,
    /// A Windows device name (`CON`, `nul.md`, `COM1.txt`).
    WindowsDevice(String),
    /// A character Windows forbids in file names (`:` is also an NTFS stream).
    WindowsCharacter(char),
    /// A trailing `.` or space (Windows drops it: a twin of the shorter name).
    TrailingDotOrSpace(String),
    /// Letters that pass for another script's (`МЕМОRY.md` in Cyrillic).
    Confusable(String),
}

impl PathError {
    /// The machine-readable `reason` code.
    pub fn code(&self) -> &'static str {
        match self {
            PathError::NotAbsolute => "not_absolute",
            PathError::TooLong { .. } => "path_too_long",
            PathError::TooDeep { .. } => "path_too_deep",
            PathError::SegmentTooLong { .. } => "segment_too_long",
            PathError::Backslash => "backslash",
            PathError::Control => "control_character",
            PathError::Invisible { .. } => "invisible_character",
            PathError::EmptySegment => "empty_segment",
            PathError::DotSegment(_) => "dot_segment",
            PathError::Hidden(_) => "hidden_segment",
            PathError::Reserved(_) => "reserved_segment",
            PathError::Root => "root_is_not_a_document",
            PathError::WindowsDevice(_) => "reserved_device_name",
            PathError::WindowsCharacter(_) => "forbidden_character",
            PathError::TrailingDotOrSpace(_) => "trailing_dot_or_space",
            PathError::Confusable(_) => "confusable_name",
        }
    }
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::NotAbsolute => write!(
                f,
                "memory paths are virtual and absolute: start with '/', e.g. /notes/build.md"
            ),
            PathError::TooLong { bytes } => {
                write!(f, "path is {bytes} bytes; the limit is {MAX_PATH_BYTES}")
            }
            PathError::TooDeep { segments } => write!(
                f,
                "path has {segments} segments; the limit is {MAX_DEPTH}"
            ),
            PathError::SegmentTooLong { bytes } => write!(
                f,
                "a path segment is {bytes} bytes; the limit is {MAX_SEGMENT_BYTES}"
            ),
            PathError::Backslash => write!(f, "use '/' to separate path segments, not '\\'"),
            PathError::Control => write!(f, "path contains a control character"),
            PathError::Invisible { code } => write!(
                f,
                "path contains the invisible character U+{code:04X} (zero-width or bidi control)"
            ),
            PathError::EmptySegment => write!(f, "path has an empty segment ('//' or a trailing '/')"),
            PathError::DotSegment(s) => write!(f, "path segment {s:?} is not allowed (no '.' or '..')"),
            PathError::Hidden(s) => write!(
                f,
                "path segment {s:?} starts with '.'; hidden files are not part of project memory"
            ),
            PathError::Reserved(s) => write!(
                f,
                "path segment {s:?} is reserved (skills, commands, agents and hooks are agent configuration)"
            ),
            PathError::Root => write!(f, "'/' is the memory root, not a document; name a file such as /MEMORY.md"),
            PathError::WindowsDevice(s) => write!(
                f,
                "path segment {s:?} is a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9, \
                 with or without an extension); choose another name"
            ),
            PathError::WindowsCharacter(c) => write!(
                f,
                "path contains {c:?}, which file names on Windows cannot hold (: < > \" | ? *); \
                 use '-' instead"
            ),
            PathError::TrailingDotOrSpace(s) => write!(
                f,
                "path segment {s:?} ends with '.' or a space, which Windows drops; remove it"
            ),
            PathError::Confusable(s) => write!(
                f,
                "path segment {s:?} mixes Latin letters with Cyrillic or Greek look-alikes (or uses \
                 fullwidth letters), so it could pass for another name; spell it in one script"
            ),
        }
    }
}

impl std::error::Error for PathError {}

impl VirtualPath {
    /// Parse a document path: never the root, no trailing '/'.
    pub fn document(raw: &str) -> Result<VirtualPath, PathError> {
        let p = Self::parse(raw, false)?;
        if p.segments.is_empty() {
            return Err(PathError::Root);
        }
        Ok(p)
    }

    /// Parse a list prefix: the root and one trailing '/' are allowed.
    pub fn prefix(raw: &str) -> Result<VirtualPath, PathError> {
        Self::parse(raw, true)
    }

    fn parse(raw: &str, allow_trailing_slash: bool) -> Result<VirtualPath, PathError> {
        if raw.len() > MAX_PATH_BYTES {
            return Err(PathError::TooLong { bytes: raw.len() });
        }
        for c in raw.chars() {
            if c == '\\' {
                return Err(PathError::Backslash);
            }
            if c.is_control() {
                return Err(PathError::Control);
            }
            if is_invisible(c) || matches!(c, '\u{2028}' | '\u{2029}') {
                return Err(PathError::Invisible { code: c as u32 });
            }
        }
        let Some(rest) = raw.strip_prefix('/') else {
            return Err(PathError::NotAbsolute);
        };
        let rest = match rest.strip_suffix('/') {
            Some(r) if allow_trailing_slash => r,
            _ => rest,
        };
        if rest.is_empty() {
            return Ok(VirtualPath {
                segments: Vec::new(),
            });
        }
        let mut segments = Vec::new();
        for seg in rest.split('/') {
            let seg: String = seg.nfc().collect();
            check_segment(&seg)?;
            segments.push(seg);
        }
        if segments.len() > MAX_DEPTH {
            return Err(PathError::TooDeep {
                segments: segments.len(),
            });
        }
        Ok(VirtualPath { segments })
    }

    /// Build from segments found on disk; `None` when any segment breaks a rule
    /// (such files are invisible to the tools).
    pub fn from_segments(segments: Vec<String>) -> Option<VirtualPath> {
        if segments.len() > MAX_DEPTH
            || segments
                .iter()
                .any(|s| check_segment(s).is_err() || !is_nfc(s))
        {
            return None;
        }
        let p = VirtualPath { segments };
        (p.to_string().len() <= MAX_PATH_BYTES).then_some(p)
    }

    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }
}

/// Check one segment against every segment rule (also used for names found
/// on disk while listing).
pub fn check_segment(seg: &str) -> Result<(), PathError> {
    if seg.is_empty() {
        return Err(PathError::EmptySegment);
    }
    if seg == "." || seg == ".." {
        return Err(PathError::DotSegment(seg.to_string()));
    }
    if seg.starts_with('.') {
        return Err(PathError::Hidden(seg.to_string()));
    }
    if seg.len() > MAX_SEGMENT_BYTES {
        return Err(PathError::SegmentTooLong { bytes: seg.len() });
    }
    if RESERVED_SEGMENTS
        .iter()
        .any(|r| seg.eq_ignore_ascii_case(r))
    {
        return Err(PathError::Reserved(seg.to_string()));
    }
    if seg.chars().any(|c| {
        c == '\\' || c.is_control() || is_invisible(c) || matches!(c, '\u{2028}' | '\u{2029}')
    }) {
        return Err(PathError::Control);
    }
    if let Some(c) = seg.chars().find(|c| WINDOWS_FORBIDDEN.contains(c)) {
        return Err(PathError::WindowsCharacter(c));
    }
    if seg.ends_with('.') || seg.ends_with(' ') {
        return Err(PathError::TrailingDotOrSpace(seg.to_string()));
    }
    if is_windows_device(seg) {
        return Err(PathError::WindowsDevice(seg.to_string()));
    }
    if is_confusable(seg) {
        return Err(PathError::Confusable(seg.to_string()));
    }
    Ok(())
}

/// Characters Windows forbids in a file name (besides `/`, `\` and controls,
/// refused above).
pub const WINDOWS_FORBIDDEN: [char; 7] = [':', '<', '>', '"', '|', '?', '*'];

/// Windows device names: a file named so (with any extension) is the device.
pub const WINDOWS_DEVICES: [&str; 6] = ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"];

/// Whether `seg` names a Windows device: [`WINDOWS_DEVICES`], `COM0`–`COM9`
/// or `LPT0`–`LPT9` (also with ¹ ² ³), before its first `.`, spaces
/// trimmed, in any case.
pub fn is_windows_device(seg: &str) -> bool {
    let stem = seg.split('.').next().unwrap_or("").trim_end();
    if WINDOWS_DEVICES.iter().any(|d| stem.eq_ignore_ascii_case(d)) {
        return true;
    }
    let mut chars = stem.chars();
    let head: String = chars.by_ref().take(3).collect();
    let tail: Vec<char> = chars.collect();
    (head.eq_ignore_ascii_case("COM") || head.eq_ignore_ascii_case("LPT"))
        && matches!(tail.as_slice(), [d] if d.is_ascii_digit() || matches!(d, '¹' | '²' | '³'))
}

/// Whether `s` is in Unicode NFC.
pub fn is_nfc(s: &str) -> bool {
    s.nfc().eq(s.chars())
}

/// The name two segments share when they differ only in case or
/// normalisation: NFC, then lowercase.
pub fn fold(seg: &str) -> String {
    seg.nfc().collect::<String>().to_lowercase()
}

fn is_cyrillic_or_greek(c: char) -> bool {
    matches!(c as u32,
        0x0370..=0x03FF | 0x1F00..=0x1FFF // Greek
        | 0x0400..=0x052F | 0x1C80..=0x1C8F | 0x2DE0..=0x2DFF | 0xA640..=0xA69F)
    // Cyrillic
}

fn is_latin(c: char) -> bool {
    c.is_ascii_alphabetic() || matches!(c as u32, 0x00C0..=0x024F | 0x1E00..=0x1EFF)
}

/// Fullwidth and mathematical Latin letters and digits: an ASCII name in
/// disguise.
fn is_disguised_ascii(c: char) -> bool {
    matches!(c as u32, 0xFF10..=0xFF19 | 0xFF21..=0xFF3A | 0xFF41..=0xFF5A | 0x1D400..=0x1D7FF)
}

/// Cyrillic and Greek letters that look like Latin ones.
const LOOKALIKES: &str = "АВЕКМНОРСТУХаеорсухЅѕІіЈјԚԛԜԝҺһӀӏҮүΑΒΕΖΗΙΚΜΝΟΡΤΥΧοϹϲ";

/// Whether a run of letters of `seg` could pass for another name: Latin
/// mixed with Cyrillic or Greek, or Cyrillic/Greek letters that all look
/// Latin, or fullwidth/mathematical Latin anywhere.
pub fn is_confusable(seg: &str) -> bool {
    if seg.chars().any(is_disguised_ascii) {
        return true;
    }
    seg.split(|c: char| !c.is_alphabetic())
        .filter(|run| !run.is_empty())
        .any(|run| {
            let latin = run.chars().any(is_latin);
            let other = run.chars().any(is_cyrillic_or_greek);
            other && (latin || run.chars().all(|c| LOOKALIKES.contains(c)))
        })
}

impl fmt::Display for VirtualPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.segments.is_empty() {
            return f.write_str("/");
        }
        for s in &self.segments {
            write!(f, "/{s}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(raw: &str) -> &'static str {
        VirtualPath::document(raw).unwrap_err().code()
    }

    #[test]
    fn accepts_ordinary_paths() {
        for ok in [
            "/MEMORY.md",
            "/notes/build.md",
            "/a/b/c/d.txt",
            "/décisions/été.md",
            "/my notes/x y.md",
            "/skills.md",
            "/hooks-notes/x.md",
            "/a..b.md",
        ] {
            let p = VirtualPath::document(ok).unwrap();
            assert_eq!(p.to_string(), ok);
        }
    }

    #[test]
    fn root_is_a_prefix_not_a_document() {
        assert_eq!(code("/"), "root_is_not_a_document");
        assert!(VirtualPath::prefix("/").unwrap().is_root());
        assert_eq!(
            VirtualPath::prefix("/notes/").unwrap().to_string(),
            "/notes"
        );
        assert_eq!(code("/notes/"), "empty_segment");
    }

    #[test]
    fn refuses_relative_and_traversal() {
        assert_eq!(code("MEMORY.md"), "not_absolute");
        assert_eq!(code(""), "not_absolute");
        assert_eq!(code("/../outside.md"), "dot_segment");
        assert_eq!(code("/notes/../../x.md"), "dot_segment");
        assert_eq!(code("/./x.md"), "dot_segment");
        assert_eq!(code("/notes/.."), "dot_segment");
        assert_eq!(code("//x.md"), "empty_segment");
        assert_eq!(code("/a//b.md"), "empty_segment");
        assert_eq!(
            VirtualPath::prefix("/..").unwrap_err().code(),
            "dot_segment"
        );
    }

    #[test]
    fn refuses_hidden_segments() {
        assert_eq!(code("/.env"), "hidden_segment");
        assert_eq!(code("/.git/config"), "hidden_segment");
        assert_eq!(code("/notes/.lock"), "hidden_segment");
    }

    #[test]
    fn refuses_reserved_segments_in_any_case_and_position() {
        for r in RESERVED_SEGMENTS {
            assert_eq!(code(&format!("/{r}/x.md")), "reserved_segment");
            assert_eq!(code(&format!("/a/{r}")), "reserved_segment");
            assert_eq!(
                code(&format!("/a/{}/b.md", r.to_ascii_uppercase())),
                "reserved_segment"
            );
        }
        assert_eq!(code("/Hooks/x.md"), "reserved_segment");
        assert_eq!(
            VirtualPath::prefix("/skills").unwrap_err().code(),
            "reserved_segment"
        );
    }

    #[test]
    fn refuses_backslash_control_and_invisible_characters() {
        assert_eq!(code("/a\\b.md"), "backslash");
        assert_eq!(code("/..\\x.md"), "backslash");
        assert_eq!(code("/a\nb.md"), "control_character");
        assert_eq!(code("/a\0b.md"), "control_character");
        assert_eq!(code("/a\u{7f}.md"), "control_character");
        assert_eq!(code("/a\u{85}.md"), "control_character");
        assert_eq!(code("/a\u{200B}b.md"), "invisible_character");
        assert_eq!(code("/a\u{202E}dm.exe"), "invisible_character");
        assert_eq!(code("/a\u{2066}b.md"), "invisible_character");
        assert_eq!(code("/a\u{FEFF}b.md"), "invisible_character");
        assert_eq!(code("/a\u{E0041}b.md"), "invisible_character");
        assert_eq!(code("/a\u{2028}b.md"), "invisible_character");
    }

    #[test]
    fn length_limits_are_exact() {
        let seg = "a".repeat(MAX_SEGMENT_BYTES);
        assert!(VirtualPath::document(&format!("/{seg}")).is_ok());
        assert_eq!(code(&format!("/{seg}a")), "segment_too_long");

        let deep = "/a".repeat(MAX_DEPTH);
        assert!(VirtualPath::document(&deep).is_ok());
        assert_eq!(code(&format!("{deep}/a")), "path_too_deep");

        // Exactly MAX_PATH_BYTES is fine; one more is not.
        let seg = format!("/{}", "b".repeat(MAX_SEGMENT_BYTES - 1)); // 200 bytes
        let mut p = seg.repeat(5); // 1000 bytes
        p.push_str(&format!("/{}", "c".repeat(23))); // 1024
        assert_eq!(p.len(), MAX_PATH_BYTES);
        assert!(VirtualPath::document(&p).is_ok());
        p.push('d');
        assert_eq!(code(&p), "path_too_long");
    }

    #[test]
    fn names_are_nfc() {
        let nfd = "/de\u{301}cisions/e\u{301}te\u{301}.md";
        let p = VirtualPath::document(nfd).unwrap();
        assert_eq!(p.to_string(), "/décisions/été.md");
        assert_eq!(p, VirtualPath::document("/décisions/été.md").unwrap());
        // A file on disk named in NFD is not a document (it would be a twin).
        assert!(VirtualPath::from_segments(vec!["e\u{301}te\u{301}.md".into()]).is_none());
        assert!(VirtualPath::from_segments(vec!["été.md".into()]).is_some());
        assert_eq!(fold("/MEMORY.md"), fold("/memory.md"));
        assert_eq!(fold("E\u{301}TE\u{301}.md"), fold("été.md"));
    }

    #[test]
    fn refuses_look_alikes_of_ascii_names() {
        for bad in [
            "/MEM\u{041E}RY.md",            // Cyrillic О inside a Latin word
            "/\u{0441}onfig.md",            // Cyrillic с
            "/n\u{03BF}tes.md",             // Greek ο
            "/\u{0421}\u{041E}\u{041C}.md", // all-Cyrillic СОМ
            "/\u{FF2D}EMORY.md",            // fullwidth Ｍ
            "/\u{1D40C}EMORY.md",           // mathematical bold M
        ] {
            assert_eq!(code(bad), "confusable_name", "{bad}");
        }
        for ok in [
            "/заметки.md",
            "/Тест.md",
            "/σημειώσεις/α.md",
            "/notes-ü.md",
            "/日本語.md",
        ] {
            assert!(VirtualPath::document(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_windows_device_names_and_characters() {
        for bad in [
            "/CON",
            "/con.md",
            "/NUL",
            "/nul.txt",
            "/Aux.md",
            "/PRN",
            "/COM1",
            "/com9.md",
            "/LPT1",
            "/lpt0.log",
            "/COM\u{b9}.md",
            "/notes/CON.md",
            "/CON .md",
            "/conin$.md",
        ] {
            assert_eq!(code(bad), "reserved_device_name", "{bad}");
        }
        for ok in [
            "/CONTEXT.md",
            "/console.md",
            "/com10.md",
            "/nullable.md",
            "/LPT.md",
            "/a.con",
        ] {
            assert!(VirtualPath::document(ok).is_ok(), "{ok}");
        }
        for (bad, c) in [
            ("/a:b.md", ':'),
            ("/x<y.md", '<'),
            ("/q?.md", '?'),
            ("/s*.md", '*'),
            ("/p|q.md", '|'),
            ("/\"q\".md", '"'),
        ] {
            assert_eq!(
                VirtualPath::document(bad).unwrap_err(),
                PathError::WindowsCharacter(c),
                "{bad}"
            );
        }
        assert_eq!(code("/notes./a.md"), "trailing_dot_or_space");
        assert_eq!(code("/a.md "), "trailing_dot_or_space");
    }

    #[test]
    fn segments_from_disk_follow_the_same_rules() {
        assert!(VirtualPath::from_segments(vec!["a".into(), "b.md".into()]).is_some());
        assert!(VirtualPath::from_segments(vec![".git".into()]).is_none());
        assert!(VirtualPath::from_segments(vec!["hooks".into(), "x".into()]).is_none());
        assert!(VirtualPath::from_segments(vec!["a\\b".into()]).is_none());
    }
}
