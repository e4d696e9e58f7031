//! The test dependencies beyond Rust are all installed (or, locally, one
//! line says which are not): see [`crate::support::deps`].

use crate::support::deps::{
    browser_missing, browser_missing_in, find_agent_cli, find_pg_bin, find_python_mcp, in_ci, say,
    AGENT_CLIS,
};

/// The dependency check names exactly what of the browser pair is
/// missing (it said "chromium and chromedriver" when only one was).
#[test]
fn the_missing_half_of_the_browser_pair_is_named() {
    let t = tempfile::tempdir().unwrap();
    let (a, b) = (t.path().join("a"), t.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let path = |dirs: &[&std::path::Path]| std::env::join_paths(dirs).unwrap();
    assert_eq!(
        browser_missing_in(&path(&[&a])),
        Some("chromium and chromedriver")
    );
    std::fs::write(a.join("chromium"), "").unwrap();
    assert_eq!(browser_missing_in(&path(&[&a])), Some("chromedriver"));
    std::fs::write(b.join("chromedriver"), "").unwrap();
    assert_eq!(browser_missing_in(&path(&[&a, &b])), None);
    assert_eq!(browser_missing_in(&path(&[&b])), Some("chromium"));
}

#[test]
fn test_dependencies_are_installed() {
    let mut missing: Vec<String> = AGENT_CLIS
        .iter()
        .filter(|c| find_agent_cli(c).is_none())
        .map(|c| format!("the {c} CLI"))
        .collect();
    if find_python_mcp().is_none() {
        missing.push("the Python MCP SDK".into());
    }
    if let Some(what) = browser_missing() {
        missing.push(what.into());
    }
    if find_pg_bin().is_none() {
        missing.push("PostgreSQL (initdb, pg_ctl)".into());
    }
    if missing.is_empty() {
        return;
    }
    let line = format!(
        "missing test dependencies: {} (install: `bash scripts/install-agent-clis.sh`, \
         `bash scripts/test-deps.sh`)",
        missing.join(", ")
    );
    assert!(!in_ci(), "{line}; with CI set this is a failure");
    say(&format!("SKIPPED the tests that need them: {line}"));
}
