"""How sagejit's torch operators are registered (torch.library): one schema, a CUDA kernel (CUDA and ROCm
devices: torch calls both "cuda"), a CPU kernel (the library's emulator), a fake kernel for torch.compile,
and an autograd formula whose backward is a clear error (sagejit is inference only)."""
import torch


def _setup_context(ctx, inputs, output):
    pass


def register_inference_op(library, name, schema, gpu_kernel, cpu_kernel, fake_kernel, training_hint):
    """sagejit::<name> on `library` (a torch.library.Library of the "sagejit" namespace); returns its default
    overload. training_hint: what to use instead for training, for the backward's message."""
    def backward(ctx, *grads):
        raise RuntimeError(f"sagejit.{name} has no backward: it is an inference kernel (INT8/FP8 quantized). Run it "
                           f"under torch.no_grad() / torch.inference_mode(), or use {training_hint} for training.")

    library.define(f"{name}{schema}")
    library.impl(name, gpu_kernel, "CUDA")
    library.impl(name, cpu_kernel, "CPU")
    torch.library.register_fake(f"sagejit::{name}", fake_kernel, lib=library)
    torch.library.register_autograd(f"sagejit::{name}", backward, setup_context=_setup_context, lib=library)
    return getattr(torch.ops.sagejit, name).default
