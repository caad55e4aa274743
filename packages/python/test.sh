#!/usr/bin/env bash
# Builds pymnemo's wheel from the workspace, installs it into a fresh virtual
# environment with its test extra (pytest, LangGraph, the OpenAI Agents SDK,
# from PyPI at the versions in tests/constraints.txt) and runs its tests
# against the `mnemo` binary the wheel carries.
#
# The binary is built in the dev profile, the one `cargo test --workspace`
# builds: after the test build, the wheel costs little more than linking and
# packing, not a second (release) build of every crate. MATURIN_PROFILE
# picks another profile (release for a wheel to publish).
#
# Everything it makes lives under target/pymnemo/ (git-ignored): the build
# environment with maturin, the wheel, the test environment. Extra
# arguments go to pytest. With CI set, a missing library fails the run
# instead of skipping its tests.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
work="$target/pymnemo"
maturin_version=1.16.0
profile="${MATURIN_PROFILE:-dev}"

python="${PYTHON:-$(command -v python3 || true)}"
if [ -z "$python" ] || ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "pymnemo needs Python 3.10 or later with venv (PYTHON=${python:-python3} is not)" >&2
  exit 1
fi
pip_quiet=(--quiet --disable-pip-version-check)

# maturin, in a build environment of its own (kept between runs).
build_venv="$work/build-venv"
if ! [ -x "$build_venv/bin/maturin" ] ||
  [ "$("$build_venv/bin/maturin" --version 2>/dev/null)" != "maturin $maturin_version" ]; then
  echo "pymnemo: installing maturin $maturin_version from PyPI into $build_venv"
  rm -rf "$build_venv"
  "$python" -m venv "$build_venv"
  "$build_venv/bin/pip" install "${pip_quiet[@]}" "maturin==$maturin_version"
fi

# The wheel: the pure-Python client and the binary, built in $profile.
wheels="$work/wheels"
rm -rf "$wheels"
echo "pymnemo: maturin build --profile $profile"
start=$(date +%s)
(
  cd "$here"
  "$build_venv/bin/maturin" build --profile "$profile" --out "$wheels" \
    --interpreter "$python" --compression-method stored --strip false
)
echo "pymnemo: wheel built in $(($(date +%s) - start)) s"
wheel="$(ls "$wheels"/pymnemo-*.whl)"

# A fresh environment with the wheel and its test extra.
venv="$work/test-venv"
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/pip" install "${pip_quiet[@]}" -c "$here/tests/constraints.txt" "$wheel[test]"

# The tests run the wheel's binary: MNEMO_BIN would override it.
cd "$here"
env -u MNEMO_BIN PYMNEMO_FROM_WHEEL=1 "$venv/bin/python" -m pytest -p no:cacheprovider tests "$@"
