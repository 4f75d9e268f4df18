#!/usr/bin/env bash
# Creates (or refreshes) the venv the Python tests run in: python_env.sh <venv> <requirements file>.
# It reinstalls only when the requirements file changed since the last successful install.
set -euo pipefail
venv=$1
requirements=$2
stamp="$venv/.sagejit-requirements"
if [[ -x "$venv/bin/python" && -f "$stamp" ]] && cmp -s "$requirements" "$stamp"; then
  exit 0
fi
python=${PYTHON:-python3}
if [[ ! -x "$venv/bin/python" ]]; then
  echo "Creating the test venv $venv with $("$python" --version)"
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q -r "$requirements"
cp "$requirements" "$stamp"
