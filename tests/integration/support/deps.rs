//! Test dependencies beyond Rust: the real agent CLIs
//! (`scripts/install-agent-clis.sh`), the official Python MCP SDK and
//! Debian's `chromium` with `chromium-driver` and PostgreSQL's server
//! binaries (`scripts/test-deps.sh`).
//!
//! In CI (`CI` set to `true`/`1`/`yes`, as CI services do and `.ci/run`
//! does) a missing dependency fails the test that needs it: a suite that
//! silently skips is a suite that silently tests nothing. Locally the test
//! is skipped, and says so on one line that `cargo test` does not swallow;
//! `deps::test_dependencies_are_installed` lists everything missing in one
//! line.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The agent CLIs the real-agent tests drive, by executable name.
pub const AGENT_CLIS: [&str; 12] = [
    "claude",
    "codex",
    "opencode",
    "gemini",
    "qwen",
    "copilot",
    "kilo",
    "claude-agent-sdk",
    "droid",
    "openhands",
    "pi",
    "cline",
];
const INSTALL_CLIS: &str =
    "run `bash scripts/install-agent-clis.sh`, or set MEMHOOK_AGENT_CLIS to its prefix";
const INSTALL_SDK: &str = "run `bash scripts/test-deps.sh` to install it into .venv";
const INSTALL_BROWSER: &str =
    "run `bash scripts/test-deps.sh` (Debian packages chromium and chromium-driver)";
/// Browser executables looked for on PATH, in order.
const BROWSERS: [&str; 3] = ["chromium", "chromium-browser", "google-chrome"];
const INSTALL_PG: &str =
    "run `bash scripts/test-deps.sh` (Debian package postgresql), or set MEMHOOK_PG_BIN to the \
     directory holding initdb and pg_ctl";

/// The directory of PostgreSQL's `initdb` and `pg_ctl`: `MEMHOOK_PG_BIN`,
/// else the newest `/usr/lib/postgresql/<version>/bin` (Debian's layout).
pub fn find_pg_bin() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("MEMHOOK_PG_BIN") {
        let dir = PathBuf::from(dir);
        return dir.join("initdb").exists().then_some(dir);
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            (bin.join("initdb").exists() && bin.join("pg_ctl").exists()).then_some((v, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, b)| b)
}

/// PostgreSQL's server binaries for `test`: see [`needed`].
pub fn pg_bin(test: &str) -> Option<PathBuf> {
    needed(
        test,
        "PostgreSQL (initdb, pg_ctl)",
        find_pg_bin(),
        INSTALL_PG,
    )
}

/// Whether the environment says this is CI.
pub fn in_ci() -> bool {
    std::env::var("CI")
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "true" | "1" | "yes"))
}

/// Where an agent CLI is installed, if it is.
pub fn find_agent_cli(name: &str) -> Option<PathBuf> {
    let prefix = std::env::var_os("MEMHOOK_AGENT_CLIS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(".agent-clis")
        });
    let p = prefix.join("node_modules/.bin").join(name);
    p.exists().then_some(p)
}

/// `.venv`'s Python, when it can import the official MCP SDK.
pub fn find_python_mcp() -> Option<PathBuf> {
    let py = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join(".venv/bin/python");
    let ok = Command::new(&py)
        .args(["-c", "import mcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(py)
}

/// The first of `names` found on PATH.
fn on_path(names: &[&str]) -> Option<PathBuf> {
    on_path_in(&std::env::var_os("PATH")?, names)
}

/// The first of `names` found in the directories of `path` (a PATH value).
fn on_path_in(path: &std::ffi::OsStr, names: &[&str]) -> Option<PathBuf> {
    names.iter().find_map(|n| {
        std::env::split_paths(path)
            .map(|d| d.join(n))
            .find(|p| p.is_file())
    })
}

/// Chromium and its WebDriver, when both are installed.
pub fn find_browser() -> Option<(PathBuf, PathBuf)> {
    Some((on_path(&BROWSERS)?, on_path(&["chromedriver"])?))
}

/// What of the browser pair is missing, named exactly: `chromium`,
/// `chromedriver` or both (None: both are there).
pub fn browser_missing() -> Option<&'static str> {
    browser_missing_in(&std::env::var_os("PATH").unwrap_or_default())
}

/// [`browser_missing`] for the PATH value `path`.
pub fn browser_missing_in(path: &std::ffi::OsStr) -> Option<&'static str> {
    match (
        on_path_in(path, &BROWSERS).is_some(),
        on_path_in(path, &["chromedriver"]).is_some(),
    ) {
        (true, true) => None,
        (true, false) => Some("chromedriver"),
        (false, true) => Some("chromium"),
        (false, false) => Some("chromium and chromedriver"),
    }
}

/// `(chromium, chromedriver)` for `test`: see [`needed`].
pub fn browser(test: &str) -> Option<(PathBuf, PathBuf)> {
    needed(
        test,
        browser_missing().unwrap_or("chromium and chromedriver"),
        find_browser(),
        INSTALL_BROWSER,
    )
}

/// The agent CLI `name` for `test`: see [`needed`].
pub fn agent_cli(test: &str, name: &str) -> Option<PathBuf> {
    needed(
        test,
        &format!("the {name} CLI"),
        find_agent_cli(name),
        INSTALL_CLIS,
    )
}

/// `.venv`'s Python with the MCP SDK for `test`: see [`needed`].
pub fn python_mcp(test: &str) -> Option<PathBuf> {
    needed(test, "the Python MCP SDK", find_python_mcp(), INSTALL_SDK)
}

/// `found`, or: in CI a failure naming `what` and the fix; locally one
/// `SKIPPED` line and `None` (the caller returns).
fn needed<T>(test: &str, what: &str, found: Option<T>, fix: &str) -> Option<T> {
    if found.is_some() {
        return found;
    }
    assert!(
        !in_ci(),
        "{test}: {what} is missing ({fix}); with CI set a missing test dependency fails"
    );
    say(&format!("SKIPPED {test}: {what} is missing ({fix})"));
    None
}

/// One line straight to the terminal: `cargo test` captures `eprintln!` of
/// passing tests, not writes to the stderr handle.
pub fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
