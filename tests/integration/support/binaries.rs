//! The binaries under test and the commands that run them: a `memhook` with
//! a clean environment in a temp HOME, fed stdin from memory or a file.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Path of the memhook binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_memhook"))
}

/// Install the four binaries a user installs (`memhook`, the
/// `memhook-session` that drains and that it hands a server's session
/// start to, the `memhook-brief` that composes a briefing for it and the
/// `memhook-cli` it hands other commands to) into `dir`, as `cargo install`
/// does; the path of the copied `memhook`.
pub fn install_copy(dir: &Path) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let exe = dir.join("memhook");
    fs::copy(bin(), &exe).unwrap();
    fs::copy(session_bin(), dir.join("memhook-session")).unwrap();
    fs::copy(brief_bin(), dir.join("memhook-brief")).unwrap();
    fs::copy(full_bin(), dir.join("memhook-cli")).unwrap();
    exe
}

/// Path of the `memhook-session` binary under test (session start and the
/// drainer; `memhook` execs it).
pub fn session_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_memhook-session"))
}

/// Path of the `memhook-brief` binary under test (the briefing composer
/// `memhook` runs as a child).
pub fn brief_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_memhook-brief"))
}

/// `program` with nothing of the caller's environment but a `PATH` of the
/// system's own directories, HOME at `home` and the data dir at
/// `home/data`: a user's installed `memhook` (see [`install_copy`]).
pub fn installed(program: &Path, home: &Path) -> Command {
    let mut c = Command::new(program);
    c.env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("AI_MEMORY_DATA_DIR", home.join("data"));
    c
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

/// `memhook drain` in `home`: everything pending delivered (it must
/// succeed).
pub fn drain(home: &Path) {
    let out = memhook(home).arg("drain").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `memhook status --json` in `home` (it must succeed).
pub fn status(home: &Path) -> serde_json::Value {
    let out = memhook(home).args(["status", "--json"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What a command printed on stderr, as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
