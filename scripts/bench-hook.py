#!/usr/bin/env python3
"""Hook hot-path benchmark: `memhook hook` against /bin/true in the same loop.

For each configuration it alternates one /bin/true and one hook run. A
small C launcher (scripts/bench-hook-launch.c, compiled on first use) forks
each child, pipes the payload to its stdin and reads the child's own CPU
time (user+sys) and peak RSS from wait4(2); wall time is spawn to reap.
Every hook run sees the same state: the record it spooled is deleted
between runs (as a drainer would), outside the measurement. The script holds the run lock, so the hook
starts no drainer (as when one is already on duty).

Usage: scripts/bench-hook.py [--bin target/release/memhook] [--runs 300]
Prints a Markdown table (medians) ready for docs/benchmarks.md.
"""

import argparse
import fcntl
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "fixtures/agents/claude-code/2.1.328/PostToolUse-Read.json")


def patterns(n, worst):
    """A realistic mix: mostly directory exclusions, a few `**/` globs
    whose literal prefix is the project root (so they get compiled).
    `worst`: every pattern has to be compiled and matched."""
    if worst:
        return [f"**/*.secret{i}" for i in range(n)]
    pats = ["secrets/**", "*.pem", "**/*.key", "docs/adr/**", "~/.ssh/**", "**/.env"]
    i = 0
    while len(pats) < n:
        pats.append(f"vendor/private{i}/**" if i % 2 else f"build/out{i}/*.log")
        i += 1
    return pats[:n]


def payload(project, size):
    p = json.load(open(FIXTURE))
    p["cwd"] = project
    p["tool_input"]["file_path"] = os.path.join(project, "src/app.py")
    p["tool_response"]["file"]["filePath"] = os.path.join(project, "src/app.py")
    p["tool_response"]["file"]["content"] = ""
    base = len(json.dumps(p).encode())
    p["tool_response"]["file"]["content"] = "x = 1  # padding\n" * max(0, (size - base) // 17)
    body = json.dumps(p).encode()
    return body + b" " * max(0, size - len(body))


LAUNCH_SRC = os.path.join(ROOT, "scripts/bench-hook-launch.c")


def launcher():
    exe = os.path.join(tempfile.gettempdir(), "memhook-bench-launch")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(LAUNCH_SRC):
        subprocess.run(["cc", "-O2", "-o", exe, LAUNCH_SRC], check=True)
    return exe


def run_once(argv, payload_file, env):
    out = subprocess.run([launcher(), payload_file] + argv, env=env,
                         capture_output=True, check=True).stdout.split()
    cpu_us, wall_us, rss_kib, status = (int(x) for x in out)
    assert status == 0, argv
    return cpu_us / 1e3, wall_us / 1e3, rss_kib / 1024.0


def bench(binary, n_patterns, size, runs, worst=False):
    tmp = tempfile.mkdtemp(prefix="memhook-bench-")
    try:
        home = os.path.join(tmp, "home")
        project = os.path.join(home, "proj")
        os.makedirs(os.path.join(project, "src"))
        with open(os.path.join(project, ".ai-memory.toml"), "w") as f:
            if n_patterns:
                pats = ", ".join(f"'{p}'" for p in patterns(n_patterns, worst))
                f.write(f"project = 'proj'\n[capture]\nignore_paths = [{pats}]\n")
            else:
                f.write("project = 'proj'\n")
        data = os.path.join(tmp, "data")
        # Hold the run lock for the whole run: each hook then finds a
        # drainer on duty and starts none (one open + one lock attempt), so
        # no drainer competes with the measurement or empties the spool.
        # (Builds before drain.run.lock looked at drain.lock: hold both.)
        os.makedirs(data, mode=0o700)
        locks = [open(os.path.join(data, n), "a") for n in ("drain.run.lock", "drain.lock")]
        for lock in locks:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AI_MEMORY_")}
        env.update(HOME=home, AI_MEMORY_DATA_DIR=data)
        body = payload(project, size)
        payload_file = os.path.join(tmp, "payload.json")
        with open(payload_file, "wb") as f:
            f.write(body)
        empty_file = os.path.join(tmp, "empty")
        open(empty_file, "wb").close()
        argv = [binary, "hook", "--agent", "claude-code", "--event", "PostToolUse"]
        # Sanity: the event is kept and enqueued.
        out = subprocess.run(argv + ["--check-capture"], input=body, capture_output=True, env=env)
        decision = json.loads(out.stdout)
        assert decision["disposition"] == "keep", decision
        true_cpu, true_wall, true_rss, hook_cpu, hook_wall, hook_rss = [], [], [], [], [], []
        for i in range(runs + 5):
            c, w, r = run_once(["/bin/true"], empty_file, env)
            hc, hw, hr = run_once(argv, payload_file, env)
            spool = os.path.join(data, "spool")
            done = [x for x in os.listdir(spool) if x.endswith(".json")]
            assert len(done) == 1, done
            # What a drainer does: delete the delivered file, keep the dirs.
            for x in done:
                os.unlink(os.path.join(spool, x))
            if i < 5:
                continue  # warm-up
            true_cpu.append(c); true_wall.append(w); true_rss.append(r)
            hook_cpu.append(hc); hook_wall.append(hw); hook_rss.append(hr)
        med = statistics.median
        return {
            "patterns": n_patterns, "worst": worst, "size": size,
            "decision": decision["disposition"],
            "true_cpu": med(true_cpu), "true_wall": med(true_wall),
            "hook_cpu": med(hook_cpu), "hook_wall": med(hook_wall),
            "hook_rss": max(hook_rss), "true_rss": max(true_rss),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/memhook"))
    ap.add_argument("--runs", type=int, default=300)
    a = ap.parse_args()
    configs = [
        (0, 2048, False),
        (16, 2048, False),
        (128, 2048, False),
        (128, 2048, True),
        (16, 1024 * 1024, False),
    ]
    print("| policy | payload | hook CPU median | /bin/true CPU median | hook wall median | /bin/true wall median | wall ratio | hook peak RSS (/bin/true) |")
    print("|---|---|---|---|---|---|---|---|")
    for n, size, worst in configs:
        runs = a.runs if size <= 4096 else max(20, a.runs // 10)
        r = bench(a.bin, n, size, runs, worst)
        label = "no [capture]" if n == 0 else f"{n} patterns" + (" (all `**/` globs)" if worst else "")
        sz = f"{size // 1024} KiB" if size < 1024 * 1024 else f"{size // (1024 * 1024)} MiB"
        print(f"| {label} | {sz} | {r['hook_cpu']:.2f} ms | {r['true_cpu']:.2f} ms | "
              f"{r['hook_wall']:.2f} ms | {r['true_wall']:.2f} ms | "
              f"{r['hook_wall'] / r['true_wall']:.2f}x | {r['hook_rss']:.1f} MiB ({r['true_rss']:.1f} MiB) |", flush=True)


if __name__ == "__main__":
    main()
