//! The hook command memhook writes into agent configs, and the exact-shape
//! test that recognises one it wrote before.
//!
//! Shape: `<abs>/memhook [--data-dir D] hook --event E --agent A
//! [--server-url U] [--project-strategy S]`, rendered as one POSIX shell
//! string (agents run it through `sh -c`). Ownership never relies on a
//! substring: the command must split into exactly these words.

use std::path::{Path, PathBuf};

/// What an install bakes into every hook command.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Baked {
    pub exe: PathBuf,
    pub data_dir: Option<PathBuf>,
    pub server_url: Option<String>,
    /// Only `repo-root` is ever baked (basename is the default).
    pub strategy: Option<String>,
}

/// An owned hook command, parsed back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedHook {
    pub baked: Baked,
    pub event: String,
    pub agent: String,
}

/// File names that count as the memhook binary.
const BINARY_NAMES: &[&str] = &["memhook", "memhook.exe"];

impl Baked {
    /// The argv (after the binary) of `memhook [--data-dir D] <sub> …` common
    /// prefix: global flags first.
    fn global_args(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(d) = &self.data_dir {
            v.push("--data-dir".into());
            v.push(d.to_string_lossy().into_owned());
        }
        v
    }

    /// The argv after the binary for a hook command.
    pub fn hook_args(&self, event: &str, agent: &str) -> Vec<String> {
        let mut v = self.global_args();
        v.extend(["hook", "--event", event, "--agent", agent].map(String::from));
        if let Some(u) = &self.server_url {
            v.push("--server-url".into());
            v.push(u.clone());
        }
        if let Some(s) = &self.strategy {
            v.push("--project-strategy".into());
            v.push(s.clone());
        }
        v
    }

    /// The argv after the binary for the MCP server.
    pub fn mcp_args(&self) -> Vec<String> {
        let mut v = self.global_args();
        v.push("mcp".into());
        v
    }

    /// The whole hook command as one shell string.
    pub fn hook_command(&self, event: &str, agent: &str) -> String {
        self.hook_command_on(event, agent, cfg!(windows))
    }

    /// [`Baked::hook_command`] as written on Windows (`windows`) or
    /// elsewhere. On Windows Codex runs hook commands through PowerShell,
    /// where a quoted program name is a string, not a command: a program
    /// path that needs quotes (a space) gets the call operator there,
    /// `& 'C:/Program Files/memhook/memhook.exe' hook …`.
    fn hook_command_on(&self, event: &str, agent: &str, windows: bool) -> String {
        let mut words = vec![program_word(&self.exe.to_string_lossy(), windows)];
        words.extend(self.hook_args(event, agent));
        let powershell = windows && agent == "codex";
        // PowerShell has no `'\''`: a `'` inside single quotes is written
        // `''` there. Only a word holding `'` quotes differently, so every
        // other command is written as before (and found by its exact shape).
        let ps_quoting = powershell && words.iter().any(|w| w.contains('\''));
        let quote = if ps_quoting {
            powershell_quote
        } else {
            shell_quote
        };
        let cmd = words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ");
        // The call operator before a quoted program, and before any command
        // in PowerShell's quoting, whose reader it names.
        if powershell && (cmd.starts_with('\'') || ps_quoting) {
            format!("{POWERSHELL_CALL}{cmd}")
        } else {
            cmd
        }
    }
}

/// The program word of a hook command. On Windows its separators are
/// written `/`: `C:/Users/me/.cargo/bin/memhook.exe` needs no quoting, so
/// it runs the same through Git Bash (Claude Code), PowerShell (Codex),
/// where a quoted program name would be a string, not a command, and
/// `sh -c`; Windows opens the path either way. A path with a space still
/// needs quotes (docs/install.md, "Agents on Windows").
fn program_word(exe: &str, windows: bool) -> String {
    if windows {
        exe.replace('\\', "/")
    } else {
        exe.to_string()
    }
}

/// Quote one word for a POSIX shell: bare when it only holds
/// `[A-Za-z0-9-_./:@%+=,]`, else single-quoted (`'` as `'\''`).
pub fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:@%+=,".contains(&b));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Quote one word for PowerShell: bare as [`shell_quote`] leaves it, else
/// single-quoted with `'` written `''`.
fn powershell_quote(word: &str) -> String {
    match shell_quote(word) {
        q if q.starts_with('\'') => format!("'{}'", word.replace('\'', "''")),
        bare => bare,
    }
}

/// Split a shell command into words: single and double quotes and backslash
/// escapes are honoured. Anything a shell would treat as more than a simple
/// command (operators, expansions, globs, comments) yields `None`, so such a
/// command is never taken for ours.
pub fn split_words(s: &str) -> Option<Vec<String>> {
    split(s, false)
}

/// Split a PowerShell command line into words: single-quoted strings with
/// `''` for a `'`, and bare words of letters, digits, non-ASCII characters
/// and `-_./:@%+=,\`. Anything else (double quotes, `$`, backticks,
/// operators) yields `None`.
fn split_powershell_words(s: &str) -> Option<Vec<String>> {
    split(s, true)
}

/// [`split_words`], or with `powershell` [`split_powershell_words`].
fn split(s: &str, powershell: bool) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' if powershell && chars.peek() == Some(&'\'') => {
                            chars.next();
                            cur.push('\'');
                        }
                        '\'' => break,
                        ch => cur.push(ch),
                    }
                }
            }
            ch if powershell => {
                if !(ch.is_ascii_alphanumeric() || "-_./:@%+=,\\".contains(ch) || !ch.is_ascii()) {
                    return None;
                }
                in_word = true;
                cur.push(ch);
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => {
                            let n = chars.next()?;
                            if !matches!(n, '"' | '\\' | '$' | '`') {
                                cur.push('\\');
                            }
                            cur.push(n);
                        }
                        '$' | '`' => return None,
                        ch => cur.push(ch),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.push(chars.next()?);
            }
            ';' | '&' | '|' | '<' | '>' | '(' | ')' | '$' | '`' | '*' | '?' | '[' | '\n' | '\r'
            | '~' | '#' | '{' | '}' => return None,
            ch => {
                in_word = true;
                cur.push(ch);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Some(words)
}

/// Whether `word` names the memhook binary by absolute path. On Windows a
/// rooted path without a drive counts too (`/c/Users/me/.cargo/bin/memhook`
/// as Git Bash spells it, or a POSIX path in a config synced from
/// elsewhere): it is memhook's shape, so re-applying replaces it and
/// uninstalling removes it. A drive-relative `C:memhook` never counts.
pub fn is_memhook_binary(word: &str) -> bool {
    let p = Path::new(word);
    p.has_root()
        && p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| BINARY_NAMES.contains(&n))
}

/// Parse `argv` (binary first) as a memhook command: returns the baked
/// settings, the subcommand and the rest, or `None` when the shape differs.
fn parse_prefix(argv: &[String]) -> Option<(Baked, &str, &[String])> {
    let (exe, mut rest) = argv.split_first()?;
    if !is_memhook_binary(exe) {
        return None;
    }
    let mut baked = Baked {
        exe: PathBuf::from(exe),
        ..Baked::default()
    };
    if rest.first().map(String::as_str) == Some("--data-dir") {
        let d = rest.get(1)?;
        if d.is_empty() {
            return None;
        }
        baked.data_dir = Some(PathBuf::from(d));
        rest = &rest[2..];
    }
    let (sub, rest) = rest.split_first()?;
    Some((baked, sub.as_str(), rest))
}

/// Parse a hook command's argv. Exact shape or `None`.
pub fn parse_hook_argv(argv: &[String]) -> Option<OwnedHook> {
    let (mut baked, sub, mut rest) = parse_prefix(argv)?;
    if sub != "hook" {
        return None;
    }
    let (mut event, mut agent) = (None, None);
    while let [flag, value, tail @ ..] = rest {
        let slot = match flag.as_str() {
            "--event" => &mut event,
            "--agent" => &mut agent,
            "--server-url" => &mut baked.server_url,
            "--project-strategy" => &mut baked.strategy,
            _ => return None,
        };
        if slot.is_some() || value.is_empty() || value.starts_with("--") {
            return None;
        }
        *slot = Some(value.clone());
        rest = tail;
    }
    if !rest.is_empty() {
        return None;
    }
    Some(OwnedHook {
        baked,
        event: event?,
        agent: agent?,
    })
}

/// PowerShell's call operator before a quoted program path (Codex on
/// Windows, [`Baked::hook_command`]).
const POWERSHELL_CALL: &str = "& ";

/// Parse a hook command string. Exact shape or `None` (the shape may start
/// with PowerShell's `& ` before a quoted program path).
pub fn parse_hook_command(cmd: &str) -> Option<OwnedHook> {
    let words = match cmd.strip_prefix(POWERSHELL_CALL) {
        // PowerShell's form: its own quoting when a word holds `'` (written
        // `''`), which reads the same as POSIX quoting when none does.
        Some(rest) => split_powershell_words(rest)?,
        None => split_words(cmd)?,
    };
    parse_hook_argv(&words)
}

/// Parse an MCP server argv (`memhook [--data-dir D] mcp`). Exact shape or `None`.
pub fn parse_mcp_argv(argv: &[String]) -> Option<Baked> {
    let (baked, sub, rest) = parse_prefix(argv)?;
    (sub == "mcp" && rest.is_empty()).then_some(baked)
}

/// Normalise a server URL for baking: http(s) only, trailing `/` removed.
pub fn normalise_server_url(u: &str) -> Result<String, String> {
    let t = u.trim();
    let lower = t.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(format!(
            "--server-url {t:?} is not an http:// or https:// URL (example: http://127.0.0.1:49374)"
        ));
    }
    if t.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "--server-url {t:?} contains whitespace or control characters"
        ));
    }
    let host_part = &t[t.find("://").unwrap() + 3..];
    if host_part.is_empty() || host_part.starts_with('/') {
        return Err(format!("--server-url {t:?} has no host"));
    }
    if host_part.split('/').next().unwrap_or("").contains('@') {
        return Err("--server-url must not carry credentials; set AI_MEMORY_AUTH_TOKEN at install time instead (it goes to the 0600 token file)".to_string());
    }
    Ok(t.trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quote_in_a_codex_path_on_windows_is_written_as_powershell_reads_it() {
        for (exe, data) in [
            // Absolute on the machine running this test (reading a command
            // back checks that its program path is absolute).
            (
                "/c/Users/O'Brien/.cargo/bin/memhook",
                Some("/c/Users/O'Brien/data"),
            ),
            (
                "/c/Users/me/.cargo/bin/memhook",
                Some("/c/Users/O'Brien/data"),
            ),
            ("/c/Users/O'Brien/My Tools/memhook", None),
        ] {
            let b = Baked {
                exe: PathBuf::from(exe),
                data_dir: data.map(PathBuf::from),
                ..Baked::default()
            };
            let cmd = b.hook_command_on("stop", "codex", true);
            assert!(cmd.starts_with("& "), "{cmd}");
            assert!(cmd.contains("O''Brien") && !cmd.contains(r"'\''"), "{cmd}");
            let parsed = parse_hook_command(&cmd).expect(&cmd);
            assert_eq!(parsed.baked, b, "{cmd}");
            assert_eq!(
                (parsed.event.as_str(), parsed.agent.as_str()),
                ("stop", "codex")
            );
            // Other agents keep POSIX quoting (Git Bash, sh -c).
            let posix = b.hook_command_on("stop", "claude-code", true);
            assert!(posix.contains(r"'\''"), "{posix}");
            assert_eq!(parse_hook_command(&posix).unwrap().baked, b);
        }
        // PowerShell's reader refuses what it does not write.
        for bad in [
            "& 'C:/x/memhook.exe' hook --event stop --agent codex; rm x",
            "& \"C:/x/memhook.exe\" hook --event stop --agent codex",
            "& 'C:/x/memhook.exe' hook --event $e --agent codex",
            "& 'C:/x/memhook.exe hook --event stop --agent codex",
        ] {
            assert!(parse_hook_command(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn codex_on_windows_gets_the_call_operator_before_a_quoted_program() {
        let spaced = baked(r"C:\Program Files\memhook\memhook.exe");
        assert_eq!(
            spaced.hook_command_on("stop", "codex", true),
            "& 'C:/Program Files/memhook/memhook.exe' hook --event stop --agent codex"
        );
        // Claude Code runs hooks through Git Bash: no call operator.
        assert_eq!(
            spaced.hook_command_on("stop", "claude-code", true),
            "'C:/Program Files/memhook/memhook.exe' hook --event stop --agent claude-code"
        );
        // A bare path needs none; nor does any path off Windows.
        let bare = baked(r"C:\Users\me\.cargo\bin\memhook.exe");
        assert!(!bare.hook_command_on("stop", "codex", true).starts_with('&'));
        let posix = baked("/opt/my tools/memhook");
        assert!(!posix
            .hook_command_on("stop", "codex", false)
            .starts_with('&'));
        // Recognised again (re-apply, uninstall).
        let written = posix.hook_command_on("stop", "codex", true);
        assert_eq!(
            written,
            "& '/opt/my tools/memhook' hook --event stop --agent codex"
        );
        let parsed = parse_hook_command(&written).unwrap();
        assert_eq!(
            (parsed.event.as_str(), parsed.agent.as_str()),
            ("stop", "codex")
        );
        assert_eq!(parsed.baked.exe, PathBuf::from("/opt/my tools/memhook"));
        // A bare program after the call operator is PowerShell's form too
        // (written when another word holds a `'`).
        assert!(parse_hook_command("& /opt/bin/memhook hook --event stop --agent codex").is_some());
        assert!(parse_hook_command("&/opt/bin/memhook hook --event stop --agent codex").is_none());
    }

    #[test]
    fn a_windows_program_path_is_written_with_slashes_and_needs_no_quotes() {
        let exe = r"C:\Users\me\.cargo\bin\memhook.exe";
        let word = program_word(exe, true);
        assert_eq!(word, "C:/Users/me/.cargo/bin/memhook.exe");
        assert_eq!(shell_quote(&word), word);
        // Elsewhere a backslash is a file-name character: kept.
        assert_eq!(
            program_word("/opt/a\\b/memhook", false),
            "/opt/a\\b/memhook"
        );
        // With a space it is still quoted (PowerShell then needs `&`).
        assert_eq!(
            shell_quote(&program_word(r"C:\Program Files\memhook.exe", true)),
            "'C:/Program Files/memhook.exe'"
        );
    }

    fn baked(exe: &str) -> Baked {
        Baked {
            exe: PathBuf::from(exe),
            ..Baked::default()
        }
    }

    #[test]
    fn quoting_round_trips_spaces_quotes_and_non_ascii() {
        for exe in [
            "/usr/local/bin/memhook",
            "/home/u/My Tools/memhook",
            "/home/ü/bin/memhook",
            "/tmp/it's here/memhook",
            "/tmp/$HOME/\"x\"/memhook",
        ] {
            let mut b = baked(exe);
            b.data_dir = Some(PathBuf::from("/data dir/ä"));
            b.server_url = Some("http://127.0.0.1:9".into());
            let cmd = b.hook_command("session-start", "claude-code");
            let parsed = parse_hook_command(&cmd).unwrap_or_else(|| panic!("{cmd}"));
            assert_eq!(parsed.baked, b, "{cmd}");
            assert_eq!(parsed.event, "session-start");
            assert_eq!(parsed.agent, "claude-code");
        }
        assert_eq!(shell_quote("/usr/bin/memhook"), "/usr/bin/memhook");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote(""), "''");
    }

    // Acceptance check 14: ownership is the exact shape, never a substring.
    #[test]
    fn ownership_is_the_exact_shape() {
        let ours = "/opt/bin/memhook hook --event stop --agent codex";
        assert!(parse_hook_command(ours).is_some());
        for not_ours in [
            "memhook hook --event stop --agent codex", // not absolute
            "/opt/bin/memhook-helper hook --event stop --agent codex", // other binary
            "/opt/bin/memhook boot --quiet",
            "/opt/bin/memhook hook --event stop", // no agent
            "/opt/bin/memhook hook --event stop --agent codex --verbose",
            "/opt/bin/memhook hook --event stop --agent codex; rm -rf /",
            "/opt/bin/memhook hook --event stop --agent codex && echo memhook",
            "echo /opt/bin/memhook hook --event stop --agent codex",
            "X=1 /opt/bin/memhook hook --event stop --agent codex",
            "/opt/bin/memhook hook --event stop --event start --agent codex",
            "/opt/bin/memhook hook --event $E --agent codex",
            "/home/u/hooks/session-start.sh",
            "ai-memory hook --event stop --agent codex --server-url http://x",
        ] {
            assert!(parse_hook_command(not_ours).is_none(), "{not_ours}");
        }
    }

    #[test]
    fn mcp_shape() {
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(parse_mcp_argv(&argv(&["/b/memhook", "mcp"])).is_some());
        assert!(parse_mcp_argv(&argv(&["/b/memhook", "--data-dir", "/d", "mcp"])).is_some());
        assert!(parse_mcp_argv(&argv(&["/b/memhook", "mcp", "--x"])).is_none());
        assert!(parse_mcp_argv(&argv(&["/b/other", "mcp"])).is_none());
    }

    // Acceptance check 17: the server URL is baked normalised.
    #[test]
    fn server_url_normalised() {
        assert_eq!(normalise_server_url("http://h:1/").unwrap(), "http://h:1");
        assert_eq!(
            normalise_server_url("https://h/base//").unwrap(),
            "https://h/base"
        );
        assert!(normalise_server_url("ftp://h").is_err());
        assert!(normalise_server_url("http://").is_err());
        assert!(normalise_server_url("http://u:p@h").is_err());
    }
}
