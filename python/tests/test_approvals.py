"""The clients' approval methods against a real celguard serve started with
--approver-token-file: an ask records a request, approving it once lets the
identical call run once, and every refusal raises ApprovalError with the
server's code."""

from __future__ import annotations

import os
from typing import Any, Iterator

import pytest

from celguard import ApprovalError, AsyncClient, Client
from conftest import POLICY, Server, start_server, stop_server

APPROVER = "approver-token-for-tests"
DECIDER = "decision-token-for-tests"
ALWAYS: Any = "always"  # not a Scope: the server refuses it over HTTP


@pytest.fixture(scope="module")
def approver_server(celguard_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    d = tmp_path_factory.mktemp("tokens")
    files = []
    for name, tok in (("approver", APPROVER), ("decider", DECIDER)):
        f = d / name
        f.write_text(tok + "\n")
        os.chmod(f, 0o600)
        files.append(str(f))
    s = start_server(celguard_bin, "--approver-token-file", files[0], "--token-file", files[1], "-p", str(POLICY))
    yield s
    stop_server(s)


def test_sync_approve_once(approver_server: Server) -> None:
    with Client(approver_server.url, token=DECIDER, approver_token=APPROVER) as c:
        s = c.session()
        d = s.before("pay", {"amount": 5})
        assert d.verdict == "ask" and not d.allows_execution
        rid = d.request_id
        assert len(rid) == 8, d.raw
        pending = c.approvals(s.session_id)
        assert pending.session_id == s.session_id
        assert [(r.id, r.rule_id, r.tool) for r in pending.requests] == [(rid, "ask-payment", "pay")]
        assert pending.grants == []

        ok = c.approve(s.session_id, rid, "once")
        assert (ok.grant.id, ok.grant.scope, ok.request.id) == (rid, "once", rid)
        assert c.approvals(s.session_id).grants[0].id == rid
        # a different call is still asked; the identical call runs, once
        assert s.before("pay", {"amount": 6}).verdict == "ask"
        assert s.before("pay", {"amount": 5}).allows_execution
        again = s.before("pay", {"amount": 5})
        assert again.verdict == "ask" and again.request_id

        with pytest.raises(ApprovalError) as e:
            c.approve(s.session_id, again.request_id, ALWAYS)
        assert (e.value.code, e.value.status) == ("always_refused", 403)
        with pytest.raises(ApprovalError) as e:
            c.approve(s.session_id, "00000000", "once")
        assert (e.value.code, e.value.status) == ("no_such_request", 404)

        c.approve(s.session_id, again.request_id, "session")
        assert s.before("pay", {"amount": 99}).allows_execution
        c.revoke(s.session_id, again.request_id)
        assert s.before("pay", {"amount": 99}).verdict == "ask"
        with pytest.raises(ApprovalError) as e:
            c.revoke(s.session_id, "00000000")
        assert e.value.code == "no_such_request"


def test_sync_deny(approver_server: Server) -> None:
    with Client(approver_server.url, token=DECIDER, approver_token=APPROVER) as c:
        s = c.session()
        rid = s.before("pay", {"amount": 7}).request_id
        assert rid
        with Client(approver_server.url, token=DECIDER, approver_token=DECIDER) as agent:
            with pytest.raises(ApprovalError) as e:
                agent.deny(s.session_id, rid, note="mine")
            assert (e.value.code, e.value.status) == ("forbidden", 403)
        with pytest.raises(ApprovalError) as e:
            c.deny(s.session_id, "00000000")
        assert (e.value.code, e.value.status) == ("no_such_request", 404)

        got = c.deny(s.session_id, rid, note="over the limit", operator="ana")
        assert (got.denial.id, got.denial.note, got.denial.by, got.request.id) == (
            rid, "over the limit", "ana (operator token)", rid)
        # retried: refused with the note, no new request; denied twice: stale
        for _ in range(2):
            d = s.before("pay", {"amount": 7})
            # the refusal names the denied request, not a new one
            assert d.verdict == "block" and "over the limit" in d.reason and d.request_id == rid
        assert c.approvals(s.session_id).requests == []
        with pytest.raises(ApprovalError) as e:
            c.deny(s.session_id, rid)
        assert (e.value.code, e.value.status) == ("stale_request", 409)
        # another call is still asked
        assert s.before("pay", {"amount": 8}).verdict == "ask"


def test_sync_wrong_or_missing_token(approver_server: Server) -> None:
    sid = "wrong-token"
    with Client(approver_server.url, token=DECIDER) as agent:
        rid = agent.session(sid).before("pay", {"amount": 1}).request_id
        assert rid
        # without an approver token the decision token is not sent in its place
        with pytest.raises(ApprovalError) as e:
            agent.approve(sid, rid, "once")
        assert (e.value.code, e.value.status) == ("unauthorized", 401)
    with Client(approver_server.url, token=DECIDER, approver_token="not-it") as c:
        with pytest.raises(ApprovalError) as e:
            c.approvals(sid)
        assert e.value.code == "unauthorized"
    # the agents' token as the approver's: known, but not allowed there
    with Client(approver_server.url, token=DECIDER, approver_token=DECIDER) as c:
        with pytest.raises(ApprovalError) as e:
            c.approve(sid, rid, "once")
        assert (e.value.code, e.value.status) == ("forbidden", 403)


def test_sync_approvals_disabled(url: str) -> None:
    # the shared server has no --approver-token-file
    with Client(url, approver_token=APPROVER) as c:
        d = c.session().before("pay", {"amount": 1})
        assert d.verdict == "ask" and not d.allows_execution
        with pytest.raises(ApprovalError) as e:
            c.approvals("anything")
        assert (e.value.code, e.value.status) == ("approvals_disabled", 403)


def test_unreachable_raises() -> None:
    with Client("http://127.0.0.1:1", approver_token=APPROVER, timeout=1) as c:
        with pytest.raises(ApprovalError) as e:
            c.approvals("s")
        assert e.value.code == "service_unavailable"


async def test_async_approve_once(approver_server: Server) -> None:
    async with AsyncClient(approver_server.url, token=DECIDER, approver_token=APPROVER) as c:
        s = await c.session()
        d = await s.before("pay", {"amount": 5})
        assert d.verdict == "ask" and d.request_id
        assert [r.id for r in (await c.approvals(s.session_id)).requests] == [d.request_id]
        ok = await c.approve(s.session_id, d.request_id, "once")
        assert ok.grant.scope == "once"
        assert (await s.before("pay", {"amount": 5})).allows_execution
        again = await s.before("pay", {"amount": 5})
        assert again.verdict == "ask"
        with pytest.raises(ApprovalError) as e:
            await c.approve(s.session_id, again.request_id, ALWAYS)
        assert e.value.code == "always_refused"
        await c.revoke(s.session_id, again.request_id)
        assert (await c.approvals(s.session_id)).requests == []
    async with AsyncClient(approver_server.url, token=DECIDER, approver_token="not-it") as bad:
        with pytest.raises(ApprovalError) as e:
            await bad.approvals(s.session_id)
        assert (e.value.code, e.value.status) == ("unauthorized", 401)
