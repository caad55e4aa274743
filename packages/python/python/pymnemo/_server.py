"""A local `mnemo serve` for a workspace folder: attached to when one
already runs (it announces itself in `.mnemo/serve.json`), started
otherwise and stopped when the last client using it closes."""

from __future__ import annotations

import atexit
import collections
import http.client
import json
import logging
import os
import re
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path

from ._binary import find_mnemo_bin
from .errors import ServerStartError, code_of_exit

log = logging.getLogger("pymnemo.server")

_LISTENING = re.compile(r"listening on https?://(\S+?)(?:\s|$)")


def _setting(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class LocalServer:
    """A `mnemo serve` child process on 127.0.0.1 (a free port)."""

    def __init__(
        self,
        workspace: Path,
        binary: str,
        settings: Mapping[str, object] | None = None,
        env: Mapping[str, str] | None = None,
        token: str | None = None,
    ):
        self.workspace = workspace
        self.binary = binary
        self.settings = dict(settings or {})
        self.env = dict(env or {})
        self.token = token
        self.addr: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.tail: collections.deque[str] = collections.deque(maxlen=200)
        self._ready = threading.Event()
        self.users = 0

    def argv(self) -> list[str]:
        args = [self.binary, "serve", "--workspace", str(self.workspace), "--http", "127.0.0.1:0"]
        for k, v in self.settings.items():
            args += ["--set", f"{k}={_setting(v)}"]
        return args

    def start(self, timeout: float) -> None:
        env = {**os.environ, **self.env}
        if self.token is not None:
            env["MNEMO_TOKEN"] = self.token
        try:
            self.proc = subprocess.Popen(
                self.argv(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=env,
            )
        except OSError as e:
            raise ServerStartError(f"cannot run {self.binary}: {e.strerror or e}", code="config") from None
        threading.Thread(target=self._pump, name="mnemo-serve-stderr", daemon=True).start()
        self._ready.wait(timeout)
        if self.addr is not None:
            return
        proc = self.proc
        rc: int | None = None
        if self._ready.is_set():
            # Its stderr closed without the line: it exited, or is exiting.
            try:
                rc = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                rc = None
        said = "\n".join(self.tail).strip()
        if rc is None:
            self.stop(grace=2)
            raise ServerStartError(
                f"mnemo serve did not start listening within {timeout:g} s"
                + (f"; it printed:\n{said}" if said else ""),
                code="internal",
                stderr=said,
            )
        message = said or f"mnemo serve exited with status {rc} and printed nothing"
        if message.startswith("error: "):
            message = message[len("error: ") :]
        raise ServerStartError(message, code=code_of_exit(rc), exit_status=rc, stderr=said)

    def _pump(self) -> None:
        proc = self.proc
        assert proc is not None and proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            self.tail.append(line)
            if self.addr is None:
                m = _LISTENING.search(line)
                if m:
                    self.addr = m.group(1)
                    self._ready.set()
                    log.info("%s", line)
                    continue
            if "warning" in line[:40].lower():
                log.warning("%s", line)
            elif line.startswith("error"):
                log.error("%s", line)
            else:
                log.info("%s", line)
        self._ready.set()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM, and a second one after `grace` seconds (a server waits
        for its memory work after the first; the second stops it at once)."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        for wait in (grace, 5.0):
            try:
                proc.terminate()
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue
            except OSError:
                return
        proc.kill()
        proc.wait()


_lock = threading.Lock()
_servers: dict[tuple, LocalServer] = {}


def _key(ws: Path, binary: str, settings: Mapping[str, object] | None, env: Mapping[str, str] | None, token):
    return (
        str(ws),
        binary,
        tuple(sorted((k, _setting(v)) for k, v in (settings or {}).items())),
        tuple(sorted((env or {}).items())),
        token,
    )


def announced(ws: Path) -> str | None:
    """The loopback address of a live server that announced itself for
    `ws` in `.mnemo/serve.json` (one without a token), if it answers."""
    try:
        a = json.loads((ws / ".mnemo" / "serve.json").read_text())
        pid = int(a["pid"])
        addr = str(a["addr"])
        root = str(a["root"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if os.path.realpath(root) != str(ws):
        return None
    if os.name == "posix":  # (signal 0 on Windows would be a Ctrl-C)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except OSError:
            pass
    host, _, port = addr.rpartition(":")
    host = host.strip("[]")
    if host not in ("127.0.0.1", "::1", "localhost") and not host.startswith("127."):
        return None
    try:
        conn = http.client.HTTPConnection(host, int(port), timeout=2)
        try:
            conn.request("GET", "/health")
            resp = conn.getresponse()
            ok = resp.status == 200 and json.loads(resp.read()).get("status") == "ok"
        finally:
            conn.close()
    except (OSError, ValueError, http.client.HTTPException):
        return None
    return addr if ok else None


def acquire(
    workspace: str | os.PathLike[str],
    *,
    binary: str | os.PathLike[str] | None,
    settings: Mapping[str, object] | None,
    env: Mapping[str, str] | None,
    token: str | None,
    attach: bool,
    timeout: float,
) -> tuple[str, LocalServer | None]:
    """The address of a server for `workspace`, and the server when this
    process started it (release it with `release`)."""
    ws = Path(os.path.realpath(Path(workspace).expanduser()))
    if attach and not settings and not env and token is None:
        addr = announced(ws)
        if addr is not None:
            return addr, None
    exe = find_mnemo_bin(binary)
    key = _key(ws, exe, settings, env, token)
    with _lock:
        server = _servers.get(key)
        if server is not None and server.alive():
            server.users += 1
            assert server.addr is not None
            return server.addr, server
        server = LocalServer(ws, exe, settings, env, token)
        server.start(timeout)
        server.users = 1
        _servers[key] = server
        assert server.addr is not None
        return server.addr, server


def release(server: LocalServer) -> None:
    """One client less; the last one stops the server."""
    with _lock:
        server.users -= 1
        if server.users > 0:
            return
        for k, v in list(_servers.items()):
            if v is server:
                del _servers[k]
    server.stop()


@atexit.register
def _stop_all() -> None:
    with _lock:
        servers = list(_servers.values())
        _servers.clear()
    for s in servers:
        s.stop()
