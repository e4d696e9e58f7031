//! `memhook hook`'s clap definition (its `--help` and messages). The per-
//! event binary reads the same options without clap
//! (`memhook_hook::parse_fast`); a test below keeps the two readings equal.

use clap::Args;

use crate::cmd::StrategyArg;
use memhook_core::scope::Strategy;
use memhook_hook::HookArgs;

#[derive(Debug, Args, PartialEq, Eq)]
pub struct HookCliArgs {
    /// The lifecycle event, in any spelling the agent uses
    /// (SessionStart, session-start, BeforeTool, postToolUse, …).
    /// Without it the payload's `hook_event_name` is used.
    #[arg(long, value_name = "EVENT")]
    pub event: Option<String>,
    /// The agent running the hook (claude-code, codex, opencode, gemini-cli,
    /// cursor, qwen-code, copilot, kilo, droid, openhands, pi, cline; other names
    /// use a generic schema).
    #[arg(long, value_name = "AGENT", default_value = "generic")]
    pub agent: String,
    /// Deliver to this ai-memory compatible server instead of the embedded
    /// store [env: AI_MEMORY_HOOK_URL].
    #[arg(long, value_name = "URL")]
    pub server_url: Option<String>,
    /// Project strategy when the marker does not choose one.
    #[arg(long, value_enum, value_name = "STRATEGY")]
    pub project_strategy: Option<StrategyArg>,
    /// Print the capture decision for the payload as one JSON object and
    /// write nothing (no spool, no network, no state).
    #[arg(long)]
    pub check_capture: bool,
}

impl From<HookCliArgs> for HookArgs {
    fn from(a: HookCliArgs) -> HookArgs {
        HookArgs {
            event: a.event,
            agent: a.agent,
            server_url: a.server_url,
            project_strategy: a.project_strategy.map(|s| match s {
                StrategyArg::Basename => Strategy::Basename,
                StrategyArg::RepoRoot => Strategy::RepoRoot,
            }),
            check_capture: a.check_capture,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command};
    use clap::Parser;
    use memhook_hook::{parse_fast, HookArgs};
    use std::ffi::OsString;
    use std::path::PathBuf;

    fn argv(s: &str) -> Vec<OsString> {
        s.split(' ').map(Into::into).collect()
    }

    /// What clap makes of `argv`, when it is a hook command line it accepts.
    fn clap(argv: &[OsString]) -> Option<(HookArgs, Option<PathBuf>)> {
        let cli = Cli::try_parse_from(argv).ok()?;
        match cli.command {
            Command::Hook(args) => Some((args.into(), cli.data_dir)),
            _ => None,
        }
    }

    #[test]
    fn every_command_line_it_reads_clap_reads_the_same() {
        for line in [
            "memhook hook",
            "memhook hook --event PostToolUse --agent claude-code",
            "memhook hook --agent=codex --event=stop",
            "memhook --data-dir /d hook --event Stop --agent kilo",
            "memhook hook --event Stop --data-dir=/d --check-capture",
            "memhook hook --server-url http://127.0.0.1:9 --project-strategy repo_root",
            "memhook hook --project-strategy=basename --agent a=b",
            "memhook hook --project-strategy repo-root",
        ] {
            let a = argv(line);
            let fast = parse_fast(&a);
            assert!(fast.is_some(), "{line}");
            assert_eq!(fast, clap(&a), "{line}");
        }
    }

    #[test]
    fn anything_else_goes_to_clap() {
        for line in [
            "memhook",
            "memhook hook --help",
            "memhook hook -h",
            "memhook hook --version",
            "memhook --version hook",
            "memhook status",
            "memhook hook extra",
            "memhook hook hook",
            "memhook hook --event A --event B",
            "memhook --data-dir /a hook --data-dir /b",
            "memhook hook --agent",
            "memhook hook --event --agent x",
            "memhook hook --event=",
            "memhook hook --bogus x",
            "memhook hook --check-capture --check-capture",
            "memhook hook --check-capture=yes",
            "memhook hook --project-strategy git",
            "memhook hook -- --event x",
            "memhook --event x hook",
        ] {
            assert_eq!(parse_fast(&argv(line)), None, "{line}");
        }
        // Not UTF-8 (on Windows, not valid UTF-16): clap's message.
        #[cfg(unix)]
        let bad = {
            use std::os::unix::ffi::OsStringExt;
            OsString::from_vec(vec![0xff, b'x'])
        };
        #[cfg(windows)]
        let bad = {
            use std::os::windows::ffi::OsStringExt;
            OsString::from_wide(&[0xD800, u16::from(b'x')])
        };
        let mut a = argv("memhook hook --event");
        a.push(bad);
        assert_eq!(parse_fast(&a), None);
    }
}
