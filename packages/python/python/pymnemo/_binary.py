"""Finding the `mnemo` binary: the one this package's wheel installed, or
another one the caller names."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path

EXE = "mnemo.exe" if sys.platform == "win32" else "mnemo"


def _is_exe(p: Path) -> bool:
    return p.is_file() and os.access(p, os.X_OK)


def _scripts_dirs() -> list[Path]:
    """Where pip puts a wheel's scripts for this interpreter: the
    environment's scripts folder, the user scheme's (``pip install
    --user``), and the ``bin`` beside the package (``pip install
    --target``)."""
    dirs: list[Path] = []
    try:
        dirs.append(Path(sysconfig.get_path("scripts")))
    except KeyError:
        pass
    user_scheme = {"nt": "nt_user", "posix": "posix_user"}.get(os.name)
    if sys.platform == "darwin" and sys._framework:  # type: ignore[attr-defined]
        user_scheme = "osx_framework_user"
    if user_scheme:
        try:
            dirs.append(Path(sysconfig.get_path("scripts", scheme=user_scheme)))
        except KeyError:
            pass
    # `pip install --target DIR` puts the package in DIR and scripts in DIR/bin.
    dirs.append(Path(__file__).resolve().parent.parent / "bin")
    # The interpreter's own folder (a venv's bin when sysconfig disagrees).
    dirs.append(Path(sys.executable).parent)
    return dirs


def find_mnemo_bin(explicit: str | os.PathLike[str] | None = None) -> str:
    """The `mnemo` binary to run.

    In this order: ``explicit`` (an argument), the ``MNEMO_BIN`` environment
    variable, the binary this package's wheel installed beside the
    interpreter's scripts, then ``mnemo`` on ``PATH``. Raises
    FileNotFoundError naming every place looked at.
    """
    looked: list[str] = []
    for source, value in (("binary=", explicit), ("MNEMO_BIN", os.environ.get("MNEMO_BIN"))):
        if value:
            p = Path(value).expanduser()
            if _is_exe(p):
                return str(p)
            found = shutil.which(str(value))
            if found:
                return found
            raise FileNotFoundError(f"{source} names {str(value)!r}, which is not an executable file")
    for d in _scripts_dirs():
        p = d / EXE
        looked.append(str(d))
        if _is_exe(p):
            return str(p)
    found = shutil.which(EXE)
    if found:
        return found
    looked.append("PATH")
    raise FileNotFoundError(
        "no mnemo binary: pymnemo's wheel installs one beside the Python scripts (looked in "
        + ", ".join(looked)
        + "); set MNEMO_BIN to a mnemo binary, or pass binary="
    )
