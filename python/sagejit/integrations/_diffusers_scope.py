"""enable(pipe_or_model): every attention call of one diffusers model (or of a pipeline's transformers and UNets)
through sagejit's routing rule, scoped to that model, with a report per attention module.

diffusers 0.42 has two kinds of attention module, and enable() reaches both:
- dispatching (Flux, Wan, Qwen-Image, HunyuanVideo, LTX-Video, ...): the processor calls diffusers'
  dispatch_attention_fn with its own backend, `processor._attention_backend`. enable() sets that to "sagejit" on
  this model's processors only. (model.set_attention_backend would also set diffusers' process-wide active
  backend, which every other model without a backend of its own then uses.)
- direct (Lumina 2, CogVideoX, SD3's joint attention, the UNets' AttnProcessor2_0): the processor calls
  torch.nn.functional.scaled_dot_product_attention itself. enable() gives each such module a forward pre-hook
  and an always-called forward hook that enter and leave a torch function mode (torch.overrides.TorchFunctionMode)
  around that module's forward; the mode sends the module's SDPA calls through the routing rule.

Why a torch function mode entered by module hooks, and not a replaced F.scaled_dot_product_attention or wrapped
processors (the reasons are in docs/INTEGRATIONS.md too):
- torch keeps the stack of modes per thread, and only this module's forward runs inside its mode: an SDPA call
  of another model, of another thread, or of this model outside its attention modules is never touched.
  Replacing F.scaled_dot_product_attention is process-wide (every thread, every model) for as long as it is in.
- it sees the call however the processor names it (F.scaled_dot_product_attention, a name imported before,
  torch._C._nn.scaled_dot_product_attention), and composes with patch_sdpa(), whose wrapper is met first.
- nesting is exact: each module enters its own mode and leaves it when its forward returns or raises
  (register_forward_hook(always_call=True)); a second enabled model called inside is its own modes.
- torch.compile (Dynamo, fullgraph too) traces torch function modes, these hooks and the per-thread stack below,
  so the routed calls are in the graph as torch.ops.sagejit.sageattn and compiled forwards are counted.
- hooks leave the processors as they are: diffusers reads a processor's __call__ signature to filter the
  keyword arguments it passes, and model.attn_processors / set_attn_processor show and replace processors.

Which module a dispatched call came from: the same hooks push (module, report) on a per-thread stack that the
"sagejit" backend reads when it counts (current_observer()).
"""
import threading
import weakref

import torch

_SDPA = torch._C._nn.scaled_dot_product_attention  # what F.scaled_dot_product_attention is, unwrapped
_enabled = weakref.WeakKeyDictionary()              # model -> _EnabledModel, while enable() is in force
_enabled_lock = threading.Lock()
_thread = threading.local()                         # .stack: the attention modules now in their forward

PATH_BACKEND = "backend"  # the processor dispatches: diffusers' "sagejit" backend
PATH_SDPA = "sdpa"        # the processor calls torch SDPA: routed by this module's torch function mode


def _compiling():
    return torch.compiler.is_compiling()


def _stack():
    stack = getattr(_thread, "stack", None)
    if stack is None:
        stack = _thread.stack = []
    return stack


def current_observer():
    """observe(reason) of the attention module whose forward this thread is in (None when none is): the
    "sagejit" backend counts its calls there too. (torch.compile traces this per-thread stack and the hooks that
    keep it, so compiled forwards are counted per module as well.)"""
    stack = getattr(_thread, "stack", None)
    return stack[-1][0].observe if stack else None


def _dispatches(module):
    return hasattr(module.processor, "_attention_backend")


def _attention_classes():
    """diffusers' attention module classes (the ones model.set_attention_backend walks)."""
    from diffusers.models import attention, attention_processor

    names = ((attention_processor, "Attention"), (attention_processor, "MochiAttention"),
             (attention, "AttentionModuleMixin"))
    return tuple(getattr(module, name) for module, name in names if hasattr(module, name))


def _sdpa_refusal(query, key, value, scale, enable_gqa, extra):
    """What torch SDPA's own signature makes a call that sagejit's routing cannot be asked about (the rest -
    masks, dropout, dtype, head dim, device, a gradient - is the routing rule's and sagejit's)."""
    if extra:
        return "unknown keyword arguments: " + ", ".join(sorted(extra))
    if not all(isinstance(t, torch.Tensor) for t in (query, key, value)):
        return "not torch tensors"
    if any(t.dim() != 4 for t in (query, key, value)):
        return "not 4-D"
    if value.shape[1] != key.shape[1]:
        return "heads of k and v differ"
    if query.shape[1] != key.shape[1] and not enable_gqa:
        return "heads of q and k differ without enable_gqa"
    if scale is not None and not isinstance(scale, (int, float)):
        return "scale is not a number"
    return None


class _SdpaRouting(torch.overrides.TorchFunctionMode):
    """Active during one attention module's forward: its torch SDPA calls go through the routing rule. Inside
    __torch_function__ torch has left this mode, so the fallback's SDPA and sagejit's op are not seen again."""

    def __init__(self, scope):
        super().__init__()
        self.scope = scope

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is _SDPA:
            return self.scope.route_sdpa(*args, **(kwargs or {}))
        return func(*args, **(kwargs or {}))


def outside_routing(call):
    """call() with every _SdpaRouting mode at the top of the stack set aside (torch has already set aside the one
    whose handler runs): the fallback of an enabled model run inside another enabled model's attention forward
    reaches torch SDPA, not the outer model's routing again. (Not while compiling: there the outer mode would
    only decide the same fallback a second time.)"""
    if not _compiling() and isinstance(torch.overrides._get_current_function_mode(), _SdpaRouting):
        with torch.overrides._pop_mode_temporarily():
            return outside_routing(call)
    return call()


class _ModuleScope:
    """One attention module of an enabled model: its name in the report, its hooks, its mode."""

    def __init__(self, name, report, router):
        self.name = name
        self.report = report
        self.router = router
        self.mode = _SdpaRouting(self)
        self.handles = None   # (pre-hook, forward hook), set by enable()
        self._in_flight = 0   # forwards between enter() and leave(), all threads (eager)
        self._retired = False
        self._lock = threading.Lock()

    def retire(self):
        """disable(): no new forward enters; the forward hook goes once no forward is between its hooks (a forward
        that another thread runs during disable() must still leave its mode: torch reads a module's forward hooks
        after its forward, so a hook removed meanwhile would never run)."""
        pre, post = self.handles
        pre.remove()
        with self._lock:
            self._retired = True
            if self._in_flight == 0:
                post.remove()

    def observe(self, reason):
        self.report._count(self.name, reason)

    def enter(self, module, args):
        self.report._forward(self.name)
        routes_sdpa = not _dispatches(module)  # asked per call: a processor may have been replaced since
        if not _compiling():  # Dynamo cannot enter a lock; a compiled forward has no exceptional exit to pair up
            with self._lock:
                self._in_flight += 1
        if routes_sdpa:
            self.mode.__enter__()
        _stack().append((self, routes_sdpa))

    def leave(self, module, args, output):
        stack = _stack()
        if not stack or stack[-1][0] is not self:
            return None  # an earlier pre-hook raised before enter() ran: nothing of ours to leave
        _, routes_sdpa = stack.pop()
        if routes_sdpa and any(mode is self.mode for mode in torch.overrides._get_current_function_mode_stack()):
            # Back to the stack of modes at entry: a mode the forward entered and did not leave goes too.
            while torch.overrides._pop_mode() is not self.mode:
                pass
        if not _compiling():
            with self._lock:
                self._in_flight -= 1
                if self._retired and self._in_flight == 0:
                    self.handles[1].remove()  # torch iterates a copy of the hooks: removing this one here is safe
        return None

    def route_sdpa(self, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                   enable_gqa=False, **extra):
        def native():
            keywords = dict(attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale, **extra)
            if enable_gqa:
                keywords["enable_gqa"] = enable_gqa
            return outside_routing(lambda: _SDPA(query, key, value, **keywords))

        refuse = _sdpa_refusal(query, key, value, scale, enable_gqa, extra)
        return self.router.attention(query, key, value, native, tensor_layout="HND", is_causal=bool(is_causal),
                                     scale=scale, attn_mask=attn_mask, dropout_p=dropout_p, refuse=refuse,
                                     observe=self.observe)


class Report:
    """What enable() reached: per attention module (its name in the pipeline, e.g.
    'transformer.transformer_blocks.0.attn'), the path its calls take ('backend': diffusers' "sagejit" backend;
    'sdpa': its torch SDPA calls routed), how often its forward ran, and how many of its attention calls
    reached sagejit ('routed') or fell back, per reason. Also a context manager: disable() on exit."""

    def __init__(self, target):
        self._target = weakref.ref(target) if _weakrefable(target) else (lambda: target)
        self._lock = threading.Lock()
        self._modules = {}

    def _add(self, name, path):
        self._modules[name] = {"path": path, "forwards": 0, "routed": 0, "fallback_reasons": {}}

    def _update(self, update):
        if _compiling():  # Dynamo cannot enter a lock; it replays these updates after each run of the graph
            update()
        else:
            with self._lock:
                update()

    def _forward(self, name):
        def update():
            self._modules[name]["forwards"] += 1
        self._update(update)

    def _count(self, name, reason):
        def update():
            entry = self._modules[name]
            if reason is None:
                entry["routed"] += 1
            else:
                entry["fallback_reasons"][reason] = entry["fallback_reasons"].get(reason, 0) + 1
        self._update(update)

    def modules(self):
        """{name: {'path', 'forwards', 'routed', 'fallback', 'fallback_reasons': {reason: count}}}."""
        with self._lock:
            return {name: {"path": e["path"], "forwards": e["forwards"], "routed": e["routed"],
                           "fallback": sum(e["fallback_reasons"].values()),
                           "fallback_reasons": dict(e["fallback_reasons"])} for name, e in self._modules.items()}

    def totals(self):
        """{'modules', 'forwards', 'routed', 'fallback', 'fallback_reasons'} over all modules."""
        modules = self.modules()
        reasons = {}
        for entry in modules.values():
            for reason, count in entry["fallback_reasons"].items():
                reasons[reason] = reasons.get(reason, 0) + count
        return {"modules": len(modules), "forwards": sum(e["forwards"] for e in modules.values()),
                "routed": sum(e["routed"] for e in modules.values()), "fallback": sum(reasons.values()),
                "fallback_reasons": reasons}

    def unseen(self):
        """Modules whose forward ran without an attention call reaching the routing: their processor was
        replaced by one that dispatches to another backend, or calls attention some other way."""
        return [name for name, e in self.modules().items() if e["forwards"] and not e["routed"] + e["fallback"]]

    def reset(self):
        with self._lock:
            for entry in self._modules.values():
                entry["forwards"] = entry["routed"] = 0
                entry["fallback_reasons"].clear()

    def summary(self):
        """A table for people: one line per module, then the totals."""
        modules = self.modules()
        width = max([len(name) for name in modules] + [6])
        lines = [f"{'module':<{width}}  path     forwards  routed  fallback  reasons"]
        for name, e in modules.items():
            reasons = ", ".join(f"{r}: {n}" for r, n in sorted(e["fallback_reasons"].items())) or "-"
            if e["forwards"] and not e["routed"] + e["fallback"]:
                reasons = "no attention call reached sagejit's routing"
            lines.append(f"{name:<{width}}  {e['path']:<7}  {e['forwards']:>8}  {e['routed']:>6}  {e['fallback']:>8}  "
                         f"{reasons}")
        t = self.totals()
        reasons = ", ".join(f"{r}: {n}" for r, n in sorted(t["fallback_reasons"].items())) or "-"
        lines.append(f"{t['modules']} attention modules, {t['forwards']} forwards: {t['routed']} calls on sagejit, "
                     f"{t['fallback']} fallbacks ({reasons})")
        return "\n".join(lines)

    def disable(self):
        """disable() for what this report's enable() enabled."""
        target = self._target()
        if target is not None:
            disable(target)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.disable()
        return False

    def __repr__(self):
        t = self.totals()
        return f"<sagejit diffusers report: {t['modules']} modules, {t['routed']} routed, {t['fallback']} fallback>"


def _weakrefable(obj):
    try:
        weakref.ref(obj)
        return True
    except TypeError:
        return False


class _EnabledModel:
    def __init__(self, report):
        self.report = report
        self.scopes = []
        self.backends = {}  # id(processor) -> (processor, its _attention_backend before enable())


def _is_pipeline(target):
    try:
        from diffusers import DiffusionPipeline
    except ImportError:
        return False
    return isinstance(target, DiffusionPipeline)


def _is_autoencoder(model):
    return type(model).__module__.startswith("diffusers.models.autoencoders")


def _attention_modules(model):
    classes = _attention_classes()
    return [(name, module) for name, module in model.named_modules() if isinstance(module, classes)]


_ACCEPTED = ("a diffusers pipeline (diffusers.DiffusionPipeline: its transformer and UNet components) or a model "
             "with diffusers attention modules (torch.nn.Module, e.g. a diffusers ModelMixin such as pipe.transformer)")


def models_of(target, caller):
    """[(component name or '', model)]: the models enable()/disable() act on."""
    if _is_pipeline(target):
        models = [(name, component) for name, component in target.components.items()
                  if isinstance(component, torch.nn.Module) and not _is_autoencoder(component)
                  and _attention_modules(component)]
        if not models:
            raise ValueError(f"{caller}: the pipeline {type(target).__name__} has no component with diffusers "
                             f"attention modules (VAEs are left out); pass {_ACCEPTED}")
        return models
    if isinstance(target, torch.nn.Module):
        if not _attention_modules(target):
            raise ValueError(f"{caller}: {type(target).__name__} has no diffusers attention modules (Attention, "
                             f"AttentionModuleMixin); pass {_ACCEPTED}")
        return [("", target)]
    raise TypeError(f"{caller}: got {type(target).__module__}.{type(target).__qualname__}; it takes {_ACCEPTED}")


def enable(target, router, backend):
    """See diffusers.enable(). router: the diffusers integration's Router; backend: the "sagejit" member of
    diffusers' AttentionBackendName."""
    models = models_of(target, "enable()")
    report = Report(target)
    with _enabled_lock:
        for component, model in models:
            if model in _enabled:
                raise ValueError(f"enable(): {type(model).__name__}{' (' + component + ')' if component else ''} is "
                                 "already enabled; call sagejit.integrations.diffusers.disable() on it first")
        for component, model in models:
            state = _EnabledModel(report)
            for module_name, module in _attention_modules(model):
                name = ".".join(part for part in (component, module_name) if part) or type(module).__name__
                scope = _ModuleScope(name, report, router)
                dispatches = _dispatches(module)
                if dispatches and id(module.processor) not in state.backends:
                    state.backends[id(module.processor)] = (module.processor, module.processor._attention_backend)
                    module.processor._attention_backend = backend
                report._add(name, PATH_BACKEND if dispatches else PATH_SDPA)
                scope.handles = (module.register_forward_pre_hook(scope.enter),
                                 module.register_forward_hook(scope.leave, always_call=True))
                state.scopes.append(scope)
            _enabled[model] = state
    return report


def disable(target, backend=None):
    """See diffusers.disable(). Returns the reports of what it disabled."""
    models = models_of(target, "disable()")
    reports = []
    with _enabled_lock:
        states = [(model, _enabled.get(model)) for _, model in models]
        if all(state is None for _, state in states):
            raise ValueError(f"disable(): {type(target).__name__} is not enabled (no enable() on it or on its "
                             "components is in force)")
        for model, state in states:
            if state is None:
                continue
            for scope in state.scopes:
                scope.retire()
            for processor, previous in state.backends.values():
                # Given back only where it is still ours: a backend set after enable() is the user's.
                if backend is None or processor._attention_backend is backend:
                    processor._attention_backend = previous
            del _enabled[model]
            if state.report not in reports:
                reports.append(state.report)
    return reports


def is_enabled(model):
    return model in _enabled
