"""The package as users get it: the sync client generated from the async one
is up to date; the wheel and the sdist build, carry the README and the one
version; installed in fresh virtual environments, the bare package (from the
sdist) and each extra (from the wheel) run their host's hello world
(tests/hello/) against celguard serve."""

from __future__ import annotations

import email
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Iterator

import pytest

import celguard
from conftest import HERE, Server

PY = HERE.parent
UV = Path(sys.executable).parent / "uv"


def run(*cmd: str | Path, env: dict[str, str] | None = None, cwd: Path = PY) -> str:
    res = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, env=env)
    assert res.returncode == 0, f"{' '.join(map(str, cmd))}:\n{res.stdout}\n{res.stderr}"
    return res.stdout


def test_sync_client_is_generated_from_the_async_one() -> None:
    run(sys.executable, PY / "gen_sync.py", "--check")


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("dist")
    # The sdist from the project's files as they are now (no cache of uv's),
    # then the wheel from the sdist: what it lacks, the wheel lacks too.
    run(UV, "build", "--no-cache", "--out-dir", out, PY)
    yield out


def test_wheel_and_sdist_carry_the_readme_and_the_version(dist: Path) -> None:
    v = celguard.__version__
    [wheel] = dist.glob(f"celguard-{v}-py3-none-any.whl")
    [sdist] = dist.glob(f"celguard-{v}.tar.gz")
    with zipfile.ZipFile(wheel) as z:
        meta = email.message_from_bytes(z.read(f"celguard-{v}.dist-info/METADATA"))
        names = z.namelist()
    assert meta["Version"] == v and meta["Name"] == "celguard"
    assert "A typed client of `celguard serve`" in str(meta.get_payload())
    assert meta["Description-Content-Type"] == "text/markdown"
    assert {"celguard/_sync/client.py", "celguard/_async/client.py", "celguard/py.typed"} <= set(names)
    extras = set(meta.get_all("Provides-Extra") or [])
    assert extras == {"operator", "autogen", "prompty", "openai-agents"}
    with tarfile.open(sdist) as t:
        assert f"celguard-{v}/README.md" in t.getnames()


def fresh(tmp: Path, name: str, requirement: str) -> Path:
    venv = tmp / name
    run(UV, "venv", "-q", "--python", sys.executable, venv)
    # The test pins as constraints: the hosts' versions under test, from uv's cache.
    run(UV, "pip", "install", "-q", "--python", venv / "bin" / "python", requirement,
        "-c", PY / "requirements-test.txt")
    return venv / "bin" / "python"


def hello(python: Path, script: str, server: Server) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CELGUARD_TOKEN", "CELGUARD_TOKEN_FILE")}
    # tests/ only for the fake model server; celguard comes from the venv.
    env.update(PYTHONPATH=str(HERE), CELGUARD_URL=server.url, NO_PROXY="127.0.0.1,localhost")
    out = run(python, HERE / "hello" / script, env=env)
    assert out.startswith("ok") and str(python.parent.parent) in out, out
    return out


def test_the_sdist_installs_and_decides(dist: Path, tmp_path: Path, server: Server) -> None:
    [sdist] = dist.glob("celguard-*.tar.gz")
    python = fresh(tmp_path, "sdist", str(sdist))
    hello(python, "hello_base.py", server)


@pytest.mark.parametrize(("extra", "script"), [
    ("operator", "hello_operator.py"),
    ("autogen", "hello_autogen.py"),
    ("prompty", "hello_prompty.py"),
    ("openai-agents", "hello_openai_agents.py"),
])
def test_each_extra_runs_its_hosts_hello_world(extra: str, script: str, dist: Path, tmp_path: Path,
                                               server: Server) -> None:
    [wheel] = dist.glob("celguard-*.whl")
    python = fresh(tmp_path, extra, f"celguard[{extra}] @ {wheel.as_uri()}")
    hello(python, script, server)
