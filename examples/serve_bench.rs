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

/// The token the server requires and the drainer sends (serve requires one
/// by default; the bench measures that path).
const BENCH_TOKEN: &str = "serve-bench-token";

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
        .env("AI_MEMORY_AUTH_TOKEN", BENCH_TOKEN)
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
        .env("AI_MEMORY_AUTH_TOKEN", BENCH_TOKEN)
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

    // 2. Session start against a black hole, through the real hook:
    //    `memhook hook --event SessionStart --server-url <black hole>` with a
    //    pending record for that server, against the same hook on an empty
    //    embedded store.
    let hole = TcpListener::bind("127.0.0.1:0").unwrap();
    let hole_url = format!("http://{}", hole.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in hole.incoming().flatten() {
            held.push(c);
        }
    });
    let payload = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/agents/claude-code/2.1.328/SessionStart-startup.json"),
    )
    .expect("fixture");
    let (mut hole_ms, mut base_ms, mut hole_out) = (vec![], vec![], String::new());
    for i in 0..5 {
        let home = tmp.path().join(format!("home-{i}"));
        let project = home.join("projects").join("demo");
        std::fs::create_dir_all(&project).unwrap();
        let payload = payload.replace("/home/dev", home.to_str().unwrap());
        for (url, out) in [(Some(&hole_url), &mut hole_ms), (None, &mut base_ms)] {
            let data = home.join(if url.is_some() {
                "data-hole"
            } else {
                "data-store"
            });
            if let Some(u) = url {
                // One pending record for the black-holed server, as after a prompt.
                fill(&data, &SinkTarget::Http { url: u.clone() }, 1, 9000 + i);
            }
            let mut f = tempfile::tempfile().unwrap();
            std::io::Write::write_all(&mut f, payload.as_bytes()).unwrap();
            std::io::Seek::rewind(&mut f).unwrap();
            let mut cmd = Command::new(bin());
            cmd.args(["--data-dir"])
                .arg(&data)
                .args(["hook", "--agent", "claude-code", "--event", "SessionStart"])
                .current_dir(&project)
                .env("HOME", &home)
                .env_remove("AI_MEMORY_AUTH_TOKEN")
                .env_remove("MEMHOOK_START_BUDGET_MS")
                .stdin(f);
            if let Some(u) = url {
                cmd.args(["--server-url", u]);
            }
            let t = Instant::now();
            let o = cmd.output().expect("hook");
            out.push(t.elapsed().as_secs_f64() * 1e3);
            assert!(o.status.success());
            if url.is_some() {
                hole_out = String::from_utf8_lossy(&o.stdout).trim().to_string();
            }
        }
    }
    println!(
        "session start (memhook hook), black-holed server: median {:.0} ms, max {:.0} ms, stdout {hole_out}; \
         empty embedded store baseline: median {:.1} ms; ratio {:.0}x",
        median(hole_ms.clone()),
        hole_ms.iter().cloned().fold(0.0, f64::max),
        median(base_ms.clone()),
        median(hole_ms) / median(base_ms)
    );
}
