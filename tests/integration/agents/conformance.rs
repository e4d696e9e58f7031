//! docs/agents.md: the conformance table, one row per real agent program,
//! written from what the real-program test run saw.
//!
//! At the end of each agent's story the row is built from the run: the
//! program's version (asked of the program itself), the events memhook's
//! hook was called with (the shim's call log, both sessions), where the
//! briefing landed and what the agent does not give (the row of the
//! agent's table, whose briefing check has just passed). The committed row
//! must say the same, except the date of the run: a row that disagrees
//! fails the test. `MEMHOOK_UPDATE_AGENTS_DOC=1` rewrites the row instead
//! (with today's date); read the diff and commit it.

use std::fs;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use super::story::{Agent, Story};

/// Where the table is.
pub fn doc_path() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/agents.md"))
}

/// The table's header and rule.
pub const HEADER: &str = "| Agent | Program | Version tested | Events memhook sees | Where the briefing lands | What the agent does not give | Run |\n|---|---|---|---|---|---|---|";

/// Tests run in parallel: one writer of the file at a time.
static DOC: Mutex<()> = Mutex::new(());

/// One row, as its cells.
pub struct Row {
    pub cells: [String; 7],
}

impl Row {
    fn render(&self) -> String {
        format!("| {} |", self.cells.join(" | "))
    }
    /// The cells a run must agree on: all but the date.
    fn compared(&self) -> &[String] {
        &self.cells[..6]
    }
}

/// Parse a table line into a row.
fn parse(line: &str) -> Option<Row> {
    let inner = line.trim().strip_prefix('|')?.strip_suffix('|')?;
    let cells: Vec<String> = inner.split(" | ").map(|c| c.trim().to_string()).collect();
    Some(Row {
        cells: cells.try_into().ok()?,
    })
}

/// The rows of the committed table, by program (second cell).
pub fn committed_rows() -> Vec<Row> {
    let text = fs::read_to_string(doc_path()).unwrap_or_default();
    let Some((_, after)) = text.split_once(HEADER) else {
        return Vec::new();
    };
    after
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .filter_map(parse)
        .collect()
}

/// The version the program reports, its first `N.N…` word.
fn version(s: &Story) -> String {
    let a = s.agent;
    let out = Command::new(&s.exe)
        .args(a.version_args)
        .env("HOME", s.world.home())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .unwrap_or_else(|e| panic!("{} {:?}: {e}", s.exe.display(), a.version_args));
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.split(|c: char| c.is_whitespace() || c == 'v' || c == ',')
        .map(|w| w.trim_end_matches('.'))
        .find(|w| w.split('.').count() >= 3 && w.split('.').all(|p| p.parse::<u32>().is_ok()))
        .unwrap_or_else(|| panic!("no version in {:?}: {text}", a.version_args))
        .to_string()
}

/// The `--event` values memhook's hook was called with, sorted.
fn events_seen(s: &Story) -> Vec<String> {
    let log = fs::read_to_string(s.world.hook_calls()).unwrap_or_default();
    let mut seen: Vec<String> = log
        .lines()
        .filter(|l| l.ends_with(&format!("--agent {}", s.agent.id)) || l.contains("--event"))
        .filter_map(|l| {
            let mut w = l.split(' ');
            w.find(|x| *x == "--event")?;
            w.next().map(str::to_string)
        })
        .collect();
    seen.sort();
    seen.dedup();
    seen
}

/// The row this run gives for `s`'s agent.
pub fn row_of(s: &Story) -> Row {
    let a: &Agent = s.agent;
    let today =
        memhook_core::timefmt::rfc3339_ms(memhook_core::timefmt::now_ms())[..10].to_string();
    Row {
        cells: [
            a.name.to_string(),
            format!("`{}`", a.cli),
            version(s),
            events_seen(s).join(", "),
            a.lands.to_string(),
            a.not_given.to_string(),
            today,
        ],
    }
}

/// Check the committed row of this run's agent (or rewrite it under
/// `MEMHOOK_UPDATE_AGENTS_DOC`).
pub fn check_or_update(s: &Story) {
    let row = row_of(s);
    let program = row.cells[1].clone();
    let _lock = DOC.lock().unwrap_or_else(|p| p.into_inner());
    if std::env::var_os("MEMHOOK_UPDATE_AGENTS_DOC").is_some() {
        let text = fs::read_to_string(doc_path()).expect("docs/agents.md");
        let (before, after) = text
            .split_once(HEADER)
            .expect("docs/agents.md holds the conformance table header");
        let mut rows: Vec<String> = after
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with('|'))
            .map(str::to_string)
            .collect();
        let rest: Vec<&str> = after.lines().skip(1 + rows.len()).collect();
        match rows
            .iter()
            .position(|l| parse(l).is_some_and(|r| r.cells[1] == program))
        {
            Some(i) => rows[i] = row.render(),
            None => rows.push(row.render()),
        }
        let mut out = format!("{before}{HEADER}\n{}\n", rows.join("\n"));
        if !rest.is_empty() {
            out.push_str(&rest.join("\n"));
            out.push('\n');
        }
        fs::write(doc_path(), out).unwrap();
        return;
    }
    let committed = committed_rows();
    let Some(have) = committed.iter().find(|r| r.cells[1] == program) else {
        panic!(
            "docs/agents.md has no row for {program}; this run gives\n{}\n(MEMHOOK_UPDATE_AGENTS_DOC=1 writes it)",
            row.render()
        );
    };
    assert_eq!(
        have.compared(),
        row.compared(),
        "docs/agents.md disagrees with this run of {program} (MEMHOOK_UPDATE_AGENTS_DOC=1 rewrites the row)"
    );
}
