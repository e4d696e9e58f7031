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

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use memhook_delivery::spool::SinkTarget;

mod bench_common;
use bench_common::*;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let rounds: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(3);
    let tmp = tempfile::tempdir().unwrap();

    // 1. Drain throughput.
    let server_data = tmp.path().join("server");
    let (mut server, url) = serve(&server_data, None);
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
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
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
