//! Which memhook serve holds a port: `memhook ui` records the server it
//! started ([`UI_SERVER_FILE`]) so that `memhook ui --stop` can stop it,
//! and `memhook serve` finding its port taken asks the holder to prove it
//! is this data dir's own server ([`crate::proof`]) before naming it.
//!
//! A server tells its process id only with a proof (`/healthz?challenge=…`
//! on a loopback address): a pid that came with a valid proof is the pid
//! of a server holding the owner's token on that very address, so neither
//! a port squatter nor a stale record can make `--stop` signal another
//! process.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use crate::proof;

/// The record of the server `memhook ui` started, in the data dir:
/// `{"pid": N, "listen": "127.0.0.1:PORT"}` (mode 0600).
pub const UI_SERVER_FILE: &str = "ui-server.json";
/// How long a probe of a running server may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// Largest answer a probe reads.
const MAX_ANSWER: u64 = 64 * 1024;

/// The server `memhook ui` started.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UiServer {
    pub pid: u32,
    pub listen: String,
}

/// Record that `memhook ui` started the server `pid` on `listen`.
pub fn record(data_dir: &Path, pid: u32, listen: SocketAddr) -> std::io::Result<()> {
    let v = UiServer {
        pid,
        listen: listen.to_string(),
    };
    memhook_core::data_dir::write_private_file(
        &data_dir.join(UI_SERVER_FILE),
        serde_json::to_string(&v).unwrap_or_default().as_bytes(),
    )
}

/// The recorded server, if any (a file that is not ours or does not parse
/// is none).
pub fn recorded(data_dir: &Path) -> Option<UiServer> {
    let buf =
        memhook_core::data_dir::read_private_file(&data_dir.join(UI_SERVER_FILE), 4096).ok()?;
    serde_json::from_slice(&buf).ok()
}

/// Forget the record.
pub fn forget(data_dir: &Path) {
    let _ = std::fs::remove_file(data_dir.join(UI_SERVER_FILE));
}

/// What answers `/healthz` on an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// Nothing answers (connection refused or no HTTP).
    Nothing,
    /// Something that does not answer as memhook serve.
    Other,
    /// A memhook serve that did not prove it holds `token` (another data
    /// dir or token, `--no-auth`, or an older memhook).
    Memhook,
    /// This data dir's own server (valid proof), with its process id.
    Ours { pid: Option<u32> },
}

/// Ask what holds `addr`: `GET /healthz?challenge=…` over plain HTTP; with
/// `token`, a proof is checked.
pub fn holder(addr: SocketAddr, token: Option<&str>) -> Holder {
    let challenge = proof::challenge();
    let Some((code, body)) = get(
        addr,
        &format!("/healthz?{}={challenge}", proof::CHALLENGE_PARAM),
    ) else {
        return Holder::Nothing;
    };
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    if code != 200 || v["status"] != "ok" || v.get("version").is_none() {
        return Holder::Other;
    }
    match (token, v["proof"].as_str()) {
        (Some(t), Some(p)) if proof::verify(t, addr, &challenge, p) => Holder::Ours {
            pid: v["pid"].as_u64().and_then(|p| u32::try_from(p).ok()),
        },
        _ => Holder::Memhook,
    }
}

/// One plain-HTTP GET: (status, body), or `None` when nothing answers.
fn get(addr: SocketAddr, target: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, PROBE_TIMEOUT).ok()?;
    s.set_read_timeout(Some(PROBE_TIMEOUT)).ok()?;
    s.set_write_timeout(Some(PROBE_TIMEOUT)).ok()?;
    // One write: a peer that reads once and closes must get it whole.
    let request = format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(request.as_bytes()).ok()?;
    let mut buf = Vec::new();
    let _ = s.take(MAX_ANSWER).read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let code = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, body.to_string()))
}

/// What `memhook serve` says when `addr` is taken, knowing what holds it.
pub fn in_use_message(data_dir: &Path, addr: SocketAddr, token: Option<&str>) -> String {
    let listen = if addr.to_string() == DEFAULT_LISTEN {
        String::new()
    } else {
        format!(" --listen {addr}")
    };
    match holder(addr, token) {
        Holder::Ours { pid } => {
            let pid_note = pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
            let by_ui = matches!((recorded(data_dir), pid), (Some(r), Some(p)) if r.pid == p);
            if by_ui {
                format!(
                    "memhook is already serving on {addr}{pid_note}; stop it with \
                     `memhook ui --stop{listen}`"
                )
            } else {
                format!(
                    "memhook is already serving on {addr}{pid_note} for this data dir; it was \
                     not started by `memhook ui`: stop it where it runs{}",
                    pid.map(|p| format!(" (or `kill {p}`)")).unwrap_or_default()
                )
            }
        }
        Holder::Memhook => format!(
            "another memhook serve is already listening on {addr} (of another data dir or \
             token, or under --no-auth); stop it, or choose another --listen"
        ),
        Holder::Other | Holder::Nothing => format!(
            "cannot listen on {addr}: the address is in use by another program; choose \
             another --listen"
        ),
    }
}

/// The default `--listen` of `serve` and `ui`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:49374";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_round_trips_and_is_forgotten() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(recorded(t.path()), None);
        let addr: SocketAddr = "127.0.0.1:4242".parse().unwrap();
        record(t.path(), 77, addr).unwrap();
        assert_eq!(
            recorded(t.path()),
            Some(UiServer {
                pid: 77,
                listen: "127.0.0.1:4242".into()
            })
        );
        forget(t.path());
        assert_eq!(recorded(t.path()), None);
    }

    #[test]
    fn a_port_nobody_or_a_stranger_holds_is_told_apart() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        assert_eq!(holder(addr, Some("t")), Holder::Nothing);
        // A stranger that answers HTTP, not as memhook.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let th = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            // The whole request, so that closing does not reset the
            // connection (unread bytes make the kernel send RST, which can
            // drop the answer before the prober reads it).
            let mut got = Vec::new();
            let mut b = [0u8; 1024];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut b) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&b[..n]),
                }
            }
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi");
        });
        assert_eq!(holder(addr, Some("t")), Holder::Other);
        th.join().unwrap();
        let t = tempfile::tempdir().unwrap();
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        assert!(in_use_message(t.path(), addr, None).contains("in use by another program"));
    }
}
