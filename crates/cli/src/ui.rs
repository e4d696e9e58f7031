//! `memhook ui`: open the web view of `memhook serve` (DESIGN §12).
//!
//! Reuses the server answering on `--listen`, or starts one there
//! (detached, its stderr in `<data>/logs/serve.log`); makes it prove that
//! it holds the owner's token (an HMAC of a fresh challenge and the
//! address, `memhook_server::proof`) before sending it anything; asks it
//! for a one-time login code with the bearer token (`POST
//! /api/login-code`; the token itself never leaves this process except in
//! that header, and only to a server that passed the proof); prints
//! the loopback login link and opens it in a browser when one is at hand.
//! Not finding a browser is never an error: the link is printed.

use std::fs;
use std::io::{self, Read};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use crate::cmd::CmdResult;
use memhook_core::data_dir;

/// How long to wait for an answer from a server that may be running.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a server started here has to answer `/healthz`.
pub const START_WAIT: Duration = Duration::from_secs(15);
/// How often to look for the started server.
const START_POLL: Duration = Duration::from_millis(50);
/// The started server's log (its stderr), in the data dir.
pub fn serve_log(dir: &Path) -> PathBuf {
    memhook_server::log::SERVE_LOG.path(dir)
}
/// A serve log past this size is renamed to `serve.log.old`, by `ui` when
/// it starts the next server and by the server while it runs (one
/// generation kept).
pub use memhook_server::log::MAX_SERVE_LOG_BYTES;
/// Largest answer read from the server.
const MAX_REPLY_BYTES: u64 = 64 * 1024;

#[derive(Debug, clap::Args)]
pub struct UiArgs {
    /// Address of the `memhook serve` to use; one is started there (in the
    /// background, loopback only) when none answers.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:49374")]
    pub listen: String,
    /// Print the login link without opening a browser.
    #[arg(long)]
    pub no_open: bool,
    /// Stop the memhook serve that `memhook ui` started (after checking
    /// that it is this data dir's own server), instead of opening the view.
    #[arg(long, conflicts_with = "no_open")]
    pub stop: bool,
}

/// How long `--stop` waits for the server to let go of its port.
pub const STOP_WAIT: Duration = Duration::from_secs(10);

type Error = Box<dyn std::error::Error + Send + Sync>;

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .proxy(None)
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_global(Some(PROBE_TIMEOUT))
        .build()
        .new_agent()
}

/// What answers on the address.
enum Probe {
    /// A memhook server.
    Memhook,
    /// Nothing (connection refused).
    Nothing,
    /// Something that is not memhook, or a failure; the text says what.
    Other(String),
}

fn probe(base: &str) -> Probe {
    match agent().get(format!("{base}/healthz")).call() {
        Ok(mut r) => {
            let text = r
                .body_mut()
                .with_config()
                .limit(MAX_REPLY_BYTES)
                .read_to_string()
                .unwrap_or_default();
            let ok = r.status().as_u16() == 200
                && serde_json::from_str::<serde_json::Value>(&text)
                    .is_ok_and(|v| v["status"] == "ok" && v.get("version").is_some());
            if ok {
                Probe::Memhook
            } else {
                Probe::Other(format!(
                    "{base} answers, but not as memhook serve (HTTP {})",
                    r.status().as_u16()
                ))
            }
        }
        Err(ureq::Error::Io(e)) if e.kind() == io::ErrorKind::ConnectionRefused => Probe::Nothing,
        Err(ureq::Error::ConnectionFailed) => Probe::Nothing,
        Err(e) => Probe::Other(format!("{base}: {e}")),
    }
}

/// Start `memhook serve --listen addr` detached, its stderr appended to
/// [`serve_log`]; wait until it answers. Returns its process id.
fn start_server(dir: &Path, addr: SocketAddr, base: &str) -> Result<u32, Error> {
    let log_path = serve_log(dir);
    let log = memhook_delivery::drain::open_stderr_log(dir, &memhook_server::log::SERVE_LOG)
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let log_start = log.metadata().map(|m| m.len()).unwrap_or(0);
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.arg("--data-dir")
        .arg(dir)
        .args(["serve", "--listen", &addr.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    // Windows: the server runs on with no console window of its own.
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt;
        cmd.creation_flags(memhook_delivery::drain::spawn::DETACHED_FLAGS);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid is async-signal-safe and touches no memory of ours.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() == -1 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Err(format!(
                "memhook serve exited at once ({status}): {}",
                log_tail(&log_path, log_start)
            )
            .into());
        }
        if let Probe::Memhook = probe(base) {
            return Ok(pid);
        }
        if start.elapsed() > START_WAIT {
            return Err(format!(
                "memhook serve (pid {pid}) did not answer on {base} within {}s; see {}",
                START_WAIT.as_secs(),
                log_path.display()
            )
            .into());
        }
        std::thread::sleep(START_POLL);
    }
}

/// What the log got since `from`, on one line.
fn log_tail(path: &Path, from: u64) -> String {
    let mut text = String::new();
    if let Ok(mut f) = fs::File::open(path) {
        use std::io::Seek;
        let _ = f.seek(io::SeekFrom::Start(from));
        let _ = f.take(4096).read_to_string(&mut text);
    }
    memhook_core::term::line(text.trim())
}

/// Make the server on `addr` prove that it holds `token` before anything
/// is sent to it (`memhook_server::proof`): a fresh challenge to
/// `/healthz`, whose answer must be the MAC of the challenge and `addr`
/// under the token. `Err` says why the server is not trusted; nothing but
/// the challenge was sent.
fn verify_server(base: &str, addr: SocketAddr, token: &str) -> Result<(), String> {
    use memhook_server::proof;
    let challenge = proof::challenge();
    let not_ours = |why: &str| {
        format!(
            "the server answering on {base} did not prove it is your memhook serve ({why}); nothing was sent to it. Something else (another user's program?) may hold the port: stop it, or run `memhook ui --listen 127.0.0.1:PORT` with another port. A memhook serve of another data dir or token, or one started with --no-auth, fails this check too (under --no-auth, open {base}/ yourself)"
        )
    };
    let mut resp = agent()
        .get(format!(
            "{base}/healthz?{}={challenge}",
            proof::CHALLENGE_PARAM
        ))
        .call()
        .map_err(|e| not_ours(&e.to_string()))?;
    let status = resp.status().as_u16();
    let text = resp
        .body_mut()
        .with_config()
        .limit(MAX_REPLY_BYTES)
        .read_to_string()
        .unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    match v.get("proof") {
        _ if status != 200 => Err(not_ours(&format!("HTTP {status}"))),
        Some(serde_json::Value::String(p)) if proof::verify(token, addr, &challenge, p) => Ok(()),
        Some(serde_json::Value::String(_)) => Err(not_ours("its proof does not match your token")),
        Some(serde_json::Value::Null) => Err(not_ours("it runs without a token")),
        _ => Err(not_ours(
            "it gave no proof; a memhook older than this one gives none",
        )),
    }
}

/// Ask the verified server for a login code: the login path (`/login?code=…`).
fn login_path(base: &str, token: &str) -> Result<String, Error> {
    let req = agent()
        .post(format!("{base}{}", memhook_server::LOGIN_CODE_PATH))
        .header("Authorization", &format!("Bearer {token}"));
    let mut resp = req
        .send_empty()
        .map_err(|e| format!("{base}: cannot ask for a login code: {e}"))?;
    let code = resp.status().as_u16();
    let text = resp
        .body_mut()
        .with_config()
        .limit(MAX_REPLY_BYTES)
        .read_to_string()
        .unwrap_or_default();
    if code == 401 {
        return Err(format!(
            "the memhook serve on {base} does not accept this data dir's token: it serves \
             another data dir or token (pass the same --data-dir / AI_MEMORY_AUTH_TOKEN, or \
             stop it, or use another --listen)"
        )
        .into());
    }
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    match v["login_path"].as_str() {
        Some(p) if code == 200 && p.starts_with("/login?code=") => Ok(p.to_string()),
        _ => Err(format!(
            "the memhook serve on {base} gave no login code (HTTP {code}); it may be older than \
             this memhook: restart it"
        )
        .into()),
    }
}

/// The program that opens a URL in the desktop's browser, if there is one.
fn opener() -> Option<&'static str> {
    if cfg!(target_os = "macos") {
        return Some("open");
    }
    let desktop = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
    desktop.then_some("xdg-open")
}

/// Open `url` in a browser; `false` when there is none (never an error).
fn open(url: &str) -> bool {
    let Some(prog) = opener() else {
        return false;
    };
    Command::new(prog)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .is_ok()
}

/// `memhook ui --stop`: stop the server `memhook ui` started on `addr`, by
/// its recorded pid, once the server answering there has proved it holds
/// this data dir's token and named that same pid. Exit 0 when it stopped
/// (or none was running), 1 when something else holds the port or the
/// server would not stop.
fn stop(dir: &Path, addr: SocketAddr, named: bool) -> CmdResult {
    use memhook_server::running::{self, Holder};
    let listen = if named {
        format!(" --listen {addr}")
    } else {
        String::new()
    };
    let recorded = running::recorded(dir).filter(|r| r.listen == addr.to_string());
    let token = memhook_delivery::sink::auth_token(dir);
    match running::holder(addr, token.as_deref()) {
        Holder::Nothing => {
            if recorded.is_some() {
                running::forget(dir);
            }
            eprintln!("memhook ui: no memhook serve is running on {addr}; nothing to stop");
            Ok(ExitCode::SUCCESS)
        }
        Holder::Other => {
            eprintln!(
                "memhook: {addr} is held by a program that is not memhook serve; nothing was stopped"
            );
            Ok(ExitCode::from(1))
        }
        Holder::Memhook => {
            eprintln!(
                "memhook: the memhook serve on {addr} did not prove it is this data dir's server (another data dir or token, or --no-auth); nothing was stopped: stop it where it was started"
            );
            Ok(ExitCode::from(1))
        }
        Holder::Ours { pid } => {
            let (Some(pid), Some(rec)) = (pid, recorded) else {
                eprintln!(
                    "memhook: the memhook serve on {addr}{} was not started by `memhook ui{listen}`; nothing was stopped: stop it where it runs",
                    pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
                );
                return Ok(ExitCode::from(1));
            };
            if rec.pid != pid {
                eprintln!(
                    "memhook: the memhook serve on {addr} is pid {pid}, not the pid {} `memhook ui` recorded; nothing was stopped: stop it where it runs",
                    rec.pid
                );
                return Ok(ExitCode::from(1));
            }
            if let Err(e) = terminate(pid) {
                eprintln!("memhook: cannot stop memhook serve (pid {pid}): {e}");
                return Ok(ExitCode::from(1));
            }
            let start = Instant::now();
            while start.elapsed() < STOP_WAIT {
                if running::holder(addr, None) == Holder::Nothing {
                    running::forget(dir);
                    eprintln!("memhook ui: stopped memhook serve on {addr} (pid {pid})");
                    return Ok(ExitCode::SUCCESS);
                }
                std::thread::sleep(START_POLL);
            }
            eprintln!(
                "memhook: memhook serve (pid {pid}) did not stop within {}s",
                STOP_WAIT.as_secs()
            );
            Ok(ExitCode::from(1))
        }
    }
}

/// Ask process `pid` to stop (SIGTERM: the server finishes the requests
/// in hand and exits).
#[cfg(unix)]
fn terminate(pid: u32) -> io::Result<()> {
    let raw = i32::try_from(pid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
    // SAFETY: kill only sends a signal to the pid the server proved is its own.
    if unsafe { libc::kill(raw, libc::SIGTERM) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Stop process `pid` (Windows: there is no SIGTERM to ask with, and the
/// server `ui` starts has no console to send Ctrl+Break to, so the process
/// is ended with `TerminateProcess`; requests in flight are cut, the store
/// stays consistent: SQLite's WAL, PostgreSQL's transactions).
#[cfg(windows)]
fn terminate(pid: u32) -> io::Result<()> {
    use windows_sys::Win32::Foundation::CloseHandle;
    use windows_sys::Win32::System::Threading::{OpenProcess, TerminateProcess, PROCESS_TERMINATE};
    // SAFETY: OpenProcess takes plain values and returns a handle or null.
    let h = unsafe { OpenProcess(PROCESS_TERMINATE, 0, pid) };
    if h.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `h` is the open process handle from above, closed once here.
    let ok = unsafe { TerminateProcess(h, 1) } != 0;
    let err = io::Error::last_os_error();
    unsafe { CloseHandle(h) };
    if ok {
        Ok(())
    } else {
        Err(err)
    }
}

#[cfg(not(any(unix, windows)))]
fn terminate(_pid: u32) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "stopping the server is not supported on this platform yet; stop it where it runs",
    ))
}

/// ` (pid N; …)` of a verified server `ui` did not start this time: its
/// pid each time, and whether `--stop` can stop it.
fn reused_note(dir: &Path, addr: SocketAddr, token: &str) -> String {
    use memhook_server::running::{self, Holder};
    let Holder::Ours { pid: Some(pid) } = running::holder(addr, Some(token)) else {
        return String::new();
    };
    let ours = running::recorded(dir).is_some_and(|r| r.pid == pid && r.listen == addr.to_string());
    if ours {
        format!(" (pid {pid}; `memhook ui --stop` stops it)")
    } else {
        format!(" (pid {pid}; not started by `memhook ui`)")
    }
}

/// `memhook ui`.
pub fn run(args: &UiArgs, data_dir: Option<&Path>) -> CmdResult {
    let dir = data_dir::resolve(data_dir)?;
    data_dir::ensure_private_dir(&dir)?;
    let addr = args
        .listen
        .to_socket_addrs()
        .map_err(|e| format!("--listen {:?}: {e} (expected HOST:PORT)", args.listen))?
        .next()
        .ok_or_else(|| format!("--listen {:?} resolves to no address", args.listen))?;
    if !addr.ip().is_loopback() {
        return Err(format!(
            "--listen {addr}: memhook ui opens the web view on this machine only; use a \
             loopback address such as 127.0.0.1:49374"
        )
        .into());
    }
    let base = format!("http://{addr}");
    if args.stop {
        return stop(
            &dir,
            addr,
            args.listen != memhook_server::running::DEFAULT_LISTEN,
        );
    }
    let mut reused = false;
    match probe(&base) {
        Probe::Memhook => reused = true,
        Probe::Nothing => {
            let pid = start_server(&dir, addr, &base)?;
            if let Err(e) = memhook_server::running::record(&dir, pid, addr) {
                eprintln!("memhook: cannot record the server's pid for `memhook ui --stop`: {e}");
            }
            eprintln!(
                "memhook ui: started memhook serve on {base} (pid {pid}; log {}; `memhook ui --stop` stops it)",
                serve_log(&dir).display()
            );
        }
        Probe::Other(why) => {
            eprintln!("memhook: {why}; choose another --listen");
            return Ok(ExitCode::from(1));
        }
    }
    let Some(token) = memhook_delivery::sink::auth_token(&dir) else {
        eprintln!(
            "memhook: no token to check the server on {base} with: neither \
             AI_MEMORY_AUTH_TOKEN nor {} holds one, so memhook ui cannot tell your server \
             from another program on that port and sends it nothing (a memhook serve without \
             --no-auth writes that file when it starts; under --no-auth, open {base}/ yourself)",
            dir.join(memhook_delivery::sink::AUTH_TOKEN_FILE).display()
        );
        return Ok(ExitCode::from(1));
    };
    if let Err(why) = verify_server(&base, addr, &token) {
        eprintln!("memhook: {why}");
        return Ok(ExitCode::from(1));
    }
    if reused {
        eprintln!(
            "memhook ui: using the memhook serve on {base}{}",
            reused_note(&dir, addr, &token)
        );
    }
    let path = match login_path(&base, &token) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("memhook: {e}");
            return Ok(ExitCode::from(1));
        }
    };
    let url = format!("{base}{path}");
    println!("{url}");
    let ttl = memhook_server::LOGIN_CODE_TTL.as_secs();
    if !args.no_open && open(&url) {
        eprintln!("memhook ui: opened the link in your browser (it works once, within {ttl} s)");
    } else {
        eprintln!("memhook ui: open the link above in a browser on this machine (it works once, within {ttl} s)");
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_serve_log_rotates_past_its_cap() {
        let t = tempfile::tempdir().unwrap();
        let log = serve_log(t.path());
        let open = || {
            memhook_delivery::drain::open_stderr_log(t.path(), &memhook_server::log::SERVE_LOG)
                .unwrap()
        };
        drop(open());
        fs::write(&log, vec![b'x'; MAX_SERVE_LOG_BYTES as usize]).unwrap();
        drop(open());
        assert_eq!(
            fs::metadata(&log).unwrap().len(),
            MAX_SERVE_LOG_BYTES,
            "at the cap: kept"
        );
        fs::write(&log, vec![b'x'; MAX_SERVE_LOG_BYTES as usize + 1]).unwrap();
        drop(open());
        assert_eq!(fs::metadata(&log).unwrap().len(), 0);
        assert!(log.with_file_name("serve.log.old").exists());
    }

    #[test]
    fn nothing_listening_is_told_apart() {
        // A port nobody listens on: bind, learn it, close.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        assert!(matches!(
            probe(&format!("http://127.0.0.1:{port}")),
            Probe::Nothing
        ));
    }
}
