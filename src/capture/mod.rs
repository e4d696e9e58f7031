//! Capture policy: which tool activity a project keeps out of capture
//! (DESIGN §3). The marker's `[capture]` section arrives validated as
//! [`crate::scope::CaptureConfig`]; this module compiles it, extracts
//! candidate paths from tool arguments and decides a [`Disposition`].

/// Capture protocol version reported by `--check-capture` and in records.
pub const CAPTURE_PROTOCOL_VERSION: u32 = 1;

/// State of the nearest marker's capture policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyState {
    Absent,
    Inactive,
    Active,
    Invalid,
}

/// Tool families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFamily {
    File,
    SearchList,
    Shell,
    Unknown,
}

/// What happens to the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    Keep,
    Drop,
    MetadataOnly,
}

/// How candidate paths were extracted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtractionState {
    NotApplicable,
    Extracted,
    MissingOrMalformed,
    UnsupportedSchema,
}

/// The decision for one event. Never holds a path, pattern or payload byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub policy_state: PolicyState,
    pub tool_family: ToolFamily,
    pub path_count: u32,
    pub disposition: Disposition,
    pub extraction_state: ExtractionState,
}

impl PolicyState {
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyState::Absent => "absent",
            PolicyState::Inactive => "inactive",
            PolicyState::Active => "active",
            PolicyState::Invalid => "invalid",
        }
    }
}

impl ToolFamily {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolFamily::File => "file",
            ToolFamily::SearchList => "search-list",
            ToolFamily::Shell => "shell",
            ToolFamily::Unknown => "unknown",
        }
    }
}

impl Disposition {
    pub fn as_str(self) -> &'static str {
        match self {
            Disposition::Keep => "keep",
            Disposition::Drop => "drop",
            Disposition::MetadataOnly => "metadata-only",
        }
    }
}

impl ExtractionState {
    pub fn as_str(self) -> &'static str {
        match self {
            ExtractionState::NotApplicable => "not-applicable",
            ExtractionState::Extracted => "extracted",
            ExtractionState::MissingOrMalformed => "missing-or-malformed",
            ExtractionState::UnsupportedSchema => "unsupported-schema",
        }
    }
}
