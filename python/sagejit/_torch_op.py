"""Whether the torch operator can be registered here, and the operator itself (registered once)."""
from ._library import SagejitError

RUNTIME_NOT_FOUND = 3
_op = None
_why_not = None


def torch_op(required=True):
    """torch.ops.sagejit.sageattn.default, registering it on first use. Without a usable torch: None when
    not required, else SagejitError(runtime_not_found) saying why (torch missing, or older than 2.4)."""
    global _op, _why_not
    if _op is None and _why_not is None:
        try:
            from ._op import sageattn_op

            _op = sageattn_op
        except ModuleNotFoundError as error:
            _why_not = f"{error} (pip install 'torch>=2.4')"
        except ImportError as error:  # torch too old (_op says which), or broken
            _why_not = str(error)
    if _op is None and required:
        raise SagejitError(RUNTIME_NOT_FOUND, f"sagejit.sageattn needs torch >= 2.4: {_why_not}")
    return _op
