//! The lines of a project's file history ([`memhook_core::history`]), built
//! from the store: for each file an earlier session changed, the newest such
//! session, its goal and a failure it left standing.
//!
//! `src/dates.py: changed 2026-12-03 14:05 UTC by claude-code in session
//! 3f2a9c41 (goal: "fix the date parser"); it ended with Bash "pytest -q"
//! failing, exit 1: "E   AssertionError: assert 52 == 53"`

use std::collections::HashSet;

use memhook_core::timefmt::rfc3339_ms;

use crate::briefing::standing;
use crate::model::{Reads, StoreError};

/// Sessions looked at, newest activity first.
pub const SESSIONS: usize = 30;
/// Longest goal quoted in a line.
pub const MAX_GOAL_CHARS: usize = 120;
/// Longest failure message quoted in a line (the line of its output that
/// names the error, as the briefing shows it).
pub const MAX_FAILURE_CHARS: usize = 100;

/// `(path as stored, line)` for every file changed in the project's newest
/// [`SESSIONS`] sessions, the most recently changed first.
pub fn lines<R: Reads + ?Sized>(
    r: &R,
    scope: (&str, &str),
) -> Result<Vec<(String, String)>, StoreError> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for s in r.sessions(scope, None, SESSIONS)? {
        let mut changed: Vec<_> = r
            .session_files(s.row)?
            .into_iter()
            .filter(|f| f.changed)
            .collect();
        if changed.is_empty() {
            continue;
        }
        changed.sort_by_key(|f| std::cmp::Reverse(f.last_ms));
        let (first, last, _) = r.session_prompts(s.row, 1)?;
        let goal = last.last().or(first.as_ref()).map(|p| quote(&p.text));
        let root = r.session_root(s.row)?;
        let standing = standing(&r.session_notes(s.row)?);
        let failure = standing.failures.last().map(|f| {
            let what = match &f.command {
                Some(c) => format!("{} {}", f.tool, quote(c)),
                None => f.tool.clone(),
            };
            let status = f
                .exit_code
                .map(|code| format!(", exit {code}"))
                .unwrap_or_default();
            // What it said: the line of its output that names the error.
            let said = f
                .line
                .as_deref()
                .map(|l| format!(": {}", quote_at_most(l, MAX_FAILURE_CHARS)))
                .unwrap_or_default();
            format!("; it ended with {what} failing{status}{said}")
        });
        let short: String = s.session_id.chars().take(8).collect();
        for f in changed {
            if !seen.insert(f.path.clone()) {
                continue;
            }
            let shown = memhook_core::record::relative_to(&f.path, root.as_deref());
            let at = rfc3339_ms(f.last_ms);
            let line = format!(
                "{shown}: changed {} {} UTC by {} in session {short}{}{}",
                &at[..10],
                &at[11..16],
                s.agent,
                goal.as_ref()
                    .map(|g| format!(" (goal: {g})"))
                    .unwrap_or_default(),
                failure.clone().unwrap_or_default(),
            );
            out.push((f.path, line));
        }
    }
    Ok(out)
}

/// `text`'s first line in quotes, at most [`MAX_GOAL_CHARS`] characters.
fn quote(text: &str) -> String {
    quote_at_most(text, MAX_GOAL_CHARS)
}

/// `text`'s first line in quotes, at most `max` characters.
fn quote_at_most(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let mut q: String = line.chars().take(max).collect();
    if line.chars().count() > max {
        q.push('…');
    }
    format!("\"{q}\"")
}

/// How many times [`rewrite`] composes a project's file again when a
/// commit came between its snapshot and its write, before it removes the
/// file instead.
pub const REWRITE_TRIES: usize = 3;

/// Write the file history of `scope` in `store`'s data dir again from what
/// the store holds now (an empty history removes the file). Called after a
/// delivery that touched a file of the project, and after a retention
/// slice removed records of it: no file history quotes a record the store
/// no longer has.
///
/// Another process can commit between the snapshot the lines come from
/// and the write (retention runs in the idle drainer, outside the drain
/// lock), so the store's generation is read before the snapshot and again
/// after the write: when it moved, the lines are composed again, and after
/// [`REWRITE_TRIES`] the file is removed. A history file that cannot be
/// composed or written is removed too (the next delivery writes it).
pub fn rewrite(store: &crate::sqlite::Store, scope: (&str, &str)) {
    use memhook_core::briefing_cache::generation;
    let dir = store.data_dir();
    let (ws, pj) = scope;
    for _ in 0..REWRITE_TRIES {
        // No generation: nothing tells a snapshot is still current.
        let Some(before) = generation(dir) else {
            break;
        };
        let Ok(lines) = store.read(|s| lines(s, scope)) else {
            break;
        };
        if memhook_core::history::write(dir, ws, pj, &lines).is_err() {
            break;
        }
        if generation(dir).as_deref() == Some(before.as_str()) {
            return;
        }
    }
    let _ = memhook_core::history::write(dir, ws, pj, &[]);
}
