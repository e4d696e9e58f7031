//! Shell commands: a POSIX-like splitter with no expansion, and a scanner
//! that finds every string in a command that could name a file (DESIGN §3).
//!
//! Splitting: whitespace separates words; `| & ; ( )`, a backquote and a
//! newline end a simple command; `< >` separate words; single and double
//! quotes group (so do `$'…'`, whose escapes are decoded as bash does, and
//! `$"…"`); a `$( … )` substitution stays in its word; inside double quotes `\"`,
//! `\\`, `` \` `` and `\$` escape; outside quotes a backslash escapes only
//! whitespace, an operator, a quote or a backslash (so `docs\adr\x.md`
//! keeps its separators; the word as a POSIX shell reads it, `docsadrx.md`,
//! is a candidate too).
//!
//! Every word yields itself (unless it starts with `-`), the value after its
//! first `=` (`--out=x`, `NAME=x`), the value of an attached short option
//! holding a `/` (`-fsecret/list`), and each of its brace expansions
//! (`{a,b}/x`, at most [`MAX_BRACE_EXPANSIONS`]). A word holding a
//! delimiter (whitespace, quotes, brackets, parentheses, `=`, `,`, `:`, …)
//! is also scanned for path-like tokens ([`scan_tokens`]). A word that is itself a command — the string
//! after a shell's `-c`, the arguments of `eval` and `watch`, `su -c`,
//! `env -S`, a `$( … )` or backquoted substitution — is split again, at most
//! [`MAX_SHELL_DEPTH`] levels deep. Wrappers (`env`, `sudo`, `nohup`,
//! `timeout`, `time`, `xargs`, `exec`, `command`, …) are looked through: the
//! command after their options is examined like any other. A recursive
//! search or listing anywhere is flagged, and so is an archiver (`tar`,
//! `zip -r`, `git archive`, `git cat-file --batch-all-objects`) and
//! interpreter code that walks a tree ([`WALKS`]). Which command does what
//! is one table, [`COMMANDS`].
//!
//! Windows (DESIGN §3): command names match without regard to case and
//! with or without `.exe` (`CMD.EXE`, `Get-ChildItem`); `cmd /c STRING`
//! and `powershell`/`pwsh` `-Command STRING` (and the base64 UTF-16 of
//! `-EncodedCommand`) are split again; a PowerShell `-Param:value` yields
//! its value; `Get-ChildItem -Recurse` (any prefix of `-Recurse`, or
//! `-Depth`), `dir /s`, `findstr /s` and `xcopy /s` are recursive.

use super::MAX_CANDIDATES;

/// Deepest nested command string that is split again. The command itself is
/// depth 0; the string after its `bash -c` is depth 1. A command string at
/// a deeper level is not split, and the call cannot be kept.
pub const MAX_SHELL_DEPTH: usize = 4;

/// What a command yields.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// Distinct candidate strings as written (not normalised), at most
    /// [`MAX_CANDIDATES`]; see `over`.
    pub words: Vec<String>,
    /// More than [`MAX_CANDIDATES`] distinct candidates: collection stopped.
    pub over: bool,
    /// A recursive search or listing runs somewhere in the command.
    pub recursive: bool,
    /// A command string nested deeper than [`MAX_SHELL_DEPTH`] was not split.
    pub too_deep: bool,
}

/// A shell tool's command: one string, an argv array, or several whole
/// command lines (Cline's `run_commands`).
pub enum Command<'a> {
    Line(&'a str),
    Argv(Vec<&'a str>),
    Lines(Vec<&'a str>),
}

/// Scan a whole command. An argv array is one simple command, and each of
/// its elements that holds more than one word is also split as a command
/// (so `["bash", "-lc", "<script>"]` is scanned like the script).
pub fn scan(command: &Command) -> Scan {
    let mut s = Scan::default();
    match command {
        Command::Line(line) => s.command_string(line, 0),
        Command::Lines(lines) => {
            for line in lines {
                s.command_string(line, 0);
            }
        }
        Command::Argv(argv) => {
            let owned: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
            s.simple_command(&owned, 0);
            for a in argv {
                let parts = split_commands(a).concat();
                if parts.len() != 1 || parts[0] != *a {
                    s.command_string(a, 1);
                }
            }
        }
    }
    s
}

fn ends_command(c: char) -> bool {
    matches!(c, '|' | '&' | ';' | '(' | ')' | '`' | '\n')
}

fn is_op(c: char) -> bool {
    ends_command(c) || matches!(c, '<' | '>')
}

/// Split `line` into simple commands, each a list of words.
pub fn split_commands(line: &str) -> Vec<Vec<String>> {
    let mut cmds = Vec::new();
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    // The quote just opened was `$'`: its escapes are decoded (ANSI-C).
    let mut ansi_c = false;
    while let Some(c) = chars.next() {
        match c {
            '\'' if std::mem::take(&mut ansi_c) => {
                in_word = true;
                let mut raw = String::new();
                while let Some(d) = chars.next() {
                    match d {
                        '\'' => break,
                        '\\' => {
                            raw.push('\\');
                            if let Some(e) = chars.next() {
                                raw.push(e);
                            }
                        }
                        d => raw.push(d),
                    }
                }
                cur.push_str(&ansi_c_decode(&raw));
            }
            '\'' => {
                in_word = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    cur.push(d);
                }
            }
            '"' => {
                in_word = true;
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => match chars.peek() {
                            Some(&e) if matches!(e, '"' | '\\' | '`' | '$') => {
                                cur.push(e);
                                chars.next();
                            }
                            _ => cur.push('\\'),
                        },
                        d => cur.push(d),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.peek() {
                    Some(&e) if e.is_whitespace() || is_op(e) || matches!(e, '\'' | '"' | '\\') => {
                        cur.push(e);
                        chars.next();
                    }
                    _ => cur.push('\\'),
                }
            }
            c if c.is_whitespace() || is_op(c) => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
                if ends_command(c) && !words.is_empty() {
                    cmds.push(std::mem::take(&mut words));
                }
            }
            // `$'…'` (ANSI-C: `\x72`, `\162`, `\u0072` decoded) and `$"…"`
            // quote like `'…'` and `"…"`.
            '$' if matches!(chars.peek(), Some('\'' | '"')) => {
                in_word = true;
                ansi_c = chars.peek() == Some(&'\'');
            }
            // `$( … )` stays in its word (`$(pwd)/x`), balanced.
            '$' if chars.peek() == Some(&'(') => {
                in_word = true;
                cur.push('$');
                let mut depth = 0usize;
                for d in chars.by_ref() {
                    cur.push(d);
                    match d {
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    if !words.is_empty() {
        cmds.push(words);
    }
    cmds
}

/// ASCII bytes that split a string scanned for path-like tokens.
const ASCII_DELIMS: &[u8] = b" \t\n\r\x0b\x0c'\"`()[]{}<>=,:;|&";

const fn delim_table() -> [bool; 128] {
    let mut t = [false; 128];
    let mut i = 0;
    while i < ASCII_DELIMS.len() {
        t[ASCII_DELIMS[i] as usize] = true;
        i += 1;
    }
    t
}

/// [`ASCII_DELIMS`] as a lookup table.
static IS_ASCII_DELIM: [bool; 128] = delim_table();

/// Characters that split a string scanned for path-like tokens: the ASCII
/// delimiters and any Unicode whitespace.
fn is_token_delim(c: char) -> bool {
    match u8::try_from(c) {
        Ok(b) if b < 128 => IS_ASCII_DELIM[b as usize],
        _ => c.is_whitespace(),
    }
}

fn is_quote(b: u8) -> bool {
    matches!(b, b'\'' | b'"' | b'`')
}

/// The tokens of `text` split on [`is_token_delim`], each with whether it
/// was a whole quoted literal (`'x'`, `"x"`). A drive colon (`C:\`, `C:/`)
/// and a `${NAME}` reference do not split. Works on bytes; only non-ASCII
/// characters are decoded (to find Unicode whitespace).
pub fn scan_tokens(text: &str) -> Vec<(&str, bool)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        // `${NAME}` stays one token; an unclosed `${` (or one whose `}` is
        // past a blank or a line break) is ordinary text, so it cannot hide
        // the rest of the command from the scan.
        if c == b'$' && b.get(i + 1) == Some(&b'{') {
            let close = b[i..]
                .iter()
                .position(|&d| d == b'}' || d.is_ascii_whitespace())
                .filter(|&p| b[i + p] == b'}');
            if let Some(p) = close {
                start.get_or_insert(i);
                i += p + 1;
                continue;
            }
        }
        let (delim, width) = if c < 128 {
            let drive = c == b':'
                && start.is_some_and(|s| i - s == 1 && b[s].is_ascii_alphabetic())
                && matches!(b.get(i + 1), Some(b'/' | b'\\'));
            (IS_ASCII_DELIM[c as usize] && !drive, 1)
        } else {
            let ch = text[i..].chars().next().unwrap_or(' ');
            (ch.is_whitespace(), ch.len_utf8())
        };
        if !delim {
            start.get_or_insert(i);
        } else if let Some(s) = start.take() {
            let quoted = is_quote(c) && s > 0 && b[s - 1] == c;
            out.push((&text[s..i], quoted));
        }
        i += width;
    }
    if let Some(s) = start {
        out.push((&text[s..], false));
    }
    out
}

/// Could `token` name a file? It holds a path separator or a dot, or starts
/// with `~`.
pub fn path_like(token: &str) -> bool {
    token.contains(['/', '\\', '.']) || token.starts_with('~')
}

/// How a command treats the words after its name.
#[derive(Clone, Copy)]
enum Role {
    /// Runs the rest as a command: options (those in `valued` take the next
    /// word; those in `command` take a command string), `NAME=value`
    /// assignments, then `positional` words, then the command. With one of
    /// the `inert` options it runs nothing (`command -v rg`).
    Wrapper {
        valued: &'static [&'static str],
        command: &'static [&'static str],
        positional: usize,
        inert: &'static [&'static str],
    },
    /// A shell: after an option cluster holding `c`, the first word that is
    /// not an option is a command string.
    Shell,
    /// The value of one of these options is a command string (`su -c`).
    CommandOption(&'static [&'static str]),
    /// Its arguments after its options (those in `valued` take the next
    /// word) are joined with spaces into one command string.
    Joins(&'static [&'static str]),
    /// `cmd`: everything after `/c`, `/k` or `/r` is a command string.
    Cmd,
    /// `powershell`, `pwsh`: the words after `-Command` (or the first word
    /// that is not an option) are a command string; `-EncodedCommand`'s
    /// value is one in base64 of UTF-16LE.
    PowerShell,
    /// A recursive search or listing.
    Search(Recursion),
}

/// When a search command reads recursively.
#[derive(Clone, Copy)]
enum Recursion {
    Always,
    /// A short option cluster holding one of `short`, one of the `long`
    /// words, or one of the `pairs` (option, value) as two words.
    Flags {
        short: &'static [char],
        long: &'static [&'static str],
        pairs: &'static [(&'static str, &'static str)],
    },
    /// Windows spellings, case-insensitive: cmd's `/s`, PowerShell's
    /// `-Recurse` (or any prefix of it, `-r` included) and `-Depth`; or a
    /// short option cluster holding one of `short` (GNU `dir -R`).
    Windows {
        short: &'static [char],
    },
    /// `git`: the subcommand (after global options, those in `valued`
    /// taking the next word) is one of `subs`.
    Subcommand {
        valued: &'static [&'static str],
        subs: &'static [&'static str],
    },
}

const fn wrapper(valued: &'static [&'static str], positional: usize) -> Role {
    Role::Wrapper {
        valued,
        command: &[],
        positional,
        inert: &[],
    }
}

const GREP: Role = Role::Search(Recursion::Flags {
    short: &['r', 'R'],
    long: &[
        "--recursive",
        "--dereference-recursive",
        "--directories=recurse",
    ],
    pairs: &[("-d", "recurse"), ("--directories", "recurse")],
});

/// Commands the scanner looks into, by the basename of their first word.
const COMMANDS: &[(&[&str], Role)] = &[
    (
        &[
            "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh",
        ],
        Role::Shell,
    ),
    (&["eval"], Role::Joins(&[])),
    (
        &["watch"],
        Role::Joins(&["-n", "--interval", "-q", "--equexit"]),
    ),
    (
        &["su", "runuser"],
        Role::CommandOption(&["-c", "--command", "--session-command"]),
    ),
    (
        &["env"],
        Role::Wrapper {
            valued: &["-u", "--unset", "-C", "--chdir"],
            command: &["-S", "--split-string"],
            positional: 0,
            inert: &[],
        },
    ),
    (
        &["sudo", "doas"],
        wrapper(
            &[
                "-u", "--user", "-g", "--group", "-h", "--host", "-p", "--prompt", "-C", "-D",
                "-R", "-T", "-U", "-r", "-t",
            ],
            0,
        ),
    ),
    (
        &[
            "nohup", "setsid", "builtin", "unbuffer", "busybox", "chronic",
        ],
        wrapper(&[], 0),
    ),
    (
        &["command"],
        Role::Wrapper {
            valued: &[],
            command: &[],
            positional: 0,
            inert: &["-v", "-V"],
        },
    ),
    (&["exec"], wrapper(&["-a"], 0)),
    (
        &["timeout"],
        wrapper(&["-s", "--signal", "-k", "--kill-after"], 1),
    ),
    (&["time"], wrapper(&["-f", "--format", "-o", "--output"], 0)),
    (&["nice"], wrapper(&["-n", "--adjustment"], 0)),
    (
        &["ionice"],
        wrapper(&["-c", "--class", "-n", "--classdata", "-p", "--pid"], 0),
    ),
    (
        &["stdbuf"],
        wrapper(&["-i", "--input", "-o", "--output", "-e", "--error"], 0),
    ),
    (
        &["xargs"],
        wrapper(
            &[
                "-I",
                "-i",
                "-n",
                "--max-args",
                "-L",
                "--max-lines",
                "-P",
                "--max-procs",
                "-s",
                "--max-chars",
                "-d",
                "--delimiter",
                "-E",
                "-e",
                "-a",
                "--arg-file",
            ],
            0,
        ),
    ),
    (
        &[
            "rg", "ag", "ack", "fd", "fdfind", "find", "tree", "du", "rgrep",
        ],
        Role::Search(Recursion::Always),
    ),
    (&["grep", "egrep", "fgrep", "zgrep"], GREP),
    // Windows: cmd and PowerShell (names are matched lowercased).
    (&["cmd"], Role::Cmd),
    (&["powershell", "pwsh"], Role::PowerShell),
    (
        &["get-childitem", "gci", "dir", "findstr", "xcopy"],
        Role::Search(Recursion::Windows { short: &['R'] }),
    ),
    // Archivers read whole trees (and print them: `tar cf - . | tar xOf -`).
    (
        &[
            "tar", "bsdtar", "gtar", "cpio", "pax", "7z", "7za", "7zr", "rar", "jar", "ar",
        ],
        Role::Search(Recursion::Always),
    ),
    (
        &["zip"],
        Role::Search(Recursion::Flags {
            short: &['r', 'R'],
            long: &["--recurse-paths", "--recurse-patterns"],
            pairs: &[],
        }),
    ),
    (
        &["ls"],
        Role::Search(Recursion::Flags {
            short: &['R'],
            long: &["--recursive"],
            pairs: &[],
        }),
    ),
    (
        &["git"],
        Role::Search(Recursion::Subcommand {
            valued: &[
                "-C",
                "-c",
                "--git-dir",
                "--work-tree",
                "--namespace",
                "--exec-path",
            ],
            // Read every file or object of the repository.
            subs: &[
                "grep",
                "ls-files",
                "cat-file",
                "archive",
                "bundle",
                "fast-export",
            ],
        }),
    ),
];

fn role_of(word: &str) -> Option<Role> {
    let name = word.rsplit(['/', '\\']).next().unwrap_or(word);
    // Windows finds `CMD.EXE` for `cmd` and PowerShell's names ignore case;
    // a mixed-case name elsewhere is read the same (the safe direction).
    let lower;
    let name = if name.bytes().any(|b| b.is_ascii_uppercase()) || name.contains('.') {
        lower = name.to_ascii_lowercase();
        lower.strip_suffix(".exe").unwrap_or(&lower)
    } else {
        name
    };
    COMMANDS
        .iter()
        .find(|(names, _)| names.contains(&name))
        .map(|(_, r)| *r)
}

/// A short option cluster: `-x…`, not `--…`, not `-`.
fn is_short_cluster(w: &str) -> bool {
    w.len() > 1 && w.starts_with('-') && !w.starts_with("--")
}

/// `NAME=value` with a shell variable name.
fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(n, _)| {
        !n.is_empty()
            && !n.starts_with(|c: char| c.is_ascii_digit())
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The value of option `opt` at `argv[j]`, and how many words it spans:
/// `-u root` (2), `--user=root` (1), `-uroot` (1). `None` when `argv[j]` is
/// not that option.
fn option_value<'a>(argv: &'a [String], j: usize, opt: &str) -> Option<(Option<&'a str>, usize)> {
    let w = argv[j].as_str();
    if w == opt {
        return Some((argv.get(j + 1).map(String::as_str), 2));
    }
    let rest = w.strip_prefix(opt)?;
    if opt.starts_with("--") {
        rest.strip_prefix('=').map(|v| (Some(v), 1))
    } else if opt.len() == 2 && !rest.is_empty() {
        Some((Some(rest), 1))
    } else {
        None
    }
}

impl Scan {
    fn push(&mut self, w: &str) {
        if self.over || w.is_empty() || self.words.iter().any(|x| x == w) {
            return;
        }
        if self.words.len() == MAX_CANDIDATES {
            self.over = true;
            return;
        }
        self.words.push(w.to_string());
    }

    /// Split `text` as a command at nesting `depth`.
    fn command_string(&mut self, text: &str, depth: usize) {
        if self.over {
            return;
        }
        if depth > MAX_SHELL_DEPTH {
            self.too_deep = true;
            return;
        }
        for argv in split_commands(text) {
            self.simple_command(&argv, depth);
        }
    }

    fn simple_command(&mut self, argv: &[String], depth: usize) {
        for w in argv {
            self.word(w, depth);
        }
        self.structure(argv, depth);
    }

    /// The candidates of one word.
    fn word(&mut self, w: &str, depth: usize) {
        if !w.starts_with('-') {
            self.push(w);
        }
        if let Some((_, v)) = w.split_once('=') {
            self.push(v);
        }
        if is_short_cluster(w) && w.len() > 2 && w.is_char_boundary(2) && w[2..].contains('/') {
            self.push(&w[2..]);
        }
        // PowerShell's `-Path:secret\key.txt`.
        if let Some((name, v)) = w.strip_prefix('-').and_then(|r| r.split_once(':')) {
            if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric()) {
                self.push(v);
            }
        }
        if w.contains('\\') {
            // A POSIX shell reads `sec\ret` as `secret`; the word itself
            // stays a candidate for Windows paths (`C:\repo\x`).
            self.push(&unescape(w));
        }
        if w.contains('{') {
            let mut budget = MAX_BRACE_EXPANSIONS;
            self.braces(w, &mut budget);
        }
        if w.contains("$(") || w.contains('`') {
            let inner = substitutions(w);
            if inner.is_empty() {
                // Unbalanced: split what there is.
                self.command_string(w, depth + 1);
            }
            for c in inner {
                self.command_string(c, depth + 1);
            }
        }
        if w.contains(is_token_delim) {
            // Interpreter code that walks a directory tree.
            self.recursive |= WALKS.iter().any(|k| w.contains(k));
            for (t, quoted) in scan_tokens(w) {
                if quoted || path_like(t) {
                    self.push(t);
                }
            }
        }
    }

    /// Push every brace expansion of `w` (`{a,b}` groups, nested or not).
    /// More than [`MAX_BRACE_EXPANSIONS`] expansions count as past the
    /// candidate bound.
    fn braces(&mut self, w: &str, budget: &mut usize) {
        if self.over {
            return;
        }
        let Some((open, close, commas)) = brace_group(w) else {
            if *budget == 0 {
                self.over = true;
            } else {
                *budget -= 1;
                self.push(w);
            }
            return;
        };
        let mut from = open + 1;
        for end in commas.into_iter().chain(std::iter::once(close)) {
            let alt = format!("{}{}{}", &w[..open], &w[from..end], &w[close + 1..]);
            self.braces(&alt, budget);
            from = end + 1;
        }
    }

    /// Look through wrappers to the commands that run command strings or
    /// search recursively.
    fn structure(&mut self, argv: &[String], depth: usize) {
        let mut i = 0;
        while i < argv.len() && is_assignment(&argv[i]) {
            i += 1;
        }
        while let Some(role) = argv.get(i).and_then(|w| role_of(w)) {
            let rest = &argv[i + 1..];
            match role {
                Role::Wrapper {
                    valued,
                    command,
                    positional,
                    inert,
                } => {
                    let opts = rest.iter().take_while(|w| w.starts_with('-'));
                    if opts.clone().any(|w| inert.contains(&w.as_str())) {
                        return;
                    }
                    i = i + 1 + self.wrapper_options(rest, valued, command, depth) + positional;
                }
                Role::Shell => {
                    self.shell(rest, depth);
                    return;
                }
                Role::CommandOption(opts) => {
                    for j in 0..rest.len() {
                        if let Some((Some(v), _)) =
                            opts.iter().find_map(|o| option_value(rest, j, o))
                        {
                            self.command_string(v, depth + 1);
                        }
                    }
                    return;
                }
                Role::Joins(valued) => {
                    let skip = self.wrapper_options(rest, valued, &[], depth);
                    let joined = rest[skip.min(rest.len())..].join(" ");
                    self.command_string(&joined, depth + 1);
                    return;
                }
                Role::Search(how) => {
                    self.recursive |= reads_recursively(how, rest);
                    return;
                }
                Role::Cmd => {
                    self.cmd(rest, depth);
                    return;
                }
                Role::PowerShell => {
                    self.powershell(rest, depth);
                    return;
                }
            }
        }
    }

    /// Skip a wrapper's options and assignments; split the values of its
    /// command-string options. Returns how many words were skipped.
    fn wrapper_options(
        &mut self,
        rest: &[String],
        valued: &[&str],
        command: &[&str],
        depth: usize,
    ) -> usize {
        let mut j = 0;
        while j < rest.len() {
            let w = rest[j].as_str();
            if w == "--" {
                return j + 1;
            }
            if is_assignment(w) {
                j += 1;
                continue;
            }
            if !w.starts_with('-') || w == "-" {
                break;
            }
            if let Some((v, n)) = command.iter().find_map(|o| option_value(rest, j, o)) {
                if let Some(v) = v {
                    self.command_string(v, depth + 1);
                }
                j += n;
                continue;
            }
            j += valued
                .iter()
                .find_map(|o| option_value(rest, j, o))
                .map_or(1, |(_, n)| n);
        }
        j
    }

    /// `cmd [/s /q …] /c STRING`: split what follows `/c` (or `/k`, `/r`,
    /// attached or not) as one command string.
    fn cmd(&mut self, rest: &[String], depth: usize) {
        for (j, w) in rest.iter().enumerate() {
            let l = w.to_ascii_lowercase();
            if ["/c", "/k", "/r"].iter().any(|o| l.starts_with(o)) {
                let mut parts: Vec<&str> = Vec::with_capacity(rest.len() - j);
                if w.len() > 2 && w.is_char_boundary(2) {
                    parts.push(&w[2..]);
                }
                parts.extend(rest[j + 1..].iter().map(String::as_str));
                self.command_string(&parts.join(" "), depth + 1);
                return;
            }
        }
    }

    /// `powershell [options] -Command WORDS…` (or `-c`, any prefix of
    /// `-Command`, or the first word that is not an option: Windows
    /// PowerShell runs it as a command) and `-EncodedCommand B64`.
    fn powershell(&mut self, rest: &[String], depth: usize) {
        const VALUED: &[&str] = &[
            "-executionpolicy",
            "-ep",
            "-ex",
            "-windowstyle",
            "-w",
            "-outputformat",
            "-of",
            "-o",
            "-inputformat",
            "-if",
            "-i",
            "-configurationname",
            "-workingdirectory",
            "-wd",
            "-version",
            "-v",
            "-psconsolefile",
            "-custompipename",
            "-settingsfile",
            "-file",
            "-f",
        ];
        let mut j = 0;
        while let Some(w) = rest.get(j) {
            let l = w.to_ascii_lowercase();
            let l = l.split(':').next().unwrap_or("");
            if l == "-e" || l == "-ec" || (l.len() >= 3 && "-encodedcommand".starts_with(l)) {
                if let Some(script) = rest.get(j + 1).and_then(|b| decode_utf16_base64(b)) {
                    self.command_string(&script, depth + 1);
                }
                j += 2;
                continue;
            }
            if l.len() >= 2 && "-command".starts_with(l) {
                let joined = rest[j + 1..].join(" ");
                self.command_string(&joined, depth + 1);
                return;
            }
            if !w.starts_with('-') {
                self.command_string(&rest[j..].join(" "), depth + 1);
                return;
            }
            j += if VALUED.contains(&l) { 2 } else { 1 };
        }
    }

    /// `sh [options] -c STRING …`: split STRING. `-o`/`-O` (and `+o`,
    /// `--rcfile`, `--init-file`) take the next word.
    fn shell(&mut self, rest: &[String], depth: usize) {
        const VALUED: &[&str] = &["-o", "+o", "-O", "+O", "--rcfile", "--init-file"];
        let mut saw_c = false;
        let mut j = 0;
        while let Some(w) = rest.get(j) {
            j += 1;
            if VALUED.contains(&w.as_str()) {
                j += 1;
            } else if w.starts_with("--") {
            } else if is_short_cluster(w) || (w.len() > 1 && w.starts_with('+')) {
                saw_c |= w[1..].contains('c');
            } else {
                if saw_c {
                    self.command_string(w, depth + 1);
                }
                return;
            }
        }
    }
}

/// The brace expansions of `w` (`{a,b}/x` → `a/x`, `b/x`), at most
/// [`MAX_CANDIDATES`]; `None` past that bound.
pub fn expand_braces(w: &str) -> Option<Vec<String>> {
    let mut s = Scan::default();
    let mut budget = MAX_BRACE_EXPANSIONS;
    s.braces(w, &mut budget);
    (!s.over).then_some(s.words)
}

/// The commands inside `$( … )` (balanced) and `` ` … ` `` in `w`.
pub fn substitutions(w: &str) -> Vec<&str> {
    let b = w.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && b.get(i + 1) == Some(&b'(') {
            let mut depth = 0usize;
            let mut j = i + 1;
            while j < b.len() {
                match b[j] {
                    b'(' => depth += 1,
                    b')' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            if j >= b.len() {
                return Vec::new();
            }
            out.push(&w[i + 2..j]);
            i = j + 1;
        } else if b[i] == b'`' {
            let Some(end) = w[i + 1..].find('`') else {
                return Vec::new();
            };
            out.push(&w[i + 1..i + 1 + end]);
            i += end + 2;
        } else {
            i += 1;
        }
    }
    out
}

/// The text of a `$'…'` quote with its escapes decoded as bash does:
/// `\xHH`, `\NNN` (octal), `\uHHHH`, `\UHHHHHHHH`, `\n`, `\t`, … An
/// escape that decodes to nothing usable stays as written.
pub fn ansi_c_decode(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut it = raw.chars().peekable();
    let hex = |it: &mut std::iter::Peekable<std::str::Chars>, max: usize| {
        let mut v = 0u32;
        let mut n = 0;
        while n < max {
            match it.peek().and_then(|c| c.to_digit(16)) {
                Some(d) => {
                    v = v * 16 + d;
                    it.next();
                    n += 1;
                }
                None => break,
            }
        }
        (n > 0).then_some(v)
    };
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = it.next() else {
            out.push('\\');
            break;
        };
        let decoded = match e {
            'x' => hex(&mut it, 2).and_then(char::from_u32),
            'u' => hex(&mut it, 4).and_then(char::from_u32),
            'U' => hex(&mut it, 8).and_then(char::from_u32),
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match it.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            it.next();
                        }
                        None => break,
                    }
                }
                char::from_u32(v)
            }
            'n' => Some('\n'),
            't' => Some('\t'),
            'r' => Some('\r'),
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'v' => Some('\x0b'),
            '\\' | '\'' | '"' | '?' => Some(e),
            other => {
                out.push('\\');
                Some(other)
            }
        };
        if let Some(d) = decoded {
            out.push(d);
        }
    }
    out
}

/// Calls by which interpreter code (`python -c`, `node -e`, …) walks a
/// directory tree: the command reads recursively (metadata-only under an
/// active policy).
const WALKS: &[&str] = &[
    "walk(",
    "rglob(",
    "glob(",
    "iterdir(",
    "scandir(",
    "listdir(",
    "readdirSync(",
    "readdir(",
    "Find.find",
    "File::Find",
    "Dir.glob",
    "Dir[",
    "WalkDir",
];

/// Most brace expansions taken from one word (`{a,b}{c,d}` is 4).
pub const MAX_BRACE_EXPANSIONS: usize = 4 * MAX_CANDIDATES;

/// The first `{…}` group of `w` holding a top-level comma: the byte offsets
/// of its braces and of those commas.
fn brace_group(w: &str) -> Option<(usize, usize, Vec<usize>)> {
    let b = w.as_bytes();
    let mut start = 0;
    while let Some(rel) = b[start..].iter().position(|&c| c == b'{') {
        let open = start + rel;
        let (mut depth, mut commas) = (0usize, Vec::new());
        for (i, &c) in b.iter().enumerate().skip(open) {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        if !commas.is_empty() {
                            return Some((open, i, commas));
                        }
                        break;
                    }
                }
                b',' if depth == 1 => commas.push(i),
                _ => {}
            }
        }
        start = open + 1;
    }
    None
}

/// The text of PowerShell's `-EncodedCommand`: base64 (standard alphabet,
/// padding optional) of UTF-16LE. `None` when it is not that.
fn decode_utf16_base64(b64: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(b64.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in b64.trim_end_matches('=').bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            bytes.push((acc >> bits) as u8);
        }
    }
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|p| u16::from_le_bytes([p[0], p[1]]))
        .collect();
    Some(String::from_utf16_lossy(&units))
}

/// Standard base64 with padding (tests build `-EncodedCommand` values).
#[cfg(test)]
pub fn base64_for_tests(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = c
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `w` as a POSIX shell reads an unquoted backslash: `\x` is `x`.
fn unescape(w: &str) -> String {
    let mut out = String::with_capacity(w.len());
    let mut chars = w.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

fn reads_recursively(how: Recursion, rest: &[String]) -> bool {
    match how {
        Recursion::Always => true,
        Recursion::Windows { short } => rest.iter().any(|w| {
            let l = w.to_ascii_lowercase();
            l == "/s"
                || l == "-depth"
                || (l.len() >= 2 && "-recurse".starts_with(l.as_str()))
                || (is_short_cluster(w) && w[1..].contains(short))
        }),
        Recursion::Flags { short, long, pairs } => rest.iter().enumerate().any(|(j, w)| {
            (is_short_cluster(w) && w[1..].contains(short))
                || long.contains(&w.as_str())
                || pairs
                    .iter()
                    .any(|(o, v)| w == o && rest.get(j + 1).is_some_and(|n| n == v))
        }),
        Recursion::Subcommand { valued, subs } => {
            let mut j = 0;
            while let Some(w) = rest.get(j) {
                if !w.starts_with('-') {
                    return subs.contains(&w.as_str());
                }
                j += valued
                    .iter()
                    .find_map(|o| option_value(rest, j, o))
                    .map_or(1, |(_, n)| n);
            }
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        split_commands(s).concat()
    }

    fn scan_line(s: &str) -> Scan {
        scan(&Command::Line(s))
    }

    #[test]
    fn a_powershell_parameter_value_after_a_colon_is_a_candidate() {
        let s = scan_line(r"Get-Content -Path:C:\repo\secret\key.txt -Raw");
        assert!(
            s.words.iter().any(|w| w == r"C:\repo\secret\key.txt"),
            "{:?}",
            s.words
        );
        // Not for a word that only looks like one (`-x:` needs a name).
        let s = scan_line("echo -:y");
        assert!(!s.words.iter().any(|w| w == "y"), "{:?}", s.words);
    }

    #[test]
    fn operators_quotes_and_escapes() {
        assert_eq!(
            w("cat a|grep b>out;(cd x&&ls)"),
            ["cat", "a", "grep", "b", "out", "cd", "x", "ls"]
        );
        assert_eq!(
            w("cat 'a b' \"c \\\"d\\\"\" e\\ f"),
            ["cat", "a b", "c \"d\"", "e f"]
        );
        assert_eq!(w("cat docs\\adr\\x.md"), ["cat", "docs\\adr\\x.md"]);
        assert_eq!(w("echo ''"), ["echo", ""]);
        assert_eq!(w("cat<in>out 2>&1"), ["cat", "in", "out", "2", "1"]);
        assert_eq!(w("a'b'\"c\"d"), ["abcd"]);
        assert_eq!(w("  "), Vec::<String>::new());
        assert_eq!(w("unterminated 'quote"), ["unterminated", "quote"]);
    }

    #[test]
    fn simple_commands_end_at_pipes_lists_substitutions_and_newlines() {
        assert_eq!(
            split_commands("a 1 | b 2; c\nd `e` $(f)"),
            [
                vec!["a", "1"],
                vec!["b", "2"],
                vec!["c"],
                vec!["d"],
                vec!["e"],
                // A `$( … )` substitution stays in its word (`$(pwd)/x`);
                // the scanner splits its inside as a command.
                vec!["$(f)"]
            ]
        );
        // `<` and `>` only separate words.
        assert_eq!(split_commands("cat <in >out"), [vec!["cat", "in", "out"]]);
    }

    #[test]
    fn candidates_skip_flags_and_take_assignments_and_attached_values() {
        let s = scan_line("FOO=secret/x cmd --out=build/y -v file -I/usr/inc");
        assert_eq!(
            s.words,
            [
                "FOO=secret/x",
                "secret/x",
                "cmd",
                "build/y",
                "file",
                "/usr/inc"
            ]
        );
    }

    #[test]
    fn tokens_split_on_delimiters_and_know_quoted_literals() {
        assert_eq!(
            scan_tokens("print(open('a/b').read(), 'x y')"),
            [
                ("print", false),
                ("open", false),
                ("a/b", true),
                (".read", false),
                ("x", false),
                ("y", false)
            ]
        );
        assert_eq!(
            scan_tokens("HEAD:src/a.rs,C:\\x\\y ${HOME}/k"),
            [
                ("HEAD", false),
                ("src/a.rs", false),
                ("C:\\x\\y", false),
                ("${HOME}/k", false)
            ]
        );
        assert!(path_like("a.b") && path_like("a/b") && path_like("~") && path_like("C:\\x"));
        assert!(!path_like("print") && !path_like("$PWD"));
        assert_eq!(
            scan_tokens("a\u{3000}b\u{a0}é/x ${H}/y"),
            [
                ("a", false),
                ("b", false),
                ("é/x", false),
                ("${H}/y", false)
            ]
        );
        for c in [
            ' ', '\t', '\n', '\'', '"', '`', '(', ')', '[', ']', '{', '}', '<', '>', '=', ',', ':',
            ';', '|', '&', '\u{2028}',
        ] {
            assert!(is_token_delim(c), "{c:?}");
        }
        for c in ['a', '/', '\\', '.', '-', '~', '$', '*', 'é'] {
            assert!(!is_token_delim(c), "{c:?}");
        }
        // A quote ends a quoted literal only when it matches the opening one.
        assert_eq!(scan_tokens("'a\"b'"), [("a", false), ("b", false)]);
    }

    #[test]
    fn nested_command_strings_are_split() {
        for cmd in [
            "bash -c 'ls secret'",
            "sh -xec 'ls secret'",
            "eval 'ls secret'",
            "watch -n 1 'ls secret'",
            "su -c 'ls secret' root",
            "su --command='ls secret'",
            "env -S 'ls secret'",
            "sudo -u root -- sh -c 'ls secret'",
            "timeout -s KILL 5 bash -c 'ls secret'",
            "A=1 nohup env B=2 time bash -c 'ls secret'",
            "xargs -I {} sh -c 'ls secret'",
            "bash -o pipefail -c 'ls secret'",
            "echo \"$(ls secret)\"",
        ] {
            assert!(
                scan_line(cmd).words.contains(&"secret".to_string()),
                "{cmd}: {:?}",
                scan_line(cmd).words
            );
        }
        // Not a command position: only path-like tokens are taken.
        for cmd in [
            "echo 'ls secret'",
            "bash 'ls secret'",
            "timeout 'ls secret'",
        ] {
            assert!(
                !scan_line(cmd).words.contains(&"secret".to_string()),
                "{cmd}"
            );
        }
    }

    fn nest(cmd: &str, levels: usize) -> String {
        let mut s = cmd.to_string();
        for _ in 0..levels {
            s = format!("eval '{}'", s.replace('\'', "'\"'\"'"));
        }
        s
    }

    #[test]
    fn nesting_depth_bound_at_its_edge() {
        let at = scan_line(&nest("ls secret", MAX_SHELL_DEPTH));
        assert!(at.words.contains(&"secret".to_string()));
        assert!(!at.too_deep);
        let over = scan_line(&nest("ls secret", MAX_SHELL_DEPTH + 1));
        assert!(!over.words.contains(&"secret".to_string()));
        assert!(over.too_deep);
    }

    #[test]
    fn recursive_searches_and_listings() {
        for cmd in [
            "grep -r x .",
            "grep -inR x",
            "egrep --recursive x",
            "grep -d recurse x .",
            "rg x",
            "/usr/bin/find . -name y",
            "tree -L 2",
            "du -sh .",
            "ls -laR",
            "git grep x",
            "git -C sub --no-pager grep x",
            "git ls-files",
            "sudo -u me rg x",
            "cat $(fd y)",
            "bash -lc 'grep -rn x .'",
            "a | xargs -n1 grep -r x",
        ] {
            assert!(scan_line(cmd).recursive, "{cmd}");
        }
        for cmd in [
            "grep x a.txt",
            "ls -la",
            "git log --grep x",
            "git commit -m grep",
            "echo 'grep -r x'",
            "cat find",
            "command -v rg",
        ] {
            assert!(!scan_line(cmd).recursive, "{cmd}");
        }
    }

    /// Each of several command lines is scanned as a whole command (Cline's
    /// `run_commands`), not as one argv.
    #[test]
    fn several_command_lines_are_each_scanned() {
        let s = scan(&Command::Lines(vec![
            "echo hi",
            "cat secret/a.txt | wc",
            "grep -r x .",
        ]));
        assert!(s.words.iter().any(|w| w == "secret/a.txt"), "{:?}", s.words);
        assert!(s.recursive);
    }

    #[test]
    fn argv_elements_are_also_split() {
        let s = scan(&Command::Argv(vec!["bash", "-lc", "cat secret/a.txt | wc"]));
        assert!(s.words.contains(&"secret/a.txt".to_string()));
        assert!(s.words.contains(&"cat secret/a.txt | wc".to_string()));
    }

    #[test]
    fn spellings_a_shell_expands() {
        let words = |cmd: &str| scan_line(cmd).words;
        assert!(words("cat $'secret/k' $\"x/y\"").contains(&"secret/k".to_string()));
        assert!(words("cat $'a'").contains(&"a".to_string()));
        assert!(words("cat sec\\ret/k").contains(&"secret/k".to_string()));
        let w = words("cat a{b,c{d,e}}f {x} {,y}z");
        for want in ["abf", "acdf", "acef", "z", "yz", "{x}"] {
            assert!(w.contains(&want.to_string()), "{want}: {w:?}");
        }
        assert_eq!(brace_group("a{b}c"), None);
        assert_eq!(unescape("C:\\x\\\\y"), "C:x\\y");
    }

    /// Found by fuzzing (fuzz/ target `shell`): an unclosed `${` swallowed
    /// the rest of the command, line breaks included, into one token.
    #[test]
    fn an_unclosed_parameter_reference_hides_nothing() {
        let toks: Vec<&str> = scan_tokens("x \"${HOME9\"\ncat secret/key.txt")
            .into_iter()
            .map(|t| t.0)
            .collect();
        assert!(toks.contains(&"secret/key.txt"), "{toks:?}");
        let toks: Vec<&str> = scan_tokens("${A B} ${HOME}/k")
            .into_iter()
            .map(|t| t.0)
            .collect();
        assert!(toks.contains(&"${HOME}/k"), "{toks:?}");
    }

    #[test]
    fn brace_expansion_bound_at_its_edge() {
        // 2^7 = 128 = MAX_BRACE_EXPANSIONS expansions of one word, all
        // the same string: within the bound; 2^8 is past it.
        assert_eq!(MAX_BRACE_EXPANSIONS, 128);
        let at = scan_line(&format!("echo {}", "{a,a}".repeat(7)));
        assert!(!at.over, "{:?}", at.words);
        let over = scan_line(&format!("echo {}", "{a,a}".repeat(8)));
        assert!(over.over);
    }

    /// Hostile strings never panic the scanner and never break its bounds.
    #[test]
    fn hostile_input_keeps_every_bound() {
        const ALPHABET: &[&str] = &[
            "a", "/", "\\", "'", "\"", "`", "$", "(", ")", "{", "}", ",", "[", "]", "$'", "${",
            "-c", " ", "\n", "|", ";", "&", "=", ":", "C:", "é", "\u{3000}", "bash -c ", "eval ",
            "sudo ", "grep -r ", "$(", "..", "~", "*",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) as usize
        };
        for _ in 0..5_000 {
            let len = next() % 40;
            let cmd: String = (0..len)
                .map(|_| ALPHABET[next() % ALPHABET.len()])
                .collect();
            let s = scan_line(&cmd);
            assert!(s.words.len() <= MAX_CANDIDATES, "{cmd:?}");
            for (t, _) in scan_tokens(&cmd) {
                assert!(!t.is_empty(), "{cmd:?}");
            }
        }
    }

    #[test]
    fn collection_stops_past_the_candidate_bound() {
        let words: Vec<String> = (0..MAX_CANDIDATES).map(|i| format!("w{i}")).collect();
        let s = scan_line(&words.join(" "));
        assert_eq!((s.words.len(), s.over), (MAX_CANDIDATES, false));
        let s = scan_line(&format!("{} extra", words.join(" ")));
        assert_eq!((s.words.len(), s.over), (MAX_CANDIDATES, true));
    }
}
