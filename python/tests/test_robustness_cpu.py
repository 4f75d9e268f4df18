"""What an unlucky user or an attacker meets (issue 27), each checked on the CPU: the CPU op under a process
limit (a named error, not an abort), a meta input to the op, layout codes past 32 bits, caller errors that
must not fall back, nested patch_sdpa and another library's wrapper, a call past the limits that must be
refused before anything is allocated, numbers that are numbers, a broken torch, sys.path entries that are
the current directory or not UTF-8."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

import sagejit  # noqa: E402
from sagejit import SagejitError, UnsupportedCall  # noqa: E402
from sagejit import _runtime_dirs  # noqa: E402
from sagejit.integrations import sageattention as shim  # noqa: E402

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _needs_library():
    try:
        sagejit.library()
    except SagejitError as error:
        pytest.fail(f"libsagejit could not be loaded (make test builds it): {error}")


def _python(code, env=None, cwd=None, prefix=()):
    environment = dict(os.environ, **(env or {}))
    environment["PYTHONPATH"] = os.pathsep.join(p for p in (environment.get("PYTHONPATH"), PYTHON_DIR) if p)
    return subprocess.run([*prefix, sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=environment, cwd=cwd or PYTHON_DIR, timeout=300)


def _qkv(generator, shape=(1, 2, 32, 64), dtype=torch.bfloat16):
    return tuple(torch.randn(shape, generator=generator).to(dtype) for _ in range(3))


# 1. A thread that cannot be started: Error(internal) through the C ABI, never std::terminate (exit 134).
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("prlimit") is None or shutil.which("setpriv") is None,
                    reason="needs root, prlimit and setpriv to run as an unprivileged user under a process limit")
def test_cpu_emulator_under_a_process_limit_is_a_named_error():
    if (os.cpu_count() or 1) < 2:
        pytest.fail("this test needs 2 or more CPUs: the emulator starts no thread on one")
    code = """
        import ctypes, sys
        import sagejit
        from sagejit._library import Tensor
        lib = sagejit.library()
        storage = (ctypes.c_uint16 * (4 * 128 * 64))()
        def tensor():
            t = Tensor()
            t.data, t.dtype, t.device = ctypes.addressof(storage), 0, 0
            for i, (n, s) in enumerate(zip((1, 4, 128, 64), (4 * 128 * 64, 128 * 64, 64, 1))):
                t.shape[i], t.strides[i] = n, s
            return t
        q, k, v, out = tensor(), tensor(), tensor(), tensor()
        out_storage = (ctypes.c_uint16 * (4 * 128 * 64))()
        out.data = ctypes.addressof(out_storage)
        options = lib.sagejit_default_options()
        status = lib.sagejit_emulate_attention(ctypes.byref(q), ctypes.byref(k), ctypes.byref(v), ctypes.byref(out),
                                               ctypes.byref(options), None)
        print("status", status, lib.sagejit_last_error().decode())
    """
    # One task for uid 65534: this process; the emulator's first worker thread cannot be created.
    result = _python(code, prefix=("prlimit", "--nproc=1", "setpriv", "--reuid=65534", "--regid=65534",
                                   "--clear-groups"))
    assert result.returncode == 0, f"exit {result.returncode} (134: std::terminate)\n{result.stdout}{result.stderr}"
    assert "status 8 the CPU emulator (parallel_for): could not start thread 2 of 2" in result.stdout, result.stdout
    assert "RLIMIT_NPROC" in result.stdout


# 2. The op checks devices itself: a meta input must not select the fake kernel and return empty memory.
def test_op_with_one_meta_input_is_an_error(seed):
    q, _, _ = _qkv(torch.Generator().manual_seed(seed))
    for k, v in ((q.to("meta"), q), (q, q.to("meta"))):
        with pytest.raises(SagejitError, match="q, k and v must be on one device") as error:
            torch.ops.sagejit.sageattn(q, k, v, 0, False, None, True, True)
        assert error.value.code == "invalid_argument"


# 6a. Layout codes are 0 or 1: 2**32 must not run as HND (ctypes truncation), 2**32 + 1 not as NHD.
@pytest.mark.parametrize("layout", [2**32, 2**32 + 1, -1, 2])
def test_op_layout_out_of_range_is_an_error(seed, layout):
    q, k, v = _qkv(torch.Generator().manual_seed(seed))
    with pytest.raises(SagejitError, match=r"layout .* is not 0 \(HND\) or 1 \(NHD\)"):
        torch.ops.sagejit.sageattn(q, k, v, layout, False, None, True, True)
    with pytest.raises(SagejitError, match="layout"):
        torch.ops.sagejit.sageattn(q.to("meta"), k.to("meta"), v.to("meta"), layout, False, None, True, True)


# 6b. A caller's error raises through the integrations instead of falling back to SDPA with the same
#     wrong arguments; only what sagejit cannot take falls back.
@pytest.mark.parametrize("emulate", [False, True])
def test_shim_raises_a_callers_error_instead_of_falling_back(seed, emulate):
    q, k, v = (t.transpose(1, 2).contiguous() for t in _qkv(torch.Generator().manual_seed(seed)))  # NHD data
    shim.configure(emulate_on_cpu=emulate)
    shim.reset_counters()
    try:
        with pytest.raises(SagejitError, match=r"tensor_layout 'nhd' is not one of \['HND', 'NHD'\]"):
            shim.sageattn(q, k, v, tensor_layout="nhd")
        assert shim.counters()["fallback"] == 0
        if emulate:  # a refusal of sagejit's own (fp32) still falls back, counted
            out = shim.sageattn(q.float(), k.float(), v.float(), tensor_layout="NHD")
            expected = F.scaled_dot_product_attention(*(t.float().transpose(1, 2) for t in (q, k, v))).transpose(1, 2)
            assert torch.allclose(out, expected)
            assert shim.counters()["fallback"] == 1
    finally:
        shim.configure(emulate_on_cpu=False)


# 6c. patch_sdpa blocks nest, and unpatching never removes another library's later wrapper.
def test_nested_patch_sdpa_restores_each_level():
    original = F.scaled_dot_product_attention
    with sagejit.patch_sdpa():
        with sagejit.patch_sdpa(cpu=True):
            assert sagejit.sdpa._route_cpu
        assert not sagejit.sdpa._route_cpu, "leaving the inner block left CPU routing on"
        assert sagejit.is_sdpa_patched()
    assert not sagejit.is_sdpa_patched()
    assert F.scaled_dot_product_attention is original


def test_unpatch_sdpa_keeps_a_wrapper_installed_after_ours(seed):
    original = F.scaled_dot_product_attention
    calls = []
    sagejit.patch_sdpa()
    ours = F.scaled_dot_product_attention

    def their_wrapper(*args, **kwargs):
        calls.append(1)
        return ours(*args, **kwargs)

    F.scaled_dot_product_attention = their_wrapper
    try:
        sagejit.unpatch_sdpa()
        assert F.scaled_dot_product_attention is their_wrapper, "unpatch_sdpa() removed another library's wrapper"
        assert not sagejit.is_sdpa_patched()
        q, k, v = (t.float() for t in _qkv(torch.Generator().manual_seed(seed)))
        sagejit.reset_sdpa_counters()
        assert torch.equal(F.scaled_dot_product_attention(q, k, v), original(q, k, v))
        assert calls == [1] and sagejit.sdpa_counters()["fallback"] == 0  # passed through, not routed
        sagejit.patch_sdpa()  # again: routing on through their wrapper, ours not stacked on top of it
        assert F.scaled_dot_product_attention is their_wrapper
        F.scaled_dot_product_attention(q, k, v)
        assert sagejit.sdpa_counters()["fallback"] == 1
        sagejit.unpatch_sdpa()
    finally:
        F.scaled_dot_product_attention = original
        sagejit.sdpa._left_in_chain = False


# 6d. The CPU op asks the library before allocating: a sequence past the limits is UnsupportedCall (and
#     patch_sdpa falls back), not torch failing to allocate 128 GiB.
def test_cpu_op_refuses_a_call_past_the_limits_before_allocating(monkeypatch):
    q = torch.zeros(1, 1, 1, 64, dtype=torch.bfloat16).expand(1, 1, 2**30, 64)
    with pytest.raises(UnsupportedCall):
        sagejit.sageattn(q, q, q)
    fallback = []
    monkeypatch.setattr(F, "scaled_dot_product_attention", lambda *args, **kwargs: fallback.append(1) or "fallback")
    sagejit.reset_sdpa_counters()
    with sagejit.patch_sdpa(cpu=True):
        assert F.scaled_dot_product_attention(q, q, q) == "fallback"
    assert fallback == [1]
    assert sagejit.sdpa_counters()["fallback_reasons"] == {"sagejit: unsupported": 1}


# 6e. sm_scale is any real number (NumPy scalars, 0-d tensors); anything else names the argument.
def test_sm_scale_accepts_numbers_and_names_anything_else(seed):
    np = pytest.importorskip("numpy")
    q, k, v = _qkv(torch.Generator().manual_seed(seed))
    expected = sagejit.sageattn(q, k, v, sm_scale=0.125)
    for scale in (np.float32(0.125), np.float64(0.125), torch.tensor(0.125), np.array(0.125)):
        assert torch.equal(sagejit.sageattn(q, k, v, sm_scale=scale), expected), type(scale)
    assert torch.equal(sagejit.sageattn(q, k, v, scale=np.float32(0.125)), expected)
    assert sagejit.sageattn(q, k, v, sm_scale=10**30).shape == q.shape  # an int, however large, within float32
    for scale, message in (([0.125], "sm_scale \\[0.125\\] is not a number"), ("0.1", "sm_scale '0.1' is not a number"),
                           (10**39, "within float32"), (10**400, "within float32"), (float("nan"), "finite"),
                           (0, "> 0"), (torch.tensor([0.1, 0.2]), "is not a number")):
        with pytest.raises(SagejitError, match=message) as error:
            sagejit.sageattn(q, k, v, sm_scale=scale)
        assert error.value.code == "invalid_argument"
    for layout in (["HND"], None, 0):
        with pytest.raises(SagejitError, match="tensor_layout .* is not one of"):
            sagejit.sageattn(q, k, v, tensor_layout=layout)


# 4. A torch whose import raises OSError (a missing libcudnn): sagejit imports, its programs run, and
#    sageattn names torch and the error. The programs never import torch at all.
def test_a_broken_torch_breaks_no_entry_point(tmp_path):
    broken = tmp_path / "broken" / "torch"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise OSError('libcudnn.so.9: cannot open shared object file')\n")
    env = {"PYTHONPATH": str(tmp_path / "broken")}
    result = _python("""
        import sagejit
        print("version", sagejit.version())
        try:
            sagejit.sageattn(None, None, None)
        except sagejit.SagejitError as error:
            print("SagejitError", error.code, error)
    """, env=env)
    assert result.returncode == 0, result.stderr
    assert "SagejitError runtime_not_found sagejit.sageattn needs torch >= 2.4: import torch failed: OSError: " \
           "libcudnn.so.9" in result.stdout, result.stdout
    info = _python("import sys, sagejit.__main__ as m; sys.exit(m.main(['info']))", env=env)
    assert info.returncode == 0, info.stdout + info.stderr
    assert "Traceback" not in info.stderr, info.stderr


def test_programs_and_import_sagejit_never_import_torch():
    result = _python("""
        import sys
        import sagejit, sagejit._programs, sagejit.__main__ as m
        m._python_info()
        print("torch imported:", "torch" in sys.modules)
        import torch  # now the op is registered right after torch's import
        print("op registered:", hasattr(torch.ops.sagejit, "sageattn"))
    """)
    assert result.returncode == 0, result.stderr
    assert "torch imported: False" in result.stdout, result.stdout
    assert "op registered: True" in result.stdout, result.stdout


# 3. No GPU library directory from the current directory, every one absolute, and non-UTF-8 names passed.
def test_runtime_dirs_never_come_from_the_current_directory(tmp_path, monkeypatch):
    here = tmp_path / "here"
    (here / "_rocm_sdk_core_x" / "lib").mkdir(parents=True)
    site = tmp_path / "site"
    (site / "_rocm_sdk_core" / "lib").mkdir(parents=True)
    monkeypatch.chdir(here)
    monkeypatch.delitem(sys.modules, "rocm_sdk", raising=False)
    for entry in ("", ".", str(here)):
        monkeypatch.setattr(sys, "path", [entry, str(site)])
        dirs = _runtime_dirs._rocm_sdk_dirs()
        assert dirs == [str(site / "_rocm_sdk_core" / "lib")], (entry, dirs)
    monkeypatch.setattr(sys, "path", ["relative-site", str(site)])
    (here / "relative-site" / "torch" / "lib").mkdir(parents=True)
    (here / "relative-site" / "torch" / "__init__.py").write_text("")
    monkeypatch.delitem(sys.modules, "torch")
    try:
        assert all(os.path.isabs(d) and not d.startswith(str(here)) for d in _runtime_dirs.runtime_search_dirs())
    finally:
        sys.modules["torch"] = torch


def test_a_sys_path_entry_that_is_not_utf8_is_handed_over(tmp_path):
    name = os.fsdecode(b"site-\xff")
    (tmp_path / name / "_rocm_sdk_core" / "lib").mkdir(parents=True)
    result = _python(f"""
        import sys, warnings
        warnings.simplefilter("error")
        sys.path.append({str(tmp_path / name)!r})
        import sagejit
        from sagejit import _runtime_dirs
        assert any("site-" in d for d in _runtime_dirs.runtime_search_dirs()), _runtime_dirs.runtime_search_dirs()
        print("version", sagejit.version())
    """)
    assert result.returncode == 0, result.stderr
    assert "version" in result.stdout


def test_the_library_refuses_a_relative_directory_handed_over():
    result = _python("""
        import sagejit
        lib = sagejit.library()
        print(lib.sagejit_set_library_search_dirs(b"_rocm_sdk_core_x/lib"), lib.sagejit_last_error().decode())
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("1 library search directories: _rocm_sdk_core_x/lib is not an absolute path"), \
        result.stdout

