//! Per-field resolution: flag > env > marker > fallback.
//! (Skeleton: replaced by the full implementation.)

use super::*;

/// Resolve the scope for `input`. In [`Mode::Hook`] this never fails:
/// problems become warnings and the field falls through to the next source.
pub fn resolve(input: &ScopeInput) -> Result<Scope, ScopeError> {
    let project = input
        .cwd
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("default")
        .to_ascii_lowercase();
    Ok(Scope {
        workspace: "default".into(),
        project,
        workspace_source: Source::Fallback,
        project_source: Source::Fallback,
        marker: None,
        strategy: input.install_strategy.unwrap_or_default(),
        settings: Settings::default(),
        capture: CaptureConfig::Absent,
        warnings: Vec::new(),
    })
}
