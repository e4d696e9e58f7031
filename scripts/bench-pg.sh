#!/usr/bin/env bash
# Drain → memhook serve → PostgreSQL vs → SQLite (examples/pg_bench.rs) on a
# throwaway PostgreSQL cluster with default durability (fsync on), started
# here on a free loopback port and removed afterwards. As root the cluster
# runs as nobody. Usage:
#   scripts/bench-pg.sh [RECORDS] [ROUNDS]               throughput
#   scripts/bench-pg.sh briefing [RECORDS] [REQUESTS]    GET /handoff latency
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
cargo build --release --bins --examples >/dev/null
dir=$(mktemp -d)
chmod 755 "$dir"
run=()
if [ "$(id -u)" = 0 ]; then run=(runuser -u nobody --); fi
mkdir "$dir/data" "$dir/sock"
echo "bench-pw" > "$dir/pw"
touch "$dir/log"
if [ "$(id -u)" = 0 ]; then chown nobody: "$dir/data" "$dir/sock" "$dir/pw" "$dir/log"; fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() { "${run[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT
(cd / && "${run[@]}" "$bin/initdb" -D "$dir/data" -U memhook --pwfile "$dir/pw" \
  --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null)
(cd / && "${run[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
  -o "-p $port -k $dir/sock -c listen_addresses=127.0.0.1" start >/dev/null)
"${run[@]}" "$bin/psql" -h "$dir/sock" -p "$port" -U memhook -d postgres -qc 'CREATE DATABASE bench'
MEMHOOK_DATABASE_URL="postgres://memhook:bench-pw@127.0.0.1:$port/bench" \
  target/release/examples/pg_bench "$@"
