#!/usr/bin/env python3
"""CI test of tools/scripts/gfx12_emulate.py without the emulator: its code-object loader and its launch
set-up, on real gfx1201 objects that sagejit-precompile builds with clang.

- the MessagePack metadata it decodes equals what llvm-readelf prints (kernels, argument offsets,
  sizes and kinds, LDS, scratch, kernarg size, wave size), and the kernel descriptor agrees with it;
- the entry address it computes holds the kernel's first instruction as llvm-objdump shows it;
- a launch hands the emulator the argument bytes, a dispatch packet with the grid and workgroup
  sizes, the user SGPRs the descriptor asks for (dispatch pointer, kernarg pointer) and the LDS size
  (a stand-in records what run_asm receives).

usage: test_gfx12_emulate_loader.py PRECOMPILE READELF OBJDUMP
"""
import ctypes
import importlib.util
import random
import re
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def load_harness():
    spec = importlib.util.spec_from_file_location("gfx12_emulate", REPO / "tools" / "scripts" / "gfx12_emulate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gfx12_emulate"] = module
    spec.loader.exec_module(module)
    return module


def readelf_kernels(readelf, path):
    """The kernels of llvm-readelf --notes' YAML, with the fields compared (a line-based reader: the
    output is regular, and PyYAML is not a dependency)."""
    text = subprocess.run([readelf, "--notes", str(path)], capture_output=True, text=True, check=True).stdout
    kernels, kernel, arg = [], None, None
    for line in text.splitlines():
        if line.startswith("  - ."):  # a kernel's map starts; its first key is on this line
            kernel = {"args": []}
            kernels.append(kernel)
            line = "    " + line[4:]
        elif not line.startswith("    "):
            kernel = None if not line.startswith("  ") else kernel
        if kernel is None: continue
        if line.startswith("      - ."):  # an argument's map starts; its first key is on this line
            arg = {}
            kernel["args"].append(arg)
            line = "        " + line[8:]
        if m := re.match(r"^        \.(offset|size|value_kind):\s+(\S+)", line):
            arg[m[1]] = m[2] if m[1] == "value_kind" else int(m[2])
        elif m := re.match(r"^    \.(name|kernarg_segment_size|group_segment_fixed_size|private_segment_fixed_size|"
                           r"wavefront_size):\s+(\S+)", line):
            kernel[m[1]] = m[2] if m[1] == "name" else int(m[2])
    return {k["name"]: k for k in kernels}


def objdump_first_words(objdump, path):
    """{kernel: first instruction dword} from llvm-objdump -d."""
    text = subprocess.run([objdump, "-d", "--mcpu=gfx1201", str(path)], capture_output=True, text=True, check=True).stdout
    first, current = {}, None
    for line in text.splitlines():
        if m := re.match(r"^[0-9a-f]+ <([\w.]+)>:", line):
            current = m[1]
        elif current and (m := re.search(r"// [0-9A-F]+: ([0-9A-F]{8})", line)):
            first.setdefault(current, int(m[1], 16))
            current = None
    return first


class RecordingEmulator:
    """Stands in for tinygrad's emu module: records what run_asm receives."""
    WAVE_INSTRUCTIONS = 0

    def __init__(self, kernarg_bytes): self.calls, self.kernarg_bytes = [], kernarg_bytes

    def run_asm(self, lib, lib_sz, gx, gy, gz, lx, ly, lz, args_ptr, rsrc2=0, scratch_size=0, arch="", user_data=None):
        # The kernarg segment and the dispatch packet live only during the launch: copy them now.
        user = list(user_data or [])
        self.calls.append(dict(lib=lib, grid=(gx, gy, gz), block=(lx, ly, lz), args_ptr=args_ptr, rsrc2=rsrc2,
                               scratch=scratch_size, arch=arch, user=user,
                               kernarg=ctypes.string_at(args_ptr, self.kernarg_bytes),
                               packet=ctypes.string_at(user[0] | user[1] << 32, 64) if len(user) >= 2 else b""))


def main():
    precompile, readelf, objdump = sys.argv[1:4]
    harness = load_harness()
    with tempfile.TemporaryDirectory() as tmp:
        emit = Path(tmp) / "emit"
        emit.mkdir()
        subprocess.run([precompile, "--arch", "gfx1201", "--compiler", "clang", "--cache-dir", str(Path(tmp) / "cache"),
                        "--emit-dir", str(emit), "--kernels", "attention_gfx12,prepare,probe_gfx12", "--dtype", "bf16",
                        "--head-dim", "64", "-j", "2"], check=True, capture_output=True)
        objects = sorted(emit.glob("*.co"))
        assert len(objects) >= 3, f"expected attention, prepare and probe objects, got {objects}"
        rng = random.Random(1)
        checked = 0
        for path in objects:
            data = path.read_bytes()
            co = harness.CodeObject(data)
            expected = readelf_kernels(readelf, path)
            assert set(co.kernels) == set(expected), (path.name, set(co.kernels), set(expected))
            words = objdump_first_words(objdump, path)
            for name, kernel in co.kernels.items():
                want = expected[name]
                got_args = [{"offset": a[".offset"], "size": a[".size"], "value_kind": a[".value_kind"]} for a in kernel.args]
                assert got_args == want["args"], (name, got_args, want["args"])
                assert kernel.kernarg_size == want["kernarg_segment_size"], name
                assert kernel.group_segment == want["group_segment_fixed_size"], name
                assert kernel.private_segment == want["private_segment_fixed_size"], name
                assert kernel.wavefront_size == want["wavefront_size"] == 32, name
                first, = struct.unpack("<I", ctypes.string_at(kernel.entry, 4))
                assert first == words[name], (name, hex(first), hex(words[name]))

                # One launch: random argument bytes, a grid, a block.
                explicit = [a for a in kernel.args if not a[".value_kind"].startswith("hidden_")]
                blobs = [ctypes.create_string_buffer(bytes(rng.randrange(256) for _ in range(a[".size"])), a[".size"])
                         for a in explicit]
                args = (ctypes.c_void_p * max(1, len(blobs)))(*[ctypes.addressof(b) for b in blobs])
                recorder = RecordingEmulator(kernel.kernarg_size)
                emulation = harness.Emulation(recorder)
                grid, block, dynamic = (3, 2, 1), (64, 1, 1), 512
                emulation.launch(data, name, grid, block, dynamic, args)
                call, = recorder.calls
                assert call["arch"] == "rdna4" and call["grid"] == grid and call["block"] == block
                assert call["lib"] == emulation.objects[next(iter(emulation.objects))].kernels[name].entry
                assert call["scratch"] == kernel.private_segment
                for arg, blob in zip(explicit, blobs):
                    assert call["kernarg"][arg[".offset"]:arg[".offset"] + arg[".size"]] == blob.raw, (name, arg)
                lds = ((call["rsrc2"] >> 15) & 0x1FF) * 512
                assert kernel.group_segment + dynamic <= lds < kernel.group_segment + dynamic + 512, (name, lds)
                user = call["user"]
                assert len(user) == (kernel.rsrc2 >> 1) & 31, (name, user)
                slot = 0
                if kernel.code_properties & 2:  # dispatch pointer first: hsa_kernel_dispatch_packet_t
                    packet = call["packet"]
                    assert struct.unpack_from("<HHH", packet, 4) == block, name
                    assert struct.unpack_from("<III", packet, 12) == tuple(g * b for g, b in zip(grid, block)), name
                    assert struct.unpack_from("<I", packet, 28)[0] == kernel.group_segment + dynamic, name
                    assert struct.unpack_from("<Q", packet, 40)[0] == call["args_ptr"], name
                    slot = 2
                if kernel.code_properties & 4: slot += 2
                if kernel.code_properties & 8:
                    assert user[slot] | user[slot + 1] << 32 == call["args_ptr"], name
                checked += 1
        print(f"{checked} kernels of {len(objects)} code objects: metadata, descriptor, entry and launch set-up checked")


if __name__ == "__main__":
    main()
