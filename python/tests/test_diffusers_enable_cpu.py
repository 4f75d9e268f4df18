"""sagejit.integrations.diffusers.enable(pipe_or_model) on CPU tensors through sagejit's emulator: real tiny
transformers whose attention processors call torch SDPA themselves (CogVideoX, SD3 with a dual-attention block,
Lumina 2 with caption padding masks) and one that dispatches (Flux), every attention call accounted for in the
per-module report, outputs against the native forward, the scope (a second model, other threads and plain SDPA
calls outside the enabled attention modules are not routed), disable(), pipelines, torch.compile and errors."""
import json
import os
import subprocess
import sys
import threading

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("diffusers")

import torch.nn.functional as F  # noqa: E402

import sagejit  # noqa: E402
import sagejit.integrations.diffusers as sj_diffusers  # noqa: E402
from diffusers import AutoencoderKL, DiffusionPipeline, UNet2DConditionModel  # noqa: E402
from diffusers.models.attention_dispatch import AttentionBackendName, _AttentionBackendRegistry  # noqa: E402

import diffusers_models as dm  # noqa: E402

BENCH = os.path.dirname(os.path.abspath(dm.__file__))
MIN_COSINE_CP = 0.999  # context parallel vs one process, both sagejit (test_diffusers_cpu.py says why)

# One forward of a tiny random-weight (unit-gain) model, every attention call on sagejit's emulator vs native;
# measured over 50 seeds each: cosine >= 0.99998 (CogVideoX), 0.99986 (SD3), 0.99993 (Lumina 2, its masked calls
# on native), 0.99997 (Flux); the UNet below over 20 seeds: >= 0.99986. The bound leaves a wide margin.
MIN_COSINE_MODEL = 0.999
ENABLED_MODELS = dm.SDPA_MODELS + ("flux",)
# Lumina 2 passes its caption padding as a boolean key mask [B, 1, 1, N]: until sagejit takes key-padding masks
# those calls fall back under this reason; once it does, they are routed. No other call falls back.
MASKED_REASONS = {"lumina2": {"attn_mask"}}


@pytest.fixture(autouse=True)
def _emulated(emulated_integration):
    emulated_integration(sj_diffusers)
    yield
    _AttentionBackendRegistry.set_active_backend(AttentionBackendName.NATIVE)
    assert torch.overrides._get_current_function_mode_stack() == [], "a routing mode was left on the stack"


def _tiny(model, seed, dtype=torch.bfloat16):
    c = dm.case(model, "tiny")
    transformer = dm.build(c, "cpu", dtype, seed)
    latent, cond = dm.model_inputs(c, "cpu", dtype, seed)
    return c, transformer, lambda: _forward(transformer, c, latent, cond)


def _forward(transformer, c, latent, cond):
    with torch.no_grad():
        return dm.forward(transformer, c, latent, 0.5, cond)


def _qkv(seed, heads=2, tokens=24, head_dim=64):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(1, heads, tokens, head_dim, generator=g).to(torch.bfloat16) for _ in range(3))


def _hook_state(model):
    return [(name, dict(m._forward_pre_hooks), dict(m._forward_hooks), dict(m._forward_hooks_always_called))
            for name, m in model.named_modules()]


def _backends(model):
    return {name: m.processor._attention_backend for name, m in model.named_modules()
            if hasattr(getattr(m, "processor", None), "_attention_backend")}


@pytest.mark.parametrize("model", ENABLED_MODELS)
def test_every_attention_call_reaches_sagejit_or_is_named(seed, model):
    c, transformer, forward = _tiny(model, seed)
    native = forward()
    report = sj_diffusers.enable(transformer)
    ours = forward()
    print(report.summary())
    cosine = dm.cosine(ours, native)
    print(f"{model} tiny, one forward, enable() (emulator) vs native: cosine {cosine:.6f}")
    assert cosine > MIN_COSINE_MODEL
    assert not torch.equal(ours, native)  # sagejit's result, not native's

    modules = report.modules()
    expected_path = "backend" if model in dm.MODELS else "sdpa"
    assert modules and all(e["path"] == expected_path for e in modules.values()), modules
    for name, e in modules.items():
        # one attention call per attention forward in these models: each reached sagejit or fell back, named
        assert e["forwards"] == 1 and e["routed"] + e["fallback"] == 1, (name, e)
        assert set(e["fallback_reasons"]) <= MASKED_REASONS.get(model, set()), (name, e)
    totals = report.totals()
    assert totals["routed"] > 0 and report.unseen() == []
    counters = sj_diffusers.counters()  # the integration's counters saw the same calls
    assert (counters["routed"], counters["fallback"]) == (totals["routed"], totals["fallback"])
    if model == "lumina2":  # its refiner of captions and its joint layers get the padding mask
        assert totals["fallback_reasons"].get("attn_mask", 0) + totals["routed"] == totals["forwards"]
    sj_diffusers.disable(transformer)


def test_unet_attention_is_routed(seed):
    """A UNet's self- and cross-attention (AttnProcessor2_0 calls torch SDPA itself), one head of 64 per block."""
    torch.manual_seed(seed)
    unet = UNet2DConditionModel(sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
                                block_out_channels=(64, 64), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32,
                                attention_head_dim=1, norm_num_groups=32).to(torch.bfloat16).eval()
    g = torch.Generator().manual_seed(seed + 1)
    inputs = dict(sample=torch.randn(1, 4, 8, 8, generator=g).to(torch.bfloat16), timestep=torch.tensor([500.0]),
                  encoder_hidden_states=torch.randn(1, 8, 32, generator=g).to(torch.bfloat16))
    with torch.no_grad():
        native = unet(**inputs, return_dict=False)[0]
        with sj_diffusers.enable(unet) as report:
            ours = unet(**inputs, return_dict=False)[0]
    print(report.summary())
    assert dm.cosine(ours, native) > MIN_COSINE_MODEL and not torch.equal(ours, native)
    modules = report.modules()
    assert {name.rsplit(".", 1)[1] for name in modules} == {"attn1", "attn2"}
    assert all(e["path"] == "sdpa" and e["forwards"] == e["routed"] == 1 for e in modules.values()), modules


def test_sd15_shaped_unet_head_dims_40_80_160_through_patch_sdpa(seed):
    """SD 1.5's UNet attention head dims (40, 80, 160: its 320/640/1280 channels over 8 heads) at tiny widths,
    one head per block: patch_sdpa routes every call (160 runs zero-padded at 256), none falls back."""
    torch.manual_seed(seed)
    unet = UNet2DConditionModel(sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
                                block_out_channels=(40, 80, 160),
                                down_block_types=("CrossAttnDownBlock2D",) * 3,
                                up_block_types=("CrossAttnUpBlock2D",) * 3, cross_attention_dim=32,
                                attention_head_dim=1, norm_num_groups=8).to(torch.bfloat16).eval()
    g = torch.Generator().manual_seed(seed + 1)
    inputs = dict(sample=torch.randn(1, 4, 8, 8, generator=g).to(torch.bfloat16), timestep=torch.tensor([500.0]),
                  encoder_hidden_states=torch.randn(1, 8, 32, generator=g).to(torch.bfloat16))
    head_dims = []
    original = F.scaled_dot_product_attention

    def record(q, *args, **kwargs):  # the head dims the UNet's processors hand to torch SDPA
        head_dims.append(q.shape[-1])
        return original(q, *args, **kwargs)

    with torch.no_grad():
        F.scaled_dot_product_attention = record
        try:
            native = unet(**inputs, return_dict=False)[0]
        finally:
            F.scaled_dot_product_attention = original
        sagejit.reset_sdpa_counters()
        with sagejit.patch_sdpa(cpu=True):
            ours = unet(**inputs, return_dict=False)[0]
    counters = sagejit.sdpa_counters()
    print("SD 1.5-shaped UNet, patch_sdpa:", counters, sorted(set(head_dims)))
    assert set(head_dims) == {40, 80, 160}
    assert counters["routed"] == len(head_dims) and counters["fallback"] == 0, counters
    assert dm.cosine(ours, native) > MIN_COSINE_MODEL and not torch.equal(ours, native)


def test_named_fallback_and_strict(seed):
    """fp32 has no kernels: every call falls back, named, and gives native's result exactly; strict raises."""
    _, transformer, forward = _tiny("cogvideox", seed, dtype=torch.float32)
    native = forward()
    with sj_diffusers.enable(transformer) as report:
        assert torch.equal(forward(), native)
        (name, entry), = report.modules().items()
        (reason, count), = entry["fallback_reasons"].items()
        assert count == 1 and entry["routed"] == 0 and "dtype" in reason, entry
        assert reason in report.summary() and name in report.summary()
        sj_diffusers.configure(strict=True)
        with pytest.raises(sagejit.UnsupportedCall, match="dtype"):
            forward()
        # the raise left the module's scope: no mode of ours stays on this thread's stack
        assert torch.overrides._get_current_function_mode_stack() == []
        F.scaled_dot_product_attention(*_qkv(seed))  # a leaked mode would route (and count) this call
        assert sj_diffusers.counters() == {"routed": 0, "fallback": 1, "fallback_reasons": {reason: 1}}
    assert not sj_diffusers.is_enabled(transformer)


def test_sdpa_outside_the_enabled_model_is_not_routed(seed):
    """During the enabled model's attention forward: a second model and plain SDPA calls in other threads, and a
    second model and a plain call in this thread outside the attention modules, run torch's own SDPA (equal to
    the native results bit for bit, nothing counted); after the forward, the same."""
    _, enabled, forward = _tiny("cogvideox", seed)
    _, other, other_forward = _tiny("sd3", seed + 1)
    q, k, v = _qkv(seed + 2)
    native_other, native_plain = other_forward(), F.scaled_dot_product_attention(q, k, v)
    report = sj_diffusers.enable(enabled)
    seen = {}

    def in_thread(key, function):
        thread = threading.Thread(target=lambda: seen.setdefault(key, function()))
        thread.start()
        thread.join()

    def during_attention(module, args):  # registered after enable(): runs inside the attention module's scope
        in_thread("other model, other thread", other_forward)
        in_thread("plain call, other thread", lambda: F.scaled_dot_product_attention(q, k, v))

    def during_block(module, args):  # the transformer block: inside the model's forward, outside its attention
        seen["other model, this thread"] = other_forward()
        seen["plain call, this thread"] = F.scaled_dot_product_attention(q, k, v)

    block = enabled.transformer_blocks[0]
    handles = [block.attn1.register_forward_pre_hook(during_attention), block.register_forward_pre_hook(during_block)]
    forward()
    for handle in handles:
        handle.remove()
    seen["other model, after"] = other_forward()
    seen["plain call, after"] = F.scaled_dot_product_attention(q, k, v)
    assert len(seen) == 6
    for key, result in seen.items():
        assert torch.equal(result, native_other if key.startswith("other") else native_plain), key
    assert sj_diffusers.counters() == {"routed": 1, "fallback": 0, "fallback_reasons": {}}
    assert report.totals()["routed"] == 1
    sj_diffusers.disable(enabled)


def test_concurrent_forwards(seed):
    """The enabled model's forward in two threads at once, a model that is not enabled in a third: each thread's
    calls are routed (or not) by its own modes, and the report adds up."""
    _, enabled, forward = _tiny("sd3", seed)
    _, other, other_forward = _tiny("cogvideox", seed + 1)
    native_enabled, native_other = forward(), other_forward()
    report = sj_diffusers.enable(enabled)
    start = threading.Barrier(3)
    results = {}

    def run(key, function):
        start.wait()
        results[key] = function()

    threads = [threading.Thread(target=run, args=(key, function))
               for key, function in (("enabled 1", forward), ("enabled 2", forward), ("other", other_forward))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert torch.equal(results["other"], native_other)
    assert torch.equal(results["enabled 1"], results["enabled 2"]) and not torch.equal(results["enabled 1"],
                                                                                       native_enabled)
    assert all(e["forwards"] == e["routed"] == 2 for e in report.modules().values()), report.summary()
    assert sj_diffusers.counters()["routed"] == 2 * len(report.modules())
    sj_diffusers.disable(enabled)


def test_nested_enabled_models_count_apart(seed):
    """An enabled model run inside another's attention forward counts in its own report, fallbacks included."""
    _, outer, outer_forward = _tiny("cogvideox", seed)
    _, inner, inner_forward = _tiny("sd3", seed + 1, dtype=torch.float32)  # fp32: every call falls back
    native_inner = inner_forward()
    outer_report, inner_report = sj_diffusers.enable(outer), sj_diffusers.enable(inner)
    results = []
    handle = outer.transformer_blocks[0].attn1.register_forward_pre_hook(lambda m, a: results.append(inner_forward()))
    outer_forward()
    handle.remove()
    assert torch.equal(results[0], native_inner)
    assert outer_report.totals()["routed"] == 1 and outer_report.totals()["fallback"] == 0
    inner_totals = inner_report.totals()
    assert inner_totals["routed"] == 0 and inner_totals["fallback"] == inner_totals["forwards"] == 3
    sj_diffusers.disable(outer)
    sj_diffusers.disable(inner)


@pytest.mark.parametrize("model", ("flux", "cogvideox"))
def test_disable_restores_everything(seed, model):
    _, transformer, forward = _tiny(model, seed)
    native = forward()
    hooks, backends = _hook_state(transformer), _backends(transformer)
    active = _AttentionBackendRegistry.get_active_backend()[0]
    report = sj_diffusers.enable(transformer)
    assert sj_diffusers.is_enabled(transformer) and _hook_state(transformer) != hooks
    if model == "flux":
        assert backends and set(_backends(transformer).values()) == {sj_diffusers.register()}
    assert _AttentionBackendRegistry.get_active_backend()[0] is active  # the process-wide backend is not touched
    forward()
    assert sj_diffusers.disable(transformer) == [report]
    assert not sj_diffusers.is_enabled(transformer)
    assert _hook_state(transformer) == hooks and _backends(transformer) == backends
    assert torch.equal(forward(), native)
    assert report.totals()["forwards"] == len(report.modules())  # the forward after disable() is not counted
    assert sj_diffusers.counters()["routed"] == len(report.modules())
    with pytest.raises(ValueError, match="not enabled"):
        sj_diffusers.disable(transformer)
    again = sj_diffusers.enable(transformer)  # enable() again: a fresh report
    assert again is not report and again.totals()["forwards"] == 0
    sj_diffusers.disable(transformer)


def test_disable_during_a_forward(seed):
    """disable() from another thread while this thread is inside an enabled attention module's forward: the forward
    in flight still leaves its mode, and then nothing of enable() is left."""
    _, transformer, forward = _tiny("cogvideox", seed)
    hooks = _hook_state(transformer)
    sj_diffusers.enable(transformer)
    attention = transformer.transformer_blocks[0].attn1

    def disable_from_another_thread(module, args):  # runs after enable()'s pre-hook: the mode is entered
        thread = threading.Thread(target=sj_diffusers.disable, args=(transformer,))
        thread.start()
        thread.join()

    handle = attention.register_forward_pre_hook(disable_from_another_thread)
    forward()
    handle.remove()
    assert torch.overrides._get_current_function_mode_stack() == []
    assert _hook_state(transformer) == hooks and not sj_diffusers.is_enabled(transformer)
    routed = sj_diffusers.counters()["routed"]
    forward()
    assert sj_diffusers.counters()["routed"] == routed  # nothing routed after disable()


def test_disable_leaves_a_backend_set_after_enable(seed):
    _, transformer, _ = _tiny("flux", seed)
    sj_diffusers.enable(transformer)
    first = next(iter(_backends(transformer)))
    transformer.get_submodule(first).processor._attention_backend = AttentionBackendName.NATIVE
    sj_diffusers.disable(transformer)
    backends = _backends(transformer)
    assert backends.pop(first) is AttentionBackendName.NATIVE  # the user's, kept
    assert backends and set(backends.values()) == {None}       # the others given back


class _TinyPipeline(DiffusionPipeline):
    def __init__(self, transformer, transformer_2, vae):
        super().__init__()
        self.register_modules(transformer=transformer, transformer_2=transformer_2, vae=vae)


def _tiny_vae():
    return AutoencoderKL(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",),
                         up_block_types=("UpDecoderBlock2D",), block_out_channels=(32,), latent_channels=4,
                         norm_num_groups=8)


def test_pipeline_covers_its_transformers_not_its_vae(seed):
    c_sdpa, sdpa_model, sdpa_forward = _tiny("sd3", seed)
    c_flux, flux_model, flux_forward = _tiny("flux", seed)
    vae = _tiny_vae().eval()
    pipe = _TinyPipeline(transformer=sdpa_model, transformer_2=flux_model, vae=vae)
    vae_hooks = _hook_state(vae)
    with sj_diffusers.enable(pipe) as report:
        assert _hook_state(vae) == vae_hooks  # VAEs are left out
        sdpa_forward()
        flux_forward()
        modules = report.modules()
        assert {name.split(".")[0] for name in modules} == {"transformer", "transformer_2"}
        assert {e["path"] for n, e in modules.items() if n.startswith("transformer.")} == {"sdpa"}
        assert {e["path"] for n, e in modules.items() if n.startswith("transformer_2.")} == {"backend"}
        assert all(e["routed"] == 1 for e in modules.values()), report.summary()
        with pytest.raises(ValueError, match="already enabled"):
            sj_diffusers.enable(sdpa_model)
    assert not sj_diffusers.is_enabled(sdpa_model) and not sj_diffusers.is_enabled(flux_model)
    # one component of an enabled pipeline can be disabled alone
    sj_diffusers.enable(pipe)
    sj_diffusers.disable(flux_model)
    assert sj_diffusers.is_enabled(sdpa_model) and not sj_diffusers.is_enabled(flux_model)
    sj_diffusers.disable(pipe)
    assert not sj_diffusers.is_enabled(sdpa_model)


@pytest.mark.parametrize("model, compiled_part", [("cogvideox", "model"), ("flux", "model"), ("cogvideox", "blocks")])
def test_enable_traces_with_fullgraph_compile(seed, model, compiled_part):
    """torch.compile(fullgraph=True) of an enabled model, or of its blocks (what diffusers' compile_repeated_blocks
    does): the routed calls are sagejit's op in the graph (no torch SDPA left), with the same result as eager,
    and the compiled forwards are counted per module."""
    c, transformer, _ = _tiny(model, seed)
    latent, cond = dm.model_inputs(c, "cpu", torch.bfloat16, seed)
    report = sj_diffusers.enable(transformer)
    eager = _forward(transformer, c, latent, cond)
    graphs = []

    def keep_graph(graph_module, example_inputs):
        graphs.append(graph_module.code)
        return graph_module.forward

    if compiled_part == "model":
        compiled = torch.compile(transformer, fullgraph=True, backend=keep_graph)
    else:
        compiled = transformer
        for block in transformer.transformer_blocks:
            block.compile(fullgraph=True, backend=keep_graph)
    assert torch.equal(_forward(compiled, c, latent, cond), eager)
    assert graphs and all("sagejit" in code and "scaled_dot_product" not in code for code in graphs)
    assert all(e["forwards"] == e["routed"] == 2 for e in report.modules().values()), report.summary()
    sj_diffusers.disable(transformer)


def test_context_parallel_through_enable(seed, tmp_path, free_port):
    """diffusers' ring attention (2 CPU processes over gloo; the mode that needs sagejit's LSE) on a model enabled
    with enable(): the backend it sets declares context parallelism, every call is routed, and the result agrees
    with 1 process."""
    report = tmp_path / "cp.json"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port",
               str(free_port()), os.path.join(BENCH, "run_context_parallel.py"), "--device", "cpu", "--size", "tiny",
               "--models", "flux", "--mode", "ring", "--backend", "enable", "--seed", str(seed), "--json", str(report)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    results = json.loads(report.read_text())
    assert [r["mode"] for r in results] == ["ring"]
    for r in results:
        print(r)
        assert r["cosine"] > MIN_COSINE_CP, r
        totals = r["enable_report"]
        # every forward reached sagejit (the ring makes one local attention per step: more calls than forwards)
        assert totals["routed"] >= totals["forwards"] > 0 and totals["fallback"] == 0, r


def test_errors_name_what_is_accepted():
    with pytest.raises(TypeError, match="DiffusionPipeline.*torch.nn.Module"):
        sj_diffusers.enable("transformer")
    with pytest.raises(TypeError, match="DiffusionPipeline.*torch.nn.Module"):
        sj_diffusers.disable(42)
    with pytest.raises(ValueError, match="Linear has no diffusers attention modules"):
        sj_diffusers.enable(torch.nn.Linear(4, 4))
    pipe = _TinyPipeline(transformer=None, transformer_2=None, vae=_tiny_vae())
    with pytest.raises(ValueError, match="no component with diffusers attention modules"):
        sj_diffusers.enable(pipe)
