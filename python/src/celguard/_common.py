"""What every adapter shares: approvers for ask, and the texts a model sees."""

from __future__ import annotations

import inspect
from typing import Awaitable, Callable, Union

from ._decision import Decision

Approver = Callable[[Decision], Union[bool, Awaitable[bool]]]
"""Settles an ask decision: True runs the call once, False refuses it. It may
be a plain function or a coroutine function. An adapter given no approver
refuses every ask (fail closed)."""

SyncApprover = Callable[[Decision], bool]
"""An approver for the sync adapters (Prompty): a plain function."""


async def approve(approver: Approver | None, decision: Decision) -> bool:
    """Ask the approver; no approver, or one that raises, refuses."""
    if approver is None:
        return False
    try:
        answer = approver(decision)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer is True
    except Exception:
        return False


def approve_sync(approver: SyncApprover | None, decision: Decision) -> bool:
    """approve for sync hosts."""
    if approver is None:
        return False
    try:
        return approver(decision) is True
    except Exception:
        return False


def warning_text(d: Decision) -> str:
    """The note a warn adds to what the model sees."""
    return f"[celguard warning] {d.describe()}"


def refusal_text(d: Decision) -> str:
    """The text a model sees in place of a refused call's result."""
    if d.verdict == "halt":
        return f"[celguard halted this turn] {d.describe()}"
    if d.verdict == "ask":
        return f"[celguard: needs approval, none given] {d.describe()}"
    return f"[celguard blocked this call] {d.describe()}"
