import os
import random
import socket
import sys

import pytest

# Import the package from this source tree (python/sagejit), unless SAGEJIT_TEST_INSTALLED=1 asks to
# test the installed one (a wheel in a venv).
if os.environ.get("SAGEJIT_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The diffusers model set-ups and the scripts the diffusers tests run live in bench/ (diffusers_models,
# run_diffusers_benchmark, run_context_parallel).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench"))

import sagejit  # noqa: E402 (after the path above)
from sagejit._library import Tensor  # noqa: E402

SEED_VARIABLE = "SAGEJIT_TEST_SEED"


@pytest.fixture
def seed(request):
    """A fresh random seed per test, or $SAGEJIT_TEST_SEED to replay one; printed (pytest shows it with
    a failure) with the command that replays the test."""
    value = int(os.environ.get(SEED_VARIABLE) or random.SystemRandom().randrange(2**31))
    print(f"seed {value}; replay: {SEED_VARIABLE}={value} python -m pytest '{request.node.nodeid}'")
    return value


@pytest.fixture
def free_port():
    """free_port(): a TCP port on 127.0.0.1 that was free a moment ago (for torch.distributed's rendezvous)."""
    def pick():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]
    return pick


@pytest.fixture
def lib():
    """libsagejit through ctypes; the test is skipped, saying why, when it does not load."""
    try:
        return sagejit.library()
    except sagejit.SagejitError as error:
        pytest.skip(f"libsagejit not loadable: {error}")


@pytest.fixture
def dense_tensor():
    """dense_tensor(address, dims, dtype=0): a C ABI tensor of `dims` at `address`, dense in that order
    (HND), on device 0."""
    def make(address, dims, dtype=0):
        tensor = Tensor()
        tensor.data = address
        tensor.dtype = dtype
        tensor.device = 0
        stride = 1
        for i in reversed(range(4)):
            tensor.shape[i] = dims[i]
            tensor.strides[i] = stride
            stride *= dims[i]
        return tensor
    return make


@pytest.fixture
def emulated_integration(lib):
    """emulated_integration(module): that integration sends CPU tensors to the library's emulator, not
    strict, counters zero, for this test; afterwards both switches off and the counters zero again."""
    modules = []

    def start(module):
        module.configure(strict=False, emulate_on_cpu=True)
        module.reset_counters()
        modules.append(module)
    yield start
    for module in modules:
        module.configure(strict=False, emulate_on_cpu=False)
        module.reset_counters()
