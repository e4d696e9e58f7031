//! The questions `install-hooks --apply` asks when a person runs it on a
//! terminal (stdin and stdout both terminals). Scripts, CI and agents never
//! see a question: off a terminal the flags decide and the defaults apply,
//! and what to run next is printed instead.

use std::io::{BufRead, IsTerminal, Write};

/// Whether a person can answer: stdin and stdout are both terminals.
pub fn on_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// Print `question`, read one line; `None` at end of input or on an error.
pub fn line(question: &str) -> Option<String> {
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "{question}");
    let _ = out.flush();
    let mut answer = String::new();
    match std::io::stdin().lock().read_line(&mut answer) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(answer.trim().to_string()),
    }
}

/// A yes/no question whose empty answer is yes; asked again (at most three
/// times) on an answer that is neither.
pub fn yes(question: &str) -> bool {
    for _ in 0..3 {
        match line(&format!("{question} [Y/n] ")).as_deref() {
            None => return false,
            Some(a) => match a.to_ascii_lowercase().as_str() {
                "" | "y" | "yes" => return true,
                "n" | "no" => return false,
                _ => say!("please answer y or n"),
            },
        }
    }
    false
}

/// Which capture mode: 1 (denylist, the default) or 2 (allowlist).
pub fn capture_mode() -> Option<super::CaptureModeArg> {
    say!("What should memhook record?");
    say!("  1) every project, except the paths a project's .ai-memory.toml excludes (denylist)");
    say!("  2) only projects with an .ai-memory.toml or `memhook enable` (allowlist)");
    for _ in 0..3 {
        match line("Choose 1 or 2 [1]: ").as_deref() {
            None => return None,
            Some("" | "1") => return Some(super::CaptureModeArg::Denylist),
            Some("2") => return Some(super::CaptureModeArg::Allowlist),
            Some(_) => say!("please answer 1 or 2"),
        }
    }
    None
}
