"""`python -m pymnemo ARGS` runs the mnemo binary the wheel installed."""

import os
import subprocess
import sys

from ._binary import find_mnemo_bin


def main() -> int:
    exe = find_mnemo_bin()
    if sys.platform == "win32":
        return subprocess.call([exe, *sys.argv[1:]])
    os.execv(exe, [exe, *sys.argv[1:]])
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
