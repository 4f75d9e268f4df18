"""The directories this Python environment keeps GPU runtime libraries in, handed over to libsagejit.

They are rule (c) of the runtime's library discovery (docs/RUNTIME_DISCOVERY.md): searched after a
library already loaded in the process (rule (a): the HIP runtime or NVRTC that torch loaded wins) and
SAGEJIT_HIP_LIBRARY / SAGEJIT_HIPRTC_LIBRARY / SAGEJIT_NVRTC_LIBRARY (rule (b)), before ROCM_PATH /
CUDA_HOME, /opt/rocm-* / /usr/local/cuda-* and the system's sonames. So when sagejit runs before torch
has loaded anything, it still takes the libraries torch will use, not a second ROCm:

- torch's own lib/: PyTorch's ROCm wheels bundle libamdhip64 and libhiprtc there. Located with
  importlib's PathFinder (over sys.path without the current directory), so torch is not imported for it.
- TheRock's ROCm wheels: the directories of rocm_sdk.find_libraries("amdhip64", "hiprtc") (the
  _rocm_sdk_core package's lib/, which holds libhiprtc.so.7 and no unversioned link); without a
  working rocm_sdk, any _rocm_sdk_core*/lib on sys.path.
- pip's NVRTC: nvidia/cu13/lib (CUDA 13 wheels), then nvidia/cuda_nvrtc/lib (CUDA 12 wheels).

Every directory is absolute, resolved when the package hands them over, and none comes from the current
directory: the '' (or the current directory's) entry Python puts first on sys.path for `python -c`, `-m`
and interactive sessions is not searched, so no GPU library is loaded from wherever the caller stands.
libsagejit applies the code-object cache's trust rule to them as well (owned by this user or root,
writable by nobody else, parents too; docs/RUNTIME_DISCOVERY.md).

Two channels carry them, with the same meaning: hand_over(lib) calls sagejit_set_library_search_dirs
in this process (no change to os.environ, which every child process would inherit), and
tool_environment() gives the SAGEJIT_LIBRARY_DIRS a sagejit-* program started from Python needs.
"""
import glob
import importlib.machinery
import importlib.util
import os
import sys
import warnings

from ._abi import Status

ENV_VAR = "SAGEJIT_LIBRARY_DIRS"


def _search_path():
    """sys.path without the current directory: absolute entries, '' and relative ones left out (Python's
    entry for `-c`, `-m` and the interactive prompt, which would follow the caller's cwd)."""
    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:
        cwd = None
    entries = []
    for entry in sys.path:
        if not isinstance(entry, str) or not os.path.isabs(entry):
            continue
        if cwd is not None and os.path.realpath(entry) == cwd:
            continue
        entries.append(entry)
    return entries


def _find_spec(name):
    try:
        return importlib.machinery.PathFinder.find_spec(name, _search_path())
    except (ImportError, ValueError):
        return None


def _importable_from_search_path(name):
    """Whether `import name` would load the package _find_spec finds (not one in the current directory)."""
    ours = _find_spec(name)
    if ours is None:
        return False
    try:
        theirs = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    return theirs is not None and theirs.origin == ours.origin


def _package_roots(name):
    """The directories of a top-level package, without importing it (an imported one is asked directly)."""
    module = sys.modules.get(name)
    if module is not None and getattr(module, "__path__", None):
        return [os.path.abspath(root) for root in module.__path__]
    spec = _find_spec(name)
    return list(spec.submodule_search_locations or []) if spec is not None else []


def _torch_dirs():
    return [os.path.join(root, "lib") for root in _package_roots("torch")]


def _rocm_sdk_dirs():
    if "rocm_sdk" in sys.modules or _importable_from_search_path("rocm_sdk"):
        try:
            import rocm_sdk

            found = [os.path.dirname(os.path.abspath(os.fspath(path)))
                     for path in rocm_sdk.find_libraries("amdhip64", "hiprtc")]
            if found:
                return found
        except (ImportError, OSError, ValueError):  # a partial install: fall back to the package layout
            pass
    dirs = []
    for entry in _search_path():
        dirs.extend(sorted(glob.glob(os.path.join(glob.escape(entry), "_rocm_sdk_core*", "lib"))))
    return dirs


def _nvidia_nvrtc_dirs():
    roots = _package_roots("nvidia")  # a namespace package: possibly several roots
    return [os.path.join(root, sub, "lib") for sub in ("cu13", "cuda_nvrtc") for root in roots]


def _existing_unique(dirs):
    """Existing absolute directories, each once (by real path), in order; one holding the separator cannot
    be passed."""
    result, seen = [], set()
    for directory in dirs:
        directory = os.path.abspath(directory)
        if os.pathsep in directory or not os.path.isdir(directory):
            continue
        key = os.path.realpath(directory)
        if key not in seen:
            seen.add(key)
            result.append(directory)
    return result


def runtime_search_dirs():
    """torch's lib/, the rocm_sdk core lib/, pip's NVRTC dirs: those that exist, in that order."""
    return _existing_unique(_torch_dirs() + _rocm_sdk_dirs() + _nvidia_nvrtc_dirs())


def hand_over(lib):
    """Gives runtime_search_dirs() to the loaded library; call it right after loading, before any call.

    When the library has already chosen its GPU libraries (another user of it in this process came
    first), that choice stands and a warning says so. Returns the directories handed over.
    """
    dirs = runtime_search_dirs()
    # os.fsencode: a directory name that is not UTF-8 (undecodable bytes in sys.path) is passed as its bytes.
    status = lib.sagejit_set_library_search_dirs(os.fsencode(os.pathsep.join(dirs)))
    if status != Status.success:
        message = lib.sagejit_last_error().decode("utf-8", "replace")
        warnings.warn(f"sagejit: the GPU library directories of this Python environment ({os.pathsep.join(dirs)}) "
                      f"were not handed over: {message}", RuntimeWarning, stacklevel=2)
        return []
    return dirs


def tool_environment(base=None):
    """A copy of `base` (default os.environ) whose SAGEJIT_LIBRARY_DIRS also lists runtime_search_dirs(),
    after what it already lists: the environment for a sagejit-* program started from Python."""
    env = dict(os.environ if base is None else base)
    listed = [directory for directory in env.get(ENV_VAR, "").split(os.pathsep) if directory]
    env[ENV_VAR] = os.pathsep.join(listed + [d for d in runtime_search_dirs() if d not in listed])
    return env
