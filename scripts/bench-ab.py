#!/usr/bin/env python3
"""Before/after in one run: one spool-only hook call of each BINARY,
alternating with /bin/true, call after call.

Each round runs /bin/true, then every binary in turn, through the launcher
of bench-hook.py (scripts/bench-hook-launch.c: the child's own CPU time,
wall time, peak RSS and page faults from wait4(2)). The payload is the real Claude Code
PostToolUse `Read` payload of bench-hook.py padded to 2 KiB, the project
marker has its 16 patterns, and MEMHOOK_NO_HOOK_DELIVERY=1 keeps the
drainer out; the records stay in the spool (the hook's cost does not depend
on how many are pending). The binaries share one data dir, so each sees
the same state. Because /bin/true's own cost drifts on a shared VM, only
ratios taken in the same run are compared.

Each binary is measured in two page-cache states, as two copies made in a
temporary directory beside the first BINARY (on its file system): "written" (just copied, as after `cargo install`) and "read
back" (its cached pages dropped with posix_fadvise(DONTNEED) first, so the
kernel reads it back from disk, as after a reboot). On this VM the same
binary costs up to 0.2 ms more per call read back than written: the kernel
maps the page cache's folios differently.

With --agent, --event and --fixture the call is another agent's event: the
payload is that real fixture (fixtures/agents/…), its `/home/dev/proj`
replaced by the benchmark's project. Each BINARY's directory is copied
whole (as bench-session-start-ab.py copies it), so the siblings `memhook`
hands calls to (`memhook-session`, `memhook-cli`) sit beside each copy and
a call that is handed over is measured whole (the child's CPU includes
what it `exec`s).

Usage: scripts/bench-ab.py [--runs 300] [--agent A --event E --fixture F] BINARY [BINARY ...]
"""

import argparse
import importlib.util
import os
import shutil
import statistics
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bench_hook", os.path.join(HERE, "bench-hook.py"))
bench_hook = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_hook)
spec = importlib.util.spec_from_file_location("bench_session_start_ab", os.path.join(HERE, "bench-session-start-ab.py"))
bench_ssab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_ssab)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--agent", default="claude-code")
    ap.add_argument("--event", default="PostToolUse")
    ap.add_argument("--fixture", help="a real payload (fixtures/agents/...) instead of the padded Read")
    ap.add_argument("binaries", nargs="+")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="memhook-ab-")
    # The copies live beside the first binary, on its file system: a binary
    # on tmpfs pays more per page fault than one on ext4.
    copies = tempfile.mkdtemp(prefix=".memhook-ab-", dir=os.path.dirname(os.path.abspath(a.binaries[0])))
    try:
        # (label, path): each binary's directory copied whole, in both states.
        labelled = []
        for i, b in enumerate(a.binaries):
            labelled += bench_ssab.copies(b, copies, i)
        os.sync()
        bins = [path for _, path in labelled]
        labels = dict((path, label) for label, path in labelled)
        env, payload_file = bench_hook.spool_only(tmp, a.fixture)
        empty = os.path.join(tmp, "empty")
        open(empty, "wb").close()
        rows = {b: ([], [], [], []) for b in ["/bin/true"] + bins}
        for i in range(a.runs + 5):
            for b in rows:
                if b == "/bin/true":
                    c, w, r, f = bench_hook.run_once([b], empty, env, faults=True)
                else:
                    c, w, r, f = bench_hook.run_once(
                        [b, "hook", "--agent", a.agent, "--event", a.event],
                        payload_file, env, faults=True)
                if i >= 5:
                    rows[b][0].append(c)
                    rows[b][1].append(w)
                    rows[b][2].append(r)
                    rows[b][3].append(f)
        med = statistics.median
        tc, tw = med(rows["/bin/true"][0]), med(rows["/bin/true"][1])
        print(f"{a.runs} rounds, medians; {a.agent} {a.event}; load {os.getloadavg()[0]:.1f}\n")
        print("| binary | CPU | CPU ratio | wall | wall ratio | peak RSS | page faults |")
        print("|---|---|---|---|---|---|---|")
        for b, (c, w, r, f) in rows.items():
            label = labels.get(b, b)
            print(f"| `{label}` | {med(c):.2f} ms | {med(c) / tc:.2f}× | {med(w):.2f} ms | "
                  f"{med(w) / tw:.2f}× | {max(r):.1f} MiB | {med(f):.0f} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(copies, ignore_errors=True)


if __name__ == "__main__":
    main()
