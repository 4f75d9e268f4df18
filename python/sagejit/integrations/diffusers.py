"""sagejit in diffusers: the attention backend "sagejit", and enable() for a whole pipeline.

    import sagejit.integrations.diffusers as sagejit_diffusers   # registers the backend (idempotent)
    report = sagejit_diffusers.enable(pipe)    # every attention call of pipe's transformers / UNets
    print(report.summary())                    # per attention module: routed, fallbacks and why
    sagejit_diffusers.disable(pipe)            # or `with sagejit_diffusers.enable(pipe): ...`

enable() sets the backend on the attention modules that dispatch through diffusers' attention dispatch and
routes the torch SDPA calls of those that call it directly (Lumina 2, CogVideoX, SD3), during that model's
attention forwards only (see _diffusers_scope.py). The backend alone, for the dispatching modules:

    pipe.transformer.set_attention_backend("sagejit")
    # or, for a block:  with diffusers.models.attention_dispatch.attention_backend("sagejit"): ...

Key-padding masks (the same for every query: HunyuanVideo's [B, 1, 1, N] bool mask, a [B, N] mask as
diffusers passes it, LTX's additive one repeated per head) go to sagejit; the "sagejit_varlen" backend turns
bool ones into cu_seqlens as diffusers' varlen backends do (_diffusers_varlen.py). Calls sagejit cannot take (other masks,
dropout, a head dim or dtype it has no kernels for, CPU tensors, a gradient) run diffusers' native
attention (torch SDPA) instead and are counted per reason:
`counters()`; `configure(strict=True)` raises sagejit.UnsupportedCall instead of falling back.

Context parallelism (ring, Ulysses and both, through `ContextParallelConfig` and
`model.enable_parallelism`): the backend declares support, diffusers distributes q/k/v and merges the
partial results; sagejit computes each local attention and, for the ring, its log-sum-exp.

The other path needs no diffusers API: `sagejit.patch_sdpa()` routes torch SDPA calls, which is what
diffusers' default "native" backend makes, to sagejit (see sagejit/sdpa.py).

Written against diffusers 0.42 (attention_dispatch's backend registry and its templated context-parallel
attention, both private to diffusers: a newer diffusers may need this file to follow).
"""
import enum

from . import _diffusers_scope, _diffusers_varlen
from ._reference import attention_with_lse
from ._routing import Router

BACKEND_NAME = "sagejit"
VARLEN_BACKEND_NAME = "sagejit_varlen"  # diffusers' varlen backends' counterpart (_diffusers_varlen.py)
_ENUM_MEMBERS = {BACKEND_NAME: "SAGEJIT", VARLEN_BACKEND_NAME: "SAGEJIT_VARLEN"}

_router = Router("diffusers")
Report = _diffusers_scope.Report  # what enable() returns
configure, counters, reset_counters = _router.module_functions()


def _native(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, return_lse):
    """diffusers' own native attention ([B, S, H, D] layout); with an LSE, the plain-torch reference."""
    from diffusers.models.attention_dispatch import AttentionBackendName, _AttentionBackendRegistry

    if return_lse:
        if dropout_p != 0.0:
            raise ValueError(f"the sagejit backend's fallback returns an LSE only without dropout (dropout_p="
                             f"{dropout_p}); use a backend with dropout and LSE, e.g. '_native_cudnn'")
        out, lse = attention_with_lse(query, key, value, tensor_layout="NHD", is_causal=is_causal, scale=scale,
                                      attn_mask=_sdpa_mask(attn_mask, query, key))
        return out, lse
    native = _AttentionBackendRegistry._backends[AttentionBackendName.NATIVE]
    return native(query=query, key=key, value=value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                  scale=scale, enable_gqa=enable_gqa)


def _sdpa_mask(attn_mask, query, key):
    # diffusers' native backend widens a [B, Nk] mask to [B, 1, 1, Nk]; the reference needs the same.
    if attn_mask is not None and attn_mask.ndim == 2 and attn_mask.shape == (query.shape[0], key.shape[1]):
        return attn_mask[:, None, None, :]
    return attn_mask


def _local_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, return_lse):
    """One attention on this rank, [B, S, H, D]; the LSE in diffusers' layout [B, S, H]."""
    def fallback():  # torch SDPA itself, also inside an enabled model's attention forward (not routed twice)
        return _diffusers_scope.outside_routing(
            lambda: _native(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, return_lse))

    # torch SDPA's rule (heads of q and k differ only with enable_gqa): the native call says what is wrong.
    refuse = "heads of q and k differ without enable_gqa" if query.shape[2] != key.shape[2] and not enable_gqa \
        else None
    result = _router.attention(query, key, value, fallback, tensor_layout="NHD", is_causal=is_causal, scale=scale,
                               return_lse=return_lse, attn_mask=_sdpa_mask(attn_mask, query, key),
                               dropout_p=dropout_p, refuse=refuse, observe=_diffusers_scope.current_observer())
    if not return_lse:
        return result
    out, lse = result
    return out, lse.transpose(1, 2).contiguous()


def _forward_op(ctx, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False,
                return_lse=False, _save_ctx=True, _parallel_config=None):
    """The local step of diffusers' templated ring / Ulysses attention."""
    return _local_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, return_lse)


def _backward_op(ctx, grad_out, *args, **kwargs):
    raise RuntimeError("the sagejit attention backend is inference only (INT8/FP8 quantized, no backward); "
                       "train with diffusers' native backend")


def _sagejit_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                       enable_gqa=False, return_lse=False, _parallel_config=None):
    # diffusers passes only the keyword arguments named in this signature (attention_dispatch reads it).
    if _parallel_config is None:
        return _local_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, return_lse)
    from diffusers.models.attention_dispatch import _templated_context_parallel_attention

    return _templated_context_parallel_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa,
                                                 return_lse, forward_op=_forward_op, backward_op=_backward_op,
                                                 _parallel_config=_parallel_config)


def _sagejit_varlen_attention(query, key, value, attn_mask=None, is_causal=False, scale=None, return_lse=False,
                              _parallel_config=None):
    """The "sagejit_varlen" backend (_diffusers_varlen.py): a bool key-padding mask becomes cu_seqlens."""
    gqa = query.shape[2] != key.shape[2]
    attn_mask = _sdpa_mask(attn_mask, query, key)  # diffusers' [B, Nk] is [B, 1, 1, Nk]

    def fallback():
        return _diffusers_scope.outside_routing(
            lambda: _native(query, key, value, attn_mask, 0.0, is_causal, scale, gqa, return_lse))

    if query.shape[2] % key.shape[2] != 0:
        raise ValueError(f"the sagejit_varlen backend: query heads ({query.shape[2]}) are not a multiple of key "
                         f"heads ({key.shape[2]})")
    keep = refuse = None
    if attn_mask is not None:
        if is_causal:  # what torch SDPA refuses, and what a packed causal call would answer differently
            raise ValueError("the sagejit_varlen backend takes attn_mask or is_causal=True, not both (as torch SDPA)")
        keep, refuse = _diffusers_varlen.key_padding(attn_mask, query, key)
    result = _router.route(lambda: _diffusers_varlen.attention(query, key, value, keep, is_causal, scale, return_lse),
                           fallback, query, refuse=refuse, observe=_diffusers_scope.current_observer())
    if not return_lse:
        return result
    out, lse = result  # lse [B, H, S] either way; diffusers' layout is [B, S, H]
    return out, lse.transpose(1, 2).contiguous()


def _backend_name_member(value):
    """AttentionBackendName.SAGEJIT (or SAGEJIT_VARLEN), added to diffusers' enum (set_attention_backend accepts
    only its members)."""
    from diffusers.models.attention_dispatch import AttentionBackendName

    existing = AttentionBackendName._value2member_map_.get(value)
    if existing is not None:
        return existing
    name = _ENUM_MEMBERS[value]
    member = str.__new__(AttentionBackendName, value)
    member._name_ = name
    member._value_ = value
    member.__objclass__ = AttentionBackendName
    if hasattr(enum.EnumType, "_add_member_"):  # Python >= 3.13 keeps members through this helper
        AttentionBackendName._add_member_(name, member)
    else:
        type.__setattr__(AttentionBackendName, name, member)
        AttentionBackendName._member_map_[name] = member
    AttentionBackendName._member_names_.append(name)
    AttentionBackendName._value2member_map_[value] = member
    return member


def register():
    """Registers the "sagejit" and "sagejit_varlen" backends with diffusers (idempotent); returns the
    AttentionBackendName of "sagejit"."""
    from diffusers.models.attention_dispatch import _AttentionBackendRegistry

    member = _backend_name_member(BACKEND_NAME)
    if member not in _AttentionBackendRegistry._backends:
        _AttentionBackendRegistry.register(member, constraints=[], supports_context_parallel=True)(_sagejit_attention)
    varlen = _backend_name_member(VARLEN_BACKEND_NAME)
    if varlen not in _AttentionBackendRegistry._backends:
        _AttentionBackendRegistry.register(varlen, constraints=[])(_sagejit_varlen_attention)
    return member


def enable(pipe_or_model):
    """sagejit for every attention call of a diffusers pipeline's transformers and UNets (its VAE is left out)
    or of one model (torch.nn.Module with diffusers attention modules, e.g. pipe.transformer); returns a Report
    (report.summary(), report.modules(), report.totals(); a context manager that disables on exit).

    Modules that dispatch through diffusers' attention dispatch get the "sagejit" backend (on this model's
    processors only: diffusers' process-wide active backend is left as it is); modules whose processor calls
    torch SDPA itself have those calls routed during their own forward only. Both follow the routing rule of
    configure() (strict, emulate_on_cpu) and count in counters() too. disable() undoes it."""
    return _diffusers_scope.enable(pipe_or_model, _router, register())


def disable(pipe_or_model):
    """Undoes enable() on this pipeline or model (or on one component of an enabled pipeline): hooks removed,
    each processor's backend given back unless it was changed after enable(). Returns the reports of what it
    disabled; a ValueError when nothing of it is enabled."""
    return _diffusers_scope.disable(pipe_or_model, register())


def is_enabled(model):
    """Whether enable() is in force on this model."""
    return _diffusers_scope.is_enabled(model)


register()
