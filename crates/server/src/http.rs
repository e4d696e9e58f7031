//! A small, bounded HTTP/1.1 server over `std::net` for `memhook serve`.
//!
//! Why not a crate: the one we used (tiny_http 0.12) reads each header line
//! without a size bound, has no per-connection deadline and starts a thread
//! for every connection it accepts, so 50 unterminated 8 MB headers grew the
//! server to 766 MB and four clients dribbling a body blocked every worker.
//! This server bounds what a client can hold before it is authenticated:
//!
//! - the request line and headers: [`MAX_HEADER_BYTES`] and [`MAX_HEADERS`]
//!   (`431` beyond), read within [`HEADER_DEADLINE`] (`408` after);
//! - the body: only after the handler accepted the head (authentication,
//!   size), within [`BODY_DEADLINE`];
//! - connections: at most [`MAX_CONNECTIONS`] at once, one thread each
//!   (blocked in a read with a timeout, not spinning); one over the limit
//!   gets `503` and is closed at once;
//! - keep-alive: an idle connection is closed after [`IDLE_DEADLINE`], and
//!   not kept at all once half the connection slots are taken.
//!
//! Only `Content-Length` bodies are accepted (`Transfer-Encoding` gets
//! `501`), which every memhook and ai-memory client sends.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Largest request line plus headers, in bytes (`431` beyond).
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// Most header fields in one request (`431` beyond).
pub const MAX_HEADERS: usize = 64;
/// Time a client has to send a complete request head (`408` after).
pub const HEADER_DEADLINE: Duration = Duration::from_secs(10);
/// Time a client has to send a whole request body once its head was
/// accepted (10 MiB at 175 KiB/s; the connection is closed after).
pub const BODY_DEADLINE: Duration = Duration::from_secs(60);
/// How long a kept-alive connection may sit idle between requests.
pub const IDLE_DEADLINE: Duration = Duration::from_secs(5);
/// Longest wait for a client to take a response.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once; one more gets `503` and is closed.
pub const MAX_CONNECTIONS: usize = 256;
/// Requests served on one connection before it is closed.
pub const MAX_REQUESTS_PER_CONNECTION: usize = 1000;
/// Stack of a connection thread (JSON is parsed to a bounded depth).
const CONN_STACK: usize = 1024 * 1024;
/// How often blocked reads and the accept loop look at the stop flag.
const SLICE: Duration = Duration::from_millis(100);
/// Longest a connection stays open to discard the body of a request it
/// answered without reading it.
pub const LINGER: Duration = Duration::from_secs(2);
/// How long, after a stop, requests in hand get to finish.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A request head: the request line and the header fields.
#[derive(Debug)]
pub struct Head {
    pub method: String,
    /// The request target as sent (`/hook?…`).
    pub target: String,
    headers: Vec<(String, String)>,
    /// `Content-Length` (0 when absent).
    pub content_length: u64,
    /// The client asked to keep the connection (HTTP/1.1 default).
    pub keep_alive: bool,
}

impl Head {
    /// The value of header `name` (case-insensitive); the first when repeated.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// How many times header `name` occurs.
    pub fn count(&self, name: &str) -> usize {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .count()
    }

    /// The target's path (without query or fragment).
    pub fn path(&self) -> &str {
        self.target.split(['?', '#']).next().unwrap_or("")
    }
}

/// An answer.
#[derive(Debug)]
pub struct Response {
    pub code: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    pub headers: Vec<(&'static str, String)>,
}

impl Response {
    pub fn new(code: u16, content_type: &'static str, body: Vec<u8>) -> Response {
        Response {
            code,
            content_type,
            body,
            headers: Vec::new(),
        }
    }

    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }

    fn plain(code: u16, text: &str) -> Response {
        Response::new(code, "text/plain; charset=utf-8", text.as_bytes().to_vec())
    }
}

/// The application behind the server.
pub trait Handler: Send + Sync + 'static {
    /// What [`Handler::check`] learnt about a request that the answer needs
    /// (who sent it).
    type Ticket;
    /// Look at a head before its body is read: `Ok(ticket)` to read the
    /// body (the handler has checked its size) and call
    /// [`Handler::answer`] with the ticket, `Err` to answer now (the body
    /// is never read).
    fn check(&self, head: &Head) -> Result<Self::Ticket, Response>;
    /// Answer a request whose body was read.
    fn answer(&self, head: &Head, ticket: Self::Ticket, body: Vec<u8>) -> Response;
}

/// Accept connections until `stop` is set, then give the requests in hand
/// [`SHUTDOWN_GRACE`] to finish. `Err` when the listener fails.
pub fn serve<H: Handler>(
    listener: TcpListener,
    handler: Arc<H>,
    stop: &'static AtomicBool,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let active = Arc::new(AtomicUsize::new(0));
    let mut result = Ok(());
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => hand_off(stream, &handler, &active, stop),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => wait_readable(&listener),
            Err(e) if transient(&e) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) if e.raw_os_error() == Some(libc::EMFILE) => {
                // Out of descriptors: let connections finish before accepting more.
                std::thread::sleep(SLICE);
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    drop(listener);
    let start = Instant::now();
    while active.load(Ordering::SeqCst) > 0 && start.elapsed() < SHUTDOWN_GRACE {
        std::thread::sleep(Duration::from_millis(10));
    }
    result
}

fn transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::Interrupted
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// Block until the listener has a connection waiting, or [`SLICE`] passed.
#[cfg(windows)]
fn wait_readable(listener: &TcpListener) {
    use std::os::windows::io::AsRawSocket;
    use windows_sys::Win32::Networking::WinSock::{WSAPoll, POLLRDNORM, WSAPOLLFD};
    let mut fd = WSAPOLLFD {
        fd: listener.as_raw_socket() as usize,
        events: POLLRDNORM,
        revents: 0,
    };
    // SAFETY: one valid WSAPOLLFD for the duration of the call.
    unsafe { WSAPoll(&mut fd, 1, SLICE.as_millis() as i32) };
}

/// Block until the listener has a connection waiting, or [`SLICE`] passed.
#[cfg(unix)]
fn wait_readable(listener: &TcpListener) {
    use std::os::fd::AsRawFd;
    let mut fd = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut fd, 1, SLICE.as_millis() as libc::c_int) };
}

/// Decrements the connection count when a connection thread ends.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn hand_off<H: Handler>(
    stream: TcpStream,
    handler: &Arc<H>,
    active: &Arc<AtomicUsize>,
    stop: &'static AtomicBool,
) {
    if stream.set_nonblocking(false).is_err() {
        return;
    }
    if active.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
        active.fetch_sub(1, Ordering::SeqCst);
        // A fresh socket's send buffer is empty: this write does not block.
        let _ = stream.set_write_timeout(Some(SLICE));
        let busy = Response::plain(503, "too many connections; retry shortly\n")
            .with_header("Retry-After", "1");
        let _ = write_response(&stream, &busy, false);
        return;
    }
    let slot = Slot(Arc::clone(active));
    let handler = Arc::clone(handler);
    let active_now = Arc::clone(active);
    let spawned = std::thread::Builder::new()
        .name("serve-conn".into())
        .stack_size(CONN_STACK)
        .spawn(move || {
            let _slot = slot;
            connection(stream, &*handler, &active_now, stop);
        });
    if let Err(e) = spawned {
        // The closure (and its slot) was dropped: the count is back.
        crate::log::say!("memhook serve: cannot start a connection thread: {e}");
    }
}

/// Why no request head could be read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum HeadError {
    /// The client closed, went idle, or the server is stopping: close silently.
    Closed,
    /// Over [`MAX_HEADER_BYTES`] or [`MAX_HEADERS`].
    TooLarge,
    /// [`HEADER_DEADLINE`] passed.
    Timeout,
    /// Not HTTP/1.x as we accept it; the text says what.
    Bad(String),
    /// `Transfer-Encoding` bodies are not supported.
    Unsupported,
}

/// Serve one connection: requests one after another until it closes.
fn connection<H: Handler>(
    mut stream: TcpStream,
    handler: &H,
    active: &AtomicUsize,
    stop: &AtomicBool,
) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    // Bytes read past the current request (a pipelined next request).
    let mut buf: Vec<u8> = Vec::new();
    for served in 0..MAX_REQUESTS_PER_CONNECTION {
        let idle = if served == 0 {
            HEADER_DEADLINE
        } else {
            IDLE_DEADLINE
        };
        let head = match read_head(&mut stream, &mut buf, idle, stop) {
            Ok(h) => h,
            Err(HeadError::Closed) => return,
            Err(e) => {
                let resp = match e {
                    HeadError::TooLarge => {
                        Response::plain(431, "request header fields too large\n")
                    }
                    HeadError::Timeout => Response::plain(408, "request head not sent in time\n"),
                    HeadError::Unsupported => Response::plain(
                        501,
                        "Transfer-Encoding is not supported; send a Content-Length body\n",
                    ),
                    HeadError::Bad(why) => Response::plain(400, &format!("bad request: {why}\n")),
                    HeadError::Closed => unreachable!(),
                };
                let _ = write_response(&stream, &resp, false);
                return;
            }
        };
        let (resp, body_read) = match handler.check(&head) {
            Err(resp) => (resp, head.content_length == 0),
            Ok(ticket) => {
                let len = head.content_length as usize;
                if len > buf.len()
                    && head
                        .header("Expect")
                        .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
                    && stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").is_err()
                {
                    return;
                }
                match read_body(&mut stream, &mut buf, len) {
                    Ok(body) => (handler.answer(&head, ticket, body), true),
                    Err(timed_out) => {
                        if timed_out {
                            let resp = Response::plain(408, "request body not sent in time\n");
                            let _ = write_response(&stream, &resp, false);
                        }
                        return;
                    }
                }
            }
        };
        if !body_read {
            // Answered without reading the body (refused, too large): let
            // the client finish sending so it gets to read the answer.
            if write_response(&stream, &resp, false).is_ok() {
                linger(&mut stream, head.content_length);
            }
            return;
        }
        let keep = head.keep_alive
            && served + 1 < MAX_REQUESTS_PER_CONNECTION
            && !stop.load(Ordering::SeqCst)
            && active.load(Ordering::SeqCst) <= MAX_CONNECTIONS / 2;
        if write_response(&stream, &resp, keep).is_err() || !keep {
            return;
        }
    }
}

/// After an answer sent without reading the body: stop writing, then read
/// and discard what the client still sends (at most `len` bytes, for at
/// most [`LINGER`]), so that a client that writes its whole body before
/// reading sees the answer instead of a reset.
fn linger(stream: &mut TcpStream, len: u64) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let start = Instant::now();
    let mut left = len;
    let mut chunk = [0u8; 16 * 1024];
    while left > 0 && start.elapsed() < LINGER {
        let _ = stream.set_read_timeout(Some(
            LINGER
                .saturating_sub(start.elapsed())
                .max(Duration::from_millis(1)),
        ));
        let want = (left as usize).min(chunk.len());
        match stream.read(&mut chunk[..want]) {
            Ok(0) | Err(_) => return,
            Ok(n) => left = left.saturating_sub(n as u64),
        }
    }
}

/// Read one request head into `buf` (which may already hold its start) and
/// parse it; what follows the head stays in `buf`. `idle`: how long to wait
/// for the first byte; the whole head must then arrive within
/// [`HEADER_DEADLINE`] of the wait's start.
fn read_head(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    idle: Duration,
    stop: &AtomicBool,
) -> Result<Head, HeadError> {
    let start = Instant::now();
    let mut scanned = 0;
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = find_end(buf, scanned) {
            let head = parse_head(&buf[..end])?;
            buf.drain(..end + 4);
            return Ok(head);
        }
        scanned = buf.len().saturating_sub(3);
        if buf.len() >= MAX_HEADER_BYTES + 4 {
            return Err(HeadError::TooLarge);
        }
        let waited = start.elapsed();
        if buf.is_empty() && (waited >= idle || stop.load(Ordering::SeqCst)) {
            return Err(HeadError::Closed);
        }
        if waited >= HEADER_DEADLINE {
            return Err(HeadError::Timeout);
        }
        let left = HEADER_DEADLINE - waited;
        let _ = stream.set_read_timeout(Some(left.min(SLICE).max(Duration::from_millis(1))));
        let want = (MAX_HEADER_BYTES + 4 - buf.len()).min(chunk.len());
        match stream.read(&mut chunk[..want]) {
            Ok(0) => return Err(HeadError::Closed),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(HeadError::Closed),
        }
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Where the head ends (`\r\n\r\n`), searching from `from`.
fn find_end(buf: &[u8], from: usize) -> Option<usize> {
    buf.get(from..)?
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + from)
}

/// Parse a head (without its final empty line).
pub(super) fn parse_head(raw: &[u8]) -> Result<Head, HeadError> {
    let bad = |why: &str| HeadError::Bad(why.to_string());
    let text = std::str::from_utf8(raw).map_err(|_| bad("the head is not UTF-8"))?;
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("the request line is not `METHOD TARGET HTTP/1.1`"));
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(bad("the method is not an uppercase token"));
    }
    if !target.starts_with('/') || target.bytes().any(|b| !b.is_ascii_graphic()) {
        return Err(bad("the target is not an origin-form path"));
    }
    let http11 = match version {
        "HTTP/1.1" => true,
        "HTTP/1.0" => false,
        _ => return Err(bad("only HTTP/1.0 and HTTP/1.1 are spoken here")),
    };
    let mut headers = Vec::new();
    for l in lines {
        if headers.len() >= MAX_HEADERS {
            return Err(HeadError::TooLarge);
        }
        if l.starts_with([' ', '\t']) {
            return Err(bad("folded header lines are not accepted"));
        }
        let (name, value) = l
            .split_once(':')
            .ok_or_else(|| bad("a header line has no `:`"))?;
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(bad("a header name is not a token"));
        }
        if value.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
            return Err(bad("a header value holds a control character"));
        }
        headers.push((
            name.to_string(),
            value.trim_matches([' ', '\t']).to_string(),
        ));
    }
    let mut head = Head {
        method: method.to_string(),
        target: target.to_string(),
        headers,
        content_length: 0,
        keep_alive: false,
    };
    if head.header("Transfer-Encoding").is_some() {
        return Err(HeadError::Unsupported);
    }
    let mut length = None;
    for (n, v) in &head.headers {
        if n.eq_ignore_ascii_case("Content-Length") {
            let parsed = (!v.is_empty() && v.len() <= 19 && v.bytes().all(|b| b.is_ascii_digit()))
                .then(|| v.parse::<u64>().ok())
                .flatten()
                .ok_or_else(|| bad("Content-Length is not a number"))?;
            if length.is_some_and(|l| l != parsed) {
                return Err(bad("Content-Length is given twice with different values"));
            }
            length = Some(parsed);
        }
    }
    head.content_length = length.unwrap_or(0);
    let connection = head.header("Connection").unwrap_or("").to_ascii_lowercase();
    head.keep_alive = if http11 {
        !connection.split(',').any(|t| t.trim() == "close")
    } else {
        connection.split(',').any(|t| t.trim() == "keep-alive")
    };
    Ok(head)
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Read a body of `len` bytes: what `buf` already holds, then the rest from
/// the stream within [`BODY_DEADLINE`]. `Err(true)` on the deadline,
/// `Err(false)` when the client went away.
fn read_body(stream: &mut TcpStream, buf: &mut Vec<u8>, len: usize) -> Result<Vec<u8>, bool> {
    if buf.len() >= len {
        let rest = buf.split_off(len);
        return Ok(std::mem::replace(buf, rest));
    }
    // Sized from Content-Length (already checked against the limit), but
    // never more up front than PRESIZE_BYTES: a client that announces a big
    // body and sends nothing does not get memory reserved for it.
    let mut body = Vec::with_capacity(len.min(PRESIZE_BYTES));
    body.append(buf);
    let start = Instant::now();
    let mut chunk = vec![0u8; 64 * 1024];
    while body.len() < len {
        let waited = start.elapsed();
        if waited >= BODY_DEADLINE {
            return Err(true);
        }
        let _ =
            stream.set_read_timeout(Some((BODY_DEADLINE - waited).max(Duration::from_millis(1))));
        let want = (len - body.len()).min(chunk.len());
        match stream.read(&mut chunk[..want]) {
            Ok(0) => return Err(false),
            Ok(n) => body.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) => return Err(true),
            Err(_) => return Err(false),
        }
    }
    Ok(body)
}

/// Most body buffer reserved from a request's Content-Length before the
/// bytes arrive (a batch of 256 typical records is about 600 KB).
pub const PRESIZE_BYTES: usize = 1024 * 1024;

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        204 => "No Content",
        303 => "See Other",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn write_response(mut stream: &TcpStream, resp: &Response, keep: bool) -> io::Result<()> {
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: {}\r\n",
        resp.code,
        reason(resp.code),
        resp.content_type,
        resp.body.len(),
        if keep { "keep-alive" } else { "close" }
    )
    .into_bytes();
    for (name, value) in &resp.headers {
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&resp.body);
    stream.write_all(&out)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Head, HeadError> {
        parse_head(text.as_bytes())
    }

    #[test]
    fn heads_parse_and_refuse_what_is_not_http() {
        let h =
            parse("POST /hook?x=1 HTTP/1.1\r\nHost: a\r\ncontent-length: 12\r\nX:  v \t").unwrap();
        assert_eq!((h.method.as_str(), h.path()), ("POST", "/hook"));
        assert_eq!(h.content_length, 12);
        assert_eq!(h.header("HOST"), Some("a"));
        assert_eq!(h.header("x"), Some("v"));
        assert!(h.keep_alive);
        assert!(!parse("GET / HTTP/1.0").unwrap().keep_alive);
        assert!(
            !parse("GET / HTTP/1.1\r\nConnection: close")
                .unwrap()
                .keep_alive
        );
        for bad in [
            "GET /",
            "GET  / HTTP/1.1",
            "get / HTTP/1.1",
            "GET http://x/ HTTP/1.1",
            "GET / HTTP/2",
            "GET / HTTP/1.1\r\n folded",
            "GET / HTTP/1.1\r\nNo colon",
            "GET / HTTP/1.1\r\nBad Name: v",
            "GET / HTTP/1.1\r\nContent-Length: -1",
            "GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2",
            "GET / HTTP/1.1\r\nX: a\x1bb",
        ] {
            assert!(matches!(parse(bad), Err(HeadError::Bad(_))), "{bad:?}");
        }
        assert_eq!(
            parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked").unwrap_err(),
            HeadError::Unsupported
        );
        // The same length twice is fine.
        let h = parse("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3").unwrap();
        assert_eq!(h.content_length, 3);
    }

    #[test]
    fn header_count_is_bounded_at_its_edge() {
        let head = |n: usize| {
            let mut s = "GET / HTTP/1.1".to_string();
            for i in 0..n {
                s.push_str(&format!("\r\nX-{i}: v"));
            }
            parse(&s)
        };
        assert!(head(MAX_HEADERS).is_ok());
        assert_eq!(head(MAX_HEADERS + 1).unwrap_err(), HeadError::TooLarge);
    }

    #[test]
    fn the_head_end_is_found_across_reads() {
        assert_eq!(find_end(b"GET / HTTP/1.1\r\n\r\nbody", 0), Some(14));
        assert_eq!(find_end(b"GET / HTTP/1.1\r\n\r", 0), None);
        assert_eq!(find_end(b"ab\r\n\r\n", 3), None);
        assert_eq!(find_end(b"ab\r\n\r\n", 2), Some(2));
    }

    /// A head of exactly [`MAX_HEADER_BYTES`] is read; one byte more is not.
    #[test]
    fn the_header_bound_at_its_edge() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let stop = AtomicBool::new(false);
        for (extra, ok) in [(0, true), (1, false)] {
            let writer = std::thread::spawn(move || {
                let mut head = b"GET / HTTP/1.1\r\nX: ".to_vec();
                head.resize(MAX_HEADER_BYTES + extra, b'a');
                head.extend_from_slice(b"\r\n\r\n");
                let mut c = TcpStream::connect(addr).unwrap();
                let _ = c.write_all(&head);
            });
            let (mut s, _) = l.accept().unwrap();
            let got = read_head(&mut s, &mut Vec::new(), HEADER_DEADLINE, &stop);
            assert_eq!(got.is_ok(), ok, "{extra}: {got:?}");
            if !ok {
                assert_eq!(got.unwrap_err(), HeadError::TooLarge);
            }
            drop(s);
            writer.join().unwrap();
        }
    }

    /// A real socket pair: the header bound and the body split.
    #[test]
    fn reading_stops_at_the_header_bound() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let stop = AtomicBool::new(false);
        let writer = std::thread::spawn(move || {
            let mut c = TcpStream::connect(addr).unwrap();
            let mut big = b"GET / HTTP/1.1\r\nX: ".to_vec();
            big.resize(MAX_HEADER_BYTES * 4, b'a');
            let _ = c.write_all(&big);
        });
        let (mut s, _) = l.accept().unwrap();
        let mut buf = Vec::new();
        let e = read_head(&mut s, &mut buf, HEADER_DEADLINE, &stop).unwrap_err();
        assert_eq!(e, HeadError::TooLarge);
        assert!(buf.len() <= MAX_HEADER_BYTES + 4);
        drop(s);
        writer.join().unwrap();

        let writer = std::thread::spawn(move || {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(b"POST /hook HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET")
                .unwrap();
        });
        let (mut s, _) = l.accept().unwrap();
        let mut buf = Vec::new();
        let head = read_head(&mut s, &mut buf, HEADER_DEADLINE, &stop).unwrap();
        assert_eq!(head.content_length, 5);
        let body = read_body(&mut s, &mut buf, 5).unwrap();
        assert_eq!(body, b"hello");
        assert_eq!(buf, b"GET", "the next request's start stays");
        writer.join().unwrap();
    }
}
