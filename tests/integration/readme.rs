//! README.md's first commands are a sample: this runs them as README shows
//! them (after the `cargo install` part, with the binaries this build made)
//! in a clone named `memhook`, and checks they print README's example
//! output, so the two cannot drift apart.

use std::path::PathBuf;
use std::process::Command;

use crate::support::binaries::install_copy;

fn readme() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    std::fs::read_to_string(path).unwrap()
}

/// The fenced blocks of `text` in the language `lang`, in order.
fn blocks<'a>(text: &'a str, lang: &str) -> Vec<&'a str> {
    let open = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(&open) {
        let body = &rest[i + open.len()..];
        let end = body.find("```").expect("an unclosed fence in README.md");
        out.push(body[..end].trim_end_matches('\n'));
        rest = &body[end + 3..];
    }
    out
}

/// A `recent` line with its time (`YYYY-MM-DD HH:MM:SS ±HH:MM`) and its
/// key (8 hex digits) replaced, so README's sample and a run compare.
fn shape(line: &str) -> String {
    let t: Vec<&str> = line.splitn(5, ' ').collect();
    let is_time = t.len() == 5
        && t[0].len() == 10
        && t[0].as_bytes()[4] == b'-'
        && t[1].len() == 8
        && t[1].as_bytes()[2] == b':'
        && t[2].len() == 6
        && (t[2].starts_with('+') || t[2].starts_with('-'))
        && t[3].len() == 8
        && t[3].bytes().all(|b| b.is_ascii_hexdigit());
    if is_time {
        format!("<time> <key> {}", t[4])
    } else {
        line.to_string()
    }
}

#[test]
fn readme_commands_print_what_readme_shows() {
    let text = readme();
    let sh = blocks(&text, "sh");
    // `.ci/run` runs exactly this test command.
    assert_eq!(sh[1], "cargo test --locked --workspace");
    let first = sh[0];
    let demo = first
        .strip_prefix("cargo install --locked --path crates/cli && ")
        .unwrap_or_else(|| panic!("README's first command changed shape: {first}"));
    let sample = blocks(&text, "text")[0];

    let home = tempfile::tempdir().unwrap();
    let bin = home.path().join("bin");
    install_copy(&bin);
    let clone = home.path().join("memhook");
    std::fs::create_dir_all(&clone).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(format!("exec 2>&1; {demo}"))
        .current_dir(&clone)
        .env("PWD", &clone)
        .env("PATH", path)
        .env("HOME", home.path())
        .env("AI_MEMORY_DATA_DIR", home.path().join(".memhook-data"))
        .env("TZ", "CET-1");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("AI_MEMORY_") && k != "AI_MEMORY_DATA_DIR" {
            cmd.env_remove(k);
        }
    }
    cmd.env_remove("MEMHOOK_NO_HOOK_DELIVERY");
    let out = cmd.output().unwrap();
    let raw = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{raw}");
    // The time is local, with its offset: TZ=CET-1 is +01:00, as in README.
    let last = raw.lines().last().unwrap_or_default();
    assert_eq!(last.get(19..26), Some(" +01:00"), "{raw}");
    assert_eq!(sample.lines().last().unwrap().get(19..26), Some(" +01:00"));

    let want: Vec<String> = sample.lines().map(shape).collect();
    let got: Vec<String> = raw.lines().map(shape).collect();
    // The drain raced the hook's own drainer one of the two ways README
    // describes: waited for it (the sample), or found it done.
    let finished = "memhook drain: nothing was pending: every record is already delivered";
    assert!(
        text.contains(&format!("`{finished}`")),
        "README names the other way"
    );
    let other: Vec<String> = [want[0].clone(), finished.to_string(), want[3].clone()].into();
    assert_eq!(want.len(), 4, "{sample}");
    assert!(
        got == want || got == other,
        "README.md shows:\n{}\n\nthe commands printed:\n{}",
        want.join("\n"),
        got.join("\n")
    );
}

/// Every `memhook …` command README's "Use it with your agent" part shows
/// runs as written, in order, on a fresh HOME (but `memhook ui`, which
/// starts a server and opens a browser: tests/integration/web.rs drives
/// it), and the install is really undone at the end.
#[test]
fn readme_agent_commands_run_as_written() {
    let text = readme();
    let sh = blocks(&text, "sh");
    let commands: Vec<&str> = sh[2..]
        .iter()
        .flat_map(|b| b.lines())
        .map(|l| l.split("  #").next().unwrap().trim())
        .filter(|l| l.starts_with("memhook ") && !l.starts_with("memhook ui"))
        .collect();
    for want in [
        "memhook install-hooks --agent claude-code --apply",
        "memhook install-mcp --agent claude-code --apply",
        "memhook status",
        "memhook recent",
        "memhook uninstall-hooks --agent claude-code --apply",
        "memhook install-mcp --agent claude-code --remove --apply",
    ] {
        assert!(
            commands.contains(&want),
            "README lost {want:?}: {commands:?}"
        );
    }
    let home = tempfile::tempdir().unwrap();
    let bin = home.path().join("bin");
    install_copy(&bin);
    let clone = home.path().join("memhook");
    std::fs::create_dir_all(&clone).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for c in &commands {
        let mut cmd = Command::new("bash");
        cmd.arg("-c")
            .arg(c)
            .current_dir(&clone)
            .env("PATH", &path)
            .env("HOME", home.path())
            .env("AI_MEMORY_DATA_DIR", home.path().join(".memhook-data"));
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy().into_owned();
            if (k.starts_with("AI_MEMORY_") && k != "AI_MEMORY_DATA_DIR")
                || k.starts_with("XDG_")
                || k == "CLAUDE_CONFIG_DIR"
                || k == "CODEX_HOME"
            {
                cmd.env_remove(k);
            }
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{c}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Undone: no hook left in Claude Code's settings, no MCP server.
    let settings = home.path().join(".claude/settings.json");
    let left = std::fs::read_to_string(&settings).unwrap_or_default();
    assert!(!left.contains("memhook"), "{left}");
    let mcp = std::fs::read_to_string(home.path().join(".claude.json")).unwrap_or_default();
    assert!(!mcp.contains("\"memhook\""), "{mcp}");
}
