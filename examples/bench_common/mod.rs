//! What the delivery benchmarks (`delivery_bench`, `serve_bench`,
//! `pg_bench`) share: the binary next to the example, CPU from getrusage,
//! the benchmark scope, a realistic tool record, filling a spool, running `memhook drain` and starting
//! `memhook serve` (on SQLite, or on PostgreSQL with a database URL).
#![allow(dead_code)] // each benchmark uses its own part

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use memhook_core::record::{Record, RecordScope, RecordTool, RECORD_VERSION};
use memhook_delivery::spool::{SinkTarget, Spool, SpoolEntry, ENTRY_VERSION};

/// The token the server requires and the drainer sends (serve requires one
/// by default; the benchmarks measure that path).
pub const BENCH_TOKEN: &str = "bench-token";

pub fn bin() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    // target/<profile>/examples/<bench> → target/<profile>/memhook
    exe.parent()
        .and_then(Path::parent)
        .map(|d| d.join("memhook"))
        .filter(|p| p.exists())
        .expect("build the binary first: cargo build --release --bins --examples")
}

/// User + system CPU of `who` (`RUSAGE_SELF`, `RUSAGE_CHILDREN`).
fn cpu(who: i32) -> Duration {
    // SAFETY: getrusage fills a zeroed struct we own.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CPU of this process, all threads.
pub fn self_cpu() -> Duration {
    cpu(libc::RUSAGE_SELF)
}

/// CPU of the children that have finished.
pub fn children_cpu() -> Duration {
    cpu(libc::RUSAGE_CHILDREN)
}

/// The scope every benchmark record is in: `bench/<project>`, from a marker.
pub fn record_scope(project: &str) -> RecordScope {
    RecordScope {
        workspace: "bench".into(),
        project: project.into(),
        workspace_source: "marker".into(),
        project_source: "marker".into(),
        project_strategy: "basename".into(),
        drop_subagent: false,
        default_global: false,
        briefing: false,
        briefing_budget: 4000,
    }
}

pub fn record(i: usize, round: usize) -> Record {
    Record {
        v: RECORD_VERSION,
        key: format!("{round:08x}{i:024x}"),
        occurred_ms: memhook_core::timefmt::now_ms(),
        agent: "claude-code".into(),
        event: "post-tool-use".into(),
        native_event: "PostToolUse".into(),
        session_id: Some(format!("bench-session-{}", i / 500)),
        cwd: Some("/home/dev/projects/demo".into()),
        scope: record_scope("demo"),
        subagent: false,
        tool: Some(RecordTool {
            family: "shell".into(),
            name: Some("Bash".into()),
            call_id: Some(format!("toolu_{round}_{i}")),
            outcome: Some("success".into()),
            exit_code: Some(0),
        }),
        capture: None,
        disposition: "keep".into(),
        title: Some("tool shell".into()),
        body: Some(
            "total 36\ndrwxr-xr-x 5 dev dev 4096 src\n-rw-r--r-- 1 dev dev 812 Cargo.toml\n"
                .repeat(4),
        ),
        files: vec![],
        command: Some("ls -la".into()),
        plan: None,
    }
}

pub fn fill(data: &Path, sink: &SinkTarget, n: usize, round: usize) {
    let spool = Spool::open(data).expect("spool");
    for i in 0..n {
        spool
            .enqueue(&SpoolEntry {
                v: ENTRY_VERSION,
                sink: sink.clone(),
                attempts: 0,
                enqueued_ms: memhook_core::timefmt::now_ms(),
                record: record(i, round),
                exclusions: None,
            })
            .expect("enqueue");
    }
}

/// Run `memhook drain` on `data`; (wall, CPU of the drain process).
pub fn drain(data: &Path) -> (Duration, Duration) {
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

pub fn serve(data: &Path, database: Option<&str>) -> (Child, String) {
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

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}
