//! Cost of `redact::clean` (run by hand; see docs/benchmarks.md, "Redaction").
//!
//! `cargo run --release --example redact_bench -- CASE` with CASE one of
//! `clean-2k`, `secrets-2k`, `all-rules-2k` (2,000 bytes: the tool-body
//! cap), `clean-16k`, `secrets-16k`, `all-rules-16k` (16 KiB: the prompt
//! cap), `shell-16k` (shell output tripping many keywords, no secret),
//! `corpus-16k` (the secrets corpus of `fixtures/secrets/`), `clean-1m`,
//! `secrets-1m`,
//! `record-2k`, `record-1m` (`record::build` of a Claude Code PostToolUse
//! whose output is that text, with secrets), or
//! `compile-each` (the compile time of every rule, in one process).
//! Each case must run in a fresh process: the first call pays for compiling
//! the regexes whose keywords hit (once per process, as in the hook), later
//! calls do not. Prints the first call's time, the median of later calls,
//! and the median of a plain copy of the same text (the baseline). Times
//! are the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), not wall time.

use std::hint::black_box;
use std::time::Duration;

use memhook_core::redact;

const SECRETS: &[&str] = &[
    "AKIAQYLPMN5HHHFPZAM2",
    "ghp_R7bE3kQ9xZ2mN4pL6vT8wY1cA5sD0fG3hJ2k",
    "password=hunter2",
    "Authorization: Bearer abcDEF123456ghiJKL789mno",
];

const ALL: &[&str] = &[
    "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
    "AKIAQYLPMN5HHHFPZAM2",
    "ghp_R7bE3kQ9xZ2mN4pL6vT8wY1cA5sD0fG3hJ2k",
    "glpat-xYz12_AbCdEfGhIjKlMn34",
    "xoxb-2637486131-2637486132-q7E2H8a0Xk1R4nT6yPz3vB9c",
    "sk_live_51Hx8JqLk2Zq7mN9pR3sT5vW",
    "sk-ant-api03-Qx7RkP2mZ9vT4nL8bW3cY6dF1gH5jK0s",
    "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdefgh",
    "Authorization: Basic dXNlcjpodW50ZXIy",
    "bearer 4f9a2c7e1b8d3f6a0c5e9b2d7f1a4c8e",
    "postgres://app:pw@db/x",
    "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "api_key=zz9",
    "--password hunter2",
];

/// Ordinary tool output (a directory listing and some code), repeated.
fn filler(len: usize) -> String {
    let unit = "drwxr-xr-x 5 root root 4096 Nov 29 15:09 src\n\
                fn greet(name: &str) -> String { format!(\"hello {name}\") }\n\
                test result: ok. 16 passed; 0 failed; finished in 0.06s\n";
    let mut s = String::with_capacity(len + unit.len());
    while s.len() < len {
        s.push_str(unit);
    }
    s.truncate(len);
    s
}

/// Shell-session output that trips the keywords of the command-flag,
/// `Basic` and URL scanners without holding a secret, repeated.
fn shell(len: usize) -> String {
    let unit = "$ curl -sSL https://example.com/install.sh | sh\n\
                Basic setup complete; run `npm login` next (login is optional)\n\
                mysql --version\nmysql  Ver 8.0.36 for Linux on x86_64\n\
                see https://docs.example.com/getting-started#tokens for details\n";
    let mut s = String::with_capacity(len + unit.len());
    while s.len() < len {
        s.push_str(unit);
    }
    s.truncate(len);
    s
}

/// The texts of `fixtures/secrets/secrets.jsonl` and `near_misses.jsonl`,
/// one a line, repeated to `len` bytes (cut at a line end).
fn corpus(len: usize) -> String {
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("fixtures/secrets");
    let mut lines = Vec::new();
    for f in ["secrets.jsonl", "near_misses.jsonl"] {
        let text = std::fs::read_to_string(dir.join(f)).expect("the corpus");
        for l in text.lines() {
            let v: serde_json::Value = serde_json::from_str(l).expect("JSON lines");
            lines.push(v["text"].as_str().expect("text").to_string());
        }
    }
    let mut s = String::new();
    'fill: loop {
        for l in &lines {
            if s.len() + l.len() + 1 > len {
                break 'fill;
            }
            s.push_str(l);
            s.push('\n');
        }
    }
    s
}

/// `len` bytes of filler with `secrets` spread evenly through it.
fn seeded(len: usize, secrets: &[&str]) -> String {
    let mut s = filler(len);
    let step = len / (secrets.len() + 1);
    for (i, sec) in secrets.iter().enumerate().rev() {
        let at = step * (i + 1);
        let at = s[..at].rfind('\n').map_or(0, |p| p + 1);
        s.insert_str(at, &format!("{sec}\n"));
    }
    s.truncate(len);
    s
}

/// CPU time of this thread: steadier than wall time on a shared machine.
struct Instant(Duration);

impl Instant {
    fn now() -> Instant {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid clock id and a valid out-pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        Instant(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }
    fn elapsed(&self) -> Duration {
        Instant::now().0.saturating_sub(self.0)
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let case = std::env::args().nth(1).unwrap_or_else(|| "clean-2k".into());
    if case == "compile-each" {
        // Compile every rule once, in rule order, and time each.
        let mut i = 0;
        loop {
            let t = Instant::now();
            let Some(kind) = redact::warm_rule(i) else {
                break;
            };
            println!(
                "rule {i:>2} {kind:<16} compile_us={:.1}",
                t.elapsed().as_secs_f64() * 1e6
            );
            i += 1;
        }
        return;
    }
    let text = match case.as_str() {
        "clean-2k" => filler(2000),
        "secrets-2k" => seeded(2000, SECRETS),
        "clean-16k" => filler(16 * 1024),
        "secrets-16k" => seeded(16 * 1024, SECRETS),
        "all-rules-16k" => seeded(16 * 1024, ALL),
        "shell-16k" => shell(16 * 1024),
        "corpus-16k" => corpus(16 * 1024),
        "clean-1m" => filler(1 << 20),
        "secrets-1m" => seeded(1 << 20, SECRETS),
        "all-rules-2k" => seeded(2000, ALL),
        "record-2k" => seeded(2048, SECRETS),
        "record-1m" => seeded(1 << 20, SECRETS),
        other => {
            eprintln!("unknown case {other}; see the file header");
            std::process::exit(2);
        }
    };
    if let Some(size) = case.strip_prefix("record-") {
        return bench_record(size, &text);
    }
    let iters = if text.len() > 100_000 { 21 } else { 501 };

    let t = Instant::now();
    let out = black_box(redact::clean(black_box(&text)));
    let first = t.elapsed();
    let redactions = out.matches(redact::MARKER_PREFIX).count();

    let mut warm = Vec::with_capacity(iters);
    let mut base = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        black_box(redact::clean(black_box(&text)));
        warm.push(t.elapsed());
        let t = Instant::now();
        black_box(black_box(&text).to_string());
        base.push(t.elapsed());
    }
    let (warm, base) = (median(warm), median(base));
    println!(
        "{case:<13} bytes={:<8} redactions={redactions:<3} first_call_us={:<9.1} warm_median_us={:<9.1} copy_median_us={:<8.2} warm/copy={:.0}x",
        text.len(),
        first.as_secs_f64() * 1e6,
        warm.as_secs_f64() * 1e6,
        base.as_secs_f64() * 1e6,
        warm.as_secs_f64() / base.as_secs_f64().max(1e-9),
    );
}

/// `record::build` for a post-tool event whose output is `text`: only a
/// window of 4x the 2,000-byte cap is ever cleaned, whatever the size.
fn bench_record(size: &str, text: &str) {
    use memhook_core::capture;
    use memhook_core::event;
    use memhook_core::record;
    use memhook_core::scope;
    let payload = serde_json::json!({
        "hook_event_name": "PostToolUse", "session_id": "s", "cwd": "/tmp/p",
        "tool_name": "Bash", "tool_input": {"command": "cat big.log"},
        "tool_use_id": "toolu_1", "tool_response": {"stdout": text, "stderr": ""}
    });
    let ev = event::normalize("claude-code", None, &payload);
    let sc = scope::Scope {
        workspace: "default".into(),
        project: "p".into(),
        workspace_source: scope::Source::Fallback,
        project_source: scope::Source::Fallback,
        marker: None,
        strategy: scope::Strategy::Basename,
        settings: scope::Settings::default(),
        capture: scope::CaptureConfig::Absent,
        warnings: vec![],
    };
    let d = capture::decide(&sc.capture, None, &ev);
    let t = Instant::now();
    let r = black_box(record::build(&ev, &sc, &d, vec![], record::new_key(), 0));
    let first = t.elapsed();
    let mut warm = Vec::new();
    for _ in 0..201 {
        let t = Instant::now();
        black_box(record::build(&ev, &sc, &d, vec![], record::new_key(), 0));
        warm.push(t.elapsed());
    }
    println!(
        "record-{size:<6} output_bytes={:<8} body_bytes={:<5} first_call_us={:<9.1} warm_median_us={:.1}",
        text.len(),
        r.body.map_or(0, |b| b.len()),
        first.as_secs_f64() * 1e6,
        median(warm).as_secs_f64() * 1e6,
    );
}
