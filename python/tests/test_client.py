"""The clients against a real celguard serve, and their fail-closed paths."""

from __future__ import annotations

import socket
import threading
from typing import Iterator

import httpx
import pytest

import celguard
from celguard import AsyncClient, Client, Decision


def test_sync_session_decides(url: str) -> None:
    with Client(url) as c:
        s = c.session(agent=celguard.Agent(name="tester"))
        assert s.start_turn() >= 1
        d = s.before("write_marker", {"path": "/srv/app/blocked/x", "content": "hi"}, call_id="c1")
        assert (d.verdict, d.code, d.rule_id, d.call_id) == ("block", "blocked_path", "blocked-path", "c1")
        assert not d.allows_execution and not d.client_side
        d = s.before("write_marker", {"path": "/srv/app/rewrite", "content": "rm -rf"})
        assert d.verdict == "modify" and d.args == {"path": "/srv/app/rewrite", "content": "sanitized"}
        d = s.after("read_secret", {}, "hunter2")
        assert d.verdict == "modify" and d.content == "[redacted]"
        assert s.before("other", {}).verdict == "allow"
        s.close()


async def test_async_session_decides(url: str) -> None:
    async with AsyncClient(url) as c:
        s = await c.session()
        await s.start_turn()
        d = await s.before("deploy", {})
        assert d.verdict == "halt" and d.halts and d.code == "deploy_freeze"
        # a halt holds for the rest of the turn
        assert (await s.before("other", {})).verdict == "halt"
        await s.start_turn()
        assert (await s.before("other", {})).verdict == "allow"


def free_port() -> int:
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        return int(sk.getsockname()[1])


def test_unreachable_blocks() -> None:
    with Client(f"http://127.0.0.1:{free_port()}", timeout=2) as c:
        s = c.session("x")
        d = s.before("anything", {}, call_id="k")
        assert (d.verdict, d.code, d.client_side, d.call_id) == ("block", celguard.CODE_UNAVAILABLE, True, "k")
        assert s.end_turn().verdict == "block"


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts connections and never answers."""
    sk = socket.socket()
    sk.bind(("127.0.0.1", 0))
    sk.listen(8)
    conns: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sk.settimeout(0.2)
        while not stop.is_set():
            try:
                conns.append(sk.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{sk.getsockname()[1]}"
    stop.set()
    t.join()
    for cn in conns:
        cn.close()
    sk.close()


async def test_timeout_blocks(silent_server: str) -> None:
    async with AsyncClient(silent_server, timeout=0.3) as c:
        s = await c.session("x")
        d = await s.before("anything", {})
        assert (d.verdict, d.code) == ("block", celguard.CODE_TIMEOUT)


@pytest.mark.parametrize(("status", "body", "code"), [
    (500, b'{"error":{"code":"internal","message":"boom"}}', celguard.CODE_HTTP_ERROR),
    (401, b'{"error":{"code":"unauthorized","message":"token"}}', celguard.CODE_HTTP_ERROR),
    (404, b"not found", celguard.CODE_HTTP_ERROR),
    (200, b"not json", celguard.CODE_BAD_RESPONSE),
    (200, b"[]", celguard.CODE_BAD_RESPONSE),
    (200, b'{"verdict":"maybe"}', celguard.CODE_BAD_RESPONSE),
    (200, b'{"verdict":"modify","phase":"before","tool":"t"}', celguard.CODE_BAD_RESPONSE),
    (200, b'{"verdict":"modify","args":"rm -rf /"}', celguard.CODE_BAD_RESPONSE),
])
def test_bad_answers_block(status: int, body: bytes, code: str) -> None:
    transport = httpx.MockTransport(lambda req: httpx.Response(status, content=body))
    with Client("http://celguard.invalid", transport=transport) as c:
        d = c.session("x").before("t", {})
        assert (d.verdict, d.code, d.client_side) == ("block", code, True)


def test_token_is_sent() -> None:
    seen: list[str] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(req.headers.get("Authorization", ""))
        return httpx.Response(200, json={"verdict": "allow", "phase": "before", "tool": "t"})

    with Client("http://celguard.invalid", token="s3cret", transport=httpx.MockTransport(handler)) as c:
        assert c.session("a/b").before("t", {}).verdict == "allow"
    assert seen and all(h == "Bearer s3cret" for h in seen)


def test_decision_describe() -> None:
    d = Decision.from_json({"verdict": "warn", "reason": "careful", "code": "c", "rule_id": "r", "metadata": {"k": 1}})
    assert d.describe() == "careful [c, r]" and d.metadata == {"k": "1"} and d.allows_execution
