"""sagejit.sageattn_varlen: attention over packed sequences of different lengths (flash_attn_varlen_func's and
SageAttention's sageattn_varlen convention), without padding the batch."""
from ._library import SagejitError, UnsupportedCall
from ._torch_op import torch_op
from ._torch_tensors import INVALID_ARGUMENT, check_tensor_device, dtype_code
from .attention import _resolve_scale


def sageattn_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, is_causal=False, sm_scale=None,
                    smooth_k=True, return_lse=False, *, scale=None):
    """SageAttention over packed sequences (docs/NUMERICS.md "Varlen").

    q: [total_q, Hq, D], k, v: [total_k, Hk, D] holding every sequence back to back (Hq % Hk == 0; bf16 or
    fp16; D a multiple of 8 up to 256; last dimension contiguous); sequence b is rows cu_seqlens_q[b] ..
    cu_seqlens_q[b + 1] - 1 of q (cu_seqlens_k for k and v). cu_seqlens_q / cu_seqlens_k: torch.int32
    tensors of batch + 1 values on q's device, starting at 0 and not decreasing; max_seqlen_q /
    max_seqlen_k: Python ints, the longest sequence of each (a sequence longer than its max_seqlen is
    clamped to it). The kernels read cu_seqlens on the device: no host synchronisation. Quantization blocks
    never mix two sequences; a sequence without keys gives 0. is_causal: query i of a sequence sees its
    keys 0..i (top-left, as sagejit.sageattn and torch SDPA). Returns out ([total_q, Hq, D], q's dtype)
    and, with return_lse, the natural log-sum-exp, fp32 [Hq, total_q]. Inputs that need a gradient raise
    sagejit.UnsupportedCall. Runs torch.ops.sagejit.sageattn_varlen (traceable by torch.compile).
    """
    import torch

    torch_op()  # registers both ops
    sm_scale = _resolve_scale(sm_scale, scale)
    for tensor, name in ((q, "q"), (k, "k"), (v, "v")):
        check_tensor_device(tensor, name)
        dtype_code(tensor.dtype, name)
    for value, name in ((max_seqlen_q, "max_seqlen_q"), (max_seqlen_k, "max_seqlen_k")):
        # Checked here, before the op: its schema's int would take a 0-d tensor by reading it (a device sync).
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SagejitError(INVALID_ARGUMENT, f"{name} {value!r} is not an int >= 1 (the longest sequence; pass a "
                               "Python int: reading it from a tensor would synchronise with the device)")
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        raise UnsupportedCall("a gradient: q, k or v requires grad, and sagejit has no backward (inference only); "
                              "call it under torch.no_grad() / torch.inference_mode()")
    out, lse = torch.ops.sagejit.sageattn_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                                 bool(is_causal), sm_scale, bool(smooth_k), bool(return_lse))
    return (out, lse) if return_lse else out
