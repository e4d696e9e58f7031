//! Child processes: tied to the test's life, and the daemons a test leaves
//! behind (background drainers, a server `memhook ui` started) found and
//! ended by their pid.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Poll `cond` until it holds or `limit` passes.
pub fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Linux: the kernel kills the server when the spawning thread ends.
pub fn die_with_parent(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe; nothing else runs in the hook.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
    }
}

/// Pids of live background drainers of `dir` (from /proc): processes whose
/// command line is `… drain --background …` naming `dir`, the test's
/// private temp data dir; a zombie has exited already and is left out.
pub fn drainer_pids(dir: &Path) -> Vec<i32> {
    let want = dir.to_string_lossy().to_string();
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmd
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).to_string())
            .collect();
        let is_drainer = args.iter().any(|a| a == "--background")
            && args.iter().any(|a| a == "drain")
            && args.contains(&want);
        let zombie = std::fs::read_to_string(e.path().join("stat"))
            .map(|s| {
                s.rsplit_once(')')
                    .map(|(_, r)| r.trim_start().starts_with('Z'))
                    .unwrap_or(false)
            })
            .unwrap_or(false);
        if is_drainer && !zombie {
            out.push(pid);
        }
    }
    out
}

/// Send `sig` to `pid`: a process this test started (a drainer of its own
/// temp data dir, found by [`drainer_pids`], or a server it had started).
pub fn kill(pid: i32, sig: i32) {
    // SAFETY: plain kill(2); the pid is one the test started and just saw.
    unsafe { libc::kill(pid, sig) };
}

/// SIGKILL every background drainer of `dir` (one a test left retrying).
pub fn kill_drainers(dir: &Path) {
    for pid in drainer_pids(dir) {
        kill(pid, libc::SIGKILL);
    }
}

/// Sends SIGTERM to the pid it holds when dropped: a daemon a command
/// started for the test (`memhook ui` starting a server), ended even when
/// the test fails.
pub struct TermOnDrop(pub Option<i32>);

impl Drop for TermOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            kill(pid, libc::SIGTERM);
        }
    }
}

/// Run `cmd` to completion, killing it after `limit`.
pub fn run_bounded(mut cmd: Command, limit: Duration) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn agent CLI");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.wait_with_output().unwrap()
}
