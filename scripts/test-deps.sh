#!/usr/bin/env bash
# Install what some integration tests need beyond Rust: the official Python MCP
# SDK (MCP client test). Idempotent. Exits non-zero when the SDK cannot be
# installed: with CI set the test that needs it then fails; locally it is
# skipped with one SKIPPED line (tests/integration/deps.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv || exit 1
fi
if ! .venv/bin/python -c "import mcp" 2>/dev/null; then
  .venv/bin/pip install --quiet --disable-pip-version-check "mcp>=1.2,<2" || exit 1
fi
echo "python mcp SDK: $(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("mcp"))')"
