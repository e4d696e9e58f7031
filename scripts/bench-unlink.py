#!/usr/bin/env python3
"""What deleting one spool-sized file costs on a file system.

Usage: python3 scripts/bench-unlink.py DIR [N]

Creates N files of 1.5 KB in DIR (created if missing), flushes them to disk
with sync(2), then times unlink(2) of each; then the same with empty files.
Prints CPU (user + system) and wall time per file. A drain deletes one such
file per delivered record, so this is the floor under drain throughput.
"""
import os
import resource
import sys
import time


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run(d, n, size, label):
    data = b"x" * size
    for i in range(n):
        fd = os.open(f"{d}/{label}-{i:08d}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        if data:
            os.write(fd, data)
        os.close(fd)
    os.sync()
    time.sleep(1)
    names = sorted(x for x in os.listdir(d) if x.startswith(label + "-"))
    c0, w0 = cpu(), time.monotonic()
    for name in names:
        os.unlink(f"{d}/{name}")
    c1, w1 = cpu(), time.monotonic()
    print(f"{d}: unlink of a {size}-byte file: {1e6 * (c1 - c0) / n:.1f} us CPU, "
          f"{1e6 * (w1 - w0) / n:.1f} us wall (n={n})")


def main():
    d = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    os.makedirs(d, exist_ok=True)
    run(d, n, 1500, "full")
    run(d, n, 0, "empty")


if __name__ == "__main__":
    main()
