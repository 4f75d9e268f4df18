"""bench/ncu_kernel_durations.py on Nsight Compute text in the form `ncu --metrics gpu__time_duration.sum`
prints (no GPU): each kernel's median over its launches per file, units converted to microseconds,
kernels missing from a file shown as such, and an unknown unit refused rather than misread."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "ncu_kernel_durations.py")

HEADER = """==PROF== Connected to process 1 (/tmp/bench_attention)
==PROF== Profiling "sj_prepare_stats": 0%....50%....100% - 1 pass
{"shape":"small-1k-d128"}
"""


def launch(kernel, unit, value):
    return (f"  {kernel} (16, 24, 2)x(256, 1, 1), Context 1, Stream 7, Device 0, CC 9.0\n"
            "    Section: Command line profiler metrics\n"
            "    ----------------------- ----------- ------------\n"
            "    Metric Name             Metric Unit Metric Value\n"
            "    ----------------------- ----------- ------------\n"
            f"    gpu__time_duration.sum          {unit}        {value}\n"
            "    ----------------------- ----------- ------------\n\n")


def run(tmp_path, files):
    paths = []
    for name, text in files.items():
        path = tmp_path / f"{name}.txt"
        path.write_text(text)
        paths.append(str(path))
    return subprocess.run([sys.executable, SCRIPT, *paths], capture_output=True, text=True)


def test_medians_per_kernel_and_file(tmp_path):
    tree = HEADER + launch("sj_prepare_stats", "us", "13.00") + launch("sj_attention_sm90", "us", "40.00") + \
        launch("sj_prepare_stats", "us", "11.00") + launch("sj_attention_sm90", "ms", "0.05") + \
        launch("sj_prepare_stats", "us", "12.50")
    before = HEADER + launch("sj_prepare_finalize", "ns", "8,750") + launch("sj_attention_sm90", "us", "56.40")
    result = run(tmp_path, {"ncu-tree-small": tree, "ncu-before-small": before})
    assert result.returncode == 0, result.stderr
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ")[1:] for line in result.stdout.splitlines()[2:]}
    assert [c.strip(" |") for c in rows["sj_prepare_stats"]] == ["12.5 (3)", "—"]
    assert [c.strip(" |") for c in rows["sj_attention_sm90"]] == ["45.0 (2)", "56.4 (1)"]  # 0.05 ms = 50 us
    assert [c.strip(" |") for c in rows["sj_prepare_finalize"]] == ["—", "8.8 (1)"]  # 8,750 ns
    assert [c.strip(" |") for c in rows["sum of medians"]] == ["57.5", "65.2"]
    assert "ncu-tree-small | ncu-before-small" in result.stdout.splitlines()[0]


def test_unknown_unit_is_refused(tmp_path):
    result = run(tmp_path, {"ncu-x": HEADER + launch("sj_prepare_quantize", "cycle", "1000")})
    assert result.returncode != 0
    assert "unknown unit 'cycle'" in result.stderr
