"""python -m sagejit <command> [args]: info | selftest | precompile | autotune | cache (the sagejit-*
programs shipped with this package) | bench (sagejit vs torch SDPA on diffusion shapes, a report).

`info` first prints what the Python side sees (package, library, torch, the op), then runs sagejit-info."""
import sys

from ._programs import PROGRAMS, run

USAGE = "usage: python -m sagejit {" + "|".join((*PROGRAMS, "bench")) + "} [args...]"


def _python_info():
    import platform

    from ._library import SagejitError, library

    print(f"sagejit (Python) {__package__} at {__file__.rsplit('/', 2)[0]}; Python {platform.python_version()}")
    try:
        lib = library()
        print(f"  libsagejit {lib.sagejit_version().decode()}: {lib._name}")
    except SagejitError as error:
        print(f"  libsagejit: not loaded ({error})")
    # torch is described, never imported: a program needs no torch, and a broken one must not stop it.
    try:
        from importlib.metadata import PackageNotFoundError, version

        torch_version = version("torch")
    except (ImportError, PackageNotFoundError, ValueError):
        torch_version = None
    if torch_version is None:
        print("  torch: not installed; sageattn needs torch >= 2.4, the C ABI and programs do not")
    else:
        print(f"  torch {torch_version} installed (not imported here): torch.ops.sagejit.sageattn registers "
              "when sagejit's torch API is first used")


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command, args = argv[0], argv[1:]
    if command == "bench":
        from . import bench

        return bench.main(args)
    if command not in PROGRAMS:
        print(f"error (invalid_argument): unknown command {command!r}\n{USAGE}", file=sys.stderr)
        return 2
    if command == "info":
        _python_info()
        sys.stdout.flush()
    return run(command, args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
