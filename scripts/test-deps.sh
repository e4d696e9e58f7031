#!/usr/bin/env bash
# Install what some integration tests need beyond Rust: the official Python MCP
# SDK (MCP client test) and Debian's chromium + chromium-driver (the web view's
# browser test, tests/integration/web/browser.rs). Idempotent. Exits non-zero
# when something cannot be installed: with CI set the test that needs it then
# fails; locally it is skipped with one SKIPPED line (tests/integration/deps.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv || exit 1
fi
if ! .venv/bin/python -c "import mcp" 2>/dev/null; then
  .venv/bin/pip install --quiet --disable-pip-version-check "mcp>=1.2,<2" || exit 1
fi
echo "python mcp SDK: $(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("mcp"))')"

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq || exit 1
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    chromium chromium-driver || exit 1
fi
echo "browser: $(chromium --version 2>/dev/null | head -1); $(chromedriver --version | head -1)"
