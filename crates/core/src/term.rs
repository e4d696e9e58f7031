//! Stored text on a terminal. Whatever wrote it (an old build, another
//! tool, a hostile client), text read back from the store or the counters
//! is hostile when shown: ANSI/OSC sequences could retitle the window,
//! clear the screen or fake output. Everything a command prints from
//! storage goes through [`line()`].

/// `n` and the noun in the right number: `1 record`, `2 records`,
/// `0 records`. `noun` is the singular; the plural adds `s` (every noun
/// counted in memhook's output takes one).
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `text` made safe for one line of terminal output: the hook's hygiene
/// (`redact::clean`: private spans, ANSI escapes, control and bidi
/// characters, secrets) and then tab, carriage return and newline turned
/// into spaces, so one stored field cannot start a fake line or overwrite
/// the one it is on.
pub fn line(text: &str) -> String {
    crate::redact::clean(text)
        .chars()
        .map(|c| {
            if matches!(c, '\t' | '\r' | '\n') {
                ' '
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_sequences_never_reach_the_terminal() {
        assert_eq!(line("fix the bug"), "fix the bug");
        let shown = line("a\x1b]0;pwned\x07b\x1b[2Jc\rd\ne\u{202e}f\u{9b}g");
        assert!(!shown.contains(|c: char| c.is_control()), "{shown:?}");
        assert!(!shown.contains('\u{202e}'), "{shown:?}");
        assert!(shown.contains('a') && shown.contains('f'), "{shown:?}");
    }
}

#[cfg(test)]
mod count_tests {
    #[test]
    fn one_is_singular_and_the_rest_plural() {
        assert_eq!(super::count(0u64, "record"), "0 records");
        assert_eq!(super::count(1u64, "session"), "1 session");
        assert_eq!(super::count(2u32, "failure"), "2 failures");
    }
}
