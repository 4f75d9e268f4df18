"""Static cost of one key tile of attention_sm90, with no GPU: compiles kernel_src/attention_sm90.cu with
nvcc for one config (the defines the runtime renders for it), disassembles it with cuobjdump and reports
ptxas's registers and spills, then, for the key-tile loop (the innermost loop holding both the QK and the
PV wgmma), the SASS instructions of each path through it — the two softmax forms: unmasked tiles and
tiles that cross the sequence end or the diagonal — with their opcode mix. Instructions that only the
copy-issuing thread runs (a block skipped by a branch, holding the tensor copies) are counted apart,
so a path's count is what every other warp issues per tile (each instruction once; short conditional
skips inside a path are counted as taken). Method: docs/NVIDIA.md ("Next, by these runs").

    python3 bench/sm90_tile_sass.py [--warps 4] [--block-n 128] [--stages 2] [--min-blocks 3] [--tma 1]
        [--head-dim 128] [--causal] [--key-mask] [--source kernel_src/attention_sm90.cu] [--top 15]

Needs nvcc (CUDA 12.8+) and cuobjdump with its nvdisasm: on PATH, else PyPI's
(`pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm`), found in the running Python's packages.
"""
import argparse
import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL_SRC = os.path.join(HERE, "..", "kernel_src")
INSTRUCTION = re.compile(r"^\s+/\*([0-9a-f]{4,6})\*/\s+(.*?)\s*;")
PREDICATE = re.compile(r"^@!?U?P[T0-9]+\s+")
BRANCH = re.compile(r"^(?:@!?U?P[T0-9]+\s+)?BRA(?:\.\S+)?\s+(?:P\d+,\s+)?(0x[0-9a-f]+)")


def find_nvcc():
    """nvcc on PATH, else in $CUDA_HOME/bin, else in /usr/local/cuda/bin."""
    for candidate in (shutil.which("nvcc"), os.path.join(os.environ.get("CUDA_HOME", ""), "bin", "nvcc"),
                      "/usr/local/cuda/bin/nvcc"):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    sys.exit("nvcc not found on PATH, in $CUDA_HOME/bin or in /usr/local/cuda/bin (CUDA 12.8+ is needed)")


def find_cuobjdump():
    """cuobjdump on PATH, else the nvidia-cuda-cuobjdump package's, with the nvdisasm it runs for -sass
    (nvidia-cuda-nvdisasm, in the same folder) on the PATH it gets."""
    found = shutil.which("cuobjdump")
    if found:
        return found, os.environ
    for site in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        for path in glob.glob(os.path.join(site, "nvidia", "*", "bin", "cuobjdump")):
            folder = os.path.dirname(path)
            return path, dict(os.environ, PATH=folder + os.pathsep + os.environ.get("PATH", ""))
    sys.exit("cuobjdump not found: put it on PATH or `pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm`")


def compile_kernel(args, workdir):
    # The defines the runtime renders for such a config (jit/kernel_config.cpp kernel_defines): written
    # out here because --source compiles a copy of the kernel, not the library's embedded one.
    defines = {"SJ_HEAD_DIM": args.head_dim, "SJ_WARPS": args.warps, "SJ_BLOCK_N": args.block_n,
               "SJ_STAGES": args.stages, "SJ_DTYPE": 0, "SJ_CAUSAL": int(args.causal),
               "SJ_WRITE_LSE": int(args.causal), "SJ_MIN_BLOCKS": args.min_blocks, "SJ_TMA": args.tma}
    if args.key_mask:
        defines["SJ_KEY_MASK"] = 1
    cubin = os.path.join(workdir, "kernel.cubin")
    include_root = os.path.dirname(os.path.abspath(args.source))
    command = [find_nvcc(), "-gencode", "arch=compute_90a,code=sm_90a", "-cubin", "-o", cubin, "-I", include_root,
               "-x", "cu", args.source, "-Xptxas", "-v"] + [f"-D{k}={v}" for k, v in defines.items()]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"nvcc failed ({' '.join(command)}):\n{result.stderr}")
    resources = "; ".join(re.sub(r"^ptxas info\s*:\s*", "", line.strip()) for line in result.stderr.splitlines()
                          if "registers" in line or "spill" in line)
    return cubin, defines, resources


def disassemble(cubin):
    cuobjdump, environment = find_cuobjdump()
    result = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True, env=environment)
    if result.returncode != 0 or not result.stdout.strip():
        sys.exit(f"{cuobjdump} -sass failed (is nvdisasm beside it or on PATH? pip install nvidia-cuda-nvdisasm):\n"
                 f"{result.stderr}")
    return [(int(m.group(1), 16), m.group(2)) for m in map(INSTRUCTION.match, result.stdout.splitlines()) if m]


def opcode(text):
    return PREDICATE.sub("", text).split()[0]


def branch_target(text):
    m = BRANCH.match(text)
    return int(m.group(1), 16) if m else None


def key_tile_loop(code):
    """(first, last) addresses of the innermost loop whose body holds both an IGMMA and a QGMMA."""
    best = None
    for address, text in code:
        target = branch_target(text)
        if target is None or target >= address:
            continue
        body = [opcode(t) for a, t in code if target <= a <= address]
        if any(o.startswith("IGMMA") for o in body) and any(o.startswith("QGMMA") for o in body):
            if best is None or address - target < best[1] - best[0]:
                best = (target, address)
    if best is None:
        sys.exit("no loop holds both the QK (IGMMA) and the PV (QGMMA) wgmma: is this attention_sm90?")
    return best


def paths_through(code, first, last):
    """The paths through the loop body: two when a forward branch after the QK wait skips one softmax
    form and the other ends with an unconditional jump over it, else one. Returns the paths'
    instruction lists and the copy block's addresses."""
    body = [(a, t) for a, t in code if first <= a <= last]
    addresses = [a for a, _ in body]
    # The copy-issuing thread's block: the innermost region a conditional forward branch skips that
    # holds the tensor copies (with three warpgroups, every warp's lane 0 counts the tile and only the
    # last one issues the refill: the count stays in the path, the refill does not).
    regions = []
    for a, t in body:
        target = branch_target(t)
        if target is not None and target > a and t.startswith("@"):
            skipped = [(b, u) for b, u in body if a < b < target]
            if any(opcode(u).startswith("UTMALDG") for _, u in skipped) and \
                    not any(opcode(u).startswith(("IGMMA", "QGMMA")) for _, u in skipped):
                regions.append((a, target))
    innermost = [r for r in regions if not any(o != r and r[0] <= o[0] and o[1] <= r[1] for o in regions)]
    copy_block = {b for lo, hi in innermost for b, _ in body if lo < b < hi}
    qk_wait = next(a for a, t in body if opcode(t).startswith("WARPGROUP.DEPBAR") and
                   any(opcode(u).startswith("IGMMA") for b, u in body if b < a))
    split = next(((a, branch_target(t)) for a, t in body if a > qk_wait and t.startswith("@") and
                  branch_target(t) is not None and branch_target(t) > a), None)
    jumps = [] if split is None else [
        a for a, t in body if split[0] < a < split[1] and not t.startswith("@") and
        branch_target(t) is not None and branch_target(t) > split[1]]
    if not jumps:  # one softmax form (or a layout this script does not know): the whole body, each once
        return [[t for a, t in body if a not in copy_block]], copy_block
    branch, other = split
    join_jump = max(jumps)
    join = branch_target(body[addresses.index(join_jump)][1])
    fall = [t for a, t in body if a not in copy_block and not (other <= a < join)]
    taken = [t for a, t in body if a not in copy_block and not (branch < a <= join_jump)]
    return sorted([fall, taken], key=len), copy_block


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warps", type=int, default=4)
    parser.add_argument("--block-n", type=int, default=128)
    parser.add_argument("--stages", type=int, default=2)
    parser.add_argument("--min-blocks", type=int, default=3)
    parser.add_argument("--tma", type=int, default=1)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--key-mask", action="store_true")
    parser.add_argument("--source", default=os.path.join(KERNEL_SRC, "attention_sm90.cu"),
                        help="the kernel source (its folder is the include root: a copy of kernel_src/ to try a change)")
    parser.add_argument("--top", type=int, default=15, help="opcodes listed per path")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        cubin, defines, resources = compile_kernel(args, workdir)
        code = disassemble(cubin)
    first, last = key_tile_loop(code)
    paths, copy_block = paths_through(code, first, last)
    print(" ".join(f"{k}={v}" for k, v in defines.items()))
    print(f"ptxas: {resources}")
    print(f"key-tile loop 0x{first:x}-0x{last:x}; the copy-issuing thread's block: {len(copy_block)} instructions")
    names = ["the loop body (one form; every instruction once)"]
    if len(paths) == 2:
        names = ["inner tiles (the shorter form)",
                 "edge tiles (the sequence end or the causal diagonal, with the visibility checks)"]
    for name, instructions in zip(names, paths):
        mix = collections.Counter(opcode(t) for t in instructions)
        uniform = sum(n for o, n in mix.items() if o.startswith(("U", "R2UR")))
        local = sum(n for o, n in mix.items() if o.startswith(("LDL", "STL")))
        print(f"\n{name}: {len(instructions)} instructions per warp and tile "
              f"({uniform} uniform-datapath, {local} local-memory)")
        for o, n in mix.most_common(args.top):
            print(f"  {o:44s}{n}")


if __name__ == "__main__":
    main()
