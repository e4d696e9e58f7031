#!/usr/bin/env bash
# Install what some integration tests need beyond Rust: the official Python MCP
# SDK (MCP client test), Debian's chromium + chromium-driver (the web view's
# browser test, tests/integration/web/browser.rs) and PostgreSQL's server
# binaries (the tests start their own cluster with initdb/pg_ctl;
# tests/integration/pg.rs). Idempotent. Exits non-zero when something cannot
# be installed: with CI set the test that needs it then fails; locally it is
# skipped with one SKIPPED line (tests/integration/deps.rs).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages, installed only when missing (one apt-get run for all).
packages=()
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  packages+=(postgresql)
fi
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  packages+=(chromium chromium-driver)
fi
if [ "${#packages[@]}" -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq || exit 1
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${packages[@]}" >/dev/null || exit 1
fi
echo "postgresql: $(ls -d /usr/lib/postgresql/*/bin/initdb | head -n 1)"
echo "browser: $(chromium --version 2>/dev/null | head -1); $(chromedriver --version | head -1)"

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv || exit 1
fi
if ! .venv/bin/python -c "import mcp" 2>/dev/null; then
  .venv/bin/pip install --quiet --disable-pip-version-check "mcp>=1.2,<2" || exit 1
fi
echo "python mcp SDK: $(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("mcp"))')"
