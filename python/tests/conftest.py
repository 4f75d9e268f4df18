import os
import random
import sys

import pytest

# Import the package from this source tree (python/sagejit), unless SAGEJIT_TEST_INSTALLED=1 asks to
# test the installed one (a wheel in a venv).
if os.environ.get("SAGEJIT_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The diffusers model set-ups and the scripts the diffusers tests run live in bench/ (diffusers_models,
# run_diffusers_benchmark, run_context_parallel).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench"))

SEED_VARIABLE = "SAGEJIT_TEST_SEED"


@pytest.fixture
def seed(request):
    """A fresh random seed per test, or $SAGEJIT_TEST_SEED to replay one; printed (pytest shows it with
    a failure) with the command that replays the test."""
    value = int(os.environ.get(SEED_VARIABLE) or random.SystemRandom().randrange(2**31))
    print(f"seed {value}; replay: {SEED_VARIABLE}={value} python -m pytest '{request.node.nodeid}'")
    return value
