"""torch.Tensor -> sagejit_tensor, with the checks that only Python can make (a tensor at all, 4-D, on a
device sagejit runs on). Everything else (dtype, head_dim, strides, shapes) is validated by the library."""
from ._abi import KERNEL_DTYPES, TORCH_NAMES, Status
from ._library import SagejitError, Tensor, UnsupportedCall

INVALID_ARGUMENT = Status.invalid_argument

# sagejit_dtype codes by str(torch dtype): the library names the ones its kernels do not take.
_DTYPE_CODES = {f"torch.{torch_name}": dtype.value for dtype, torch_name in TORCH_NAMES.items()}
_KERNEL_TORCH_NAMES = ", ".join(f"torch.{TORCH_NAMES[dtype]}" for dtype in KERNEL_DTYPES)
# "cuda" is torch's name for CUDA and ROCm (HIP) devices alike; "cpu" runs the library's emulator.
DEVICE_TYPES = ("cuda", "cpu")


_codes_by_dtype = {}  # the same by torch dtype, filled as dtypes are seen (a call does no str())


def dtype_code(dtype, name):
    code = _codes_by_dtype.get(dtype)
    if code is None:
        code = _DTYPE_CODES.get(str(dtype))
        if code is None:
            raise UnsupportedCall(f"{name}.dtype {dtype} is not one of [{_KERNEL_TORCH_NAMES}]")
        _codes_by_dtype[dtype] = code
    return code


def check_tensor(tensor, name):
    check_tensor_device(tensor, name)
    if tensor.dim() != 4:
        raise SagejitError(INVALID_ARGUMENT,
                           f"{name} has {tensor.dim()} dimensions (shape {tuple(tensor.shape)}); sagejit takes 4-D "
                           "tensors ([B, H, N, D] for HND, [B, N, H, D] for NHD)")


def check_tensor_device(tensor, name):
    """A torch.Tensor on a device sagejit runs on (any number of dimensions)."""
    import torch

    if not isinstance(tensor, torch.Tensor):
        raise SagejitError(INVALID_ARGUMENT, f"{name} is a {type(tensor).__name__}, not a torch.Tensor")
    # is_cuda first: a bool, where tensor.device.type builds a device and a string (a call's hot path).
    if not tensor.is_cuda and tensor.device.type not in DEVICE_TYPES:
        raise UnsupportedCall(f"{name} is on {tensor.device}; sagejit runs on CUDA or ROCm devices (torch device "
                              "'cuda') and emulates on 'cpu'")


def to_c_tensor(tensor, name):
    check_tensor(tensor, name)
    c = Tensor()
    c.data = tensor.data_ptr()
    c.dtype = dtype_code(tensor.dtype, name)
    c.device = tensor.device.index if tensor.device.index is not None else 0
    for i in range(4):
        c.shape[i] = tensor.shape[i]
        c.strides[i] = tensor.stride(i)
    return c
