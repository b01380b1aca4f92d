"""docs/python.md's examples run as written against celguard serve with the
built-in policies (the recommended bundle, no user or project policies)."""

from __future__ import annotations

import os
import re
from typing import Iterator

import pytest

from conftest import REPO, Server, start_server, stop_server

DOC = REPO / "docs" / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


@pytest.fixture(scope="module")
def builtin_server(celguard_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("home")
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    s = start_server(celguard_bin, "--project-dir", "-", env=env)
    yield s
    stop_server(s)


def test_every_adapter_has_an_example() -> None:
    joined = "\n".join(BLOCKS)
    for mod in ("celguard.operator_use", "celguard.autogen", "celguard.prompty", "celguard.openai_agents"):
        assert f"from {mod} import" in joined, mod


@pytest.mark.parametrize("code", BLOCKS, ids=[f"example{i}" for i in range(len(BLOCKS))])
def test_example_runs(code: str, builtin_server: Server, monkeypatch: pytest.MonkeyPatch,
                      capsys: pytest.CaptureFixture[str]) -> None:
    # exec'd as written, in this interpreter: the hosts are imported once.
    monkeypatch.setenv("CELGUARD_URL", builtin_server.url)
    exec(compile(code, str(DOC), "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    assert "Blocked" in out or "block" in out, out
