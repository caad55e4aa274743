"""The installed wheel: its binary, and the package the tests import."""

from __future__ import annotations

import os
import subprocess
import sysconfig
from pathlib import Path

import pytest

import pymnemo

FROM_WHEEL = bool(os.environ.get("PYMNEMO_FROM_WHEEL"))


@pytest.mark.skipif(not FROM_WHEEL, reason="runs on the installed wheel (test.sh)")
def test_the_tests_run_the_wheels_binary_and_package():
    scripts = Path(sysconfig.get_path("scripts")).resolve()
    binary = Path(pymnemo.find_mnemo_bin()).resolve()
    assert binary == scripts / "mnemo", binary
    site = Path(sysconfig.get_path("purelib")).resolve()
    assert Path(pymnemo.__file__).resolve().is_relative_to(site)
    assert (Path(pymnemo.__file__).parent / "py.typed").exists()
    # The package's version is the binary's (both from the workspace's Cargo.toml).
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30)
    assert out.stdout.split() == ["mnemo", pymnemo.__version__]


def test_binary_runs():
    out = subprocess.run([pymnemo.find_mnemo_bin(), "--version"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout.startswith("mnemo ")
