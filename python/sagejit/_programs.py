"""The sagejit-* programs from Python: pip's console entry points (sagejit-info, ...) and
`python -m sagejit <command>` start the program that ships with this package.

Programs are searched, in order: the wheel's <package>/_bin, the install tree's bin/ (a `cmake
--install` prefix, see _library.py), the build trees of a source checkout (<repo>/build*/tools). PATH is
not searched: there, `sagejit-info` is this very entry point.
"""
import glob
import os
import subprocess
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = ("info", "selftest", "precompile", "autotune", "cache")


def _candidates(name):
    yield os.path.join(_HERE, "_bin", name)
    try:
        from . import _install_location

        libdir = os.path.normpath(os.path.join(_HERE, _install_location.LIBDIR_FROM_PACKAGE))
        yield os.path.join(os.path.dirname(libdir), "bin", name)
    except ImportError:
        pass
    repo = os.path.dirname(os.path.dirname(_HERE))
    yield from sorted(glob.glob(os.path.join(repo, "build*", "tools", name)), key=os.path.getmtime, reverse=True)


def find_program(command):
    """Path of sagejit-<command>; FileNotFoundError naming every place looked at."""
    name = f"sagejit-{command}"
    tried = []
    for path in _candidates(name):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        tried.append(path)
    raise FileNotFoundError(f"{name} is not installed with this sagejit package; looked at: " + ", ".join(tried))


def _environment():
    """The environment a program gets: ours, plus the GPU-runtime directories this Python process knows
    (torch's, ROCm's and pip's NVRTC) in SAGEJIT_LIBRARY_DIRS (see _runtime_dirs)."""
    from . import _runtime_dirs

    return _runtime_dirs.tool_environment()


def run(command, args):
    """Runs sagejit-<command> with args; returns its exit status (2 when it cannot be started)."""
    try:
        program = find_program(command)
    except FileNotFoundError as error:
        print(f"error (runtime_not_found): {error}", file=sys.stderr)
        return 2
    return subprocess.call([program, *args], env=_environment())


def _main(command):
    sys.exit(run(command, sys.argv[1:]))


def main_info():
    _main("info")


def main_selftest():
    _main("selftest")


def main_precompile():
    _main("precompile")


def main_autotune():
    _main("autotune")


def main_cache():
    _main("cache")
