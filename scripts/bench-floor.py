#!/usr/bin/env python3
"""What a process costs before it does any work, beside one spool-only
hook call: the floor under issue 25's "one call ≤ 1.3× /bin/true's CPU".

Builds four programs that do nothing but read stdin to its end and print
`{}` (the least a hook does), and measures them in one run with
/bin/true and each BINARY's spool-only call (the payload, marker and
environment of bench-ab.py), alternating call after call, through the
launcher of bench-hook.py (the child's CPU from wait4, its wall time from
spawn to reap):

- `c-nop`: C, dynamically linked against libc (as /bin/true is);
- `rust-nop`: Rust with std, dynamically linked, as rustc links it by
  default (libc and libgcc_s);
- `rust-nop-eh`: the same with GCC's static unwinder, as memhook links
  itself (crates/hook/build.rs), so only libc is loaded;
- `rust-nop-static`: the same, statically linked (`+crt-static`).

Each program and BINARY is copied into one temporary directory beside the
first BINARY (its file system), just written.

Usage: scripts/bench-floor.py [--runs 300] BINARY [BINARY ...]
"""

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bench_hook", os.path.join(HERE, "bench-hook.py"))
bench_hook = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_hook)
spec = importlib.util.spec_from_file_location("bench_ssab", os.path.join(HERE, "bench-session-start-ab.py"))
bench_ssab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_ssab)

C_NOP = r"""
#include <stdio.h>
#include <unistd.h>
int main(void) { char b[4096]; while (read(0, b, sizeof b) > 0) {} puts("{}"); return 0; }
"""
RUST_NOP = r"""
use std::io::Read;
fn main() {
    let mut s = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut s);
    println!("{{}}");
}
"""


def build(dir):
    """The four nops in `dir`: (label, path)."""
    c, rs = os.path.join(dir, "nop.c"), os.path.join(dir, "nop.rs")
    with open(c, "w") as f:
        f.write(C_NOP)
    with open(rs, "w") as f:
        f.write(RUST_NOP)
    out = os.path.join(dir, "c-nop")
    subprocess.run(["cc", "-O2", "-o", out, c], check=True)
    nops = [("c-nop", out)]
    rustc = ["rustc", "-C", "opt-level=3", "-C", "panic=abort", rs]
    eh = subprocess.run(["cc", "-print-file-name=libgcc_eh.a"], capture_output=True, text=True).stdout.strip()
    for label, extra in [
        ("rust-nop", []),
        ("rust-nop-eh", ["-L", f"native={os.path.dirname(eh)}", "-l", "static:+whole-archive,-bundle=gcc_eh"]),
        ("rust-nop-static", ["-C", "target-feature=+crt-static"]),
    ]:
        path = os.path.join(dir, label)
        subprocess.run(rustc + extra + ["-o", path], check=True)
        nops.append((label, path))
    return nops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("binaries", nargs="+")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="memhook-floor-")
    copies = tempfile.mkdtemp(prefix=".memhook-floor-", dir=os.path.dirname(os.path.abspath(a.binaries[0])))
    try:
        runs = [("/bin/true", "/bin/true", False)]
        runs += [(label, path, False) for label, path in build(copies)]
        for i, b in enumerate(a.binaries):
            label, path = bench_ssab.copies(b, copies, i)[0]
            runs.append((label, path, True))
        env, payload = bench_hook.spool_only(tmp)
        cpu = {label: [] for label, _, _ in runs}
        wall = {label: [] for label, _, _ in runs}
        for i in range(a.runs + 5):
            for label, path, hook in runs:
                argv = [path, "hook", "--agent", "claude-code", "--event", "PostToolUse"] if hook else [path]
                c, w, _ = bench_hook.run_once(argv, payload, env)
                if i >= 5:
                    cpu[label].append(c)
                    wall[label].append(w)
        base = statistics.median(cpu["/bin/true"])
        wbase = statistics.median(wall["/bin/true"])
        print(f"{a.runs} rounds, medians of the child's CPU (user + system) and wall (spawn to reap); "
              f"load {os.getloadavg()[0]:.1f}\n")
        print("| program | CPU | ratio to /bin/true | over /bin/true | wall | wall ratio |")
        print("|---|---|---|---|---|---|")
        for label, _, _ in runs:
            c = statistics.median(cpu[label])
            w = statistics.median(wall[label])
            print(f"| `{label}` | {c:.3f} ms | {c / base:.2f}× | {c - base:+.3f} ms | {w:.3f} ms | {w / wbase:.2f}× |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(copies, ignore_errors=True)


if __name__ == "__main__":
    main()
