"""The one routing rule the framework integrations share: try sagejit, and when it cannot take a call,
run the framework's own attention instead - counted per reason, or raised in strict mode.

sagejit itself decides what it can take (sagejit.sageattn raises sagejit.UnsupportedCall for a gradient,
a dtype or head dim without kernels, ...). The router adds the integrations' policy: a key mask (the same
for every query, and for every head or one per head: sagejit/_key_mask.py) is sent to sagejit, any other mask and dropout are not
sent at all (decided without an exception; see _refused_argument), CPU
tensors go to the framework's attention unless `emulate_on_cpu` is set (sagejit's CPU path is an exact
emulator, far too slow for a model; tests turn it on), and any other sagejit error (no kernels for this
GPU, a failed compile) falls back too, with one warning per message so it is seen. A caller's error
(invalid_argument: a tensor_layout that is not 'HND'/'NHD', tensors on two devices) is raised, never
"fallen back" from: the fallback would run the same wrong arguments as something else.

Under torch.compile(fullgraph=True) the routing traces (the counters' updates are replayed per call) as
long as no sagejit exception is raised while tracing: masks and dropout are decided without one. A refusal
sagejit makes itself (dtype, head dim) cannot be caught in a compiled graph: it raises UnsupportedCall.
"""
import re
import threading
import warnings

from .._library import SagejitError, UnsupportedCall


def _compiling():
    import torch

    return torch.compiler.is_compiling()


def reason_key(message):
    """A counter key for a refusal message: its first clause (up to ';') with numbers replaced by N, so that
    one kind of refusal (head_dim 80, head_dim 96) counts under one key."""
    clause = str(message).split(";", 1)[0].strip()
    return re.sub(r"\d+", "N", clause)[:100] or "unsupported"


def _refused_argument(attn_mask, dropout_p, q, k, tensor_layout):
    # sagejit computes attention with at most a key mask (or causal) and without dropout, and sageattn
    # refuses the rest first. Deciding them here, without the call and its exception, keeps the fallback
    # traceable by torch.compile(fullgraph=True), which cannot trace the raise of sagejit's exception types.
    from .._key_mask import refusal
    from ..attention import layout_code

    if attn_mask is not None:
        reason = refusal(attn_mask, q, k, layout_code(tensor_layout))
        if reason is not None:
            return reason
    if dropout_p != 0.0:
        return "dropout_p"
    return None


class Router:
    """Routes attention calls of one integration (diffusers, ComfyUI) to sagejit or to a fallback."""

    def __init__(self, name):
        self.name = name
        self.strict = False
        self.emulate_on_cpu = False
        self._lock = threading.Lock()
        self._routed = 0
        self._reasons = {}
        self._warned = set()

    def configure(self, strict=None, emulate_on_cpu=None):
        """strict: raise UnsupportedCall instead of falling back. emulate_on_cpu: send CPU tensors to
        sagejit's emulator (exact and slow: for tests) instead of to the fallback."""
        if strict is not None:
            self.strict = bool(strict)
        if emulate_on_cpu is not None:
            self.emulate_on_cpu = bool(emulate_on_cpu)

    def counters(self):
        """{'routed': n, 'fallback': m, 'fallback_reasons': {reason: count}} since the last reset."""
        with self._lock:
            return {"routed": self._routed, "fallback": sum(self._reasons.values()),
                    "fallback_reasons": dict(self._reasons)}

    def reset_counters(self):
        with self._lock:
            self._routed = 0
            self._reasons.clear()

    def module_functions(self):
        """(configure, counters, reset_counters): what each integration module exports under those names."""
        return self.configure, self.counters, self.reset_counters

    def _policy_reason(self, q):
        if q.device.type == "cpu" and not self.emulate_on_cpu:
            return "cpu tensors"
        return None

    def attention(self, q, k, v, fallback, *, tensor_layout, is_causal=False, scale=None, return_lse=False,
                  attn_mask=None, dropout_p=0.0, refuse=None, strict=None, observe=None, **keywords):
        """sagejit.sageattn(q, k, v, ...) or, when sagejit cannot take the call, fallback() (a function of no
        arguments that returns the same thing: out, or (out, lse) with lse fp32 [B, H, N]).
        refuse: the caller's own reason not to send this call to sagejit (counted like sagejit's).
        strict: this call's strict mode (None: the router's). observe: called with what the counters count (None for
        a routed call, else the reason), e.g. a per-module report. keywords: more of sageattn's (smooth_k,
        SageAttention's kernel-selection keywords)."""
        from ..attention import layout_code, sageattn

        layout_code(tensor_layout)  # a caller's error raises on every path, the fallback's too
        reason = refuse or _refused_argument(attn_mask, dropout_p, q, k, tensor_layout)
        return self.route(lambda: sageattn(q, k, v, tensor_layout=tensor_layout, is_causal=is_causal, sm_scale=scale,
                                           return_lse=return_lse, attn_mask=attn_mask, dropout_p=dropout_p,
                                           **keywords),
                          fallback, q, refuse=reason, strict=strict, observe=observe)

    def route(self, run, fallback, q, *, refuse=None, strict=None, observe=None):
        """run() (a sagejit call of no arguments) or, when sagejit cannot take it, fallback(); q decides the
        CPU policy. refuse, strict, observe: as attention()'s. The rule of attention() for any sagejit entry
        (attention() is this with sagejit.sageattn; diffusers' varlen backend routes sageattn_varlen)."""
        strict = self.strict if strict is None else strict
        reason = refuse or self._policy_reason(q)
        if reason is None:
            try:
                result = run()
            except UnsupportedCall as error:
                if strict:
                    raise
                reason = reason_key(error)
            except SagejitError as error:
                # A caller's error (tensor_layout="nhd", q and k on two devices) is raised: the fallback would
                # compute something else with the same arguments. What sagejit's environment lacks (no
                # kernels compiled, no runtime) falls back, said once.
                if strict or error.code == "invalid_argument":
                    raise
                reason = f"sagejit error: {error.code}"
                self._warn_once(error)
            else:
                self._count(None, observe)
                return result
        elif strict:
            raise UnsupportedCall(f"{self.name}: not sent to sagejit: {reason} (strict mode)")
        self._count(reason, observe)
        return fallback()

    def _count(self, reason, observe=None):
        if observe is not None:
            observe(reason)
        if _compiling():  # Dynamo cannot enter a lock; it replays these updates after each run of the graph
            self._bump(reason)
        else:
            with self._lock:
                self._bump(reason)

    def _bump(self, reason):
        if reason is None:
            self._routed += 1
        else:
            self._reasons[reason] = self._reasons.get(reason, 0) + 1

    def _warn_once(self, error):
        message = str(error)
        with self._lock:
            if message in self._warned:
                return
            self._warned.add(message)
        warnings.warn(f"sagejit ({self.name}): falling back to the framework's attention: {message}",
                      RuntimeWarning, stacklevel=5)
