//! `memhook hook`'s arguments as the per-event binary reads them
//! ([`parse_fast`]), without clap: the hook's few options are read here,
//! and anything this parse does not fully understand (help, version, an
//! unknown or repeated option, a value clap would refuse) goes to the full
//! `memhook-cli` binary, whose clap definition gives help and messages.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use memhook_core::scope::Strategy;

/// What `memhook hook` was asked to do (its options; `memhook --help`
/// documents them, from the clap definition in the `memhook` crate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookArgs {
    /// The lifecycle event, in any spelling the agent uses; without it the
    /// payload's `hook_event_name` is used.
    pub event: Option<String>,
    /// The agent running the hook (`generic` when not given).
    pub agent: String,
    /// Deliver to this ai-memory compatible server instead of the embedded
    /// store.
    pub server_url: Option<String>,
    /// Project strategy when the marker does not choose one.
    pub project_strategy: Option<Strategy>,
    /// Print the capture decision and write nothing.
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
                    "basename" => Strategy::Basename,
                    "repo-root" | "repo_root" => Strategy::RepoRoot,
                    _ => return None,
                })
            }
            _ => return None,
        }
    }
    in_hook.then_some((args, data_dir))
}

/// Whether `argv` runs `memhook hook`: the first argument that is neither an
/// option nor the value of the global `--data-dir` is `hook`.
pub fn is_hook_invocation(argv: &[std::ffi::OsString]) -> bool {
    let mut args = argv.iter().skip(1);
    while let Some(a) = args.next() {
        let a = a.as_encoded_bytes();
        if a == b"--data-dir" {
            args.next();
        } else if !a.starts_with(b"-") {
            return a == b"hook";
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<std::ffi::OsString> {
        s.split_whitespace().map(Into::into).collect()
    }

    #[test]
    fn the_hook_path_is_recognised_after_global_options() {
        assert!(is_hook_invocation(&argv("memhook hook --bogus")));
        assert!(is_hook_invocation(&argv("memhook --data-dir /d hook")));
        assert!(is_hook_invocation(&argv("memhook --data-dir=/d --x hook")));
        assert!(!is_hook_invocation(&argv("memhook --data-dir hook")));
        assert!(!is_hook_invocation(&argv("memhook status hook")));
        assert!(!is_hook_invocation(&argv("memhook hoo")));
        assert!(!is_hook_invocation(&argv("memhook")));
    }
}
