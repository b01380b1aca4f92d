"""celguard's MCP proxy driven by the Python `mcp` package's client: over
stdio in front of the reference filesystem server (a client's mcpServers
entry), and as the gateway inside `celguard serve` over streamable HTTP in
front of the filesystem and everything servers. The servers come from npm,
installed by python_test.go (internal/npmhost) and named by
CELGUARD_MCP_FILESYSTEM and CELGUARD_MCP_EVERYTHING."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from conftest import HERE, start_server, stop_server

POLICY = HERE / "mcp_policy.yaml"


def server_bin(var: str) -> str:
    path = os.environ.get(var, "")
    if not path:
        pytest.fail(f"{var} names no MCP server: run the suite with go test ./python/ (it installs the servers from npm)")
    return path


def text(res: Any) -> str:
    return "".join(c.text for c in res.content if isinstance(c, types.TextContent))


async def exercise_filesystem(s: ClientSession, root: Path, prefix: str) -> None:
    """The filesystem server's cases, its tools named prefix + TOOL."""
    tools = {t.name for t in (await s.list_tools()).tools}
    assert prefix + "write_file" in tools and prefix + "read_text_file" in tools
    assert prefix + "move_file" not in tools, "a hidden tool is listed"

    # A hidden tool is refused when called anyway; nothing moves.
    (root / "a.txt").write_text("a")
    res = await s.call_tool(prefix + "move_file", {"source": str(root / "a.txt"), "destination": str(root / "b.txt")})
    assert res.is_error and "tool_hidden" in text(res), text(res)
    assert (root / "a.txt").exists() and not (root / "b.txt").exists()

    # A blocked write never reaches the server.
    res = await s.call_tool(prefix + "write_file", {"path": str(root / "blocked.txt"), "content": "x"})
    assert res.is_error and "test_blocked" in text(res), text(res)
    assert not (root / "blocked.txt").exists()

    # A modify rewrites the path the server sees.
    res = await s.call_tool(prefix + "write_file", {"path": str(root / "draft.txt"), "content": "rewritten"})
    assert not res.is_error, text(res)
    assert not (root / "draft.txt").exists()
    assert (root / "moved.txt").read_text() == "rewritten"

    # A redaction removes the secret from the result.
    (root / "creds.txt").write_text("user=alice\ntoken=SECRET-123456\n")
    res = await s.call_tool(prefix + "read_text_file", {"path": str(root / "creds.txt")})
    assert not res.is_error and "SECRET-" not in text(res) and "token=[REDACTED]" in text(res), text(res)


async def test_stdio_proxy(celguard_bin: str, tmp_path: Path) -> None:
    root = (tmp_path / "root").resolve()
    root.mkdir()
    pins = tmp_path / "pins.json"
    # A pin that the server's read_file no longer matches: a rug pull.
    pins.write_text(json.dumps({"fs": {"read_file": "sha256:" + "0" * 64}}))
    params = StdioServerParameters(
        command=celguard_bin,
        args=["mcp", "proxy", "--name", "fs", "-p", str(POLICY), "--pins", str(pins), "--state-dir", str(tmp_path / "state"), "--",
              server_bin("CELGUARD_MCP_FILESYSTEM"), str(root)],
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        await exercise_filesystem(s, root, "")

        # A changed tool definition is not offered and is refused.
        assert "read_file" not in {t.name for t in (await s.list_tools()).tools}
        res = await s.call_tool("read_file", {"path": str(root / "creds.txt")})
        assert res.is_error and "tool_changed" in text(res), text(res)

        # Without elicitation an ask is refused as an approval request of
        # the proxy's state directory, with the command that approves it;
        # nothing is written.
        res = await s.call_tool("write_file", {"path": str(root / "ask.txt"), "content": "x"})
        assert res.is_error and "declares no elicitation" in text(res), text(res)
        assert f"celguard approve --state-dir {tmp_path / 'state'} " in text(res), text(res)
        assert "as approval request " in text(res), text(res)
        assert not (root / "ask.txt").exists()
    pending = json.loads(pins.read_text())["pending"]
    assert pending["fs"]["read_file"].startswith("sha256:")


async def test_stdio_proxy_elicitation(celguard_bin: str, tmp_path: Path) -> None:
    root = (tmp_path / "root").resolve()
    root.mkdir()
    asked: list[str] = []

    async def approve(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    params = StdioServerParameters(
        command=celguard_bin,
        args=["mcp", "proxy", "--name", "fs", "-p", str(POLICY), "--state-dir", str(tmp_path / "state"), "--",
              server_bin("CELGUARD_MCP_FILESYSTEM"), str(root)],
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write, elicitation_callback=approve) as s:
        await s.initialize()
        res = await s.call_tool("write_file", {"path": str(root / "ask.txt"), "content": "approved"}, allow_input_required=True)
        if isinstance(res, types.InputRequiredResult):
            # 2026-07-28: the client answers the input request and retries.
            assert res.input_requests is not None
            responses: dict[str, Any] = {}
            for key, req in res.input_requests.items():
                assert isinstance(req, types.ElicitRequest)
                responses[key] = await approve(None, req.params)
            res = await s.call_tool("write_file", {"path": str(root / "ask.txt"), "content": "approved"},
                                    input_responses=responses, request_state=res.request_state)
        assert isinstance(res, types.CallToolResult) and not res.is_error, res
    assert (root / "ask.txt").read_text() == "approved"
    assert len(asked) == 1 and "ask-for-approved" in asked[0], asked


async def test_gateway_in_serve(celguard_bin: str, tmp_path: Path) -> None:
    root = (tmp_path / "root").resolve()
    root.mkdir()
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "fs": {"command": server_bin("CELGUARD_MCP_FILESYSTEM"), "args": [str(root)]},
        "everything": {"command": server_bin("CELGUARD_MCP_EVERYTHING"), "args": ["stdio"]},
    }}))
    srv = start_server(celguard_bin, "-p", str(POLICY), "--mcp-config", str(config))
    try:
        async with streamable_http_client(srv.url + "/mcp") as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            await exercise_filesystem(s, root, "fs__")
            tools = {t.name for t in (await s.list_tools()).tools}
            assert "everything__echo" in tools and "everything__get-env" not in tools
            res = await s.call_tool("everything__get-sum", {"a": 2, "b": 3})
            assert not res.is_error and "5" in text(res), text(res)
            read_res = await s.read_resource("demo://resource/static/document/features.md")
            assert isinstance(read_res, types.ReadResourceResult) and read_res.contents
            with pytest.raises(Exception, match="doc_blocked"):
                await s.read_resource("demo://resource/static/document/extension.md")
    finally:
        stop_server(srv)
