#!/usr/bin/env python3
"""Runs sagejit's gfx1201 code objects in tinygrad's RDNA4 instruction emulator and compares them with
sagejit's CPU emulator (docs/RDNA4.md, "Running the machine code in an instruction emulator").

A development check, not a test: CI cannot reach the emulator's repository, and nothing depends on it.
Each case is one attention call through the runtime's own runner (plan, render, compile with clang or
hipRTC, cache, argument packing, launch geometry), on an emulated device (the shim,
libsagejit_gfx12_emulation.so, built with the project) whose launches come back here: this script
loads the code object the runtime produced, reads its kernel descriptor and metadata (kernel
arguments, hidden arguments, LDS, user SGPRs), copies the argument bytes the runtime packed, builds
the dispatch packet and runs the grid in the emulator. The shim then compares prepare's workspace bit
for bit and attention's output and LSE with the CPU emulator.

  python3 tools/scripts/gfx12_emulate.py --emulator-src ~/src/tinygrad [--case NAME ...] [--list]

The emulator runs one workgroup at a time; memory operations complete at once, so it checks what the
program computes, not its timing, its waitcnts or hazards the hardware has and the emulator lacks.
"""
from __future__ import annotations

import argparse
import ctypes
import faulthandler
import hashlib
import json
import os
import struct
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# ---- cases (issue 28, item 2) --------------------------------------------------------------------
# shape: "B,H,Nq,Nk,D[,causal][,bf16|fp16][,gqa=R]" (tools/support/shape.hpp); config: the attention
# kernel's tile config (None: what the gfx1201 tables choose for the shape).
DEFAULT = {"waves": 4, "rows_per_wave": 32, "block_n": 32, "stages": 2}
D64 = {"waves": 4, "rows_per_wave": 32, "block_n": 64, "stages": 2}
FEW_ROWS = {"waves": 4, "rows_per_wave": 16, "block_n": 32, "stages": 2}
EIGHT_WAVES = {"waves": 8, "rows_per_wave": 32, "block_n": 32, "stages": 2}
CASES = {
    "default-n128-bf16": {"shape": "1,1,128,128,128,bf16", "config": DEFAULT},
    "default-n128-fp16": {"shape": "1,1,128,128,128,fp16", "config": DEFAULT},
    "default-nk77": {"shape": "1,1,77,77,128,bf16", "config": DEFAULT},
    "default-causal-lse": {"shape": "1,1,128,128,128,causal,bf16", "config": DEFAULT, "lse": True},
    "default-gqa2": {"shape": "1,2,64,96,128,bf16,gqa=2", "config": DEFAULT},
    "default-nan-q": {"shape": "1,1,64,64,128,bf16", "config": DEFAULT, "nan_query_tokens": [5]},
    "d64-n128-bf16": {"shape": "1,1,128,128,64,bf16", "config": D64},
    "d64-n128-fp16-causal": {"shape": "1,1,128,128,64,causal,fp16", "config": D64},
    "d40-padded": {"shape": "1,1,64,96,40,bf16", "config": None},
    "few-rows-n128": {"shape": "1,1,128,128,128,bf16", "config": FEW_ROWS},
    "few-rows-causal": {"shape": "1,1,128,128,128,causal,bf16", "config": FEW_ROWS},
    "eight-waves-n256": {"shape": "1,1,256,128,128,bf16", "config": EIGHT_WAVES},
    # several query blocks (grid x runs backwards, causal key counts differ), NHD, batch > 1
    "multi-block-causal-lse-nhd": {"shape": "1,2,300,300,128,causal,bf16", "config": None, "lse": True, "layout": "NHD"},
    "batch2-gqa2-fp16-d64": {"shape": "2,2,200,333,64,fp16,gqa=2", "config": None},
}


# ---- code objects ------------------------------------------------------------------------------
def msgpack_decode(buf: bytes, i: int = 0):
    """The subset of MessagePack that AMDGPU code-object metadata (NT_AMDGPU_METADATA) uses."""
    b = buf[i]
    i += 1
    if b <= 0x7F: return b, i
    if b >= 0xE0: return b - 256, i
    if 0x80 <= b <= 0x8F: return _msgpack_map(buf, i, b & 15)
    if 0x90 <= b <= 0x9F: return _msgpack_array(buf, i, b & 15)
    if 0xA0 <= b <= 0xBF: return buf[i:i + (b & 31)].decode(), i + (b & 31)
    if b in (0xC0, 0xC2, 0xC3): return {0xC0: None, 0xC2: False, 0xC3: True}[b], i
    scalars = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q",
               0xCA: ">f", 0xCB: ">d"}
    if b in scalars: return struct.unpack_from(scalars[b], buf, i)[0], i + struct.calcsize(scalars[b])
    lengths = {0xD9: 1, 0xDA: 2, 0xDB: 4, 0xC4: 1, 0xC5: 2, 0xC6: 4, 0xDC: 2, 0xDD: 4, 0xDE: 2, 0xDF: 4}
    if b not in lengths: raise ValueError(f"unsupported MessagePack byte {b:#x} at offset {i - 1}")
    n = int.from_bytes(buf[i:i + lengths[b]], "big")
    i += lengths[b]
    if b in (0xD9, 0xDA, 0xDB): return buf[i:i + n].decode(), i + n
    if b in (0xC4, 0xC5, 0xC6): return bytes(buf[i:i + n]), i + n
    if b in (0xDC, 0xDD): return _msgpack_array(buf, i, n)
    return _msgpack_map(buf, i, n)


def _msgpack_array(buf, i, n):
    out = []
    for _ in range(n):
        value, i = msgpack_decode(buf, i)
        out.append(value)
    return out, i


def _msgpack_map(buf, i, n):
    out = {}
    for _ in range(n):
        key, i = msgpack_decode(buf, i)
        out[key], i = msgpack_decode(buf, i)
    return out, i


@dataclass
class Kernel:
    name: str
    entry: int          # host address of the first instruction
    group_segment: int  # static LDS bytes
    private_segment: int
    kernarg_size: int
    rsrc2: int
    code_properties: int
    args: list          # metadata .args (explicit and hidden, with offsets and sizes)
    wavefront_size: int


class CodeObject:
    """An AMDGPU ELF loaded into host memory at its segment addresses (code runs from there)."""

    def __init__(self, data: bytes):
        if data[:4] != b"\x7fELF" or data[4] != 2: raise ValueError("not a 64-bit ELF")
        (_, machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, _) = struct.unpack_from(
            "<HHIQQQIHHHHHH", data, 16)
        if machine != 224: raise ValueError(f"ELF machine {machine} is not AMDGPU (224)")
        phdrs = [struct.unpack_from("<IIQQQQQQ", data, phoff + k * phentsize) for k in range(phnum)]
        span = max(p[3] + p[5] for p in phdrs if p[0] == 1)
        self._image = ctypes.create_string_buffer(span + 0x2000)
        self.base = (ctypes.addressof(self._image) + 0xFFF) & ~0xFFF
        for p_type, _, offset, vaddr, _, filesz, _, _ in phdrs:
            if p_type == 1: ctypes.memmove(self.base + vaddr, data[offset:offset + filesz], filesz)
        shdrs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * shentsize) for k in range(shnum)]
        symbols, metadata = {}, None
        for sh in shdrs:
            if sh[1] == 2:  # SHT_SYMTAB
                strtab = shdrs[sh[6]][4]
                for k in range(sh[5] // 24):
                    name_off, _, _, _, value, _ = struct.unpack_from("<IBBHQQ", data, sh[4] + k * 24)
                    name = data[strtab + name_off:data.index(b"\0", strtab + name_off)].decode()
                    if name: symbols[name] = value
            if sh[1] == 7:  # SHT_NOTE
                off, end = sh[4], sh[4] + sh[5]
                while off < end:
                    namesz, descsz, ntype = struct.unpack_from("<III", data, off)
                    desc = off + 12 + ((namesz + 3) & ~3)
                    if data[off + 12:off + 12 + namesz].rstrip(b"\0") == b"AMDGPU" and ntype == 32:
                        metadata = msgpack_decode(data[desc:desc + descsz])[0]
                    off = desc + ((descsz + 3) & ~3)
        if metadata is None: raise ValueError("no AMDGPU metadata note (code object v3+)")
        # The compiler that made it (the .comment string, e.g. "AMD clang version 19.0.0git (...)").
        at = data.find(b"clang version")
        self.producer = "unknown" if at < 0 else data[data.rfind(b"\0", 0, at) + 1:data.find(b"\0", at)].decode(errors="replace")
        self.kernels = {}
        for meta in metadata["amdhsa.kernels"]:
            kd = self.base + symbols[meta[".symbol"]]
            raw = ctypes.string_at(kd, 64)
            group, private, kernarg = struct.unpack_from("<III", raw, 0)
            entry = kd + struct.unpack_from("<q", raw, 16)[0]
            rsrc2, = struct.unpack_from("<I", raw, 52)
            properties, = struct.unpack_from("<H", raw, 56)
            self.kernels[meta[".name"]] = Kernel(meta[".name"], entry, group, private, kernarg, rsrc2, properties,
                                                 meta.get(".args", []), meta.get(".wavefront_size", 32))


# ---- the emulator --------------------------------------------------------------------------------
def load_emulator(src: str):
    emu_py = Path(src) / "test" / "mockgpu" / "amd" / "emu.py"
    if not emu_py.is_file():
        sys.exit(f"gfx12_emulate: --emulator-src {src} has no test/mockgpu/amd/emu.py; pass a checkout of "
                 "https://github.com/tinygrad/tinygrad (the emulator is not in its PyPI package)")
    # tinygrad's test/ package, not the standard library's `test` (which would shadow it).
    sys.path.insert(0, str(Path(src).resolve()))
    for name in [m for m in sys.modules if m == "test" or m.startswith("test.")]: del sys.modules[name]
    os.environ.setdefault("CC", "clang-22" if not _which("clang") and _which("clang-22") else "clang")
    from test.mockgpu.amd import emu  # noqa: E402  (tinygrad's, by path)
    return emu


def _which(program):
    return any((Path(d) / program).is_file() for d in os.environ.get("PATH", "").split(os.pathsep) if d)


# ---- emulator gaps that would make a correct kernel look wrong (docs/RDNA4.md, "Emulator gaps") ----
# Each probe is a few instructions the sagejit kernels use, whose result is known from AMD's ISA:
# run before any case, so an unpatched emulator is reported instead of blamed on the kernel.
GAP_PROBES = [
    ("WMMA with an inline-constant C operand (clang's `v_wmma_... , 0` for a zero accumulator) reads "
     "the constant, not VGPRs v128+",
     ["v_mov_b32 v20, 0", "v_mov_b32 v21, 0", "v_mov_b32 v22, 0", "v_mov_b32 v23, 0"] +
     [f"v_mov_b32 v{128 + i}, 7" for i in range(8)] +
     ["v_wmma_i32_16x16x16_iu8 v[8:15], v[20:21], v[22:23], 0 neg_lo:[1,1,0]"], "v8", lambda thread: 0),
    ("V_WMMA_F32_16X16X16_FP8_FP8 decodes its 8-bit inputs as E4M3 (16 products of 1.0 = 16.0)",
     [f"v_mov_b32 v{20 + i}, 0x38383838" for i in range(4)] + [f"v_mov_b32 v{24 + i}, 0" for i in range(8)] +
     ["v_wmma_f32_16x16x16_fp8_fp8 v[8:15], v[20:21], v[22:23], v[24:31]"], "v8", lambda thread: 0x41800000),
    ("v_permlanex16_b32 takes a literal second lane selector (lane L reads lane L^16)",
     ["s_mov_b32 s6, 0x76543210", "v_permlanex16_b32 v9, v0, s6, 0xfedcba98"], "v9", lambda thread: thread ^ 16),
    ("GLOBAL_INV (cache invalidate, no architectural effect here) executes",
     ["v_mov_b32 v9, v0", "global_inv scope:SCOPE_SE"], "v9", lambda thread: thread),
    ("each wave has its own scratch (private segment): two waves spill, meet at a barrier, reload",
     ["scratch_store_b32 off, v0, off", "s_wait_storecnt 0", "s_barrier_signal -1", "s_barrier_wait 0xffff",
      "scratch_load_b32 v9, off, off", "s_wait_loadcnt 0"], "v9", lambda thread: thread),
]


def assemble(lines: list[str]) -> bytes:
    import subprocess
    mc = next((m for m in ("llvm-mc-22", "llvm-mc") if _which(m)), None)
    if mc is None: sys.exit("gfx12_emulate: needs llvm-mc (llvm-22) to assemble the emulator probes")
    listing = subprocess.run([mc, "-triple=amdgcn", "-mcpu=gfx1201", "-show-encoding"], input="\n".join(lines),
                             capture_output=True, text=True, check=True).stdout
    code = bytearray()
    for line in listing.splitlines():
        if "encoding: [" in line: code += bytes(int(b, 16) for b in line.split("encoding: [")[1].rstrip("]").split(","))
    return bytes(code)


def emulator_gaps(emu) -> list[str]:
    """The GAP_PROBES this emulator fails: (description, what it computed)."""
    gaps = []
    for description, body, register, expected in GAP_PROBES:
        program = assemble(["s_load_b64 s[4:5], s[0:1], 0x0", "s_wait_kmcnt 0", *body, "v_lshlrev_b32 v1, 2, v0",
                            f"global_store_b32 v1, {register}, s[4:5]", "s_endpgm"])
        code = ctypes.create_string_buffer(program + bytes(64), len(program) + 64)
        threads = 64  # two waves: v0 = thread id, out[thread] = the register
        out = (ctypes.c_uint32 * threads)(*([0xDEADBEEF] * threads))
        kernarg = ctypes.c_uint64(ctypes.addressof(out))
        try:
            emu.run_asm(ctypes.addressof(code), len(program), 1, 1, 1, threads, 1, 1, ctypes.addressof(kernarg), rsrc2=0,
                        scratch_size=4, arch="rdna4",
                        user_data=[ctypes.addressof(kernarg) & 0xFFFFFFFF, ctypes.addressof(kernarg) >> 32])
        except Exception as exc:
            gaps.append(f"{description}: raised {type(exc).__name__}: {str(exc)[:200]}")
            continue
        wrong = [t for t in range(threads) if out[t] != expected(t)]
        if wrong:
            gaps.append(f"{description}: thread {wrong[0]} holds {out[wrong[0]]:#x}, expected {expected(wrong[0]):#x} "
                        f"({len(wrong)} of {threads} threads wrong)")
    return gaps


# hsa_kernel_dispatch_packet_t; hidden kernel arguments of code object v5 (AMDGPU usage, "Code Object V5
# Metadata"): the ones a kernel may read, the rest stay 0 (no heap, no printf, no multigrid).
def _hidden_values(grid, block):
    (gx, gy, gz), (lx, ly, lz) = grid, block
    return {"hidden_block_count_x": gx, "hidden_block_count_y": gy, "hidden_block_count_z": gz,
            "hidden_group_size_x": lx, "hidden_group_size_y": ly, "hidden_group_size_z": lz,
            "hidden_remainder_x": 0, "hidden_remainder_y": 0, "hidden_remainder_z": 0,
            "hidden_global_offset_x": 0, "hidden_global_offset_y": 0, "hidden_global_offset_z": 0,
            "hidden_grid_dims": 3}


@dataclass
class LaunchRecord:
    producer: str
    entry: str
    grid: tuple
    block: tuple
    waves: int
    instructions: int | None
    seconds: float


@dataclass
class Emulation:
    emu: object
    objects: dict = field(default_factory=dict)
    launches: list = field(default_factory=list)

    def launch(self, code: bytes, entry: str, grid, block, dynamic_shared: int, args) -> None:
        digest = hashlib.sha256(code).hexdigest()
        if digest not in self.objects: self.objects[digest] = CodeObject(code)
        kernel = self.objects[digest].kernels.get(entry)
        if kernel is None: raise RuntimeError(f"code object has no kernel {entry}")
        if kernel.wavefront_size != 32: raise RuntimeError(f"{entry}: wave{kernel.wavefront_size}, the emulator runs wave32")
        kernarg = bytearray(kernel.kernarg_size)
        explicit = [a for a in kernel.args if not a[".value_kind"].startswith("hidden_")]
        hidden = _hidden_values(grid, block)
        for index, arg in enumerate(explicit):  # args[i] points at argument i, as hipModuleLaunchKernel takes it
            kernarg[arg[".offset"]:arg[".offset"] + arg[".size"]] = ctypes.string_at(args[index], arg[".size"])
        for arg in kernel.args:
            if arg[".value_kind"] in hidden:
                kernarg[arg[".offset"]:arg[".offset"] + arg[".size"]] = hidden[arg[".value_kind"]].to_bytes(arg[".size"], "little")
        kernarg_buffer = ctypes.create_string_buffer(bytes(kernarg), len(kernarg) + 64)
        group = kernel.group_segment + dynamic_shared
        packet = ctypes.create_string_buffer(64)
        struct.pack_into("<HHHHHHIIIIIQQ", packet, 0, 0, 3, *block, 0, *(g * b for g, b in zip(grid, block)),
                         kernel.private_segment, group, 0, ctypes.addressof(kernarg_buffer))
        # User SGPRs in the order of the kernel code properties (AMDGPU usage, "Initial Kernel Execution State").
        user, props = [], kernel.code_properties
        for bit, what, value in [(0, "private segment buffer", None), (1, "dispatch ptr", ctypes.addressof(packet)),
                                 (2, "queue ptr", 0), (3, "kernarg segment ptr", ctypes.addressof(kernarg_buffer)),
                                 (4, "dispatch id", 0), (5, "flat scratch init", None)]:
            if props >> bit & 1:
                if value is None: raise RuntimeError(f"{entry}: user SGPR '{what}' is not supported by this harness")
                user += [value & 0xFFFFFFFF, value >> 32]
        count = (kernel.rsrc2 >> 1) & 31
        if len(user) > count: raise RuntimeError(f"{entry}: {len(user)} user SGPRs set up but rsrc2 says {count}")
        user += [0] * (count - len(user))
        # The CP takes the LDS size from the dispatch (group_segment_size), not from the descriptor.
        rsrc2 = (kernel.rsrc2 & ~(0x1FF << 15)) | (((group + 511) // 512) << 15)
        before = getattr(self.emu, "WAVE_INSTRUCTIONS", None)
        start = time.time()
        self.emu.run_asm(kernel.entry, 0, *grid, *block, ctypes.addressof(kernarg_buffer), rsrc2=rsrc2,
                         scratch_size=kernel.private_segment, arch="rdna4", user_data=user or [0])
        after = getattr(self.emu, "WAVE_INSTRUCTIONS", None)
        waves = grid[0] * grid[1] * grid[2] * -(-block[0] * block[1] * block[2] // 32)
        self.launches.append(LaunchRecord(self.objects[digest].producer, entry, tuple(grid), tuple(block), waves,
                                          None if before is None else after - before, time.time() - start))


LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p,
                          ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint), ctypes.c_uint,
                          ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t)


def run_case(shim, emulation: Emulation, spec: dict) -> dict:
    def on_launch(_user, code, size, entry, grid, block, shared, args, error, error_size):
        try:
            emulation.launch(ctypes.string_at(code, size), entry.decode(), tuple(grid[:3]), tuple(block[:3]), shared, args)
            return 0
        except Exception as exc:  # reported through the shim as a launch failure
            message = f"{type(exc).__name__}: {exc}".encode()[:error_size - 1]
            ctypes.memmove(error, message + b"\0", len(message) + 1)
            return 1

    callback = LAUNCH(on_launch)
    result = ctypes.create_string_buffer(1 << 16)
    shim.sj_gfx12_emulation_run(json.dumps(spec).encode(), callback, None, result, len(result))
    return json.loads(result.value.decode())


def _number(value) -> str:
    return "NaN" if value is None else f"{value:.3g}"  # JSON carries NaN as null


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--emulator-src", help="checkout of github.com/tinygrad/tinygrad (test/mockgpu/amd/emu.py)")
    parser.add_argument("--shim", default=str(REPO / "build" / "tools" / "libsagejit_gfx12_emulation.so"),
                        help="the shim library built with the project (default: build/tools/)")
    parser.add_argument("--case", action="append", help=f"case name (repeatable; default all): {', '.join(CASES)}")
    parser.add_argument("--shape", help="an extra case: B,H,Nq,Nk,D[,causal][,bf16|fp16][,gqa=R]")
    parser.add_argument("--config", help='its attention config as JSON, e.g. \'{"waves":4,"rows_per_wave":32,"block_n":32,"stages":2}\'')
    parser.add_argument("--lse", action="store_true", help="the extra case writes the LSE")
    parser.add_argument("--compiler", choices=["clang", "hiprtc"], help="SAGEJIT_COMPILER for the runtime")
    parser.add_argument("--code-objects", help="run the code objects of this sagejit-precompile --emit-dir (e.g. hipRTC's, "
                        "made where hipRTC loads) instead of those the runtime compiles here; same kernels, configs, specializations")
    parser.add_argument("--cache-dir", help="code-object cache (default: a fresh temporary directory)")
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--allow-emulator-gaps", action="store_true",
                        help="run the cases even when the emulator fails its gap probes (results then mean little)")
    options = parser.parse_args()
    if options.list:
        for name, spec in CASES.items(): print(f"{name:24} {spec}")
        return 0
    if not options.emulator_src:
        parser.error("--emulator-src DIR is required: a checkout of https://github.com/tinygrad/tinygrad "
                     "(git clone --depth 1 https://github.com/tinygrad/tinygrad); see docs/RDNA4.md")
    if not Path(options.shim).is_file():
        parser.error(f"--shim {options.shim} does not exist: build it (cmake --build build --target sagejit_gfx12_emulation)")
    cases = {}
    if options.shape:
        cases["custom"] = {"shape": options.shape, "config": json.loads(options.config) if options.config else None,
                           "lse": options.lse}
    for name in options.case or ([] if options.shape else list(CASES)):
        if name not in CASES: parser.error(f"--case {name}: unknown; accepted: {', '.join(CASES)}")
        cases[name] = CASES[name]

    if options.compiler: os.environ["SAGEJIT_COMPILER"] = options.compiler
    cache = options.cache_dir or tempfile.mkdtemp(prefix="sagejit-emulate-")
    os.environ["SAGEJIT_CACHE_DIR"] = cache
    faulthandler.enable()  # a kernel access past a buffer hits a guard page (SIGSEGV): say where
    emu = load_emulator(options.emulator_src)
    gaps = emulator_gaps(emu)
    for gap in gaps: print(f"emulator gap: {gap}", file=sys.stderr)
    if gaps and not options.allow_emulator_gaps:
        sys.exit(f"gfx12_emulate: the emulator at {options.emulator_src} has {len(gaps)} gap(s) that make correct "
                 "kernels look wrong; patch it as docs/RDNA4.md (\"Emulator gaps\") describes, or pass "
                 "--allow-emulator-gaps to run anyway")
    emulation = Emulation(emu)
    shim = ctypes.CDLL(options.shim)
    shim.sj_gfx12_emulation_run.argtypes = [ctypes.c_char_p, LAUNCH, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    shim.sj_gfx12_emulation_run.restype = ctypes.c_int

    rows, failures = [], 0
    print("| case | shape | config | compiler | workspace | output vs CPU emulator | LSE | waves | instructions | seconds |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, spec in cases.items():
        emulation.launches.clear()
        start = time.time()
        request = {k: v for k, v in spec.items() if v is not None or k == "config"}
        if options.code_objects: request["code_objects"] = str(Path(options.code_objects).resolve())
        result = run_case(shim, emulation, request)
        seconds = time.time() - start
        instructions = [l.instructions for l in emulation.launches]
        row = {"case": name, "spec": spec, "result": result, "seconds": round(seconds, 1),
               "launches": [l.__dict__ for l in emulation.launches]}
        rows.append(row)
        if "error" in result:
            failures += 1
            print(f"| {name} | {spec['shape']} | | | error: {result['error']} | | | | | {seconds:.0f} |", flush=True)
            continue
        out = result["output"]
        match = "bit-exact" if out["bit_exact"] else f"max abs {_number(out['max_abs_vs_emulator'])} ({out['differing_storage_elements']} differ)"
        lse = "" if "lse" not in result else ("bit-exact" if result["lse"]["bit_exact"] else f"max abs {_number(result['lse']['max_abs_vs_emulator'])}")
        workspace = "bit-exact" if result["workspace"]["bit_exact"] else result["workspace"]["first_mismatch"]
        if spec.get("nan_query_tokens"):  # NaN in: the NaNs must be where the CPU emulator puts them
            judged = out["finiteness_differs"] == 0 and out.get("finite_within_tolerance", True)
            verdict = "" if judged else f" FAIL: {out['finiteness_differs']} elements finite in one, not the other"
            match = (f"{'bit-exact' if out['bit_exact'] else 'finite part ' + out.get('finite_vs_emulator', '')}, "
                     f"{out['non_finite_in_emulator']} NaN where the emulator has them" + verdict)
        else:
            judged = result["emulator_check"]["passed"]
            match += "" if judged else " FAIL: " + result["emulator_check"]["failure"]
            if judged and not result["oracle"]["passed"]:  # the algorithm's quality vs fp64: the CPU emulator's as well
                match += f" (fp64 oracle, same for the CPU emulator: {result['oracle']['failure']})"
        ok = result["workspace"]["bit_exact"] and judged
        failures += 0 if ok else 1
        total = "n/a" if None in instructions else f"{sum(instructions):,}"
        compilers = ", ".join(sorted({l.producer.split(" (")[0].replace(" version", "") for l in emulation.launches}))
        print(f"| {name} | {spec['shape']} | {result['plan']['attention_config']} | {compilers} | {workspace} | {match} | {lse} | "
              f"{sum(l.waves for l in emulation.launches)} | {total} | {seconds:.0f} |", flush=True)
    producers = sorted({launch["producer"] for row in rows for launch in row["launches"]})
    print(f"code objects made by: {'; '.join(producers) or 'none launched'}")
    if options.json: Path(options.json).write_text(json.dumps(rows, indent=1))
    print(f"{len(cases) - failures}/{len(cases)} cases passed (code objects cached in {cache})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
