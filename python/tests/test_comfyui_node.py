"""The ComfyUI custom-node package (integrations/comfyui) without ComfyUI: loaded the way ComfyUI loads a
custom node (a module from the folder's __init__.py), its node mappings, the model patch through
transformer_options["optimized_attention_override"] called the way ComfyUI's attention wrapper calls it,
and the registration in ComfyUI's table of attention functions (a stand-in comfy module with that API)."""
import copy
import importlib.util
import os
import sys
import types

import pytest

torch = pytest.importorskip("torch")

import sagejit  # noqa: E402
from sagejit.integrations import comfyui as sj_comfyui  # noqa: E402

NODE_PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                            "integrations", "comfyui", "__init__.py")


def _load_node_package(name="sagejit_comfyui_under_test"):
    spec = importlib.util.spec_from_file_location(name, NODE_PACKAGE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _ModelPatcher:
    """What the node uses of ComfyUI's ModelPatcher: clone() copies model_options."""

    def __init__(self):
        self.model_options = {"transformer_options": {}}

    def clone(self):
        other = _ModelPatcher()
        other.model_options = copy.deepcopy(self.model_options)
        return other


@pytest.fixture(autouse=True)
def _emulated(emulated_integration):
    emulated_integration(sj_comfyui)


def test_node_mappings():
    nodes = _load_node_package()
    assert set(nodes.NODE_CLASS_MAPPINGS) == set(nodes.NODE_DISPLAY_NAME_MAPPINGS)
    for cls in nodes.NODE_CLASS_MAPPINGS.values():
        inputs = cls.INPUT_TYPES()
        assert "required" in inputs and callable(getattr(cls(), cls.FUNCTION))
        assert isinstance(cls.RETURN_TYPES, tuple) and cls.CATEGORY == "sagejit"


def test_patch_installs_the_override_on_a_clone(seed):
    nodes = _load_node_package()
    model = _ModelPatcher()
    (patched,) = nodes.SagejitAttention().patch(model, strict=False)
    assert model.model_options["transformer_options"] == {}  # the input MODEL is unchanged
    override = patched.model_options["transformer_options"]["optimized_attention_override"]
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, 2, 24, 64, generator=g).bfloat16() for _ in range(3))
    comfy_calls = []

    def comfy_attention(*args, **kwargs):  # the function ComfyUI would have run
        comfy_calls.append(kwargs)
        return sj_comfyui.sdpa_attention(*args, **kwargs)

    # ComfyUI's wrapper: override(func, *args, **kwargs) with transformer_options and its re-entry flag
    out = override(comfy_attention, q, k, v, 2, skip_reshape=True, transformer_options={}, _inside_attn_wrapper=True)
    assert out.shape == (1, 24, 128) and comfy_calls == []
    override(comfy_attention, q, k, v, 2, torch.zeros(24, 24), skip_reshape=True, transformer_options={},
             _inside_attn_wrapper=True)
    assert len(comfy_calls) == 1
    (report,) = nodes.SagejitAttentionCounters().report(reset=True)["result"]
    assert "'routed': 1" in report and "'attn_mask: varies along the queries': 1" in report
    assert sj_comfyui.counters()["routed"] == 0
    (strict,) = nodes.SagejitAttention().patch(model, strict=True)
    with pytest.raises(sagejit.UnsupportedCall):
        strict.model_options["transformer_options"]["optimized_attention_override"](
            comfy_attention, q, k, v, 2, torch.zeros(24, 24), skip_reshape=True)


def test_registers_in_comfys_attention_table(monkeypatch, seed):
    registered = {}
    comfy_attention = types.ModuleType("comfy.ldm.modules.attention")
    comfy_attention.register_attention_function = lambda name, fn: registered.setdefault(name, fn)
    comfy_attention.attention_pytorch = sj_comfyui.sdpa_attention
    comfy_attention.wrap_attn = lambda fn: fn
    for name in ("comfy", "comfy.ldm", "comfy.ldm.modules"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "comfy.ldm.modules.attention", comfy_attention)
    sys.modules["comfy.ldm.modules"].attention = comfy_attention
    _load_node_package("sagejit_comfyui_registering")
    function = registered["sagejit"]
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(2, 16, 128, generator=g).half() for _ in range(3))
    assert function(q, k, v, 2).shape == q.shape
    mask = torch.zeros(16, 16, dtype=torch.half)
    assert torch.equal(function(q, k, v, 2, mask=mask), sj_comfyui.sdpa_attention(q, k, v, 2, mask=mask))
    assert sj_comfyui.counters()["routed"] == 1 and sj_comfyui.counters()["fallback"] == 1
