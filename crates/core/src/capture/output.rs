//! Output lines that name an excluded path (DESIGN §3): under an active
//! policy, the lines of a kept shell or search tool's output that name a
//! path the policy excludes are removed before the output is capped.
//!
//! A line is split into tokens like any scanned string
//! ([`shell::scan_tokens`]: whitespace, quotes, brackets, `=`, `,`, `:`, …);
//! every token is a candidate, resolved against the directory the command
//! ran in (a token `a/x` or `b/x` is also checked as `x`: git's diff
//! prefixes). A token that cannot be checked (too long, relative with no
//! base) removes its line. A removed line that opens a file section (a
//! `diff …` header, `==> file <==` from `head`/`tail`) removes the section
//! up to the next header. Tokens holding `*` or `?` are not paths here.
//! When the work budget ([`MAX_OUTPUT_MATCH_WORK`]) runs out, no output is
//! kept at all.

use std::borrow::Cow;
use std::collections::HashMap;

use super::path::{self, NormPath, Unusable};
use super::policy::{MatchOutcome, Policy, MAX_OUTPUT_MATCH_WORK};
use super::{shell, spec_of, tools, ToolFamily, MAX_CANDIDATE_CHARS};
use crate::event::Event;
use crate::scope::CaptureConfig;

/// File sections: a removed line starting with the first string opens one,
/// which lasts until a line starting with one of the others.
/// Every diff header form: git's `diff --git`, `svn diff`'s `Index:`.
const SECTIONS: &[(&str, &[&str])] = &[
    ("diff ", &["diff ", "commit ", "Index: "]),
    ("Index: ", &["Index: ", "diff "]),
    ("==> ", &["==> "]),
];

/// The prefixes diff sides carry: `a/` `b/`, and with
/// `diff.mnemonicPrefix` `c/` (commit), `i/` (index), `w/` (work tree),
/// `o/` (object); `1/` `2/` for `--no-index`.
const DIFF_SIDES: &[&str] = &["a/", "b/", "c/", "i/", "w/", "o/", "1/", "2/"];

/// `line` without what tools put before a diff's lines: the graph of
/// `git log --graph` (`| `, `* `, `|/`), Gemini CLI's `Output: `, blanks.
fn undecorated(line: &str) -> &str {
    let t = line.trim_start_matches([' ', '\t', '|', '*', '/', '\\', '_']);
    t.strip_prefix("Output: ").unwrap_or(t)
}

/// The output `text` of a kept tool event with the lines that name an
/// excluded path removed; `None` when it cannot be checked (the caller then
/// keeps no output). Unchanged, and never parsed, without an active policy
/// or for tools other than shell and search tools.
pub fn filter_output<'t>(
    config: &CaptureConfig,
    event: &Event,
    family: ToolFamily,
    text: &'t str,
) -> Option<Cow<'t, str>> {
    if !matches!(config, CaptureConfig::Active { .. })
        || !matches!(
            family,
            ToolFamily::Shell | ToolFamily::SearchList | ToolFamily::Unknown
        )
    {
        return Some(Cow::Borrowed(text));
    }
    let home = super::env_home();
    let cwd = event.cwd.as_deref().and_then(super::norm_abs);
    let call = event
        .tool_name
        .as_deref()
        .and_then(|n| spec_of(&event.agent, n))
        .and_then(|(spec, _)| tools::shell_call(&spec.extract, event.tool_input.as_ref()));
    let base = match call {
        Some(call) => super::shell_base(&call, cwd.as_ref(), home.as_ref()).ok()?,
        None => cwd,
    };
    lines(config, base, home)?.filter(text)
}

/// Free text that is not a tool's output — the agent's final message, its
/// plan items — with the lines that name an excluded path removed, tokens
/// resolved against `cwd` (DESIGN §4: the agent's words pass the same
/// filters as tool output). Unchanged without an active policy; `None`
/// when it cannot be checked (the caller then keeps no text).
pub fn filter_text<'t>(
    config: &CaptureConfig,
    cwd: Option<&str>,
    text: &'t str,
) -> Option<Cow<'t, str>> {
    if !matches!(config, CaptureConfig::Active { .. }) {
        return Some(Cow::Borrowed(text));
    }
    let home = super::env_home();
    let base = cwd.and_then(super::norm_abs);
    lines(config, base, home)?.filter(text)
}

/// The line filter of an active policy; `None` when it cannot be compiled.
fn lines<'t>(
    config: &CaptureConfig,
    base: Option<NormPath>,
    home: Option<NormPath>,
) -> Option<Lines<'t>> {
    let CaptureConfig::Active {
        marker, patterns, ..
    } = config
    else {
        return None;
    };
    let marker_dir = marker
        .parent()
        .and_then(std::path::Path::to_str)
        .and_then(super::norm_abs)?;
    let policy = Policy::compile(patterns, &marker_dir, home.as_ref()).ok()?;
    Some(Lines {
        policy,
        base,
        home,
        seen: HashMap::new(),
    })
}

struct Lines<'t> {
    policy: Policy,
    base: Option<NormPath>,
    home: Option<NormPath>,
    /// Tokens already checked: does each name an excluded path?
    seen: HashMap<&'t str, bool>,
}

impl<'t> Lines<'t> {
    fn filter(mut self, text: &'t str) -> Option<Cow<'t, str>> {
        self.policy.reset_work_to(MAX_OUTPUT_MATCH_WORK);
        // Copied only from the first removed line on.
        let mut out: Option<String> = None;
        let mut section: Option<&[&str]> = None;
        let mut at = 0;
        for line in text.split_inclusive('\n') {
            let start = at;
            at += line.len();
            let bare = undecorated(line);
            if let Some(ends) = section {
                if !ends.iter().any(|e| bare.starts_with(e)) {
                    continue;
                }
                section = None;
            }
            if self.names_excluded(line)? {
                out.get_or_insert_with(|| text[..start].to_string());
                section = SECTIONS
                    .iter()
                    .find(|(start, _)| bare.starts_with(start))
                    .map(|(_, ends)| *ends);
            } else if let Some(out) = out.as_mut() {
                out.push_str(line);
            }
        }
        Some(out.map_or(Cow::Borrowed(text), Cow::Owned))
    }

    /// Does any token of `line` name an excluded path? `None` past the
    /// work budget.
    fn names_excluded(&mut self, line: &'t str) -> Option<bool> {
        for (token, _) in shell::scan_tokens(line) {
            let diff_side = DIFF_SIDES.iter().find_map(|p| token.strip_prefix(p));
            for t in std::iter::once(token).chain(diff_side) {
                if self.token_excluded(t)? {
                    return Some(true);
                }
            }
        }
        Some(false)
    }

    fn token_excluded(&mut self, token: &'t str) -> Option<bool> {
        if token.contains(['*', '?']) {
            return Some(false);
        }
        if let Some(&hit) = self.seen.get(token) {
            return Some(hit);
        }
        let hit = match path::normalize(
            token,
            self.base.as_ref(),
            self.home.as_ref(),
            MAX_CANDIDATE_CHARS,
        ) {
            Ok(p) => match self.policy.matches(&p) {
                MatchOutcome::Match => true,
                MatchOutcome::NoMatch => false,
                MatchOutcome::OverBudget => return None,
            },
            Err(Unusable::NoBase | Unusable::TooLong | Unusable::NoHome) => true,
            Err(_) => false,
        };
        // Git Bash's `/c/…` reading of the same token (path::msys_drive).
        let hit = hit
            || match path::msys_drive(token, self.base.as_ref(), MAX_CANDIDATE_CHARS) {
                Some(p) => match self.policy.matches(&p) {
                    MatchOutcome::Match => true,
                    MatchOutcome::NoMatch => false,
                    MatchOutcome::OverBudget => return None,
                },
                None => false,
            };
        self.seen.insert(token, hit);
        Some(hit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::tests::{active, bash, DEMO};
    use crate::event::normalize;
    use serde_json::json;
    use std::path::PathBuf;

    fn run(patterns: &[&str], cmd: &str, text: &str) -> Option<String> {
        filter_output(&active(patterns), &bash(cmd), ToolFamily::Shell, text).map(Cow::into_owned)
    }

    #[test]
    fn lines_naming_an_excluded_path_are_removed() {
        let out = "README.md:1:hunter\n./secret/key.txt:1:hunter2\nsrc/a.rs:2:hunter\n";
        assert_eq!(
            run(
                &["secret/**"],
                "grep -n hunter README.md src/a.rs secret/key.txt",
                out
            )
            .unwrap(),
            "README.md:1:hunter\nsrc/a.rs:2:hunter\n"
        );
        // `ls -la`: the name is the last column; the bare directory counts.
        let ls =
            "drwxr-xr-x 2 u u 4096 Nov 29 15:09 secret\n-rw-r--r-- 1 u u 24 Nov 29 15:09 README.md";
        assert_eq!(
            run(&["secret/**"], "ls -la", ls).unwrap(),
            "-rw-r--r-- 1 u u 24 Nov 29 15:09 README.md"
        );
        // Absolute, `~/` and `..` spellings are normalised like candidates.
        let abs = format!("{DEMO}/secret/k\nok\n../demo/secret/k\n");
        assert_eq!(run(&["secret/**"], "x", &abs).unwrap(), "ok\n");
        assert_eq!(
            run(&["~/.ssh/**"], "x", "~/.ssh/id_rsa: ok\nfine\n").unwrap(),
            "fine\n"
        );
    }

    #[test]
    fn free_text_loses_the_lines_naming_an_excluded_path() {
        let text = "Fixed the bug.\nThe key in secret/key.txt was hunter2\nTests pass.";
        let got = filter_text(&active(&["secret/**"]), Some(DEMO), text);
        assert_eq!(got.as_deref(), Some("Fixed the bug.\nTests pass."));
        let abs = format!("see {DEMO}/secret/k\nok");
        assert_eq!(
            filter_text(&active(&["secret/**"]), Some("/elsewhere"), &abs).as_deref(),
            Some("ok")
        );
        // Without a directory to resolve words against, no line with a
        // relative word can be checked: none is kept (fail closed).
        assert_eq!(
            filter_text(&active(&["secret/**"]), None, "ok\n/abs/x").as_deref(),
            Some("/abs/x")
        );
        // No active policy: untouched, never parsed.
        assert_eq!(
            filter_text(&CaptureConfig::Absent, Some(DEMO), text).as_deref(),
            Some(text)
        );
    }

    #[test]
    fn relative_tokens_resolve_against_the_tools_workdir() {
        let ev = normalize(
            "codex",
            None,
            &json!({"hook_event_name": "PostToolUse", "cwd": DEMO, "tool_name": "shell",
                    "tool_input": {"command": ["ls"], "workdir": "secret"}}),
        );
        let got = filter_output(&active(&["secret/**"]), &ev, ToolFamily::Shell, "key.txt\n");
        assert_eq!(got.as_deref(), Some(""));
    }

    #[test]
    fn diff_and_head_sections_of_an_excluded_file_go_whole() {
        let diff = "diff --git a/src/a.rs b/src/a.rs\n+fine\n\
                    diff --git a/secret/key.txt b/secret/key.txt\n--- a/secret/key.txt\n+hunter2\n\
                    commit 0123abc\n    message\n";
        assert_eq!(
            run(&["secret/**"], "git log -p", diff).unwrap(),
            "diff --git a/src/a.rs b/src/a.rs\n+fine\ncommit 0123abc\n    message\n"
        );
        let head = "==> secret/key.txt <==\nhunter2\n\n==> notes.md <==\nnote\n";
        assert_eq!(
            run(&["secret/**"], "head secret/key.txt notes.md", head).unwrap(),
            "==> notes.md <==\nnote\n"
        );
    }

    #[test]
    fn every_diff_header_form_removes_its_section() {
        let cases = [
            // git log --graph -p
            (
                "* commit 1\n| diff --git a/secret/key.txt b/secret/key.txt\n| +hunter2\n| diff --git a/src/a.rs b/src/a.rs\n| +fine\n",
                "* commit 1\n| diff --git a/src/a.rs b/src/a.rs\n| +fine\n",
            ),
            // diff.mnemonicPrefix
            (
                "diff --git i/secret/key.txt w/secret/key.txt\n+hunter2\ndiff --git i/src/a.rs w/src/a.rs\n+fine\n",
                "diff --git i/src/a.rs w/src/a.rs\n+fine\n",
            ),
            // Gemini CLI's shell output
            (
                "Output: diff --git a/secret/key.txt b/secret/key.txt\n+hunter2\ndiff --git a/src/a.rs b/src/a.rs\n+fine\n",
                "diff --git a/src/a.rs b/src/a.rs\n+fine\n",
            ),
            // svn diff
            (
                "Index: secret/key.txt\n===================================================================\n+hunter2\nIndex: src/a.rs\n+fine\n",
                "Index: src/a.rs\n+fine\n",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(
                run(&["secret/**"], "git log -p", text).unwrap(),
                want,
                "{text:?}"
            );
        }
    }

    #[test]
    fn untouched_without_an_active_policy_or_for_other_tools() {
        let text = "./secret/key.txt:hunter2\n";
        for cfg in [
            CaptureConfig::Absent,
            CaptureConfig::Inactive {
                marker: PathBuf::from(DEMO),
                assistant_text: true,
            },
        ] {
            let got = filter_output(&cfg, &bash("x"), ToolFamily::Shell, text).unwrap();
            assert!(matches!(got, Cow::Borrowed(t) if t == text));
        }
        // Unknown tools (MCP, BashOutput) are filtered like shell output.
        let got = filter_output(
            &active(&["secret/**"]),
            &bash("x"),
            ToolFamily::Unknown,
            text,
        );
        assert_eq!(got.as_deref(), Some(""));
        let got = filter_output(&active(&["secret/**"]), &bash("x"), ToolFamily::File, text);
        assert!(matches!(got, Some(Cow::Borrowed(_))));
        // Nothing to remove: the text is not copied.
        let got = filter_output(
            &active(&["secret/**"]),
            &bash("x"),
            ToolFamily::Shell,
            "ok\n",
        );
        assert!(matches!(got, Some(Cow::Borrowed("ok\n"))));
    }

    #[test]
    fn uncheckable_tokens_remove_their_line_and_globs_are_not_paths() {
        let long = format!("/{}", "a".repeat(MAX_CANDIDATE_CHARS));
        let text = format!("{long}\nchar *p = x?y;\n");
        assert_eq!(run(&["secret/**"], "x", &text).unwrap(), "char *p = x?y;\n");
    }

    /// A full window of a long listing under a realistic policy (three
    /// patterns apply to every name under the project) is checked, not
    /// dropped for want of budget.
    #[test]
    fn a_full_output_fits_the_budget_under_a_realistic_policy() {
        let pats = ["secret/**", "**/*.key", "**/.env", "docs/adr/**", "*.pem"];
        let mut text: String = (0..160)
            .map(|i| {
                format!(
                    "-rw-r--r-- 1 user user {} Nov 29 15:{:02} src/mod_{i}/file_{i}.rs\n",
                    1000 + i,
                    i % 60
                )
            })
            .collect();
        text.push_str("-rw------- 1 user user 64 Nov 29 15:09 src/mod_7/server.key\n");
        assert!(text.len() > 8_000);
        let got = run(&pats, "ls -la src/*", &text).expect("checked within the budget");
        assert_eq!(got.lines().count(), 160);
        assert!(!got.contains("server.key"));
    }

    #[test]
    fn past_the_work_budget_no_output_is_kept() {
        // One pattern under the cwd of 1,024 characters once rooted: every
        // distinct token costs 1,024 × its length; n tokens are one past the
        // budget, n - 1 fit.
        let pat = format!("{}*", "p".repeat(999));
        let per_token = (DEMO.len() + 1 + pat.len()) as u64 * (DEMO.len() + 5) as u64;
        let n = (MAX_OUTPUT_MATCH_WORK / per_token) as usize + 1;
        let text: String = (0..n).map(|i| format!("t{i:03}\n")).collect();
        assert!(n > 500, "the budget covers a few hundred such tokens");
        assert_eq!(run(&[pat.as_str()], "x", &text), None);
        let fits: String = (0..n - 1).map(|i| format!("t{i:03}\n")).collect();
        assert_eq!(
            run(&[pat.as_str()], "x", &fits).as_deref(),
            Some(fits.as_str())
        );
    }
}
