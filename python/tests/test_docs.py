"""docs/python.md's examples run as written against celguard serve with the
built-in policies (the recommended bundle, no user or project policies),
started with --approver-token-file for the approval example. Each example
asserts what it shows."""

from __future__ import annotations

import os
import re
from typing import Iterator

import pytest

from conftest import REPO, Server, start_server, stop_server

DOC = REPO / "docs" / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


@pytest.fixture(scope="module")
def approver_token_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    f = tmp_path_factory.mktemp("approver") / "approver-token"
    f.write_text("approver-token-for-the-docs\n")
    os.chmod(f, 0o600)
    return str(f)


@pytest.fixture(scope="module")
def builtin_server(celguard_bin: str, tmp_path_factory: pytest.TempPathFactory,
                   approver_token_file: str) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("home")
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    s = start_server(celguard_bin, "--project-dir", "-", "--approver-token-file", approver_token_file, env=env)
    yield s
    stop_server(s)


def test_every_adapter_has_an_example() -> None:
    joined = "\n".join(BLOCKS)
    for mod in ("celguard.operator_use", "celguard.autogen", "celguard.prompty", "celguard.openai_agents"):
        assert f"from {mod} import" in joined, mod


@pytest.mark.parametrize("code", BLOCKS, ids=[f"example{i}" for i in range(len(BLOCKS))])
def test_example_runs(code: str, builtin_server: Server, approver_token_file: str, monkeypatch: pytest.MonkeyPatch,
                      capsys: pytest.CaptureFixture[str]) -> None:
    # exec'd as written, in this interpreter: the hosts are imported once.
    monkeypatch.setenv("CELGUARD_URL", builtin_server.url)
    monkeypatch.setenv("CELGUARD_APPROVER_TOKEN_FILE", approver_token_file)
    exec(compile(code, str(DOC), "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.strip(), "the example printed nothing"


def test_no_example_is_left_out() -> None:
    # every fenced block of Python is run: none hides behind another tag
    assert not re.findall(r"```(?:py|python3|pycon)\n", DOC.read_text())
