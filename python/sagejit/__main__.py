"""python -m sagejit <command>: bench (sagejit vs torch SDPA on this GPU, a JSON report; see sagejit/bench.py)."""
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    commands = {"bench": "sagejit.bench"}
    if not argv or argv[0] not in commands:
        print(f"usage: python -m sagejit {{{'|'.join(commands)}}} [options]  (python -m sagejit <command> --help)",
              file=sys.stderr)
        return 2
    if argv[0] == "bench":
        from .bench import main as bench_main

        return bench_main(argv[1:])
    return 2


if __name__ == "__main__":
    sys.exit(main())
