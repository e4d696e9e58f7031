//! What client commands tell the user on stderr about the scope they use.

use std::fmt::Write as _;

use super::{Scope, Source};

/// The one-line note client commands print when a marker decided a field,
/// e.g. `memhook: scope acme/api (workspace + project from /p/.ai-memory.toml)`.
/// `None` when no marker decided anything (nothing worth saying).
pub fn scope_note(scope: &Scope) -> Option<String> {
    let marker = scope.marker.as_ref()?;
    let ws = scope.workspace_source == Source::Marker;
    let pj = scope.project_source == Source::Marker;
    let what = match (ws, pj) {
        (true, true) => "workspace + project",
        (true, false) => "workspace",
        (false, true) => "project",
        (false, false) => return None,
    };
    let mut line = String::new();
    let _ = write!(
        line,
        "memhook: scope {}/{} ({what} from {})",
        scope.workspace,
        scope.project,
        marker.display()
    );
    Some(line)
}

/// Print the scope note and every warning to stderr, each prefixed
/// `memhook:`. Client commands call this once after resolving.
pub fn report(scope: &Scope) {
    if let Some(line) = scope_note(scope) {
        eprintln!("{line}");
    }
    for w in &scope.warnings {
        eprintln!("memhook: warning: {w}");
    }
}
