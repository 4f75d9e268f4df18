#!/usr/bin/env python3
"""Fails when a runtime module includes a module above it (docs/ARCHITECTURE.md, "Layers").

Layers, lowest first; a module may include its own layer and the layers below, never above, and
peers on one rank (device, compiler, numerics, tuning) never each other:

    core < platform < device | compiler | numerics | tuning < cache < jit < kernels < plan < api < dev

Also allowed everywhere: the public headers (<sagejit/...> / "sagejit/..."), the generated
build_info.hpp, the kernel headers that exist under kernel_src (included by their path there, e.g.
"common/params.h", "arch/mma_sm80.h"; a name that is no file there is no kernel header), system and
third-party headers.

    tools/scripts/check_layers.py [runtime/src [kernel_src]]
"""
import pathlib
import re
import sys

RANKS = {"core": 0, "platform": 1, "device": 2, "compiler": 2, "numerics": 2, "tuning": 2, "cache": 3, "jit": 4,
         "kernels": 5, "plan": 6, "api": 7, "dev": 8}
ANYWHERE = {"sagejit", "build_info.hpp"}
KERNEL_SRC = pathlib.Path(__file__).resolve().parents[2] / "kernel_src"
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "runtime/src")
    kernel_src = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else KERNEL_SRC
    if not kernel_src.is_dir():
        print(f"check_layers: kernel_src directory {kernel_src} does not exist (pass the tree's kernel_src)")
        return 1
    problems = []
    files = sorted(p for p in root.rglob("*") if p.suffix in {".hpp", ".cpp", ".h"})
    for path in files:
        module = path.relative_to(root).parts[0]
        if module not in RANKS:
            problems.append(f"{path}: module '{module}' has no layer (add it to check_layers.py and docs/ARCHITECTURE.md)")
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            included = match.group(1).split("/")[0]
            if included in ANYWHERE or (kernel_src / match.group(1)).is_file():
                continue
            if included not in RANKS:
                problems.append(f"{path}:{number}: \"{match.group(1)}\" is in no known layer")
            elif RANKS[included] > RANKS[module]:
                problems.append(f"{path}:{number}: {module} (layer {RANKS[module]}) includes \"{match.group(1)}\" "
                                f"from {included} (layer {RANKS[included]}), a higher layer")
            elif RANKS[included] == RANKS[module] and included != module:
                problems.append(f"{path}:{number}: {module} includes its peer {included} (\"{match.group(1)}\")")
    for problem in problems:
        print(problem)
    print(f"check_layers: {len(files)} files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
