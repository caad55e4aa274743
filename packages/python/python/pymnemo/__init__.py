"""pymnemo: mnemo, durable memory for LLM agents, from Python.

    from pymnemo import Memory
    mem = Memory(workspace="./agent-memory")
    mem.write("The user prefers green tea."); mem.search("what does the user drink?")

The wheel carries the `mnemo` binary; `Memory(workspace=...)` runs it as a
local server, `Memory(url=..., token=...)` talks to a remote one.
`AsyncMemory` is the asyncio client. Adapters: `pymnemo.langgraph`
(LangGraph's BaseStore) and `pymnemo.openai_agents` (the OpenAI Agents
SDK's Session).
"""

from importlib.metadata import PackageNotFoundError as _NotInstalled
from importlib.metadata import version as _version

from ._binary import find_mnemo_bin
from ._client import AsyncMemory, Memory
from .errors import (
    BusyError,
    ConfigError,
    ConnectionFailedError,
    CorruptError,
    ForbiddenError,
    InternalError,
    InvalidInputError,
    IoError,
    MnemoError,
    NotConfiguredError,
    NotFoundError,
    ProviderError,
    ServerStartError,
    TooLargeError,
    UnauthorizedError,
)

try:
    __version__ = _version("pymnemo")
except _NotInstalled:  # run from the source tree
    __version__ = "0+unknown"

__all__ = [
    "__version__",
    "Memory",
    "AsyncMemory",
    "find_mnemo_bin",
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
