"""Real diffusers transformers (FluxTransformer2DModel, WanTransformer3DModel) from small configs with random
weights - no downloads - their inputs, a few Euler denoising steps, and the measures the tests, the
benchmark and the context-parallel run report (cosine, PSNR). Shared by python/tests/test_diffusers_cpu.py,
python/tests/test_integrations_gpu.py, bench/run_diffusers_benchmark.py and bench/run_context_parallel.py.

Sizes: "tiny" runs on a CPU through sagejit's emulator in seconds (head dim 64: the emulator's smallest
kernel head dim); "bench" has real model widths, head dim 128 and >= 4k tokens, fewer layers.
"""
import math
from dataclasses import dataclass

import torch

MODELS = ("flux", "wan")


@dataclass(frozen=True)
class Case:
    model: str
    size: str
    config: dict
    latent: tuple      # flux: (height, width) of the packed image; wan: (frames, height, width) of the latent
    text_tokens: int

    def tokens(self):
        """Tokens of the self-attention (Flux: image + text; Wan: video)."""
        if self.model == "flux":
            return self.latent[0] * self.latent[1] + self.text_tokens
        patch = self.config["patch_size"]
        return math.prod(n // p for n, p in zip(self.latent, patch))

    def head_dim(self):
        return self.config["attention_head_dim"]


_FLUX = {
    "tiny": dict(config=dict(patch_size=1, in_channels=8, num_layers=1, num_single_layers=1, attention_head_dim=64,
                             num_attention_heads=2, joint_attention_dim=32, pooled_projection_dim=32,
                             axes_dims_rope=(16, 24, 24)), latent=(8, 8), text_tokens=8),
    # Flux.1's widths (24 heads x 128), 2 + 4 of its 19 + 38 blocks; 64 x 64 packed latent (1024 px) + 512 text
    # tokens = 4608 tokens.
    "bench": dict(config=dict(patch_size=1, in_channels=64, num_layers=2, num_single_layers=4, attention_head_dim=128,
                              num_attention_heads=24, joint_attention_dim=4096, pooled_projection_dim=768,
                              axes_dims_rope=(16, 56, 56)), latent=(64, 64), text_tokens=512),
}
_WAN = {
    "tiny": dict(config=dict(patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=64, in_channels=4,
                             out_channels=4, text_dim=32, freq_dim=32, ffn_dim=256, num_layers=1),
                 latent=(2, 8, 8), text_tokens=8),
    # Wan 2.1 1.3B's widths (12 heads x 128, ffn 8960), 4 of its 30 blocks; a 13 x 60 x 104 latent (49 frames at
    # 480 x 832) = 20280 video tokens, 512 text tokens.
    "bench": dict(config=dict(patch_size=(1, 2, 2), num_attention_heads=12, attention_head_dim=128, in_channels=16,
                              out_channels=16, text_dim=4096, freq_dim=256, ffn_dim=8960, num_layers=4),
                  latent=(13, 60, 104), text_tokens=512),
}


def case(model, size):
    table = {"flux": _FLUX, "wan": _WAN}[model]
    return Case(model=model, size=size, **table[size])


def build(c, device, dtype, seed):
    """The transformer with random weights drawn from `seed` on `device` (initialised there: a billion
    parameters take long on a CPU)."""
    from diffusers import FluxTransformer2DModel, WanTransformer3DModel

    torch.manual_seed(seed)
    cls = FluxTransformer2DModel if c.model == "flux" else WanTransformer3DModel
    with torch.device(device):
        model = cls(**c.config)
        _unit_gain(model)
    return model.to(dtype=dtype).eval()


def _unit_gain(model):
    """Linear weights N(0, 1/fan_in), biases 0: every layer keeps its input's scale, so attention (and its
    error) carries through the blocks as in a trained model. torch's default init shrinks each layer's
    output (std 1/sqrt(3)), which leaves the gated attention branches far below the residual stream's
    bf16 resolution: sagejit and native then agree bit for bit, and the comparison would test nothing."""
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            torch.nn.init.normal_(module.weight, std=module.in_features ** -0.5)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)


def conditioning(c, device, dtype, seed):
    """Everything but the latent and the timestep: text states (and Flux's pooled text and position ids)."""
    g = torch.Generator().manual_seed(seed + 1)
    if c.model == "flux":
        height, width = c.latent
        img_ids = torch.zeros(height, width, 3)
        img_ids[..., 1] = torch.arange(height)[:, None]
        img_ids[..., 2] = torch.arange(width)[None, :]
        return dict(encoder_hidden_states=torch.randn(1, c.text_tokens, c.config["joint_attention_dim"], generator=g),
                    pooled_projections=torch.randn(1, c.config["pooled_projection_dim"], generator=g),
                    img_ids=img_ids.reshape(-1, 3), txt_ids=torch.zeros(c.text_tokens, 3))
    return dict(encoder_hidden_states=torch.randn(1, c.text_tokens, c.config["text_dim"], generator=g))


def initial_latent(c, seed):
    g = torch.Generator().manual_seed(seed + 2)
    if c.model == "flux":
        return torch.randn(1, c.latent[0] * c.latent[1], c.config["in_channels"], generator=g)
    return torch.randn(1, c.config["in_channels"], *c.latent, generator=g)


def _to(tensors, device, dtype):
    return {k: (v.to(device=device, dtype=dtype) if v.is_floating_point() and k not in ("img_ids", "txt_ids")
                else v.to(device)) for k, v in tensors.items()}


def forward(model, c, latent, sigma, cond):
    """The transformer's prediction for `latent` at noise level sigma in [0, 1] (flow matching)."""
    timestep = torch.full((latent.shape[0],), sigma * (1.0 if c.model == "flux" else 1000.0), device=latent.device,
                          dtype=latent.dtype)
    # return_dict=False: diffusers' context-parallel output hook gathers tensors and tuples, not output classes.
    return model(hidden_states=latent, timestep=timestep, return_dict=False, **cond)[0]


def denoise(model, c, steps, device, dtype, seed):
    """`steps` Euler steps of the flow ODE from sigma 1 to 0; the final latent in fp32."""
    cond = _to(conditioning(c, device, dtype, seed), device, dtype)
    latent = initial_latent(c, seed).to(device=device, dtype=dtype)
    sigmas = torch.linspace(1.0, 0.0, steps + 1).tolist()
    with torch.no_grad():
        for sigma, sigma_next in zip(sigmas[:-1], sigmas[1:]):
            velocity = forward(model, c, latent, sigma, cond)
            latent = latent + (sigma_next - sigma) * velocity
    return latent.float()


def model_inputs(c, device, dtype, seed):
    """(latent, cond) for one forward call at sigma 0.5."""
    return initial_latent(c, seed).to(device=device, dtype=dtype), _to(conditioning(c, device, dtype, seed), device,
                                                                       dtype)


def cosine(a, b):
    a, b = a.double().flatten(), b.double().flatten()
    return float((a @ b) / (a.norm() * b.norm()).clamp_min(1e-300))


def psnr(test, ref):
    """10 log10(range^2 / MSE) in dB, range = max - min of the reference; inf when equal."""
    ref, test = ref.double(), test.double()
    mse = float(((test - ref) ** 2).mean())
    peak = float(ref.max() - ref.min())
    return math.inf if mse == 0.0 else 10.0 * math.log10(peak * peak / mse)
