//! `memhook hook`'s arguments: the clap definition (help, errors) and the
//! hand-written parse the binary tries first ([`parse_fast`]). A hook runs
//! on every agent event, and clap builds the whole command tree of every
//! subcommand before it looks at one argument; the hook's few options are
//! read here without it. Anything this parse does not fully understand
//! (help, version, an unknown or repeated option, a value clap would
//! refuse) goes to clap, so behaviour and messages stay clap's.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use clap::Args;

use crate::cmd::StrategyArg;

#[derive(Debug, Args, PartialEq, Eq)]
pub struct HookArgs {
    /// The lifecycle event, in any spelling the agent uses
    /// (SessionStart, session-start, BeforeTool, postToolUse, …).
    /// Without it the payload's `hook_event_name` is used.
    #[arg(long, value_name = "EVENT")]
    pub event: Option<String>,
    /// The agent running the hook (claude-code, codex, opencode, gemini-cli,
    /// cursor, qwen-code, copilot, kilo; other names use a generic schema).
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

/// `argv` (program name first) as `memhook [--data-dir DIR] hook
/// [OPTIONS]`, when every argument is one this parse reads exactly as clap
/// would: `--event`, `--agent`, `--server-url`, `--project-strategy` with a
/// value (`--opt VALUE` or `--opt=VALUE`), `--check-capture`, and the
/// global `--data-dir` before or after `hook`, each at most once. `None`
/// for anything else: the caller hands the command line to clap.
pub fn parse_fast(argv: &[OsString]) -> Option<(HookArgs, Option<PathBuf>)> {
    let mut args = HookArgs {
        event: None,
        agent: "generic".to_string(),
        server_url: None,
        project_strategy: None,
        check_capture: false,
    };
    let mut agent_seen = false;
    let mut data_dir: Option<PathBuf> = None;
    let mut in_hook = false;
    let mut rest = argv.iter().skip(1);
    while let Some(arg) = rest.next() {
        let bytes = arg.as_encoded_bytes();
        if !bytes.starts_with(b"--") || bytes == b"--" {
            // The subcommand, once; any other word (or `-h`, `--`) is clap's.
            if in_hook || bytes != b"hook" {
                return None;
            }
            in_hook = true;
            continue;
        }
        let (name, inline) = match bytes.iter().position(|&b| b == b'=') {
            Some(i) => (&bytes[..i], Some(&bytes[i + 1..])),
            None => (bytes, None),
        };
        if name == b"--check-capture" {
            if !in_hook || inline.is_some() || args.check_capture {
                return None;
            }
            args.check_capture = true;
            continue;
        }
        let value = match inline {
            // After an ASCII `=`: UTF-8 here, or clap says what is wrong.
            Some(v) => OsStr::new(std::str::from_utf8(v).ok()?).to_os_string(),
            None => rest.next()?.clone(),
        };
        // Values clap reads differently (or refuses): empty, or looking
        // like an option.
        let v = value.as_encoded_bytes();
        if v.is_empty() || v.starts_with(b"-") {
            return None;
        }
        match name {
            b"--data-dir" if data_dir.is_none() => data_dir = Some(PathBuf::from(value)),
            _ if !in_hook => return None,
            b"--event" if args.event.is_none() => args.event = Some(value.into_string().ok()?),
            b"--agent" if !agent_seen => {
                agent_seen = true;
                args.agent = value.into_string().ok()?;
            }
            b"--server-url" if args.server_url.is_none() => {
                args.server_url = Some(value.into_string().ok()?)
            }
            b"--project-strategy" if args.project_strategy.is_none() => {
                args.project_strategy = Some(match value.to_str()? {
                    "basename" => StrategyArg::Basename,
                    "repo-root" | "repo_root" => StrategyArg::RepoRoot,
                    _ => return None,
                })
            }
            _ => return None,
        }
    }
    in_hook.then_some((args, data_dir))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn argv(s: &str) -> Vec<OsString> {
        s.split(' ').map(Into::into).collect()
    }

    /// What clap makes of `argv`, when it is a hook command line it accepts.
    fn clap(argv: &[OsString]) -> Option<(HookArgs, Option<PathBuf>)> {
        let cli = Cli::try_parse_from(argv).ok()?;
        match cli.command {
            Command::Hook(args) => Some((args, cli.data_dir)),
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
        // Not UTF-8: clap's message.
        use std::os::unix::ffi::OsStringExt;
        let mut a = argv("memhook hook --event");
        a.push(OsString::from_vec(vec![0xff, b'x']));
        assert_eq!(parse_fast(&a), None);
    }
}
