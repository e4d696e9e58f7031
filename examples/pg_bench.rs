//! Drain → `memhook serve` → PostgreSQL against drain → `memhook serve` →
//! SQLite, in the same run (run by hand, never by the tests; see
//! `scripts/bench-pg.sh`, which starts a throwaway PostgreSQL for it).
//!
//! ```text
//! MEMHOOK_DATABASE_URL=postgres://… target/release/examples/pg_bench [RECORDS] [ROUNDS]
//! ```
//! Each round spools RECORDS records for each server and runs `memhook
//! drain` (the HTTP sink sends batches of 256). RECORDS defaults to 10000,
//! ROUNDS to 3; medians are printed.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use memhook::record::{Record, RecordScope, RecordTool, RECORD_VERSION};
use memhook::spool::{SinkTarget, Spool, SpoolEntry, ENTRY_VERSION};

const BENCH_TOKEN: &str = "pg-bench-token";

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

fn serve(data: &Path, database: Option<&str>) -> (Child, String) {
    let mut cmd = Command::new(bin());
    cmd.env_remove("MEMHOOK_DATABASE_URL");
    if let Some(url) = database {
        cmd.env("MEMHOOK_DATABASE_URL", url);
    }
    let mut child = cmd
        .args(["--data-dir"])
        .arg(data)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("AI_MEMORY_AUTH_TOKEN", BENCH_TOKEN)
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve");
    let mut r = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    // The first lines may report migrations; the address is on its own line.
    while r.read_line(&mut line).unwrap() > 0 && !line.contains("listening on ") {
        line.clear();
    }
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
    let url = std::env::var("MEMHOOK_DATABASE_URL")
        .expect("set MEMHOOK_DATABASE_URL to an empty PostgreSQL database");
    let tmp = tempfile::tempdir().unwrap();
    let (mut sqlite, sqlite_url) = serve(&tmp.path().join("sqlite-server"), None);
    let (mut pg, pg_url) = serve(&tmp.path().join("pg-server"), Some(&url));
    let (mut s_rate, mut p_rate, mut ratio) = (vec![], vec![], vec![]);
    for round in 0..rounds {
        let rate = |server: &str, tag: usize| {
            let client = tmp.path().join(format!("client-{round}-{tag}"));
            let target = SinkTarget::Http {
                url: server.to_string(),
            };
            fill(&client, &target, n, round * 10 + tag);
            let (wall, _) = drain(&client);
            n as f64 / wall.as_secs_f64()
        };
        let rs = rate(&sqlite_url, 1);
        let rp = rate(&pg_url, 2);
        println!("round {round}: serve→SQLite {rs:.0} rec/s, serve→PostgreSQL {rp:.0} rec/s");
        s_rate.push(rs);
        p_rate.push(rp);
        ratio.push(rp / rs);
    }
    for c in [&mut sqlite, &mut pg] {
        // SAFETY: plain kill(2) on our own child.
        unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        c.wait().unwrap();
    }
    println!(
        "median: serve→PostgreSQL {:.0} rec/s, serve→SQLite {:.0} rec/s, ratio PostgreSQL/SQLite {:.2}",
        median(p_rate),
        median(s_rate),
        median(ratio)
    );
}
