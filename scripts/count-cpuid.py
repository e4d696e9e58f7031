#!/usr/bin/env python3
"""Count the CPUID instructions a command executes, by object file.

In a VM a CPUID traps to the hypervisor (about 6 µs each here, see
docs/benchmarks.md "Process start"), so they are a real part of what
starting a process costs. This runs the command under gdb, puts a
breakpoint on every `cpuid` instruction of the executable and of each
shared object as it is loaded (found with objdump, stripped or not), and
counts the hits.

Usage: scripts/count-cpuid.py [--stdin FILE] COMMAND [ARGS...]
Needs gdb and objdump.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

GDB_SIDE = r'''
import gdb, re, subprocess, collections
gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("set stop-on-solib-events 1")
done = set()
where = {}
hits = collections.Counter()

def cpuid_offsets(path):
    out = subprocess.run(["objdump", "-d", path], capture_output=True, text=True).stdout
    return [int(m.group(1), 16) for m in re.finditer(r"^\s+([0-9a-f]+):\s+0f a2\s+cpuid", out, re.M)]

def arm():
    maps = gdb.execute("info proc mappings", to_string=True)
    bases = {}
    for line in maps.splitlines():
        f = line.split()
        if len(f) >= 5 and f[-1].startswith("/") and f[0].startswith("0x"):
            bases.setdefault(f[-1], int(f[0], 16))
    for path, base in bases.items():
        if path in done:
            continue
        done.add(path)
        for off in cpuid_offsets(path):
            # ELF objects of PIE/PIC code link at 0; a fixed-address
            # executable's offsets are already addresses.
            addr = off if off >= base else base + off
            bp = gdb.Breakpoint(f"*{addr:#x}", internal=True)
            where[bp.number] = path

gdb.execute("starti" + RUN_ARGS)
arm()
while True:
    try:
        gdb.execute("continue", to_string=True)
    except gdb.error:
        break
    if not gdb.selected_inferior().pid:
        break
    pc = int(gdb.parse_and_eval("$pc"))
    hit = [n for n, p in where.items() if any(b.number == n and b.location == f"*{pc:#x}" for b in gdb.breakpoints())]
    if hit:
        hits[where[hit[0]]] += 1
    else:
        arm()  # a shared-object event: arm what was just loaded
for path, n in sorted(hits.items()):
    print(f"CPUID {n:5d}  {path}")
print(f"CPUID {sum(hits.values()):5d}  in all")
'''


def main():
    args = sys.argv[1:]
    stdin = None
    if args[:1] == ["--stdin"]:
        stdin, args = args[1], args[2:]
    if not args:
        raise SystemExit(__doc__)
    for tool in ("gdb", "objdump"):
        if not shutil.which(tool):
            raise SystemExit(f"count-cpuid: `{tool}` is not installed")
    exe = shutil.which(args[0]) or args[0]
    quoted = " ".join("'" + a.replace("'", "'\\''") + "'" for a in args[1:])
    redirect = f" < '{os.path.abspath(stdin)}'" if stdin else " < /dev/null"
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(f"RUN_ARGS = {(' ' + quoted + redirect + ' > /dev/null')!r}\n" + GDB_SIDE)
        script = f.name
    try:
        out = subprocess.run(["gdb", "-q", "-batch", "-x", script, exe],
                             capture_output=True, text=True)
    finally:
        os.unlink(script)
    lines = [l[len("CPUID "):] for l in out.stdout.splitlines() if l.startswith("CPUID ")]
    if not lines:
        sys.stderr.write(out.stdout + out.stderr)
        raise SystemExit("count-cpuid: gdb did not finish the run")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
