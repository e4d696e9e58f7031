//! The test dependencies beyond Rust are all installed (or, locally, one
//! line says which are not): see [`crate::support::deps`].

use crate::support::deps::{
    find_agent_cli, find_browser, find_pg_bin, find_python_mcp, in_ci, say, AGENT_CLIS,
};

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
    if find_browser().is_none() {
        missing.push("chromium and chromedriver".into());
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
