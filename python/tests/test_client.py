"""The clients against a real celguard serve, and their fail-closed paths."""

from __future__ import annotations

import asyncio
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


def test_async_client_reused_across_event_loops(url: str) -> None:
    # Two asyncio.run calls, one client: the second loop gets a pool of its
    # own instead of "Event loop is closed" from the first loop's connections.
    client = AsyncClient(url)

    async def decide() -> Decision:
        s = await client.session()
        await s.start_turn()
        return await s.before("write_marker", {"path": "/srv/blocked/x", "content": "x"})

    first = asyncio.run(decide())
    second = asyncio.run(decide())
    assert (first.verdict, first.code) == ("block", "blocked_path")
    assert (second.verdict, second.code, second.client_side) == ("block", "blocked_path", False)


@pytest.mark.parametrize("exc", [RuntimeError("Event loop is closed"), ValueError("bad"), OSError("gone")])
def test_any_client_failure_is_a_block_with_a_code(exc: Exception) -> None:
    def boom(req: httpx.Request) -> httpx.Response:
        raise exc

    async def decide() -> Decision:
        async with AsyncClient("http://celguard.invalid", transport=httpx.MockTransport(boom)) as c:
            s = await c.session("x")
            return await s.before("t", {}, call_id="k")

    d = asyncio.run(decide())
    assert (d.verdict, d.code, d.client_side, d.call_id) == ("block", celguard.CODE_CLIENT_ERROR, True, "k")
    assert type(exc).__name__ in d.reason
    with Client("http://celguard.invalid", transport=httpx.MockTransport(boom)) as c:
        d = c.session("x").output("hi")
        assert (d.verdict, d.code, d.phase) == ("block", celguard.CODE_CLIENT_ERROR, "output")


TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def chunks(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def test_output_stream_redacts_a_secret_split_across_chunks(url: str) -> None:
    # The token arrives in 7-character chunks; no prefix of what is released
    # ever holds it, and text before it is released before the stream ends.
    filler = "lorem ipsum dolor sit amet " * 700  # about 19k characters, over two windows
    answer = filler + "the key is " + TOKEN + " and more " + filler
    with Client(url) as c:
        s = c.session()
        s.start_turn()
        st = s.output_stream()
        released: list[str] = []
        for ch in chunks(answer, 7):
            out = st.feed(ch)
            if out:
                released.append(out)
        in_flight = len(released)
        released.append(st.finish())
    seen = "".join(released)
    assert in_flight >= 1 and not st.stopped
    assert TOKEN not in seen and "[REDACTED:github_token]" in seen
    assert seen == answer.replace(TOKEN, "[REDACTED:github_token]") == st.text
    for i in range(len(released)):
        assert TOKEN[:12] not in "".join(released[:i + 1])


async def test_async_output_stream_blocks_and_cuts(url: str) -> None:
    async with AsyncClient(url) as c:
        s = await c.session()
        await s.start_turn()
        st = s.output_stream(holdback=16)
        out = "".join([await st.feed(ch) for ch in chunks("all fine so far, then BAD-OUT and the rest", 5)])
        out += await st.finish()
        assert st.stopped and st.decision is not None and st.decision.code == "bad_output"
        assert "BAD-OUT" not in out and "that answer is withheld" in out
        assert await st.feed("more") == "" and await st.finish() == ""
        # a rewrite of the whole answer once part of it was released: cut
        st = s.output_stream(holdback=8)
        out = "".join([await st.feed(ch) for ch in chunks("a long harmless opening, then SECRET-OUT", 6)])
        out += await st.finish()
        assert st.stopped and "SECRET-OUT" not in out and "withheld the rest" in out
        # and before anything was released the rewrite is exact
        st = s.output_stream()
        out = "".join([await st.feed(ch) for ch in chunks("the SECRET-OUT is 42", 3)]) + await st.finish()
        assert out == "[withheld]" and not st.stopped


def test_output_stream_fails_closed(tmp_path: object) -> None:
    with Client(f"http://127.0.0.1:{free_port()}", timeout=2) as c:
        st = c.session("x").output_stream(holdback=4)
        out = "".join(st.feed(ch) for ch in chunks("text " + TOKEN, 5)) + st.finish()
    assert TOKEN[:8] not in out and st.stopped and celguard.CODE_UNAVAILABLE in out
