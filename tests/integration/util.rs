//! Shared helpers for integration tests.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Path of the memhook binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_memhook"))
}

/// Install the two binaries a user installs (`memhook` and the
/// `memhook-cli` it hands other commands to) into `dir`, as
/// `cargo install` does; the path of the copied `memhook`.
pub fn install_copy(dir: &Path) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let exe = dir.join("memhook");
    fs::copy(bin(), &exe).unwrap();
    fs::copy(full_bin(), dir.join("memhook-cli")).unwrap();
    exe
}

/// Path of the `memhook-cli` binary under test (every command but the
/// per-event ones; `memhook` execs it).
pub fn full_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_memhook-cli"))
}

/// A `memhook` command with a clean environment: HOME and the data dir point
/// into `home`, and no `AI_MEMORY_*` variable leaks in from the caller.
pub fn memhook(home: &Path) -> Command {
    let mut c = Command::new(bin());
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("AI_MEMORY_") || k == "XDG_DATA_HOME" {
            c.env_remove(k);
        }
    }
    c.env("HOME", home);
    c.env("AI_MEMORY_DATA_DIR", home.join(".memhook-data"));
    c
}

/// Run `cmd` with `stdin` bytes; return its output.
pub fn run_with_stdin(mut cmd: Command, stdin: &[u8]) -> Output {
    use std::io::Write;
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn memhook");
    let mut sin = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let w = std::thread::spawn(move || {
        let _ = sin.write_all(&data);
    });
    let out = child.wait_with_output().expect("wait memhook");
    let _ = w.join();
    out
}

/// Path of a file under the repository's `fixtures/`.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("fixtures")
        .join(rel)
}

/// The real Claude Code fixture payload `name` for `session`, its paths
/// moved from `/home/dev` into `home` (its working directory created).
pub fn claude_payload(name: &str, home: &Path, session: &str) -> serde_json::Value {
    let text = fs::read_to_string(fixture(&format!("agents/claude-code/2.1.328/{name}.json")))
        .unwrap()
        .replace("/home/dev", home.to_str().unwrap());
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    fs::create_dir_all(v["cwd"].as_str().unwrap()).unwrap();
    v["session_id"] = session.into();
    v
}

/// Every regular file under `dir` with its bytes (files that vanish while
/// a drainer moves them are skipped).
pub fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for ent in rd.flatten() {
        let p = ent.path();
        match fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => walk(&p, out),
            Ok(m) if m.is_file() => {
                if let Ok(b) = fs::read(&p) {
                    out.push((p, b));
                }
            }
            _ => {}
        }
    }
}

/// Does `hay` hold the bytes of `needle`?
pub fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// `memhook hook --agent AGENT` reading `payload` from a file (so a loaded
/// machine cannot starve a writer thread past the hook's stdin bound).
pub fn hook_with_stdin_file(home: &Path, agent: &str, payload: &[u8]) -> Command {
    use std::io::{Seek, Write};
    let mut f = tempfile::tempfile().unwrap();
    f.write_all(payload).unwrap();
    f.rewind().unwrap();
    let mut c = memhook(home);
    c.args(["hook", "--agent", agent]).stdin(f);
    c
}
