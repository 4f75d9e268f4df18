"""ComfyUI custom nodes: sagejit attention for a model, with ComfyUI's own attention for what sagejit cannot
take. Install: link or copy this folder into ComfyUI/custom_nodes/ (as sagejit_comfyui, say) in a Python
that can `import sagejit` (pip install sagejit, or PYTHONPATH=<sagejit checkout>/python). README.md here.

Node "sagejit attention" (MODEL -> MODEL): installs sagejit as the model's
transformer_options["optimized_attention_override"], the hook ComfyUI's attention functions call first;
every call it cannot take goes to the attention ComfyUI would have used. With strict on, such a call raises
instead (to check that a workflow runs entirely on sagejit). Also registers "sagejit" in ComfyUI's table of
attention functions (comfy.ldm.modules.attention.register_attention_function).
"""
import logging

from sagejit.integrations import comfyui as _sagejit_comfyui


class SagejitAttention:
    """Patches a MODEL so that its attention runs on sagejit (fallback: ComfyUI's attention)."""

    CATEGORY = "sagejit"
    FUNCTION = "patch"
    RETURN_TYPES = ("MODEL",)
    DESCRIPTION = ("Attention on sagejit (INT8 QK^T, FP8 PV, compiled for this GPU); masks and other calls it "
                   "cannot take run ComfyUI's attention. strict: raise on those instead.")

    @classmethod
    def INPUT_TYPES(cls):
        return {"required": {"model": ("MODEL",),
                             "strict": ("BOOLEAN", {"default": False,
                                                    "tooltip": "raise instead of falling back"})}}

    def patch(self, model, strict):
        patched = model.clone()
        options = patched.model_options.setdefault("transformer_options", {})
        options["optimized_attention_override"] = _sagejit_comfyui.attention_override(strict=strict)
        return (patched,)


class SagejitAttentionCounters:
    """Shows how many attention calls ran on sagejit and why the others did not (since the last reset)."""

    CATEGORY = "sagejit"
    FUNCTION = "report"
    RETURN_TYPES = ("STRING",)
    OUTPUT_NODE = True

    @classmethod
    def INPUT_TYPES(cls):
        return {"required": {"reset": ("BOOLEAN", {"default": False})}}

    @classmethod
    def IS_CHANGED(cls, reset):
        return float("nan")  # always re-run: the counters change between runs

    def report(self, reset):
        text = str(_sagejit_comfyui.counters())
        if reset:
            _sagejit_comfyui.reset_counters()
        return {"ui": {"text": [text]}, "result": (text,)}


def _register_attention_function():
    try:
        from comfy.ldm.modules import attention as comfy_attention
    except ImportError:  # not inside ComfyUI (tests), or a ComfyUI without the table
        return
    register = getattr(comfy_attention, "register_attention_function", None)
    if register is None:
        return
    fallback = comfy_attention.attention_pytorch

    def attention_sagejit(q, k, v, heads, mask=None, attn_precision=None, skip_reshape=False,
                          skip_output_reshape=False, **kwargs):
        return _sagejit_comfyui.attention(q, k, v, heads, mask=mask, attn_precision=attn_precision,
                                          skip_reshape=skip_reshape, skip_output_reshape=skip_output_reshape,
                                          fallback=fallback, **kwargs)

    wrap = getattr(comfy_attention, "wrap_attn", None)
    register("sagejit", wrap(attention_sagejit) if wrap is not None else attention_sagejit)
    logging.info("sagejit: registered the attention function 'sagejit'")


_register_attention_function()

NODE_CLASS_MAPPINGS = {"SagejitAttention": SagejitAttention, "SagejitAttentionCounters": SagejitAttentionCounters}
NODE_DISPLAY_NAME_MAPPINGS = {"SagejitAttention": "sagejit attention",
                              "SagejitAttentionCounters": "sagejit attention counters"}
__all__ = ["NODE_CLASS_MAPPINGS", "NODE_DISPLAY_NAME_MAPPINGS"]
