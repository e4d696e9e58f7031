#!/usr/bin/env python3
"""Drive `memhook mcp` through the official Python MCP SDK client.

Usage: mcp_client_test.py MEMHOOK_BINARY CWD [SEARCH_WORD]

Runs a fixed conversation (initialize, ping, list tools, write/read/update,
a stale write, a traversal, a search) and prints ONE JSON object describing
what the server answered at each step. It asserts nothing itself: the Rust
integration test (tests/integration/mcp.rs) judges the output. The server
inherits HOME and AI_MEMORY_DATA_DIR from this process's environment.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def outcome(result):
    """What a tools/call returned, as plain JSON."""
    texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
    return {
        "isError": bool(result.isError),
        "structured": result.structuredContent,
        "text": json.loads(texts[0]) if texts else None,
    }


async def main(binary, cwd, search_word):
    env = {
        k: v
        for k, v in os.environ.items()
        if k in ("HOME", "PATH", "AI_MEMORY_DATA_DIR") or k.startswith("AI_MEMORY_")
    }
    params = StdioServerParameters(command=binary, args=["mcp", "--cwd", cwd], env=env)
    report = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            report["initialize"] = {
                "protocolVersion": init.protocolVersion,
                "serverName": init.serverInfo.name,
                "hasInstructions": bool(init.instructions),
                "tools": init.capabilities.tools is not None,
            }
            await session.send_ping()
            report["ping"] = True
            tools = await session.list_tools()
            report["tools"] = {
                t.name: {
                    "required": t.inputSchema.get("required", []),
                    "properties": sorted(t.inputSchema.get("properties", {})),
                }
                for t in tools.tools
            }

            call = session.call_tool
            report["create_index"] = outcome(
                await call(
                    "memory_write",
                    {
                        "path": "/MEMORY.md",
                        "content": "# Project memory\r\n- /notes/build.md: how to build\r\n",
                        "if_version": "new",
                    },
                )
            )
            created = outcome(
                await call(
                    "memory_write",
                    {
                        "path": "/notes/build.md",
                        "content": "Build with cargo build --locked.\n",
                        "if_version": "new",
                    },
                )
            )
            report["create"] = created
            read1 = outcome(await call("memory_read", {"path": "/notes/build.md"}))
            report["read"] = read1
            v1 = read1["structured"]["version"]
            report["update"] = outcome(
                await call(
                    "memory_write",
                    {
                        "path": "/notes/build.md",
                        "content": "Build with cargo build --locked.\nThe flaky test needs --test-threads=1.\n",
                        "if_version": v1,
                    },
                )
            )
            report["stale"] = outcome(
                await call(
                    "memory_write",
                    {"path": "/notes/build.md", "content": "lost update\n", "if_version": v1},
                )
            )
            report["missing"] = outcome(
                await call(
                    "memory_write",
                    {"path": "/notes/gone.md", "content": "x\n", "if_version": v1},
                )
            )
            report["traversal"] = outcome(
                await call(
                    "memory_write",
                    {"path": "/../escape.md", "content": "x\n", "if_version": "new"},
                )
            )
            report["reserved"] = outcome(
                await call("memory_read", {"path": "/hooks/pre-commit"})
            )
            report["not_found"] = outcome(await call("memory_read", {"path": "/nope.md"}))
            report["list"] = outcome(await call("memory_list", {}))
            report["search"] = outcome(
                await call("memory_search", {"query": search_word, "limit": 10})
            )
            # A malformed call is a protocol error the SDK raises.
            try:
                await call("memory_read", {"path": "/x.md", "bogus": 1})
                report["bad_args"] = "accepted"
            except Exception as e:  # McpError
                report["bad_args"] = {"error": type(e).__name__, "code": getattr(getattr(e, "error", None), "code", None)}
    print(json.dumps(report))


if __name__ == "__main__":
    word = sys.argv[3] if len(sys.argv) > 3 else "flaky"
    asyncio.run(main(sys.argv[1], sys.argv[2], word))
