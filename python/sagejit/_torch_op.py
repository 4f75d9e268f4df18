"""Whether the torch operator can be registered here, and the operator itself (registered once), without
importing torch: register_when_torch_loads() registers it right after torch's own import, whenever that is."""
import importlib.abc
import importlib.util
import sys

from ._abi import Status
from ._library import SagejitError

_op = None
_why_not = None
_eager = None  # (can_attend_eagerly, attend_eager) of _op, once the op is registered
_repeated = None  # _op.attend_repeated, likewise


def torch_op(required=True):
    """torch.ops.sagejit.sageattn.default, registering it on first use. Without a usable torch: None when
    not required, else SagejitError(runtime_not_found) saying why (torch missing, older than 2.4, or its
    import failed: the exception is named)."""
    global _op, _why_not, _eager, _repeated
    if _op is None and _why_not is None:
        try:
            from ._op import attend_eager, attend_repeated, can_attend_eagerly, sageattn_op

            _eager = (can_attend_eagerly, attend_eager)
            _repeated = attend_repeated
            _op = sageattn_op
        except ModuleNotFoundError as error:
            _why_not = f"{error} (pip install 'torch>=2.4')"
        except ImportError as error:  # torch too old (_op says which), or broken
            _why_not = str(error)
        except Exception as error:  # noqa: BLE001  a torch whose import fails otherwise (OSError: a missing libcudnn)
            _why_not = f"import torch failed: {type(error).__name__}: {error}"
    if _op is None and required:
        raise SagejitError(Status.runtime_not_found, f"sagejit.sageattn needs torch >= 2.4: {_why_not}")
    return _op


def eager_attention():
    """(can_attend_eagerly, attend_eager) of the registered op (_op.py): sageattn's eager call beside the op.
    Call torch_op() first."""
    return _eager


def repeated_attention():
    """_op.attend_repeated, sageattn's call of a signature already run in this thread. Call torch_op() first."""
    return _repeated


class _RegisterAfterTorch(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when torch is first imported it wraps torch's loader so that the op is
    registered as soon as torch's module has run (a failing torch import fails as it would without us)."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)  # once; and find torch's own spec without us
        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module

        def exec_then_register(module):
            exec_module(module)
            torch_op(required=False)

        loader.exec_module = exec_then_register
        return spec


def register_when_torch_loads():
    """torch.ops.sagejit.sageattn now when torch is already imported, else right after torch is imported."""
    if "torch" in sys.modules:
        torch_op(required=False)
    elif not any(isinstance(finder, _RegisterAfterTorch) for finder in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterTorch())
