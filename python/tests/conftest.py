"""Fixtures: a real `celguard serve` for the whole test session (built from
this repository unless CELGUARD_BIN names a binary), on a free loopback port,
with tests/policy.yaml; stopped at the end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
POLICY = HERE / "policy.yaml"

sys.path.insert(0, str(HERE))


@pytest.fixture(scope="session")
def celguard_bin(tmp_path_factory: pytest.TempPathFactory) -> str:
    given = os.environ.get("CELGUARD_BIN")
    if given:
        return given
    out = tmp_path_factory.mktemp("bin") / "celguard"
    cmd = ["go", "build", "-o", str(out), "./cmd/celguard"]
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if res.returncode != 0:
        pytest.fail(f"building celguard failed ({' '.join(cmd)} in {REPO}):\n{res.stderr}")
    return str(out)


class Server:
    """A running celguard serve."""

    def __init__(self, url: str, proc: subprocess.Popen[str]) -> None:
        self.url = url
        self.proc = proc


def start_server(binary: str, *extra: str, env: dict[str, str] | None = None) -> Server:
    """Start celguard serve on 127.0.0.1:0 and read the address it logs.
    extra are its policy flags (tests/policy.yaml alone when none)."""
    cmd = [binary, "serve", "--listen", "127.0.0.1:0", "--log-format", "json", "--reload-interval", "0",
           *(extra or ("-p", str(POLICY)))]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    addr = ""
    lines: list[str] = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("address"):
            addr = str(rec["address"])
            break
    if not addr:
        proc.kill()
        pytest.fail(f"celguard serve did not start ({' '.join(cmd)}):\n{''.join(lines)}")
    url = addr if addr.startswith("http") else f"http://{addr}"
    stderr = proc.stderr
    threading.Thread(target=lambda: [None for _ in stderr], daemon=True).start()  # keep the pipe drained
    for _ in range(100):
        try:
            if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    return Server(url, proc)


def stop_server(s: Server) -> None:
    s.proc.terminate()
    try:
        s.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        s.proc.kill()
        s.proc.wait()


@pytest.fixture(scope="session")
def server(celguard_bin: str) -> Iterator[Server]:
    s = start_server(celguard_bin)
    yield s
    stop_server(s)


@pytest.fixture
def url(server: Server) -> str:
    return server.url
