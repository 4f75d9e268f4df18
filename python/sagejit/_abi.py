"""The C ABI's codes by name (runtime/include/sagejit/sagejit.h): the statuses a call returns and the one
dtype table of the package. Everything in the package that names a status or lists dtypes takes it from
here; tests/test_abi_tables_cpu.py checks both against the header and the loaded library."""
import enum


class Status(enum.IntEnum):
    """sagejit_status; each name is the library's sagejit_status_string."""

    success = 0
    invalid_argument = 1
    unsupported = 2
    runtime_not_found = 3
    device_error = 4
    compile_error = 5
    cache_error = 6
    config_error = 7
    internal = 8


# Every sagejit_dtype: (the library's name, the sagejit_dtype value, torch's name torch.<name>, whether
# the kernels are compiled for it: the library's kernel_dtypes, core/kernel_inputs.hpp).
DTYPE_TABLE = (
    ("bf16", 0, "bfloat16", True),
    ("fp16", 1, "float16", True),
    ("fp32", 2, "float32", False),
    ("fp64", 3, "float64", False),
    ("int8", 4, "int8", False),
    ("fp8_e4m3", 5, "float8_e4m3fn", False),
)

DType = enum.IntEnum("DType", [(name, code) for name, code, _, _ in DTYPE_TABLE])
DType.__doc__ = "sagejit_dtype, with the library's names."
TORCH_NAMES = {DType[name]: torch_name for name, _, torch_name, _ in DTYPE_TABLE}
KERNEL_DTYPES = tuple(DType[name] for name, _, _, kernel in DTYPE_TABLE if kernel)
KERNEL_TORCH_NAMES = tuple(TORCH_NAMES[dtype] for dtype in KERNEL_DTYPES)  # plain strings: torch.compile traces them


def kernel_torch_dtypes(torch):
    """The torch dtypes the kernels take (torch.bfloat16, torch.float16), from the `torch` module given."""
    return tuple(getattr(torch, name) for name in KERNEL_TORCH_NAMES)
