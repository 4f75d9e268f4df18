#!/usr/bin/env bash
# What a new user of the wheel does, end to end: `pip wheel .`, then install that wheel (and torch)
# into a new venv and use it there: wheel_smoke.sh [python]. Prints the wheel's size and the time
# each step took. Run by `make test`; the checks themselves are tools/scripts/wheel_smoke.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${1:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/sagejit-wheel-smoke.XXXXXXXX")
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
"$python" -m pip wheel -q --no-deps -w "$work/dist" .
built=$(date +%s)
wheel=$(ls "$work"/dist/sagejit-*.whl)
echo "wheel: $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB, built in $((built - start)) s"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q "$wheel" "torch==2.13.0"
installed=$(date +%s)
echo "installed into a new venv (with torch) in $((installed - built)) s"
# Away from the source tree, so that only the installed package can be imported.
(cd "$work" && PATH="$work/venv/bin:$PATH" "$work/venv/bin/python" "$OLDPWD/tools/scripts/wheel_smoke.py")
