"""The tools every host's tests give their agent, as plain functions over one
recorder: ran lists every call that really ran, so a test can tell that a
refused call never did."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable


class Toolbox:
    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

    def write_marker(self, path: str, content: str) -> str:
        """Write content to a file."""
        self.ran.append(("write_marker", {"path": path, "content": content}))
        Path(path).write_text(content)
        return "written"

    def lookup(self, query: str) -> str:
        """Look something up."""
        self.ran.append(("lookup", {"query": query}))
        return "result for " + query

    def deploy(self, target: str) -> str:
        """Deploy."""
        self.ran.append(("deploy", {"target": target}))
        return "deployed"

    def send_email(self, to: str) -> str:
        """Send an email."""
        self.ran.append(("send_email", {"to": to}))
        return "sent"

    def read_secret(self) -> str:
        """Read the secret."""
        self.ran.append(("read_secret", {}))
        return "hunter2"

    def push(self, branch: str) -> str:
        """Push a branch."""
        self.ran.append(("push", {"branch": branch}))
        return "pushed"

    def functions(self) -> list[Callable[..., str]]:
        return [self.write_marker, self.lookup, self.deploy, self.send_email, self.read_secret, self.push]
