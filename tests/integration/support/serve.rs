//! A real `memhook serve` on 127.0.0.1 (port 0) for a test's temp HOME,
//! and records posted to it as the hook posts them.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memhook_core::record::Record;
use memhook_delivery::wire;

use super::binaries::memhook;
use super::http::request;
use super::process::die_with_parent;

/// Longest a test server may live, whatever happens to the test.
const WATCHDOG: Duration = Duration::from_secs(120);

/// A running `memhook serve`, killed when dropped (and by a watchdog, and
/// by the kernel when the test thread dies).
pub struct Serve {
    child: Option<Child>,
    pub addr: SocketAddr,
    pub data: PathBuf,
    stderr: Arc<Mutex<String>>,
    /// The thread copying the server's stderr; joined once the server exits
    /// so its last lines are in `stderr`.
    reader: Option<std::thread::JoinHandle<()>>,
    done: Arc<AtomicBool>,
}

impl Serve {
    /// Serve `home`'s data dir with `token` in `AI_MEMORY_AUTH_TOKEN`, or
    /// with the default (the token file it writes) when `None`.
    pub fn start(home: &Path, token: Option<&str>) -> Serve {
        Self::start_on(home, token, "127.0.0.1:0", &[])
    }

    /// [`Serve::start`] with `--no-auth`.
    pub fn no_auth(home: &Path) -> Serve {
        Self::start_on(home, None, "127.0.0.1:0", &["--no-auth"])
    }

    /// [`Serve::start`] with more arguments.
    pub fn start_with(home: &Path, token: Option<&str>, args: &[&str]) -> Serve {
        Self::start_on(home, token, "127.0.0.1:0", args)
    }

    pub fn start_on(home: &Path, token: Option<&str>, listen: &str, args: &[&str]) -> Serve {
        Self::start_env(home, token, listen, args, &[])
    }

    /// [`Serve::start_on`] with more environment variables.
    pub fn start_env(
        home: &Path,
        token: Option<&str>,
        listen: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Serve {
        Self::spawn_env(home, token, listen, args, env).wait()
    }

    /// Start the server without waiting for it to listen (several servers
    /// can then start at once, from this thread: a server dies with the
    /// thread that spawned it).
    pub fn spawn_env(
        home: &Path,
        token: Option<&str>,
        listen: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Starting {
        let data = home.join(".memhook-data");
        let mut cmd = memhook(home);
        cmd.env_remove("MEMHOOK_DATABASE_URL");
        cmd.envs(env.iter().copied());
        cmd.args(["serve", "--listen", listen])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(t) = token {
            cmd.env("AI_MEMORY_AUTH_TOKEN", t);
        }
        die_with_parent(&mut cmd);
        let mut child = cmd.spawn().expect("spawn memhook serve");
        let pid = child.id() as i32;
        let done = Arc::new(AtomicBool::new(false));
        {
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let start = Instant::now();
                while start.elapsed() < WATCHDOG {
                    if done.load(Ordering::SeqCst) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                if !done.load(Ordering::SeqCst) {
                    // SAFETY: the child is not reaped until `done` is set.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            });
        }
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let mut lines = BufReader::new(child.stderr.take().unwrap());
        let reader = {
            let stderr = Arc::clone(&stderr);
            std::thread::spawn(move || {
                let mut line = String::new();
                while lines.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                    // Record the line before announcing the address, so a
                    // test that reads stderr right after start sees it.
                    stderr.lock().unwrap().push_str(&line);
                    if let Some(rest) = line.split("listening on http://").nth(1) {
                        let addr = rest.split_whitespace().next().unwrap_or("").to_string();
                        let _ = tx.send(addr);
                    }
                    line.clear();
                }
            })
        };
        Starting {
            child,
            data,
            stderr,
            reader,
            done,
            rx,
        }
    }
}

/// A server spawned by [`Serve::spawn_env`], not yet listening.
pub struct Starting {
    child: Child,
    data: PathBuf,
    stderr: Arc<Mutex<String>>,
    reader: std::thread::JoinHandle<()>,
    done: Arc<AtomicBool>,
    rx: std::sync::mpsc::Receiver<String>,
}

impl Starting {
    /// Wait until the server listens (it is killed, and this panics, after
    /// 20 s).
    pub fn wait(self) -> Serve {
        let Starting {
            mut child,
            data,
            stderr,
            reader,
            done,
            rx,
        } = self;
        let addr = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(a) => a.parse().expect("listening address"),
            Err(_) => {
                let _ = child.kill();
                let out = child.wait_with_output().unwrap();
                panic!(
                    "memhook serve did not start: {:?} {}",
                    out.status,
                    stderr.lock().unwrap()
                );
            }
        };
        Serve {
            child: Some(child),
            addr,
            data,
            stderr,
            reader: Some(reader),
            done,
        }
    }
}

impl Serve {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's pid (while it runs).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the server runs").id()
    }

    /// Send `sig` and wait (bounded) for the exit status.
    pub fn stop_with(&mut self, sig: i32) -> std::process::ExitStatus {
        let mut child = self.child.take().unwrap();
        // SAFETY: plain kill(2) on our own child, not yet reaped.
        unsafe { libc::kill(child.id() as i32, sig) };
        let start = Instant::now();
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                self.done.store(true, Ordering::SeqCst);
                if let Some(r) = self.reader.take() {
                    let _ = r.join();
                }
                return st;
            }
            if start.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                let st = child.wait().unwrap();
                self.done.store(true, Ordering::SeqCst);
                panic!("memhook serve ignored signal {sig}; killed: {st:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.done.store(true, Ordering::SeqCst);
    }
}

pub fn post_record(s: &Serve, r: &Record, token: Option<&str>) -> (u16, String) {
    let url = format!("{}{}", s.url(), wire::hook_path(r));
    let body = serde_json::to_vec(&wire::hook_body(r)).unwrap();
    request("POST", &url, Some(&body), token)
}

pub fn post_batch(s: &Serve, records: &[Record]) -> (u16, String) {
    let items: Vec<serde_json::Value> = records
        .iter()
        .map(|r| serde_json::json!({"url": wire::hook_path(r), "body": wire::hook_body(r)}))
        .collect();
    let body = serde_json::to_vec(&items).unwrap();
    request(
        "POST",
        &format!("{}/hook/batch", s.url()),
        Some(&body),
        None,
    )
}
