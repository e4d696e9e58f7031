//! Delivery benchmark for the wire side (run by hand, never by the tests):
//!
//! 1. drain throughput to `memhook serve` over loopback, against a baseline
//!    of the same records drained into the embedded store in the same run;
//! 2. session start against a black-holed server (accepts, never answers),
//!    against a baseline of session start on an empty embedded store.
//!
//! ```text
//! cargo build --release --bins --examples
//! target/release/examples/serve_bench [RECORDS] [ROUNDS]
//! ```
//! RECORDS defaults to 10000 (the spool's cap), ROUNDS to 3; medians are printed.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use memhook::record::{Record, RecordScope, RecordTool, RECORD_VERSION};
use memhook::spool::{SinkTarget, Spool, SpoolEntry, ENTRY_VERSION};

fn bin() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    // target/<profile>/examples/serve_bench → target/<profile>/memhook
    exe.parent()
        .and_then(Path::parent)
        .map(|d| d.join("memhook"))
        .filter(|p| p.exists())
        .expect("build the binary first: cargo build --release --bins --examples")
}

fn children_cpu() -> Duration {
    // SAFETY: getrusage fills a zeroed struct we own.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn record(i: usize, round: usize) -> Record {
    Record {
        v: RECORD_VERSION,
        key: format!("{round:08x}{i:024x}"),
        occurred_ms: memhook::timefmt::now_ms(),
        agent: "claude-code".into(),
        event: "post-tool-use".into(),
        native_event: "PostToolUse".into(),
        session_id: Some(format!("bench-session-{}", i / 500)),
        cwd: Some("/home/dev/projects/demo".into()),
        scope: RecordScope {
            workspace: "bench".into(),
            project: "demo".into(),
            workspace_source: "marker".into(),
            project_source: "marker".into(),
            project_strategy: "basename".into(),
            drop_subagent: false,
            default_global: false,
            briefing: false,
            briefing_budget: 4000,
        },
        subagent: false,
        tool: Some(RecordTool {
            family: "shell".into(),
            name: Some("Bash".into()),
            call_id: Some(format!("toolu_{round}_{i}")),
            outcome: Some("success".into()),
        }),
        capture: None,
        disposition: "keep".into(),
        title: Some("tool shell".into()),
        body: Some(
            "total 36\ndrwxr-xr-x 5 dev dev 4096 src\n-rw-r--r-- 1 dev dev 812 Cargo.toml\n"
                .repeat(4),
        ),
        files: vec![],
    }
}

fn fill(data: &Path, sink: &SinkTarget, n: usize, round: usize) {
    let spool = Spool::open(data).expect("spool");
    for i in 0..n {
        spool
            .enqueue(&SpoolEntry {
                v: ENTRY_VERSION,
                sink: sink.clone(),
                attempts: 0,
                enqueued_ms: memhook::timefmt::now_ms(),
                record: record(i, round),
            })
            .expect("enqueue");
    }
}

/// Run `memhook drain` on `data`; (wall, CPU of the drain process).
fn drain(data: &Path) -> (Duration, Duration) {
    let cpu0 = children_cpu();
    let t = Instant::now();
    let out = Command::new(bin())
        .args(["--data-dir"])
        .arg(data)
        .args(["drain", "--budget-secs", "600"])
        .env_remove("AI_MEMORY_AUTH_TOKEN")
        .output()
        .expect("drain");
    let wall = t.elapsed();
    assert!(
        out.status.success(),
        "drain failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (wall, children_cpu() - cpu0)
}

fn serve(data: &Path) -> (Child, String) {
    let mut child = Command::new(bin())
        .args(["--data-dir"])
        .arg(data)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env_remove("AI_MEMORY_AUTH_TOKEN")
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve");
    let mut r = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let addr = line
        .split("listening on ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .expect("listening line")
        .to_string();
    std::thread::spawn(move || {
        let mut sink = String::new();
        while r.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
            sink.clear();
        }
    });
    (child, addr)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let rounds: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(3);
    let tmp = tempfile::tempdir().unwrap();

    // 1. Drain throughput.
    let server_data = tmp.path().join("server");
    let (mut server, url) = serve(&server_data);
    let target = SinkTarget::Http { url: url.clone() };
    let (mut store_rate, mut serve_rate, mut ratio) = (vec![], vec![], vec![]);
    let (mut store_cpu, mut serve_cpu) = (vec![], vec![]);
    for round in 0..rounds {
        let base = tmp.path().join(format!("store-{round}"));
        fill(&base, &SinkTarget::Store, n, round);
        let (w_store, c_store) = drain(&base);
        let client = tmp.path().join(format!("client-{round}"));
        fill(&client, &target, n, round + 1000);
        let (w_http, c_http) = drain(&client);
        let (rs, rh) = (
            n as f64 / w_store.as_secs_f64(),
            n as f64 / w_http.as_secs_f64(),
        );
        println!(
            "round {round}: store {rs:.0} rec/s (drain CPU {:.1} µs/rec), serve {rh:.0} rec/s (drain CPU {:.1} µs/rec)",
            c_store.as_secs_f64() * 1e6 / n as f64,
            c_http.as_secs_f64() * 1e6 / n as f64
        );
        store_rate.push(rs);
        serve_rate.push(rh);
        ratio.push(rh / rs);
        store_cpu.push(c_store.as_secs_f64() * 1e6 / n as f64);
        serve_cpu.push(c_http.as_secs_f64() * 1e6 / n as f64);
    }
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let cpu0 = children_cpu();
    server.wait().unwrap();
    let server_cpu = children_cpu() - cpu0;
    println!(
        "drain to serve: median {:.0} rec/s; embedded store baseline {:.0} rec/s; ratio serve/store {:.2}",
        median(serve_rate),
        median(store_rate),
        median(ratio)
    );
    println!(
        "CPU per record: drain→serve {:.1} µs + server {:.1} µs; drain→store {:.1} µs",
        median(serve_cpu),
        server_cpu.as_secs_f64() * 1e6 / (n * rounds) as f64,
        median(store_cpu)
    );

    // 2. Session start against a black hole.
    let hole = TcpListener::bind("127.0.0.1:0").unwrap();
    let hole_url = format!("http://{}", hole.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in hole.incoming().flatten() {
            held.push(c);
        }
    });
    let scope = memhook::scope::Scope {
        workspace: "bench".into(),
        project: "demo".into(),
        workspace_source: memhook::scope::Source::Marker,
        project_source: memhook::scope::Source::Marker,
        marker: None,
        strategy: memhook::scope::Strategy::Basename,
        settings: memhook::scope::Settings::default(),
        capture: memhook::scope::CaptureConfig::Absent,
        warnings: vec![],
    };
    let event = memhook::event::Event {
        agent: memhook::event::Agent::ClaudeCode,
        kind: memhook::event::EventKind::SessionStart,
        native_name: "SessionStart".into(),
        session_id: Some("bench-new".into()),
        cwd: Some("/home/dev/projects/demo".into()),
        tool_name: None,
        tool_input: None,
        tool_call_id: None,
        tool_response: None,
        tool_error: None,
        prompt: None,
        message: None,
        summary: None,
        detail: None,
        subagent: false,
    };
    let budget = Duration::from_millis(1500);
    let (mut hole_ms, mut base_ms) = (vec![], vec![]);
    for i in 0..5 {
        let data = tmp.path().join(format!("start-{i}"));
        // One pending record for the black-holed server, as after a prompt.
        fill(
            &data,
            &SinkTarget::Http {
                url: hole_url.clone(),
            },
            1,
            9000 + i,
        );
        let t = Instant::now();
        let got = memhook::briefing::session_start(
            &data,
            &SinkTarget::Http {
                url: hole_url.clone(),
            },
            &scope,
            &event,
            budget,
        );
        hole_ms.push(t.elapsed().as_secs_f64() * 1e3);
        assert!(got.is_none());
        let empty = tmp.path().join(format!("empty-{i}"));
        let t = Instant::now();
        let _ =
            memhook::briefing::session_start(&empty, &SinkTarget::Store, &scope, &event, budget);
        base_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "session start, black-holed server: median {:.0} ms (max {:.0} ms, budget {} ms); empty store baseline {:.2} ms",
        median(hole_ms.clone()),
        hole_ms.iter().cloned().fold(0.0, f64::max),
        budget.as_millis(),
        median(base_ms)
    );
}
