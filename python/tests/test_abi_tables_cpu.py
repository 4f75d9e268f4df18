"""The package's C ABI tables (sagejit/_abi.py) against the public header and the loaded library (no torch,
no GPU): every status and dtype by name and value, the statuses and dtype names the library knows, and the
dtypes its kernels take."""
import ctypes
import os
import re

import pytest

import sagejit
from sagejit._abi import DTYPE_TABLE, KERNEL_DTYPES, DType, Status
from sagejit._library import SagejitError, Tensor

_HERE = os.path.dirname(os.path.abspath(__file__))
_HEADERS = (os.path.join(_HERE, "..", "..", "runtime", "include", "sagejit", "sagejit.h"),  # a source checkout
            os.path.join(os.path.dirname(sagejit.__file__), "include", "sagejit", "sagejit.h"))  # a wheel


def _header_or_skip():
    for path in _HEADERS:
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as file:
                return file.read()
    pytest.skip(f"sagejit.h is in none of {_HEADERS}")


def _lib_or_skip():
    try:
        return sagejit.library()
    except SagejitError as error:
        pytest.skip(f"libsagejit not found: {error}")


def _c_enum(header, name):
    """{constant: value} of `typedef enum name {...}` in the header."""
    body = re.search(r"typedef enum %s \{(.*?)\}" % name, header, re.S)
    assert body, f"no enum {name} in sagejit.h"
    return {constant: int(value) for constant, value in re.findall(r"(SAGEJIT_\w+)\s*=\s*(\d+)", body.group(1))}


def test_dtypes_are_the_headers_sagejit_dtype():
    values = _c_enum(_header_or_skip(), "sagejit_dtype")
    assert values == {f"SAGEJIT_DTYPE_{dtype.name.upper()}": dtype.value for dtype in DType}
    assert [row[1] for row in DTYPE_TABLE] == sorted(values.values())


def test_statuses_are_the_headers_sagejit_status_and_the_librarys():
    # SAGEJIT_ERROR_DEVICE is Status.device_error: the header drops the names' "_error".
    values = _c_enum(_header_or_skip(), "sagejit_status")
    expected = {"SAGEJIT_SUCCESS" if status == Status.success else
                "SAGEJIT_ERROR_" + status.name.upper().removesuffix("_ERROR"): status.value for status in Status}
    assert values == expected
    lib = _lib_or_skip()
    for status in Status:
        assert lib.sagejit_status_string(status) != b"unknown status", status
    assert lib.sagejit_status_string(len(Status)) == b"unknown status"  # no status past ours


def _emulate(lib, dtype):
    """sagejit_emulate_attention on zeros of `dtype` (q = k = v = out, 1x1x4x64, dense HND)."""
    storage = (ctypes.c_uint64 * 256)()  # room for 256 elements of up to 8 bytes
    tensor = Tensor()
    tensor.data = ctypes.cast(storage, ctypes.c_void_p).value
    tensor.dtype = dtype
    tensor.device = 0
    for i, (size, stride) in enumerate(zip((1, 1, 4, 64), (256, 256, 64, 1))):
        tensor.shape[i] = size
        tensor.strides[i] = stride
    options = lib.sagejit_default_options()
    status = lib.sagejit_emulate_attention(ctypes.byref(tensor), ctypes.byref(tensor), ctypes.byref(tensor),
                                           ctypes.byref(tensor), ctypes.byref(options), None)
    return status, sagejit._library.last_error()


def test_kernel_dtypes_are_the_ones_the_library_takes():
    lib = _lib_or_skip()
    accepted = "[" + ", ".join(dtype.name for dtype in KERNEL_DTYPES) + "]"
    for dtype in DType:
        status, message = _emulate(lib, dtype)
        if dtype in KERNEL_DTYPES:
            assert status == Status.success, message
        else:
            assert status == Status.unsupported, message
            assert f"q.dtype {dtype.name} is not one of {accepted}" in message


def test_torch_names_are_torch_dtypes():
    torch = pytest.importorskip("torch")
    from sagejit._abi import TORCH_NAMES, kernel_torch_dtypes

    for dtype, name in TORCH_NAMES.items():
        assert str(getattr(torch, name)) == f"torch.{name}", dtype
    assert [str(dtype) for dtype in kernel_torch_dtypes(torch)] == [f"torch.{TORCH_NAMES[d]}" for d in KERNEL_DTYPES]
