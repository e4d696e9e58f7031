//! Temp homes: the HOME a test's `memhook` runs in, and its data dir; and
//! [`World`], a HOME with a project for the real agent CLIs.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use super::binaries::{bin, install_copy, memhook};
use super::files::{contains, walk};

/// The data dir of `home` ([`memhook`](super::binaries::memhook) points
/// `AI_MEMORY_DATA_DIR` there).
pub fn data_dir(home: &Path) -> PathBuf {
    home.join(".memhook-data")
}

/// A temp HOME with a project that excludes `secret/**` from capture.
pub struct World {
    home: tempfile::TempDir,
}

impl World {
    pub fn new() -> World {
        let home = tempfile::tempdir().unwrap();
        let proj = home.path().join("proj");
        fs::create_dir_all(proj.join("secret")).unwrap();
        fs::write(
            proj.join(".ai-memory.toml"),
            "project = \"demo\"\n\n[capture]\nignore_paths = [\"secret/**\"]\n",
        )
        .unwrap();
        fs::write(proj.join("secret/key.txt"), "TOPSECRET-4711\n").unwrap();
        World { home }
    }
    pub fn home(&self) -> &Path {
        self.home.path()
    }
    pub fn proj(&self) -> PathBuf {
        self.home.path().join("proj")
    }
    pub fn memhook(&self) -> Command {
        let mut c = memhook(self.home());
        for v in [
            "CLAUDE_CONFIG_DIR",
            "CODEX_HOME",
            "XDG_CONFIG_HOME",
            "COPILOT_HOME",
            "CLINE_DIR",
            "CLINE_DATA_DIR",
        ] {
            c.env_remove(v);
        }
        c.current_dir(self.proj());
        c
    }
    /// `install-hooks --apply`; returns what it printed.
    pub fn install(&self, agent: &str) -> String {
        let out = self
            .memhook()
            .args(["install-hooks", "--agent", agent, "--apply"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
    /// Where [`World::install_via_shim`] installs memhook from: a path
    /// with a space and non-ASCII characters.
    pub fn shim(&self) -> PathBuf {
        self.home().join("My Tööls/memhook")
    }
    /// Where the shim logs the arguments of each call, one line each.
    pub fn hook_calls(&self) -> PathBuf {
        self.home().join("hook-calls.log")
    }
    /// Install from a copy of memhook at [`World::shim`] (so the agent
    /// must honour the installer's quoting), then swap that copy for a shim
    /// that logs each call's arguments to [`World::hook_calls`] and execs
    /// the real binary. The config bytes are exactly what the installer
    /// wrote; the log shows which hooks the agent really ran. Returns what
    /// install-hooks printed.
    pub fn install_via_shim(&self, agent: &str) -> String {
        let copy = self.shim();
        assert_eq!(install_copy(copy.parent().unwrap()), copy);
        let mut cmd = Command::new(&copy);
        cmd.env_clear()
            .env("HOME", self.home())
            .env("PATH", "/usr/bin:/bin")
            .env("AI_MEMORY_DATA_DIR", data_dir(self.home()))
            .args(["install-hooks", "--agent", agent, "--apply"]);
        let out = loop {
            match cmd.output() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                r => break r.unwrap(),
            }
        };
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // MEMHOOK_CAPTURE_PAYLOADS=<dir>: the shim also keeps each payload
        // (and its arguments) there, for fixtures/agents/ from a real run.
        let capture = match std::env::var_os("MEMHOOK_CAPTURE_PAYLOADS") {
            Some(dir) => format!(
                "f='{}'/$(date +%s%N)-$$.json\ncat > \"$f\"\nprintf '%s\\n' \"$*\" > \"$f.args\"\nexec < \"$f\"\n",
                PathBuf::from(dir).display()
            ),
            None => String::new(),
        };
        let shim = format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\n{capture}exec '{}' \"$@\"\n",
            self.hook_calls().display(),
            bin().display()
        );
        fs::remove_file(&copy).unwrap();
        fs::write(&copy, shim).unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&copy, fs::Permissions::from_mode(0o755)).unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// An agent CLI command with HOME/XDG in the temp world and no real
    /// credentials or memhook settings leaking in.
    pub fn agent(&self, exe: &Path) -> Command {
        let mut c = Command::new(exe);
        c.env_clear()
            .env("HOME", self.home())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("XDG_CONFIG_HOME", self.home().join(".config"))
            .env("XDG_DATA_HOME", self.home().join(".local/share"))
            .env("XDG_CACHE_HOME", self.home().join(".cache"))
            .env("XDG_STATE_HOME", self.home().join(".local/state"))
            .current_dir(self.proj());
        c
    }
    /// No file in the data dir holds the excluded file's content or path
    /// (and the data dir is not empty: something was captured).
    pub fn assert_no_trace_of_the_excluded_file(&self) {
        let mut files = Vec::new();
        walk(&data_dir(self.home()), &mut files);
        assert!(!files.is_empty());
        for (path, bytes) in &files {
            for needle in ["TOPSECRET", "secret/key.txt"] {
                assert!(
                    !contains(bytes, needle),
                    "{needle} reached {}",
                    path.display()
                );
            }
        }
    }
    /// Every captured record as one text, for `contains` checks.
    pub fn records_text(&self) -> String {
        self.records()
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Deliver everything and return the captured records.
    pub fn records(&self) -> Vec<Value> {
        let out = self.memhook().args(["drain"]).output().unwrap();
        assert!(
            out.status.success(),
            "drain: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = self
            .memhook()
            .args(["recent", "--json", "--all", "--limit", "500"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "recent: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).expect("recent --json prints JSON lines"))
            .collect()
    }
}
