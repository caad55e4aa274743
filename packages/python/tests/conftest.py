"""Fixtures: real `mnemo serve` processes on loopback, over temporary
workspaces, run from the binary the wheel installed (or MNEMO_BIN)."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from pymnemo import Memory, find_mnemo_bin


def require(module: str, extra: str):
    """Imports a library an adapter test needs: skipped when it is not
    installed, except under CI, where a missing library fails the run."""
    if os.environ.get("CI"):
        import importlib

        return importlib.import_module(module)
    return pytest.importorskip(module, reason=f"pip install 'pymnemo[{extra}]'")


# Keyword search only: no embedding model to fetch, the same answers on
# every machine.
KEYWORDS = {"embedder.kind": "none"}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    """A test's servers see none of the caller's mnemo settings (a token,
    a workspace, a provider), only the binary to run."""
    for k in list(os.environ):
        if k.startswith("MNEMO_") and k != "MNEMO_BIN":
            monkeypatch.delenv(k)
    monkeypatch.setenv("MNEMO_EMBEDDER__KIND", "none")


@pytest.fixture(scope="session")
def mnemo_bin() -> str:
    return find_mnemo_bin()


@pytest.fixture
def workspace(tmp_path) -> Path:
    return tmp_path / "ws"


@pytest.fixture
def mem(workspace, mnemo_bin):
    with Memory(workspace=workspace, settings=KEYWORDS) as m:
        yield m


class Serve:
    """`mnemo serve` started the way a person starts it, outside the client."""

    def __init__(self, binary: str, workspace: Path, *args: str):
        self.proc = subprocess.Popen(
            [binary, "serve", "--workspace", str(workspace), "--http", "127.0.0.1:0", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "MNEMO_EMBEDDER__KIND": "none"},
        )
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 30
        self.url = None
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline().decode()
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                self.url = m.group(1)
                break
            if not line and self.proc.poll() is not None:
                break
        assert self.url, "mnemo serve did not start"
        # A server without a token announces itself just after the line
        # (not a multi-tenant one): wait for it.
        ann = workspace / ".mnemo" / "serve.json"
        announces = "--token" not in args and "--database" not in args
        while announces and not ann.exists() and time.monotonic() < deadline:
            time.sleep(0.01)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()


@pytest.fixture
def serve(mnemo_bin):
    started: list[Serve] = []

    def start(workspace: Path, *args: str) -> Serve:
        s = Serve(mnemo_bin, workspace, *args)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


# ----- under CI a skipped test fails the run -----

_skipped: list[str] = []


def pytest_runtest_logreport(report):
    if report.skipped:
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get("CI") and _skipped and exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if os.environ.get("CI") and _skipped:
        terminalreporter.write_line(
            f"CI is set: {len(_skipped)} skipped test(s) fail the run: " + ", ".join(_skipped), red=True
        )
