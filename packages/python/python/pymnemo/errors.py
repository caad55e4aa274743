"""mnemo's errors as Python exceptions.

Every error mnemo answers carries a code (`invalid_input`, `not_found`,
`busy`, ...; the table in mnemo's README) and a message that says what to
do instead. Each code has its own exception class, all of them
subclasses of :class:`MnemoError`, so callers catch what they can handle::

    try:
        mem.forget("no-such-memory")
    except pymnemo.NotFoundError as e:
        print(e.code, e.status, e.message)
"""

from __future__ import annotations

from typing import Any


class MnemoError(Exception):
    """An error answered by mnemo, or met on the way to it.

    ``code`` is mnemo's error code, ``status`` the HTTP status it came
    with (None when no server answered), ``message`` mnemo's message.
    """

    code: str = "internal"

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.status = status

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, status={self.status!r}, message={self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, self.code, self.status, dict(self.__dict__)))


def _rebuild(cls: type[MnemoError], message: str, code: str, status: int | None, state: dict) -> MnemoError:
    e = cls.__new__(cls)
    MnemoError.__init__(e, message, code=code, status=status)
    e.__dict__.update(state)
    return e


class InvalidInputError(MnemoError, ValueError):
    """`invalid_input`: the arguments cannot be used; the message says what to send."""

    code = "invalid_input"


class UnauthorizedError(MnemoError, PermissionError):
    """`unauthorized`: the server needs a token and none (or not its own) came."""

    code = "unauthorized"


class ForbiddenError(MnemoError, PermissionError):
    """`forbidden`: a path would leave the workspace, or the token does not open it."""

    code = "forbidden"


class NotFoundError(MnemoError, LookupError):
    """`not_found`: no such session, memory or endpoint."""

    code = "not_found"


class BusyError(MnemoError):
    """`busy`: another writer holds it; retrying later may succeed."""

    code = "busy"


class TooLargeError(MnemoError, ValueError):
    """`too_large`: the request body is over the server's limit (8 MiB)."""

    code = "too_large"


class CorruptError(MnemoError):
    """`corrupt`: stored data could not be read (the file is kept as it is)."""

    code = "corrupt"


class ProviderError(MnemoError):
    """`provider`: the chat or embedding model provider failed."""

    code = "provider"


class ConfigError(MnemoError):
    """`config`: configuration missing or wrong."""

    code = "config"


class NotConfiguredError(ConfigError):
    """`config` answered with 501: the operation needs a chat model (or
    consolidation) that this workspace does not have; the message says how
    to turn it on."""


class IoError(MnemoError):
    """`io`: the system refused an I/O operation (a full disk, a database
    that cannot serve); the request can be retried."""

    code = "io"


class InternalError(MnemoError):
    """`internal`: a bug or an unexpected state in mnemo."""

    code = "internal"


class ConnectionFailedError(MnemoError, ConnectionError):
    """No answer from the server: it is not running, not reachable, or it
    closed the connection. ``code`` is ``connection``."""

    code = "connection"


class ServerStartError(MnemoError):
    """A local ``mnemo serve`` could not start. ``message`` is what it said
    on stderr; ``code`` follows its exit status (``config`` for exit 7, as
    mnemo's CLI documents), ``exit_status`` is the status itself (None
    when it did not exit in time), ``stderr`` all it printed."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "internal",
        exit_status: int | None = None,
        stderr: str = "",
    ):
        super().__init__(message, code=code, status=None)
        self.exit_status = exit_status
        self.stderr = stderr


_BY_CODE: dict[str, type[MnemoError]] = {
    cls.code: cls
    for cls in (
        InvalidInputError,
        UnauthorizedError,
        ForbiddenError,
        NotFoundError,
        BusyError,
        TooLargeError,
        CorruptError,
        ProviderError,
        ConfigError,
        IoError,
        InternalError,
    )
}

_BY_STATUS = {
    400: "invalid_input",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "invalid_input",
    409: "busy",
    413: "too_large",
    415: "invalid_input",
    422: "corrupt",
    501: "config",
    502: "provider",
}

# The exit statuses of mnemo's CLI (`mnemo --help`).
_BY_EXIT = {
    1: "io",
    2: "invalid_input",
    3: "not_found",
    4: "corrupt",
    5: "busy",
    6: "provider",
    7: "config",
    8: "no_workspace",
}


def from_response(status: int, body: bytes) -> MnemoError:
    """The exception for an error answer: its code picks the class."""
    import json

    code = None
    message = None
    try:
        detail = json.loads(body)["error"]
        code = str(detail["code"])
        message = str(detail["message"])
    except Exception:
        pass
    if code is None:
        code = _BY_STATUS.get(status, "internal")
        text = body.decode("utf-8", "replace").strip()
        message = f"HTTP {status}" + (f": {text[:500]}" if text else "")
    cls = _BY_CODE.get(code, MnemoError)
    if cls is ConfigError and status == 501:
        cls = NotConfiguredError
    return cls(message or "", code=code, status=status)


def code_of_exit(status: int | None) -> str:
    """mnemo's error code for the CLI's exit status."""
    if status is None:
        return "internal"
    return _BY_EXIT.get(status, "internal")


__all__ = [
    "MnemoError",
    "InvalidInputError",
    "UnauthorizedError",
    "ForbiddenError",
    "NotFoundError",
    "BusyError",
    "TooLargeError",
    "CorruptError",
    "ProviderError",
    "ConfigError",
    "NotConfiguredError",
    "IoError",
    "InternalError",
    "ConnectionFailedError",
    "ServerStartError",
]
