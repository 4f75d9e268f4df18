"""Real diffusers transformers from small configs with random weights - no downloads - their inputs, a few Euler
denoising steps, and the measures the tests, the benchmark and the context-parallel run report (cosine, PSNR).
Shared by python/tests/test_diffusers_cpu.py, python/tests/test_integrations_gpu.py,
bench/run_diffusers_benchmark.py and bench/run_context_parallel.py.

MODELS (Flux, Wan) dispatch through diffusers' attention dispatch (set_attention_backend reaches them);
MASKED_MODELS (HunyuanVideo, LTX-Video) dispatch too, with text-padding masks on their attention calls;
SDPA_MODELS (CogVideoX, SD3 with an SD3.5 dual-attention block, Lumina 2) have attention processors that call
torch SDPA themselves: sagejit reaches them through sagejit.integrations.diffusers.enable(). The cases with
padded_text_tokens mask that many caption tokens of their last batch item, so their attention gets
key-padding masks.

Sizes: "tiny" runs on a CPU through sagejit's emulator in seconds (head dim 64: the emulator's smallest
kernel head dim); "bench" has real model widths, head dim 128 and >= 4k tokens, fewer layers.
"""
import math
from dataclasses import dataclass

import torch

MODELS = ("flux", "wan")
MASKED_MODELS = ("hunyuanvideo", "ltx")
SDPA_MODELS = ("cogvideox", "sd3", "lumina2")


@dataclass(frozen=True)
class Case:
    model: str
    size: str
    config: dict
    latent: tuple      # flux: (height, width) of the packed image; wan, cogvideox, hunyuanvideo, ltx: (frames,
    text_tokens: int   # height, width) of the latent; sd3, lumina2: (height, width) of the latent
    batch: int = 1
    padded_text_tokens: int = 0  # caption tokens masked out in the last batch item

    def tokens(self):
        """Tokens of the (joint) self-attention (Flux, CogVideoX, SD3: image or video + text; Wan: video;
        Lumina 2: image + caption)."""
        if self.model == "flux":
            return self.latent[0] * self.latent[1] + self.text_tokens
        if self.model == "wan":
            patch = self.config["patch_size"]
            return math.prod(n // p for n, p in zip(self.latent, patch))
        if self.model == "ltx":  # patch 1; the text tokens are in the cross-attention only
            return math.prod(self.latent)
        if self.model == "hunyuanvideo":
            patch, patch_t = self.config["patch_size"], self.config["patch_size_t"]
            frames, height, width = self.latent
            return frames // patch_t * (height // patch) * (width // patch) + self.text_tokens
        patch = self.config["patch_size"]
        return math.prod(self.latent[-2:]) // (patch * patch) * (self.latent[0] if self.model == "cogvideox" else 1) \
            + self.text_tokens

    def head_dim(self):
        if self.model == "lumina2":
            return self.config["hidden_size"] // self.config["num_attention_heads"]
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


# Tiny only (CPU tests). CogVideoX: 2 latent frames of 8 x 8, patch 2 -> 32 video + 8 text tokens.
_COGVIDEOX = {
    "tiny": dict(config=dict(num_attention_heads=2, attention_head_dim=64, in_channels=4, out_channels=4,
                             time_embed_dim=32, text_embed_dim=32, num_layers=1, sample_width=8, sample_height=8,
                             sample_frames=5, patch_size=2, max_text_seq_length=8),
                 latent=(2, 8, 8), text_tokens=8),
    # CogVideoX-2B's widths (30 heads x 64, 4096-wide text), 2 of its 30 blocks; 7 latent frames (25 video frames)
    # of 48 x 64 -> 5376 video tokens + 226 text tokens = 5602.
    "bench": dict(config=dict(num_attention_heads=30, attention_head_dim=64, in_channels=16, out_channels=16,
                              time_embed_dim=512, text_embed_dim=4096, num_layers=2, sample_width=64,
                              sample_height=48, sample_frames=25, patch_size=2, max_text_seq_length=226),
                  latent=(7, 48, 64), text_tokens=226),
}
# SD3: 8 x 8 latent, patch 2 -> 16 image + 8 text tokens; block 0 has SD3.5's second attention (attn2), block 1
# is the last (context_pre_only).
_SD3 = {
    "tiny": dict(config=dict(sample_size=8, patch_size=2, in_channels=4, out_channels=4, num_layers=2,
                             attention_head_dim=64, num_attention_heads=2, joint_attention_dim=32,
                             caption_projection_dim=128, pooled_projection_dim=32, pos_embed_max_size=8,
                             dual_attention_layers=(0,)),
                 latent=(8, 8), text_tokens=8),
    # SD3.5 Medium's widths (24 heads x 64, qk RMS norm), 2 of its 24 blocks (block 0 dual); a 128 x 128 latent
    # (1024 px) -> 4096 image tokens + 333 text tokens = 4429.
    "bench": dict(config=dict(sample_size=128, patch_size=2, in_channels=16, out_channels=16, num_layers=2,
                              attention_head_dim=64, num_attention_heads=24, joint_attention_dim=4096,
                              caption_projection_dim=1536, pooled_projection_dim=2048, pos_embed_max_size=384,
                              qk_norm="rms_norm", dual_attention_layers=(0,)),
                  latent=(128, 128), text_tokens=333),
}
# Lumina 2: 2 query heads of 64 on 1 k/v head (its processor repeats k/v to all heads before torch SDPA), 8 x 8
# latent, patch 2 -> 16 image tokens + 8 caption tokens, 2 of them padding in the second batch item.
_LUMINA2 = {
    "tiny": dict(config=dict(sample_size=8, patch_size=2, in_channels=4, hidden_size=128, num_layers=1,
                             num_refiner_layers=1, num_attention_heads=2, num_kv_heads=1, multiple_of=16,
                             cap_feat_dim=32, axes_dim_rope=(16, 24, 24)),
                 latent=(8, 8), text_tokens=8, batch=2, padded_text_tokens=2),
    # Lumina Image 2.0's widths (24 query heads of 96 on 8 k/v heads, 2304-wide captions), 2 of its 26 blocks;
    # 128 x 128 latent -> 4096 image tokens + 256 caption tokens (64 padding in the second of two items) = 4352.
    "bench": dict(config=dict(sample_size=128, patch_size=2, in_channels=16, hidden_size=2304, num_layers=2,
                              num_refiner_layers=1, num_attention_heads=24, num_kv_heads=8, multiple_of=256,
                              cap_feat_dim=2304, axes_dim_rope=(32, 32, 32)),
                  latent=(128, 128), text_tokens=256, batch=2, padded_text_tokens=64),
}
# HunyuanVideo: its joint and single-stream blocks get a bool [B, 1, 1, N] text-padding mask; its token refiner
# a per-query one. Tiny: 2 latent frames of 8 x 8, patch 2 -> 32 video + 12 text tokens, 5 of them padding in the
# second batch item. Bench: HunyuanVideo's widths (24 heads x 128, 4096-wide text), 2 + 2 of its 20 + 40 blocks;
# a 5 x 48 x 64 latent -> 3840 video tokens + 256 text tokens (128 of them padding) = 4096.
_HUNYUANVIDEO = {
    "tiny": dict(config=dict(in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=64,
                             num_layers=1, num_single_layers=1, num_refiner_layers=1, patch_size=2, patch_size_t=1,
                             guidance_embeds=False, text_embed_dim=32, pooled_projection_dim=32,
                             rope_axes_dim=(16, 24, 24)),
                 latent=(2, 8, 8), text_tokens=12, batch=2, padded_text_tokens=5),
    "bench": dict(config=dict(in_channels=16, out_channels=16, num_attention_heads=24, attention_head_dim=128,
                              num_layers=2, num_single_layers=2, num_refiner_layers=1, patch_size=2, patch_size_t=1,
                              guidance_embeds=False, text_embed_dim=4096, pooled_projection_dim=768,
                              rope_axes_dim=(16, 56, 56)),
                  latent=(5, 48, 64), text_tokens=256, padded_text_tokens=128),
}
# LTX-Video: its cross-attention gets the T5 padding mask as (1 - mask) * -10000 repeated per head. Tiny: 2 x 4
# x 4 latent (patch 1) = 32 tokens, 10 text tokens, 4 of them padding in the second item. Bench: LTX-Video 2B's
# widths (32 heads x 64, 4096-wide captions), 2 of its 28 blocks; 8 x 16 x 32 latent = 4096 tokens, 128 text
# tokens (48 padding).
_LTX = {
    "tiny": dict(config=dict(in_channels=8, out_channels=8, num_attention_heads=2, attention_head_dim=64,
                             cross_attention_dim=128, num_layers=1, caption_channels=32),
                 latent=(2, 4, 4), text_tokens=10, batch=2, padded_text_tokens=4),
    "bench": dict(config=dict(in_channels=128, out_channels=128, num_attention_heads=32, attention_head_dim=64,
                              cross_attention_dim=2048, num_layers=2, caption_channels=4096),
                  latent=(8, 16, 32), text_tokens=128, padded_text_tokens=48),
}
_TABLES = {"flux": _FLUX, "wan": _WAN, "cogvideox": _COGVIDEOX, "sd3": _SD3, "lumina2": _LUMINA2,
           "hunyuanvideo": _HUNYUANVIDEO, "ltx": _LTX}


def case(model, size):
    table = _TABLES[model]
    if size not in table:
        raise ValueError(f"model {model!r} has no size {size!r}; its sizes: {sorted(table)}")
    return Case(model=model, size=size, **table[size])


def _model_class(model):
    import diffusers

    return getattr(diffusers, {"flux": "FluxTransformer2DModel", "wan": "WanTransformer3DModel",
                               "cogvideox": "CogVideoXTransformer3DModel", "sd3": "SD3Transformer2DModel",
                               "lumina2": "Lumina2Transformer2DModel",
                               "hunyuanvideo": "HunyuanVideoTransformer3DModel",
                               "ltx": "LTXVideoTransformer3DModel"}[model])


def build(c, device, dtype, seed):
    """The transformer with random weights drawn from `seed` on `device` (initialised there: a billion
    parameters take long on a CPU)."""
    torch.manual_seed(seed)
    cls = _model_class(c.model)
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
    batch = c.batch
    if c.model == "cogvideox":
        return dict(encoder_hidden_states=torch.randn(batch, c.text_tokens, c.config["text_embed_dim"], generator=g))
    if c.model == "sd3":
        return dict(encoder_hidden_states=torch.randn(batch, c.text_tokens, c.config["joint_attention_dim"],
                                                      generator=g),
                    pooled_projections=torch.randn(batch, c.config["pooled_projection_dim"], generator=g))
    mask = torch.ones(batch, c.text_tokens, dtype=torch.bool)
    mask[-1, c.text_tokens - c.padded_text_tokens:] = False
    if c.model == "lumina2":
        return dict(encoder_hidden_states=torch.randn(batch, c.text_tokens, c.config["cap_feat_dim"], generator=g),
                    encoder_attention_mask=mask)
    if c.model == "hunyuanvideo":  # its pipeline's mask is an integer tensor (the tokenizer's)
        return dict(encoder_hidden_states=torch.randn(batch, c.text_tokens, c.config["text_embed_dim"], generator=g),
                    encoder_attention_mask=mask.long(),
                    pooled_projections=torch.randn(batch, c.config["pooled_projection_dim"], generator=g))
    if c.model == "ltx":
        frames, height, width = c.latent
        return dict(encoder_hidden_states=torch.randn(batch, c.text_tokens, c.config["caption_channels"], generator=g),
                    encoder_attention_mask=mask.long(), num_frames=frames, height=height, width=width)
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
    if c.model == "cogvideox":  # [B, frames, channels, height, width]
        return torch.randn(c.batch, c.latent[0], c.config["in_channels"], *c.latent[1:], generator=g)
    if c.model == "ltx":  # packed: [B, frames x height x width, channels]
        return torch.randn(c.batch, math.prod(c.latent), c.config["in_channels"], generator=g)
    return torch.randn(c.batch, c.config["in_channels"], *c.latent, generator=g)


def _to(tensors, device, dtype):
    def to(key, value):
        if not isinstance(value, torch.Tensor):  # LTX's num_frames, height, width
            return value
        if value.is_floating_point() and key not in ("img_ids", "txt_ids"):
            return value.to(device=device, dtype=dtype)
        return value.to(device)
    return {k: to(k, v) for k, v in tensors.items()}


def forward(model, c, latent, sigma, cond):
    """The transformer's prediction for `latent` at noise level sigma in [0, 1] (flow matching)."""
    timestep = torch.full((latent.shape[0],), sigma * (1.0 if c.model in ("flux", "lumina2") else 1000.0),
                          device=latent.device, dtype=latent.dtype)
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
