#!/usr/bin/env bash
# What starting a process costs on this machine, before memhook does any
# work: the floor a hook call is measured against (docs/benchmarks.md,
# "Process start"). Builds small probes in a temp dir and prints
#   - the cost of one CPUID instruction (a VM traps it to the hypervisor),
#   - the first `is_x86_feature_detected!` of a Rust process (std_detect),
#   - CPU per run (user + system, wait4) of: /bin/true, an empty C program
#     (dynamic, static-pie), and a Rust program printing `{}` with std's
#     `main` and with a C `main` (`#![no_main]`), dynamic and static.
# Usage: scripts/bench-process-start.sh [RUNS]
set -euo pipefail
runs=${1:-500}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
cat > cpuid.c <<'C'
#include <cpuid.h>
#include <stdio.h>
#include <time.h>
int main(void) {
    unsigned a, b, c, d;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 1000; i++) __cpuid_count(7, 0, a, b, c, d);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("one CPUID: %.2f us\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e6);
    return 0;
}
C
cat > detect.rs <<'R'
fn main() {
    let t = std::time::Instant::now();
    let avx2 = std::arch::is_x86_feature_detected!("avx2");
    println!("first is_x86_feature_detected!: {:?} (avx2: {avx2})", t.elapsed());
}
R
cat > runs.c <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    double total = 0;
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p == 0) {
            int fd = open("/dev/null", O_WRONLY);
            dup2(fd, 1);
            execv(argv[2], argv + 2);
            _exit(127);
        }
        int status;
        struct rusage ru;
        wait4(p, &status, 0, &ru);
        total += ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1e6 + ru.ru_stime.tv_usec;
    }
    printf("%-28s %4.0f us CPU per run\n", argv[2] + 2, total / n);
    return 0;
}
C
echo 'int main(void) { return 0; }' > empty.c
echo 'fn main() { println!("{{}}"); }' > std_main.rs
cat > c_main.rs <<'R'
#![no_main]
use std::io::Write;
#[no_mangle]
extern "C" fn main(_argc: i32, _argv: *const *const u8) -> i32 {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(b"{}\n");
    let _ = out.flush();
    0
}
R
gcc -O2 cpuid.c -o cpuid
gcc -O2 runs.c -o runs
gcc -O2 empty.c -o ./c-dynamic
gcc -O2 -static-pie empty.c -o ./c-static
rustc -O detect.rs -o detect
rustc -O std_main.rs -o ./rust-std-main
rustc -O c_main.rs -o ./rust-c-main
static=(-C target-feature=+crt-static --target x86_64-unknown-linux-gnu)
rustc -O "${static[@]}" std_main.rs -o ./rust-std-main-static
rustc -O "${static[@]}" c_main.rs -o ./rust-c-main-static
./cpuid
./detect
cp /bin/true ./bin-true
for p in ./bin-true ./c-dynamic ./c-static ./rust-std-main ./rust-c-main ./rust-std-main-static ./rust-c-main-static; do
    ./runs "$runs" "$p"
done
