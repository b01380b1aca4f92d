"""docs/python.md's examples run as written against celguard serve with the
built-in policies (the recommended bundle, no user or project policies)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
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


RUNNER = """
import sys, traceback
failed = 0
for i, code in enumerate(sys.argv[1:]):
    print(f"--- example {i}", flush=True)
    try:
        exec(compile(code, f"docs/python.md example {i}", "exec"), {"__name__": "__main__"})
    except BaseException:
        traceback.print_exc(file=sys.stdout)
        failed += 1
sys.exit(failed)
"""


def test_examples_run(builtin_server: Server, tmp_path: Path) -> None:
    # One interpreter for all of them: importing the hosts is most of the cost.
    env = dict(os.environ, CELGUARD_URL=builtin_server.url)
    res = subprocess.run([sys.executable, "-c", RUNNER, *BLOCKS], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, f"stdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    outs = res.stdout.split("--- example ")[1:]
    assert len(outs) == len(BLOCKS)
    for out in outs:
        assert "Blocked" in out or "block" in out, out
