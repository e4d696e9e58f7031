#!/usr/bin/env python3
"""CPU cost of `memhook mcp` tool calls, as a ratio against `ping`.

Usage: scripts/bench_mcp.py MEMHOOK_BINARY [CALLS]

For each kind of request, one fresh `memhook mcp` process answers CALLS
requests, one at a time (send, wait for the reply). The child's CPU time
(user + system, from getrusage(RUSAGE_CHILDREN)) is measured per run; the
baseline is the same number of `ping` requests, so process start-up and the
JSON-RPC loop cancel out. Runs in a throw-away HOME and data dir. Uses only
the standard library.
"""

import json
import os
import resource
import subprocess
import sys
import tempfile


def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(binary, env, cwd, requests):
    """CPU seconds a fresh server spends answering `requests` one by one."""
    before = cpu()
    p = subprocess.Popen(
        [binary, "mcp", "--cwd", cwd],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}
    p.stdin.write(json.dumps(init) + "\n")
    p.stdin.flush()
    p.stdout.readline()
    last = None
    for i, make in enumerate(requests, start=1):
        method, params = make(last)
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
        p.stdin.flush()
        last = json.loads(p.stdout.readline())
        if "error" in last:
            raise SystemExit(f"{method} failed: {last['error']}")
        sc = last.get("result", {}).get("structuredContent")
        if sc is not None and sc.get("outcome") not in ("ok", "not_found"):
            raise SystemExit(f"{method} {params.get('name')}: {sc}")
    p.stdin.close()
    p.wait()
    return cpu() - before


def tool(name, args):
    return ("tools/call", {"name": name, "arguments": args})


def main():
    binary = os.path.abspath(sys.argv[1])
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    home = tempfile.mkdtemp(prefix="memhook-bench-")
    cwd = os.path.join(home, "work", "api")
    os.makedirs(cwd)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_MEMORY_")}
    env.update(HOME=home, AI_MEMORY_DATA_DIR=os.path.join(home, "data"))

    # A store of 200 notes of about 2 KiB, as a busy project might have.
    para = "The integration suite needs a running server; use cargo test --locked. " * 28
    seed = [
        (lambda _l, i=i: tool("memory_write", {"path": f"/notes/n{i:03}.md", "content": f"# Note {i}\n{para}", "if_version": "new"}))
        for i in range(200)
    ]
    seed.append(lambda _l: tool("memory_write", {"path": "/doc.md", "content": para, "if_version": "new"}))
    run(binary, env, cwd, seed)

    def update(last):
        # Compare-and-swap on the version the previous reply returned.
        v = "new"
        if last and "result" in last:
            v = last["result"]["structuredContent"].get("version", "new")
        return tool("memory_write", {"path": "/counter.md", "content": f"n={update.n}", "if_version": v})

    update.n = 0

    def counting(last):
        update.n += 1
        return update(last)

    kinds = {
        "ping": lambda _l: ("ping", {}),
        "memory_read": lambda _l: tool("memory_read", {"path": "/doc.md"}),
        "memory_write (CAS update)": counting,
        "memory_list (first page of 201)": lambda _l: tool("memory_list", {}),
        "memory_search (201 docs)": lambda _l: tool("memory_search", {"query": "integration server", "limit": 10}),
    }
    n_search = max(1, calls // 10)
    results = {}
    for name, make in kinds.items():
        n = n_search if "search" in name else calls
        results[name] = (n, run(binary, env, cwd, [make] * n))

    base_n, base = results["ping"]
    print(f"calls per run: {calls} (search: {n_search}); baseline ping: {base:.3f}s CPU for {base_n}")
    print(f"{'request':34} {'CPU s':>8} {'per call':>10} {'ratio vs ping':>14}")
    for name, (n, t) in results.items():
        per = t / n
        ratio = per / (base / base_n)
        print(f"{name:34} {t:8.3f} {per * 1e6:8.0f}us {ratio:13.1f}x")


if __name__ == "__main__":
    main()
