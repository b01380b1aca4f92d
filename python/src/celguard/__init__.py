"""celguard: a typed client of ``celguard serve`` and adapters for Python agent hosts.

The client (``Client``, ``AsyncClient``) speaks the serve session API and
fails closed: when it cannot get a decision (service down, slow, an answer
other than HTTP 200, a body that is not a Decision) it returns a block
Decision with a code and never raises. Its approval methods (``approvals``,
``approve``, ``deny``, ``revoke``, with the separate ``approver_token``) are not
decisions and raise ``ApprovalError`` with the server's code instead.

Adapters, each implementing its host's own interface (import them from their
modules; each needs its host's package installed):

* ``celguard.operator_use.CelguardPlugin``: Operator (operator-use) Plugin;
* ``celguard.autogen``: the proposed GuardrailProvider, GuardedTool and
  GuardedWorkbench for AutoGen;
* ``celguard.prompty.CelguardGuardrails``: Prompty Guardrails;
* ``celguard.openai_agents.CelguardGuards``: OpenAI Agents SDK tool
  input/output guardrails and input/output guardrails.

docs/python.md maps every verdict per host.
"""

from ._approvals import ApprovalError, ApprovalRequest, Approvals, Approved, Denial, Denied, Grant, Scope
from ._async.client import AsyncClient, AsyncOutputStream, AsyncSession
from ._base import DEFAULT_TIMEOUT, DEFAULT_URL, SECRET_WINDOW, Agent
from ._sync.client import Client, OutputStream, Session
from ._common import Approver, SyncApprover, refusal_text, warning_text
from ._decision import (
    CODE_ADAPTER_ERROR,
    CODE_BAD_RESPONSE,
    CODE_CLIENT_ERROR,
    CODE_HTTP_ERROR,
    CODE_TIMEOUT,
    CODE_UNAVAILABLE,
    Decision,
    Phase,
    Verdict,
)

from ._version import __version__

__all__ = [
    "Agent",
    "ApprovalError",
    "ApprovalRequest",
    "Approvals",
    "Approved",
    "Approver",
    "AsyncClient",
    "AsyncOutputStream",
    "AsyncSession",
    "CODE_ADAPTER_ERROR",
    "CODE_BAD_RESPONSE",
    "CODE_CLIENT_ERROR",
    "CODE_HTTP_ERROR",
    "CODE_TIMEOUT",
    "CODE_UNAVAILABLE",
    "Client",
    "DEFAULT_TIMEOUT",
    "DEFAULT_URL",
    "Decision",
    "Denial",
    "Denied",
    "Grant",
    "OutputStream",
    "Phase",
    "SECRET_WINDOW",
    "Scope",
    "Session",
    "SyncApprover",
    "Verdict",
    "refusal_text",
    "warning_text",
    "__version__",
]
