#!/usr/bin/env bash
# On an NVIDIA machine with a pip-installed CUDA torch: hides the CUDA toolkit (a tmpfs over every
# /usr/local/cuda* directory, in a private mount namespace, so nothing outside this script sees it)
# and checks that sagejit.sageattn still compiles (fresh caches) and runs through pip's NVRTC
# (nvidia/cu13/lib or nvidia/cuda_nvrtc/lib, handed over by the Python package), printing which NVRTC
# was chosen and by which rule. Exit 0 when attention matches torch SDPA and no NVRTC of
# /usr/local/cuda* is mapped. docs/RUNTIME_DISCOVERY.md has the rule.
#   tests/scripts/h200_hidden_toolkit.sh <build dir holding runtime/libsagejit.so and tools/sagejit-info>
set -euo pipefail
build=$(cd "${1:?build directory (holding runtime/libsagejit.so and tools/sagejit-info)}" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
script="$repo/tests/scripts/$(basename "$0")"

if [[ "${SAGEJIT_HIDDEN_TOOLKIT_NAMESPACE:-}" != 1 ]]; then
  # root may mount in a new mount namespace; anyone else gets one inside a user namespace.
  map_root=()
  [[ $(id -u) == 0 ]] || map_root=(--map-root-user)
  exec unshare --mount --propagation private "${map_root[@]}" \
    env SAGEJIT_HIDDEN_TOOLKIT_NAMESPACE=1 bash "$script" "$build"
fi

hidden=0
for dir in /usr/local/cuda*; do
  [[ -d $dir && ! -L $dir ]] || continue  # a symlink (/usr/local/cuda) leads into a hidden one
  mount -t tmpfs -o size=1m,mode=0755 sagejit-hidden-toolkit "$dir"
  hidden=$((hidden + 1))
done
echo "hid $hidden CUDA toolkit director$([[ $hidden == 1 ]] && echo y || echo ies):" /usr/local/cuda*
if compgen -G "/usr/local/cuda*/*" >/dev/null; then
  echo "FAIL: /usr/local/cuda* still has files" >&2
  exit 1
fi
unset CUDA_HOME CUDA_PATH SAGEJIT_NVRTC_LIBRARY SAGEJIT_LIBRARY_DIRS

caches=$(mktemp -d)
trap 'rm -rf "$caches"' EXIT
SAGEJIT_LIBRARY="$build/runtime/libsagejit.so" SAGEJIT_CACHE_DIR="$caches/user" \
SAGEJIT_SYSTEM_CACHE_DIR="$caches/system" SAGEJIT_LOG=info PYTHONPATH="$repo/python" \
python3 - "$build" <<'PY'
import os
import subprocess
import sys

import torch

import sagejit
from sagejit import _runtime_dirs

build = sys.argv[1]
print("directories the package hands over:", _runtime_dirs.runtime_search_dirs())
torch.manual_seed(0)
q, k, v = (torch.randn(1, 2, 128, 128, device="cuda", dtype=torch.float16) for _ in range(3))
out = sagejit.sageattn(q, k, v, tensor_layout="HND", is_causal=False)  # compiles: the caches are empty
torch.cuda.synchronize()
ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
cos = torch.nn.functional.cosine_similarity(out.float().flatten(), ref.float().flatten(), dim=0).item()
with open("/proc/self/maps") as maps:
    nvrtc = sorted({line.split()[-1] for line in maps if "/libnvrtc.so" in line})
print("NVRTC mapped in this process:", nvrtc)
print(f"sageattn vs torch SDPA, cosine similarity: {cos:.6f}")

# sagejit-info started from Python, with the same directories (SAGEJIT_LIBRARY_DIRS): its choice and rule.
info = subprocess.run([os.path.join(build, "tools", "sagejit-info")], env=_runtime_dirs.tool_environment(),
                      capture_output=True, text=True)
section = info.stdout.split("== GPU runtime libraries ==")[-1].split("\n== ")[0]
print("sagejit-info (exit %d):%s" % (info.returncode, section))

ok = cos > 0.99 and nvrtc and not any(path.startswith("/usr/local/cuda") for path in nvrtc)
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
