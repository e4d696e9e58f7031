//! Where the work of one session stands, computed from its notes
//! ([`Note`]: stops, tool results, plans): the agent's last conclusion,
//! the plan items still open, and the failures no later success of the
//! same command (or the same tool on the same files) followed.

use memhook_core::record::words::is_open;
use memhook_core::record::{PlanItem, TOOL_ERROR_LABEL};

use crate::model::Note;

/// A failure still standing at the end of the session, with how often the
/// same one happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub tool: String,
    pub command: Option<String>,
    pub exit_code: Option<i64>,
    /// The line of its output or error that tells what failed: the first
    /// that names an error or failure, else the first.
    pub line: Option<String>,
    pub times: u64,
}

/// What the handoff says about where the work stands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Standing {
    /// The last final message of the session and its record key.
    pub conclusion: Option<(String, String)>,
    /// Open plan items' texts, in plan order.
    pub open: Vec<String>,
    /// Failures no success of the same command followed, the latest last.
    pub failures: Vec<Failure>,
    /// Failures a later success of the same command fixed (a test that
    /// failed, then passed), each shown as it last failed, in the order
    /// they were fixed.
    pub fixed: Vec<Failure>,
}

/// What makes two tool results "the same command": the command line of a
/// shell tool, else the tool and the files it touched.
fn same_call(n: &Note) -> (Option<&str>, Option<&str>, Vec<&str>) {
    match n.command.as_deref() {
        Some(c) => (Some(c), None, Vec::new()),
        None => (
            None,
            n.tool.as_deref(),
            n.files.iter().map(String::as_str).collect(),
        ),
    }
}

/// Lines of a failure's text looked at for the one that tells what failed.
const TELLING_LINES: usize = 400;

/// Words that mark the line of a tool's output that says what went wrong
/// (`error[E0308]: …`, `E   AssertionError: …`, `--- FAIL: TestX`,
/// `test x ... FAILED`, `thread 'x' panicked at …`, `npm ERR! …`), in
/// the cases tools print them: `FAIL` only in capitals (a test runner's
/// report; `fail` in prose is not taken), `failed` in lower case
/// (`assertion … failed`). A summary such as `1 failed, 2 errors` matches
/// too, but it comes after the line it sums up.
const FAILURE_WORDS: &[&str] = &[
    "error",
    "Error",
    "ERROR",
    "ERR!",
    "FAIL",
    "failed",
    "panicked",
    "Exception",
    "fatal",
    "Fatal",
    "FATAL",
];

/// Lines that describe the call rather than what it printed (Gemini CLI's
/// and Qwen Code's shell results: `Command: …`, `Directory: …`, `Process
/// Group PGID: …`), after memhook's own `error: ` label of a tool error:
/// never the line shown.
const CALL_LINES: &[&str] = &[
    "Command: ",
    "Directory: ",
    "Signal: ",
    "Background PIDs: ",
    "Process Group PGID: ",
];

/// Values that say a field is empty (`Error: (none)`, `Output: (empty)`):
/// a line ending in one is never the line shown.
const EMPTY_VALUES: &[&str] = &["(none)", "(empty)"];

/// What a failure's text says: the exit status a line states alone
/// (Claude Code's `Exit code 1` before the output, Qwen Code's `Exit Code:
/// 3` after it), and the line that tells what failed — the first that
/// holds one of [`FAILURE_WORDS`] and is more than a heading (`===
/// FAILURES ===`, `failures:`), else the first line of the output. Lines
/// that describe the call ([`CALL_LINES`]), hold an empty value
/// ([`EMPTY_VALUES`]) or are a wrapping tag alone are passed over, and
/// memhook's own `error: ` label of a tool error is not shown.
fn telling(text: &str) -> (Option<i64>, Option<String>) {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(TELLING_LINES)
        .collect();
    let mut stated = None;
    let mut output = Vec::new();
    for (i, &l) in lines.iter().enumerate() {
        let bare = l.strip_prefix(TOOL_ERROR_LABEL).unwrap_or(l);
        match super::exit_status(bare) {
            Some((code, rest)) if rest.is_empty() => {
                stated = stated.or(Some(code));
                continue;
            }
            // `Exit Code: 2 - no such file` first: the line says it all.
            Some(_) if i == 0 => return (None, Some(bare.to_string())),
            _ => {}
        }
        // A wrapping tag alone (Gemini CLI's `<untrusted_context>`).
        let tag = bare.starts_with('<') && bare.ends_with('>') && !bare.contains(' ');
        if tag
            || CALL_LINES.iter().any(|p| bare.starts_with(p))
            || EMPTY_VALUES.iter().any(|v| bare.ends_with(v))
        {
            continue;
        }
        output.push(bare);
    }
    let heading = |l: &str| {
        !l.trim_matches(|c: char| c.is_whitespace() || "=-_*#:[]()".contains(c))
            .contains(char::is_whitespace)
    };
    let line = output
        .iter()
        .find(|l| FAILURE_WORDS.iter().any(|w| l.contains(w)) && !heading(l))
        .or(output.first())
        .map(|l| l.to_string());
    (stated, line)
}

/// The plan after every plan note, in order: a whole list replaces it; an
/// item change updates the item of its id (or adds it).
fn plan(notes: &[Note]) -> Vec<PlanItem> {
    let mut items: Vec<PlanItem> = Vec::new();
    for plan in notes.iter().filter_map(|n| n.plan.as_ref()) {
        if plan.full {
            items = plan.items.clone();
            continue;
        }
        for change in &plan.items {
            let at = change
                .id
                .as_ref()
                .and_then(|id| items.iter().position(|i| i.id.as_ref() == Some(id)));
            match at {
                Some(i) => {
                    if !change.status.is_empty() {
                        items[i].status = change.status.clone();
                    }
                    if change.text.is_some() {
                        items[i].text = change.text.clone();
                    }
                }
                None => items.push(PlanItem {
                    status: if change.status.is_empty() {
                        "pending".into()
                    } else {
                        change.status.clone()
                    },
                    ..change.clone()
                }),
            }
        }
    }
    items
}

/// Where the work of the session whose `notes` these are stands.
pub fn standing(notes: &[Note]) -> Standing {
    let conclusion = crate::model::conclusion(notes);
    let open = plan(notes)
        .into_iter()
        .filter(|i| is_open(&i.status))
        .filter_map(|i| i.text)
        .collect();
    let mut standing: Vec<&Note> = Vec::new();
    let mut fixed: Vec<Failure> = Vec::new();
    for n in notes.iter().filter(|n| n.event != "stop") {
        if n.failed {
            standing.push(n);
        } else if n.succeeded {
            let call = same_call(n);
            let (was, still): (Vec<&Note>, Vec<&Note>) =
                standing.into_iter().partition(|f| same_call(f) == call);
            standing = still;
            if let Some(last) = was.last() {
                let f = failure(last, was.len() as u64);
                fixed.retain(|g| !(g.tool == f.tool && g.command == f.command && g.line == f.line));
                fixed.push(f);
            }
        }
    }
    let mut failures: Vec<Failure> = Vec::new();
    for n in standing {
        let f = failure(n, 1);
        // The same failure again (the same command; without one, the same
        // tool and message): counted, shown as it last happened.
        let same = |g: &Failure| {
            g.tool == f.tool && g.command == f.command && (f.command.is_some() || g.line == f.line)
        };
        if let Some(i) = failures.iter().position(same) {
            let g = failures.remove(i);
            failures.push(Failure {
                times: g.times + 1,
                ..f
            });
        } else {
            failures.push(f);
        }
    }
    Standing {
        conclusion,
        open,
        failures,
        fixed,
    }
}

/// The failure a tool result `n` reports, seen `times` times.
fn failure(n: &Note, times: u64) -> Failure {
    let (stated, line) = n.text.as_deref().map(telling).unwrap_or_default();
    Failure {
        tool: n.tool.clone().unwrap_or_else(|| "tool".into()),
        command: n.command.clone(),
        exit_code: n.exit_code.or(stated),
        line,
        times,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line a briefing shows of a failure, from outputs as the tools
    /// print them (Claude Code's `error` field puts `Exit code N` first:
    /// shared/fixtures, PostToolUseFailure-Bash-exit1.json).
    #[test]
    fn the_telling_line_of_a_failure() {
        let t = |text: &str| telling(text);
        let some = |code: Option<i64>, line: &str| (code, Some(line.to_string()));
        // The real fixture: the status first, then the output.
        assert_eq!(t("Exit code 1\nfailing"), some(Some(1), "failing"));
        assert_eq!(
            t("Exit code 101\n   Compiling demo v0.1.0\nrunning 2 tests\ntest tests::parses ... ok\n\
               test tests::week53 ... FAILED\n\nfailures:\n\n---- tests::week53 stdout ----\n\
               thread 'tests::week53' panicked at src/lib.rs:12:9:\ntest result: FAILED. 1 passed"),
            some(Some(101), "test tests::week53 ... FAILED")
        );
        // pytest: past its headings to the assertion.
        assert_eq!(
            t(
                "F.\n=================== FAILURES ===================\n____ test_week53 ____\n\
               >       assert week(d) == 53\nE       AssertionError: assert 52 == 53\n\
               1 failed, 1 passed in 0.05s"
            ),
            some(None, "E       AssertionError: assert 52 == 53")
        );
        assert_eq!(
            t("--- FAIL: TestWeek53 (0.00s)\n    week_test.go:9: got 52\nFAIL\nFAIL\tdemo\t0.01s"),
            some(None, "--- FAIL: TestWeek53 (0.00s)")
        );
        assert_eq!(
            t(
                "Traceback (most recent call last):\n  File \"w.py\", line 3, in <module>\n\
               ValueError: bad week"
            ),
            some(None, "ValueError: bad week")
        );
        // No marker: the first line, as before.
        assert_eq!(
            t("File does not exist. Note: your current working directory is /w.\nmore"),
            some(
                None,
                "File does not exist. Note: your current working directory is /w."
            )
        );
        // A status with its message on one line, or alone: that line.
        assert_eq!(
            t("Exit Code: 2 - no such file\nerror: other"),
            some(None, "Exit Code: 2 - no such file")
        );
        assert_eq!(t("Exit code 1"), (Some(1), None));
        // Qwen Code's failing shell command (shared/fixtures,
        // PostToolUseFailure-run_shell_command-exit3.json), as the record
        // keeps it: the call and empty fields passed over, the status read.
        assert_eq!(
            t(
                "error: Command: echo CAP-FAIL; exit 3\nDirectory: (root)\nOutput: CAP-FAIL\n\
               Error: (none)\nExit Code: 3\nSignal: (none)\nProcess Group PGID: (none)"
            ),
            some(Some(3), "Output: CAP-FAIL")
        );
        // Gemini CLI's failing shell command (AfterTool-run_shell_command-
        // exit1.json), as the record keeps its `llmContent`.
        assert_eq!(
            t(
                "<untrusted_context>\nOutput: failing\nExit Code: 1\nProcess Group PGID: 17017\n\
               </untrusted_context>"
            ),
            some(Some(1), "Output: failing")
        );
        assert_eq!(
            t(
                "<untrusted_context>\nOutput: (empty)\nExit Code: 2\nProcess Group PGID: 9\n\
               </untrusted_context>"
            ),
            (Some(2), None)
        );
        assert_eq!(t(" \n \n"), (None, None));
        // memhook's label of a tool error is not part of what it says.
        assert_eq!(t("error: No match found"), some(None, "No match found"));
    }
    use memhook_core::record::RecordPlan;

    fn tool(key: &str, cmd: Option<&str>, file: &str, ok: Option<bool>) -> Note {
        Note {
            key: key.into(),
            event: "post-tool-use".into(),
            tool: Some(if cmd.is_some() { "Bash" } else { "Edit" }.into()),
            failed: ok == Some(false),
            succeeded: ok == Some(true),
            command: cmd.map(str::to_string),
            files: file
                .split(' ')
                .filter(|f| !f.is_empty())
                .map(str::to_string)
                .collect(),
            text: (ok == Some(false)).then(|| format!("\nboom {key}\nmore")),
            exit_code: (ok == Some(false)).then_some(1),
            ..Note::default()
        }
    }

    fn plan_note(full: bool, items: &[(Option<&str>, Option<&str>, &str)]) -> Note {
        Note {
            event: "post-tool-use".into(),
            succeeded: true,
            tool: Some("TodoWrite".into()),
            plan: Some(RecordPlan {
                full,
                items: items
                    .iter()
                    .map(|(id, text, status)| PlanItem {
                        id: id.map(str::to_string),
                        text: text.map(str::to_string),
                        status: status.to_string(),
                    })
                    .collect(),
            }),
            ..Note::default()
        }
    }

    #[test]
    fn a_failure_fixed_by_the_same_command_is_not_standing() {
        let notes = [
            tool("1", Some("cargo test"), "", Some(false)),
            tool("2", Some("cargo build"), "", Some(false)),
            tool("3", Some("cargo test"), "", Some(true)),
            tool("4", None, "/w/a.rs", Some(false)),
            tool("5", None, "/w/b.rs", Some(true)),
            // Unknown outcome (Codex's shell): neither fails nor fixes.
            tool("6", Some("cargo build"), "", None),
            tool("7", Some("cargo build"), "", Some(false)),
        ];
        let s = standing(&notes);
        let shown: Vec<(Option<&str>, u64)> = s
            .failures
            .iter()
            .map(|f| (f.command.as_deref(), f.times))
            .collect();
        assert_eq!(shown, [(None, 1), (Some("cargo build"), 2)]);
        assert_eq!(s.failures[0].line.as_deref(), Some("boom 4"));
        assert_eq!(s.failures[1].exit_code, Some(1));
        // `cargo test` failed, then passed.
        let fixed: Vec<(Option<&str>, u64)> = s
            .fixed
            .iter()
            .map(|f| (f.command.as_deref(), f.times))
            .collect();
        assert_eq!(fixed, [(Some("cargo test"), 1)]);
        assert_eq!(s.fixed[0].line.as_deref(), Some("boom 1"));
        // Fixed afterwards: nothing stands; each shows as failed, then passed.
        let mut more = notes.to_vec();
        more.push(tool("8", Some("cargo build"), "", Some(true)));
        more.push(tool("9", None, "/w/a.rs", Some(true)));
        let s = standing(&more);
        assert!(s.failures.is_empty());
        let fixed: Vec<(Option<&str>, u64)> = s
            .fixed
            .iter()
            .map(|f| (f.command.as_deref(), f.times))
            .collect();
        assert_eq!(
            fixed,
            [(Some("cargo test"), 1), (Some("cargo build"), 2), (None, 1)]
        );
    }

    #[test]
    fn open_items_follow_lists_and_changes() {
        let notes = [
            plan_note(
                true,
                &[(None, Some("old"), "pending"), (None, Some("gone"), "done")],
            ),
            plan_note(
                true,
                &[
                    (Some("1"), Some("fix bug"), "done"),
                    (Some("2"), Some("add CLI"), "in-progress"),
                ],
            ),
            plan_note(false, &[(Some("3"), Some("write docs"), "pending")]),
            plan_note(false, &[(Some("3"), None, "deleted")]),
            plan_note(false, &[(Some("4"), Some("ship"), "")]),
            plan_note(false, &[(Some("2"), Some("add the CLI"), "")]),
        ];
        assert_eq!(standing(&notes).open, ["add the CLI", "ship"]);
    }

    #[test]
    fn the_conclusion_is_the_last_final_message() {
        let stop = |key: &str, text: Option<&str>| Note {
            key: key.into(),
            event: "stop".into(),
            text: text.map(str::to_string),
            ..Note::default()
        };
        let s = standing(&[
            stop("a", Some("first")),
            stop("b", Some("second")),
            stop("c", None),
        ]);
        assert_eq!(s.conclusion, Some(("second".into(), "b".into())));
        assert_eq!(standing(&[stop("c", None)]).conclusion, None);
    }
}
