//! `memhook serve` on PostgreSQL against `memhook serve` on SQLite, in the
//! same run (run by hand, never by the tests; see `scripts/bench-pg.sh`,
//! which starts a throwaway PostgreSQL for it).
//!
//! ```text
//! MEMHOOK_DATABASE_URL=postgres://… target/release/examples/pg_bench [RECORDS] [ROUNDS]
//! MEMHOOK_DATABASE_URL=postgres://… target/release/examples/pg_bench briefing [RECORDS] [REQUESTS]
//! ```
//! Throughput (the default): each round spools RECORDS records for each
//! server and runs `memhook drain` (the HTTP sink sends batches of 256);
//! the two servers take turns going first. RECORDS defaults to 10000,
//! ROUNDS to 5; medians are printed.
//!
//! `briefing`: stores RECORDS records (default 100000) in one project
//! through each store's own ingest (`Store::insert_each`,
//! `PgStore::insert_each`, 4096 at a time), starts both servers, checks
//! they give the same briefing, then times REQUESTS (default 50) `GET
//! /handoff` requests to each, taking turns; median and 95th percentile.

use std::process::Child;
use std::time::{Duration, Instant};

use memhook_core::record::Record;
use memhook_delivery::spool::SinkTarget;

mod bench_common;
use bench_common::*;

/// The load averages (1, 5, 15 minutes), as `uptime` shows them.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// Record `i` of a long history in one project: sessions of 500 records,
/// one second apart; every 25th a prompt, the rest tool results (every
/// third a file tool naming a file, every 40th a failure).
fn history_record(i: usize) -> Record {
    let mut r = record(i, 0xb1);
    r.occurred_ms = 1_700_000_000_000 + i as u64 * 1000;
    if i.is_multiple_of(25) {
        r.event = "user-prompt".into();
        r.native_event = "UserPromptSubmit".into();
        r.tool = None;
        r.title = Some(format!("prompt {i}: fix the parser for case {}", i % 97));
        r.body = None;
    } else if i.is_multiple_of(3) {
        let t = r.tool.as_mut().expect("a tool record");
        t.family = "file".into();
        t.name = Some("Edit".into());
        r.files = vec![format!("src/module{}.rs", i % 41)];
        r.title = Some("tool file".into());
    }
    if i % 40 == 1 {
        r.tool.as_mut().expect("a tool record").outcome = Some("error".into());
        r.body = Some(format!("error[E0308]: mismatched types in case {i}"));
    }
    r
}

fn get(url: &str) -> (Duration, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .proxy(None)
        .build()
        .new_agent();
    let t = Instant::now();
    let text = agent
        .get(url)
        .header("Authorization", format!("Bearer {BENCH_TOKEN}"))
        .call()
        .expect("GET /handoff")
        .body_mut()
        .read_to_string()
        .expect("briefing text");
    (t.elapsed(), text)
}

fn briefing(url: &str, n: usize, requests: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let (sqlite_dir, pg_dir) = (
        tmp.path().join("sqlite-server"),
        tmp.path().join("pg-server"),
    );
    let history: Vec<Record> = (0..n).map(history_record).collect();
    let t = Instant::now();
    let mut store = memhook_store::sqlite::Store::open(&sqlite_dir).expect("sqlite store");
    for chunk in history.chunks(4096) {
        store.insert_each(chunk).expect("sqlite ingest");
    }
    drop(store);
    let sqlite_seed = t.elapsed();
    let env = memhook_store_pg::config::Env::from_process();
    let target = memhook_store_pg::config::resolve(None, None, &env)
        .expect("MEMHOOK_DATABASE_URL")
        .expect("MEMHOOK_DATABASE_URL is set");
    let t = Instant::now();
    let pg_store = memhook_store_pg::PgStore::new(target, &pg_dir);
    for chunk in history.chunks(4096) {
        pg_store.insert_each(chunk).expect("postgres ingest");
    }
    drop(pg_store);
    let pg_seed = t.elapsed();
    println!(
        "seeded {n} records: SQLite {:.1} s, PostgreSQL {:.1} s (load {})",
        sqlite_seed.as_secs_f64(),
        pg_seed.as_secs_f64(),
        load()
    );
    let (mut sqlite, sqlite_url) = serve(&sqlite_dir, None);
    let (mut pg, pg_url) = serve(&pg_dir, Some(url));
    let path = "/handoff?workspace=bench&project=demo&session_id=new&briefing=1";
    let (_, from_sqlite) = get(&format!("{sqlite_url}{path}"));
    let (_, from_pg) = get(&format!("{pg_url}{path}"));
    assert!(!from_sqlite.is_empty(), "an empty briefing");
    assert_eq!(from_pg, from_sqlite, "the stores brief differently");
    let (mut s_ms, mut p_ms) = (vec![], vec![]);
    for i in 0..requests {
        let time = |server: &str, into: &mut Vec<f64>| {
            into.push(get(&format!("{server}{path}")).0.as_secs_f64() * 1000.0);
        };
        if i % 2 == 0 {
            time(&sqlite_url, &mut s_ms);
            time(&pg_url, &mut p_ms);
        } else {
            time(&pg_url, &mut p_ms);
            time(&sqlite_url, &mut s_ms);
        }
    }
    stop(&mut [&mut sqlite, &mut pg]);
    let (sm, pm) = (median(s_ms.clone()), median(p_ms.clone()));
    println!(
        "briefing of {n} records, {requests} requests each: SQLite median {sm:.1} ms \
         (p95 {:.1}), PostgreSQL median {pm:.1} ms (p95 {:.1}), ratio PostgreSQL/SQLite \
         {:.2} (load {})",
        percentile(s_ms, 0.95),
        percentile(p_ms, 0.95),
        pm / sm,
        load()
    );
}

fn stop(children: &mut [&mut Child]) {
    for c in children {
        // SAFETY: plain kill(2) on our own child.
        unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        c.wait().unwrap();
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    let url = std::env::var("MEMHOOK_DATABASE_URL")
        .expect("set MEMHOOK_DATABASE_URL to an empty PostgreSQL database");
    if args.get(1).map(String::as_str) == Some("briefing") {
        args.remove(1);
        let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
        let requests: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(50);
        briefing(&url, n, requests);
        return;
    }
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let rounds: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5);
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
        let (rs, rp) = if round % 2 == 0 {
            let rs = rate(&sqlite_url, 1);
            (rs, rate(&pg_url, 2))
        } else {
            let rp = rate(&pg_url, 2);
            (rate(&sqlite_url, 1), rp)
        };
        println!(
            "round {round}: serve→SQLite {rs:.0} rec/s, serve→PostgreSQL {rp:.0} rec/s, \
             ratio {:.2} (load {})",
            rp / rs,
            load()
        );
        s_rate.push(rs);
        p_rate.push(rp);
        ratio.push(rp / rs);
    }
    stop(&mut [&mut sqlite, &mut pg]);
    println!(
        "median: serve→PostgreSQL {:.0} rec/s, serve→SQLite {:.0} rec/s, ratio PostgreSQL/SQLite {:.2}",
        median(p_rate),
        median(s_rate),
        median(ratio)
    );
}
