"""The directories the package hands over to libsagejit (sagejit/_runtime_dirs.py), on a fake
site-packages: torch/lib (found without importing torch), TheRock's rocm_sdk and _rocm_sdk_core/lib,
pip's nvidia/cu13/lib and nvidia/cuda_nvrtc/lib. Needs neither torch nor a GPU nor libsagejit."""
import importlib
import os
import sys
import warnings

import pytest

from sagejit import _runtime_dirs


@pytest.fixture
def site(tmp_path, monkeypatch):
    """An empty site dir first on sys.path; the real torch/rocm_sdk/nvidia are hidden from the lookups."""
    for name in ("torch", "rocm_sdk", "nvidia"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    importlib.invalidate_caches()
    return tmp_path


def make_package(site, name, init="", dirs=()):
    package = site / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(init)
    for directory in dirs:
        (package / directory).mkdir(parents=True)
    importlib.invalidate_caches()
    return package


def make_nvidia(site):
    # A namespace package (no __init__.py), as pip's nvidia-* wheels install it.
    for sub in ("cu13/lib", "cuda_nvrtc/lib"):
        (site / "nvidia" / sub).mkdir(parents=True)
    importlib.invalidate_caches()


def make_rocm_sdk(site, core_lib):
    make_package(site, "rocm_sdk", init=(
        "from pathlib import Path\n"
        "def find_libraries(*names):\n"
        f"    return [Path({str(core_lib)!r}) / ('lib' + n + '.so.7') for n in names]\n"))


def test_order_torch_then_rocm_sdk_then_nvrtc_without_importing_torch(site):
    make_package(site, "torch", init="raise RuntimeError('torch must not be imported to find its lib/')",
                 dirs=["lib"])
    core = make_package(site, "_rocm_sdk_core", dirs=["lib"])
    make_rocm_sdk(site, core / "lib")
    make_nvidia(site)
    assert _runtime_dirs.runtime_search_dirs() == [
        str(site / "torch" / "lib"), str(core / "lib"),
        str(site / "nvidia" / "cu13" / "lib"), str(site / "nvidia" / "cuda_nvrtc" / "lib")]
    assert "torch" not in sys.modules


def test_rocm_sdk_core_found_by_its_layout_without_rocm_sdk(site):
    nonce_core = make_package(site, "_rocm_sdk_core_7_0_1", dirs=["lib"])  # the dist nonce in the name
    assert _runtime_dirs.runtime_search_dirs() == [str(nonce_core / "lib")]


def test_broken_rocm_sdk_falls_back_to_the_layout(site):
    core = make_package(site, "_rocm_sdk_core", dirs=["lib"])
    make_package(site, "rocm_sdk", init=(
        "def find_libraries(*names):\n"
        "    raise ModuleNotFoundError('Missing required rocm libraries')\n"))
    assert _runtime_dirs.runtime_search_dirs() == [str(core / "lib")]


def test_missing_and_duplicate_dirs_are_left_out(site):
    make_package(site, "torch")  # no lib/
    core = make_package(site, "_rocm_sdk_core", dirs=["lib"])
    make_rocm_sdk(site, core / "lib")  # lists the same dir twice (amdhip64, hiprtc)
    assert _runtime_dirs.runtime_search_dirs() == [str(core / "lib")]


def test_an_imported_torch_is_asked_directly(site, monkeypatch):
    elsewhere = site / "elsewhere" / "torch"
    (elsewhere / "lib").mkdir(parents=True)
    fake = type(sys)("torch")
    fake.__path__ = [str(elsewhere)]
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert _runtime_dirs.runtime_search_dirs() == [str(elsewhere / "lib")]


class FakeLibrary:
    def __init__(self, status):
        self.status = status
        self.calls = []

    def sagejit_set_library_search_dirs(self, text):
        self.calls.append(text)
        return self.status

    def sagejit_last_error(self):
        return b"library search directories handed over too late"


def test_hand_over_passes_the_dirs_separated_by_pathsep(site):
    (site / "torch" / "lib").mkdir(parents=True)
    make_nvidia(site)
    lib = FakeLibrary(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        handed = _runtime_dirs.hand_over(lib)
    expected = [str(site / "torch" / "lib"), str(site / "nvidia" / "cu13" / "lib"),
                str(site / "nvidia" / "cuda_nvrtc" / "lib")]
    assert handed == expected
    assert lib.calls == [os.pathsep.join(expected).encode()]


def test_hand_over_too_late_warns_with_the_library_message(site):
    (site / "torch" / "lib").mkdir(parents=True)
    with pytest.warns(RuntimeWarning, match="handed over too late"):
        assert _runtime_dirs.hand_over(FakeLibrary(2)) == []


def test_tool_environment_keeps_what_the_user_listed_first(site):
    (site / "torch" / "lib").mkdir(parents=True)
    mine = str(site / "mine")
    env = _runtime_dirs.tool_environment({"SAGEJIT_LIBRARY_DIRS": mine, "OTHER": "1"})
    assert env["SAGEJIT_LIBRARY_DIRS"] == os.pathsep.join([mine, str(site / "torch" / "lib")])
    assert env["OTHER"] == "1"
