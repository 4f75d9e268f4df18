"""bench/sm90_tile_sass.py on the compiler's real output (no GPU: nvcc and cuobjdump only): it finds the
key-tile loop of attention_sm90 and its two softmax forms, with the wgmma and exp2 counts the kernel's
source fixes, for the shipped config and for a copy of kernel_src/ given with --source."""
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "sm90_tile_sass.py")
FORM = re.compile(r"^(inner tiles|edge tiles|the loop body)[^:]*: (\d+) instructions per warp and tile", re.M)


def run(*args):
    result = subprocess.run([sys.executable, SCRIPT, "--top", "100", *args], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def forms(output):
    """{form name: (instruction count, {opcode: count})} in the order printed."""
    found = {}
    blocks = FORM.split(output)[1:]
    for name, count, body in zip(blocks[0::3], blocks[1::3], blocks[2::3]):
        mix = {m.group(1): int(m.group(2)) for m in re.finditer(r"^  (\S+)\s+(\d+)$", body, re.M)}
        found[name] = (int(count), mix)
    return found


def check_shipped_forms(output, head_dim=128, block_n=128):
    found = forms(output)
    assert list(found) == ["inner tiles", "edge tiles"], output
    (inner, inner_mix), (edge, edge_mix) = found["inner tiles"], found["edge tiles"]
    assert 0 < inner < edge
    for mix in (inner_mix, edge_mix):
        # D / 32 QK steps and block_n / 32 PV steps; one exp2 per score (64 x block_n / 128 per thread),
        # plus the two rows' rescale factors.
        assert sum(n for op, n in mix.items() if op.startswith("IGMMA")) == head_dim // 32
        assert sum(n for op, n in mix.items() if op.startswith("QGMMA")) == block_n // 32
        assert mix.get("MUFU.EX2", 0) >= block_n // 2
    assert "LOP3.LUT" in edge_mix or "FSEL" in edge_mix  # the visibility checks


def test_the_shipped_config_has_two_softmax_forms_with_the_sources_wgmma_and_exp2():
    output = run()
    assert "SJ_WARPS=4" in output and "SJ_TMA=1" in output and "registers" in output
    assert re.search(r"the copy-issuing thread's block: [1-9]\d* instructions", output), output
    check_shipped_forms(output)


def test_a_copy_of_kernel_src_compiles_from_its_own_folder(tmp_path):
    copy = tmp_path / "kernel_src"
    shutil.copytree(os.path.join(ROOT, "kernel_src"), copy)
    copied = run("--head-dim", "64", "--source", str(copy / "attention_sm90.cu"))
    assert forms(copied) == forms(run("--head-dim", "64"))
    check_shipped_forms(copied, head_dim=64)
    # The copy is what is compiled: a source that does not build is reported, not counted.
    (copy / "arch" / "wgmma_sm90.h").write_text("#error changed copy\n")
    result = subprocess.run([sys.executable, SCRIPT, "--source", str(copy / "attention_sm90.cu")],
                            capture_output=True, text=True)
    assert result.returncode != 0 and "changed copy" in result.stderr
