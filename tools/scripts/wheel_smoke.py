"""Checks an installed sagejit wheel from outside the source tree (run by wheel_smoke.sh in a new venv):
the package and its library come from the venv, the C ABI answers, the programs run through their
entry points and `python -m sagejit`, and the torch op computes attention on the CPU (the emulator)."""
import ctypes
import os
import subprocess
import sys
import sysconfig

import sagejit

site = sysconfig.get_paths()["purelib"]
package = os.path.dirname(sagejit.__file__)
assert package.startswith(site), f"sagejit imported from {package}, not from the venv's {site}"
lib = sagejit.library()
assert os.path.dirname(lib._name) == package, f"libsagejit loaded from {lib._name}, not from {package}"
print(f"import sagejit: {package}, libsagejit {sagejit.version()}")

# The C ABI through ctypes, as any language would call it.
options = lib.sagejit_default_options()
assert options.layout == 0 and options.smooth_k == 1, "sagejit_default_options() gave unexpected defaults"
assert lib.sagejit_status_string(2) == b"unsupported", lib.sagejit_status_string(2)
assert lib.sagejit_check_head_dim(ctypes.c_int64(128)) == 0, sagejit._library.last_error()
assert lib.sagejit_check_head_dim(ctypes.c_int64(256)) == 0, sagejit._library.last_error()
assert lib.sagejit_check_head_dim(ctypes.c_int64(264)) == 2, "head_dim 264 was accepted"
print("C ABI: ok")

# The programs: pip's entry points and python -m sagejit.
for command in (["sagejit-info"], ["sagejit-cache", "--help"], ["sagejit-precompile", "--help"],
                ["sagejit-selftest", "--help"], ["sagejit-autotune", "--help"],
                [sys.executable, "-m", "sagejit", "info"]):
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, f"{' '.join(command)} exited {result.returncode}: {result.stderr}"
    assert result.stdout.strip(), f"{' '.join(command)} printed nothing"
    print(f"{' '.join(command)}: exit 0")

# The torch op on CPU tensors (the library's emulator) against an fp64 reference.
import torch  # noqa: E402

assert hasattr(torch.ops.sagejit, "sageattn"), "torch.ops.sagejit.sageattn is not registered"
generator = torch.Generator().manual_seed(1234)
q, k, v = (torch.randn(1, 2, 80, 64, generator=generator).to(torch.bfloat16) for _ in range(3))
out = sagejit.sageattn(q, k, v)
reference = torch.softmax(q.double() @ k.double().transpose(-1, -2) / 8.0, dim=-1) @ v.double()
cosine = torch.nn.functional.cosine_similarity(out.double().flatten(), reference.flatten(), dim=0).item()
assert cosine > 0.99, f"CPU sageattn vs fp64: cosine {cosine}"
print(f"sageattn on CPU (torch {torch.__version__}): cosine vs fp64 {cosine:.5f}")
print("wheel smoke test: passed")
