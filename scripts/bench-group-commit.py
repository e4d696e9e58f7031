#!/usr/bin/env python3
"""The forms a drainer's group commit could take (src/spool/commit.rs), timed.

For N new 2 KiB files (written, not flushed, as hooks leave spool entries)
in DIR, median of 7 rounds of each form, a fresh set of files per round:

- each:       fdatasync every file, then fsync DIR;
- start+each: sync_file_range(SYNC_FILE_RANGE_WRITE) every file first (starts
              the writes), then as `each` (what memhook does);
- syncfs:     one syncfs(2) of DIR's file system;
- clean:      `each` again on files already flushed (what re-flushing a
              backlog would cost);

then syncfs with MiB of another file left dirty, to show that its cost is
the rest of the file system's. Linux only.

Usage: scripts/bench-group-commit.py DIR   (DIR on the disk to measure)
"""

import ctypes
import os
import statistics
import sys
import time

libc = ctypes.CDLL(None, use_errno=True)
SYNC_FILE_RANGE_WRITE = 2


def make(d, n, tag):
    paths = []
    for i in range(n):
        p = os.path.join(d, f"{tag}-{i}.json")
        fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        os.write(fd, b"x" * 2048)
        os.close(fd)
        paths.append(p)
    return paths


def sync_dir(d):
    fd = os.open(d, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def each(d, paths):
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        os.fdatasync(fd)
        os.close(fd)
    sync_dir(d)


def start_each(d, paths):
    fds = [os.open(p, os.O_RDONLY) for p in paths]
    for fd in fds:
        libc.sync_file_range(fd, ctypes.c_longlong(0), ctypes.c_longlong(0), SYNC_FILE_RANGE_WRITE)
    for fd in fds:
        os.fdatasync(fd)
        os.close(fd)
    sync_dir(d)


def syncfs(d, _paths):
    fd = os.open(d, os.O_RDONLY)
    libc.syncfs(fd)
    os.close(fd)


def main():
    base = os.path.join(sys.argv[1], "bench-group-commit")
    os.makedirs(base, exist_ok=True)
    print(f"load {os.getloadavg()[0]:.1f}; medians of 7, ms\n")
    print("| new files | each | start+each | syncfs | clean (already flushed) |")
    print("|---|---|---|---|---|")
    for n in (1, 4, 16, 64):
        row = []
        for name, form in (("each", each), ("start", start_each), ("syncfs", syncfs)):
            times = []
            for r in range(7):
                paths = make(base, n, f"{name}{r}")
                t = time.perf_counter()
                form(base, paths)
                times.append((time.perf_counter() - t) * 1000)
                for p in paths:
                    os.unlink(p)
            row.append(statistics.median(times))
        paths = make(base, n, "clean")
        each(base, paths)
        times = []
        for _ in range(7):
            t = time.perf_counter()
            each(base, paths)
            times.append((time.perf_counter() - t) * 1000)
        for p in paths:
            os.unlink(p)
        row.append(statistics.median(times))
        print(f"| {n} | " + " | ".join(f"{v:.2f}" for v in row) + " |")
    print("\n| MiB of another file dirty | syncfs, one new file |")
    print("|---|---|")
    big = os.path.join(base, "other")
    for mib in (0, 16, 64):
        with open(big, "wb") as f:
            f.write(os.urandom(1 << 20) * mib)
        paths = make(base, 1, "one")
        t = time.perf_counter()
        syncfs(base, paths)
        print(f"| {mib} | {(time.perf_counter() - t) * 1000:.1f} |")
        os.unlink(paths[0])
    os.unlink(big)
    os.rmdir(base)


if __name__ == "__main__":
    main()
