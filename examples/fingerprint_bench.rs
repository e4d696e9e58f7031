//! Cost and accuracy of the excluded-content fingerprints (run by hand; see
//! docs/benchmarks.md, "Fingerprints of excluded files").
//!
//! `cargo run --release --locked --example fingerprint_bench -- PROJECT PATTERN ORDINARY`
//!
//! - PROJECT is a project directory, PATTERN one `ignore_paths` pattern
//!   rooted there (e.g. `crates/server/**`): its files are the excluded set.
//! - ORDINARY is a directory of text that is not excluded (another
//!   project's sources): cut into 2,000-byte excerpts (the tool-body cap),
//!   it stands for ordinary tool output.
//!
//! Prints: the stat-only walk (median of 9), the build (once: files, bytes,
//! fingerprints, time), the filter's CPU per KiB of kept text against
//! `redact::clean` of the same excerpts in the same run (the baseline every
//! kept text already pays), the share of ORDINARY's lines removed (false
//! removals) and the share of the excluded files' own identifying lines
//! that the filter finds (recall).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

use memhook_core::capture::Excluder;
use memhook_core::fingerprint::{build, filter, lines, SipKey};
use memhook_core::redact;

fn texts(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut kids: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    kids.sort();
    for p in kids {
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if m.is_dir() {
            if p.file_name().is_some_and(|n| n == ".git" || n == "target") {
                continue;
            }
            texts(&p, out);
        } else if m.is_file() && m.len() <= 1 << 20 {
            if let Ok(t) = std::fs::read_to_string(&p) {
                out.push((p, t));
            }
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [project, pattern, ordinary] = &args[..] else {
        eprintln!("usage: fingerprint_bench PROJECT PATTERN ORDINARY");
        std::process::exit(2);
    };
    let project = std::fs::canonicalize(project).unwrap();
    let key = SipKey::from_bytes(&[0x5a; 16]);
    let mut ex = Excluder::new(
        std::slice::from_ref(pattern),
        project.to_str().unwrap(),
        None,
    )
    .expect("pattern");

    let mut walks = Vec::new();
    let mut walk = None;
    for _ in 0..9 {
        let t = Instant::now();
        let w = build::scan(&mut ex);
        walks.push(t.elapsed().as_secs_f64() * 1e3);
        walk = Some(w);
    }
    let walk = walk.unwrap();
    let bytes: u64 = walk.files.iter().map(|f| f.len).sum();
    println!(
        "walk: {} excluded files, {} bytes, median {:.2} ms (complete: {})",
        walk.files.len(),
        bytes,
        median(walks),
        walk.complete
    );
    let t = Instant::now();
    let set = build::build(&walk, &mut ex, Some(&project), &key, [0; 16]);
    println!(
        "build (excluded files + kept files for common lines): {:.1} ms, {} fingerprints, set file {} bytes",
        t.elapsed().as_secs_f64() * 1e3,
        set.len(),
        set.encode().len()
    );

    // Ordinary output: 2,000-byte excerpts of ORDINARY's files.
    let mut ord = Vec::new();
    texts(Path::new(ordinary), &mut ord);
    let mut excerpts: Vec<String> = Vec::new();
    for (_, t) in &ord {
        let mut cur = String::new();
        for l in t.lines() {
            if cur.len() + l.len() + 1 > 2000 {
                excerpts.push(std::mem::take(&mut cur));
            }
            cur.push_str(l);
            cur.push('\n');
        }
        if !cur.is_empty() {
            excerpts.push(cur);
        }
    }
    let kib: f64 = excerpts.iter().map(|e| e.len()).sum::<usize>() as f64 / 1024.0;
    let mut f_runs = Vec::new();
    let mut r_runs = Vec::new();
    let mut removed = 0usize;
    for round in 0..5 {
        let t = Instant::now();
        let mut n = 0;
        for e in &excerpts {
            if let Some((_, k)) = filter::filter(&set, &key, black_box(e)) {
                n += k;
            }
        }
        f_runs.push(t.elapsed().as_secs_f64() * 1e9 / kib);
        if round == 0 {
            removed = n;
        }
        let t = Instant::now();
        for e in &excerpts {
            black_box(redact::clean(black_box(e)));
        }
        r_runs.push(t.elapsed().as_secs_f64() * 1e9 / kib);
    }
    let total_lines: usize = excerpts.iter().map(|e| e.lines().count()).sum();
    let (f, r) = (median(f_runs), median(r_runs));
    println!(
        "filter: {:.0} ns per KiB of kept text; redact::clean of the same text {:.0} ns per KiB (ratio {:.2}); {:.0} KiB in {} excerpts",
        f, r, f / r, kib, excerpts.len()
    );
    println!(
        "false removals: {removed} of {total_lines} ordinary lines ({:.3}%)",
        100.0 * removed as f64 / total_lines.max(1) as f64
    );

    // Recall: each identifying line of the excluded files, alone.
    let mut buf = Vec::new();
    let (mut ident, mut found) = (0usize, 0usize);
    for f in &walk.files {
        let Ok(t) = std::fs::read_to_string(&f.path) else {
            continue;
        };
        for l in t.lines() {
            lines::squeeze(l.as_bytes(), &mut buf);
            if !lines::identifying(lines::core(&buf)) {
                continue;
            }
            ident += 1;
            if filter::matches(&set, &key, l, &mut buf) {
                found += 1;
            }
        }
    }
    println!(
        "recall: {found} of {ident} identifying lines of the excluded files are found ({:.1}%; the rest are also in kept files)",
        100.0 * found as f64 / ident.max(1) as f64
    );
}
