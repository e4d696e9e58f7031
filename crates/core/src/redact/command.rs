//! Password flags of known commands: `mysql -pSECRET`,
//! `curl -u user:SECRET`, `sshpass -p SECRET`, …

use super::{Splice, MARKER_PREFIX};

/// How a command's flag carries its secret.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FlagValue {
    /// Glued to the flag only (`mysql -pSECRET`; `-p SECRET` names a
    /// database and prompts for the password).
    Glued,
    /// Glued or as the next word (`sshpass -p SECRET`).
    GluedOrNext,
    /// `user:SECRET`, glued, after `=` or as the next word
    /// (`curl -u admin:SECRET`): the part after the first `:`.
    UserColon,
}

/// (commands, flag, how its value comes). A command word is matched on
/// its file name (`/usr/bin/mysql`), so `docker login`, `podman login`,
/// `helm registry login` all activate `login`'s flags.
const COMMAND_FLAGS: &[(&[&str], &str, FlagValue)] = &[
    (
        &[
            "mysql",
            "mysqldump",
            "mysqladmin",
            "mysqlimport",
            "mysqlcheck",
            "mysqlsh",
            "mariadb",
            "mariadb-dump",
            "mariadb-admin",
        ],
        "-p",
        FlagValue::Glued,
    ),
    (&["sshpass"], "-p", FlagValue::GluedOrNext),
    (&["redis-cli", "valkey-cli"], "-a", FlagValue::GluedOrNext),
    (&["login"], "-p", FlagValue::GluedOrNext),
    (&["curl"], "-u", FlagValue::UserColon),
    (&["curl"], "--user", FlagValue::UserColon),
    (&["curl"], "-U", FlagValue::UserColon),
    (&["curl"], "--proxy-user", FlagValue::UserColon),
];

/// A cheap test run on every word before the table is searched: the
/// length and first byte of some command of [`COMMAND_FLAGS`].
fn could_be_command(name: &[u8]) -> bool {
    const fn shortest_longest() -> (usize, usize) {
        let (mut lo, mut hi) = (usize::MAX, 0);
        let mut i = 0;
        while i < COMMAND_FLAGS.len() {
            let cmds = COMMAND_FLAGS[i].0;
            let mut j = 0;
            while j < cmds.len() {
                let n = cmds[j].len();
                if n < lo {
                    lo = n;
                }
                if n > hi {
                    hi = n;
                }
                j += 1;
            }
            i += 1;
        }
        (lo, hi)
    }
    const LENGTHS: (usize, usize) = shortest_longest();
    static FIRST: [bool; 256] = {
        let mut t = [false; 256];
        let mut i = 0;
        while i < COMMAND_FLAGS.len() {
            let cmds = COMMAND_FLAGS[i].0;
            let mut j = 0;
            while j < cmds.len() {
                t[cmds[j].as_bytes()[0] as usize] = true;
                j += 1;
            }
            i += 1;
        }
        t
    };
    (LENGTHS.0..=LENGTHS.1).contains(&name.len()) && FIRST[name[0] as usize]
}

/// Bytes at which a shell word may end (see [`word_end`]): a table, so the
/// scan over ordinary word bytes is one lookup per byte.
static WORD_STOP: [bool; 256] = {
    let mut t = [false; 256];
    let stops = b" \t\n\r\x0b\x0c;|)`\"'&\\";
    let mut i = 0;
    while i < stops.len() {
        t[stops[i] as usize] = true;
        i += 1;
    }
    t
};

/// Where a shell word outside quotes ends: at whitespace, `;`, `|`, `)`,
/// a backtick, a quote, or `&` before a blank or another `&` (a lone `&`
/// inside a word is part of it). A literal `\n`, `\r`, `\t` or `\"`
/// escape (text holding a JSON-escaped string) ends it too.
pub(super) fn word_end(b: &[u8], from: usize) -> usize {
    let mut j = from;
    loop {
        j += b[j..]
            .iter()
            .take_while(|&&c| !WORD_STOP[c as usize])
            .count();
        let next = b.get(j + 1);
        match b.get(j) {
            Some(b'&') if next.is_some_and(|n| !n.is_ascii_whitespace() && *n != b'&') => j += 1,
            Some(b'\\') if !matches!(next, Some(b'n' | b'r' | b't' | b'"')) => j += 1,
            _ => return j,
        }
    }
}

/// The value starting at `i`: a quoted string (to its closing quote, or the
/// end of the line when it is missing) or a shell word. Returns the span
/// to redact (inside the quotes) and where the word ends.
fn flag_value(b: &[u8], i: usize) -> (usize, usize, usize) {
    match b.get(i) {
        Some(&q @ (b'"' | b'\'')) => {
            let start = i + 1;
            let end = start
                + b[start..]
                    .iter()
                    .take_while(|&&c| c != q && c != b'\n' && c != b'\r')
                    .count();
            (start, end, (end + 1).min(b.len()))
        }
        _ => {
            let end = word_end(b, i);
            (i, end, end)
        }
    }
}

/// Does a shell command end at `b[j]` (flags seen so far stop applying)?
fn ends_command(b: &[u8], j: usize) -> bool {
    match b[j] {
        b'\n' | b'\r' => j == 0 || b[j - 1] != b'\\', // not a continuation
        b';' | b'|' | b'&' => true,
        b'\\' => matches!(b.get(j + 1), Some(b'n' | b'r')),
        _ => false,
    }
}

/// One pass over the words of `text`: a word naming a command of
/// [`COMMAND_FLAGS`] turns its flags on until the command ends (newline,
/// `;`, `|`, `&`); a flag that is on has its value redacted.
pub(super) fn redact_command_flags(text: &str) -> Option<String> {
    const _: () = assert!(COMMAND_FLAGS.len() <= 32);
    let b = text.as_bytes();
    let mut sp = Splice::default();
    let mut on = 0u32;
    let mut j = 0;
    while j < b.len() {
        if ends_command(b, j) {
            on = 0;
        }
        if b[j] == b'\\' && matches!(b.get(j + 1), Some(b'n' | b'r' | b't')) {
            j += 2; // a literal escape separates words
            continue;
        }
        if !(b[j].is_ascii_graphic()) || b"\"'`(;|&".contains(&b[j]) {
            j += 1;
            continue;
        }
        let end = word_end(b, j);
        if end == j {
            j += 1;
            continue;
        }
        let word = &b[j..end];
        let name = match word.iter().rposition(|&c| c == b'/') {
            Some(p) => &word[p + 1..],
            None => word,
        };
        if could_be_command(name) {
            for (k, (cmds, _, _)) in COMMAND_FLAGS.iter().enumerate() {
                if cmds.iter().any(|c| c.as_bytes() == name) {
                    on |= 1 << k;
                }
            }
        }
        let mut next = end;
        if on != 0 && word[0] == b'-' {
            if let Some((start, stop, after)) = flag_secret(b, j, end, on) {
                if start < stop && !b[start..].starts_with(MARKER_PREFIX.as_bytes()) {
                    sp.redact(text, start, stop, "password");
                }
                next = after.max(end);
            }
        }
        j = next;
    }
    sp.finish(text)
}

/// For the flag word `b[j..end]` (one of the flags in `on`), the secret:
/// (start, end, where scanning resumes).
fn flag_secret(b: &[u8], j: usize, end: usize, on: u32) -> Option<(usize, usize, usize)> {
    for (k, (_, flag, how)) in COMMAND_FLAGS.iter().enumerate() {
        if on & (1 << k) == 0 || !b[j..end].starts_with(flag.as_bytes()) {
            continue;
        }
        let g = j + flag.len();
        let long = flag.starts_with("--");
        let value_at = if g < end {
            // Glued: `-pSECRET`, `-uadmin:pw`, `--user=admin:pw`; but
            // `--username` is another flag.
            match (long, b[g]) {
                (true, b'=') => g + 1,
                (true, _) => continue,
                (false, _) => g,
            }
        } else if matches!(b.get(g), Some(b'"' | b'\'')) {
            g // `-p'SECRET'`
        } else if *how == FlagValue::Glued {
            continue;
        } else {
            // The next word, unless it is another flag.
            let n = b[g..]
                .iter()
                .take_while(|c| matches!(c, b' ' | b'\t'))
                .count();
            if n == 0 || g + n >= b.len() || b[g + n] == b'-' {
                return None;
            }
            g + n
        };
        let (start, stop, after) = flag_value(b, value_at);
        if *how == FlagValue::UserColon {
            let colon = b[start..stop].iter().position(|&c| c == b':')?;
            return Some((start + colon + 1, stop, after));
        }
        return Some((start, stop, after));
    }
    None
}
