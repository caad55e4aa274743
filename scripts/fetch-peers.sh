#!/usr/bin/env bash
# Installs the peer tools the tests run (git-ignored, beside the repository):
# - nanobot-ai 0.3.5 from PyPI into .venv-nanobot/, for the round trip test
#   (crates/import/tests/nanobot_roundtrip.rs): nanobot's own SessionManager
#   loads the logs `mnemo export nanobot` writes. The test finds it there
#   (or through MNEMO_NANOBOT_PYTHON) and, when CI is set, fails without it.
# The fixtures written by OpenClaw and Claude Code are checked in
# (crates/import/tests/peers/, made by generate.sh there): nothing to install.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
version=0.3.5
venv="$root/.venv-nanobot"

if [ -x "$venv/bin/python" ] &&
  [ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("nanobot-ai"))' 2>/dev/null)" = "$version" ]; then
  echo "nanobot-ai $version present: $venv"
  exit 0
fi
python="$(command -v python3 || true)"
if [ -z "$python" ] || ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "nanobot-ai $version needs Python 3.11 or later (python3 is ${python:-missing})" >&2
  exit 1
fi
echo "installing nanobot-ai $version from PyPI into $venv ..."
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "nanobot-ai==$version"
"$venv/bin/python" -c 'from nanobot.session.manager import SessionManager' >/dev/null
echo "nanobot-ai $version installed: $venv"
