//! Virtual document paths: `/MEMORY.md`, `/notes/build.md`.
//!
//! A virtual path is what the agent sees; it never contains a host path and
//! maps onto the scope's directory one segment at a time. Every rule here is
//! checked before the file system is touched; symlinks are checked by the
//! store while walking.

use std::fmt;

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
    TooLong { bytes: usize },
    TooDeep { segments: usize },
    SegmentTooLong { bytes: usize },
    Backslash,
    Control,
    Invisible { code: u32 },
    EmptySegment,
    DotSegment(String),
    Hidden(String),
    Reserved(String),
    Root,
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
            check_segment(seg)?;
            segments.push(seg.to_string());
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
        if segments.len() > MAX_DEPTH || segments.iter().any(|s| check_segment(s).is_err()) {
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
    Ok(())
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
    fn segments_from_disk_follow_the_same_rules() {
        assert!(VirtualPath::from_segments(vec!["a".into(), "b.md".into()]).is_some());
        assert!(VirtualPath::from_segments(vec![".git".into()]).is_none());
        assert!(VirtualPath::from_segments(vec!["hooks".into(), "x".into()]).is_none());
        assert!(VirtualPath::from_segments(vec!["a\\b".into()]).is_none());
    }
}
