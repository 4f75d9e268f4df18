"""Per-kernel durations from Nsight Compute runs of one metric (issue 23): the median of each kernel's
launches in each file, as one table (kernels as rows, files as columns), so the prepare kernels and
the attention kernel of two trees can be read side by side.

    python3 bench/ncu_kernel_durations.py <ncu-output.txt>...

Each file is the text output of `ncu --metrics gpu__time_duration.sum -k regex:sj_ ... <bench_attention>
--shape S ...` (what bench/h200_config_compare.sh writes with NCU_SHAPES: ncu-<tree>-<shape>.txt); a
kernel's launch is its name line (`  sj_... (grid)x(block), Context ...`) followed by its
`gpu__time_duration.sum <unit> <value>` line. Durations in microseconds.
"""
import os
import re
import statistics
import sys

LAUNCH = re.compile(r"^  (sj_\w+) \(")
DURATION = re.compile(r"^\s+gpu__time_duration\.sum\s+(\w+)\s+([0-9.,]+)")
TO_US = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6, "second": 1e6}


def durations(path):
    """{kernel: [microseconds per launch]} of one ncu output, in launch order per kernel."""
    found, kernel = {}, None
    with open(path, errors="replace") as text:
        for line in text:
            launch = LAUNCH.match(line)
            if launch:
                kernel = launch.group(1)
                continue
            duration = DURATION.match(line)
            if duration and kernel is not None:
                unit, value = duration.group(1), float(duration.group(2).replace(",", ""))
                if unit not in TO_US:
                    sys.exit(f"{path}: unknown unit {unit!r} for {kernel}")
                found.setdefault(kernel, []).append(value * TO_US[unit])
                kernel = None
    return found


def table(paths):
    columns = [(os.path.splitext(os.path.basename(p))[0], durations(p)) for p in paths]
    kernels = list(dict.fromkeys(k for _, found in columns for k in found))
    lines = ["| kernel (median µs, launches) | " + " | ".join(name for name, _ in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for kernel in kernels:
        cells = []
        for _, found in columns:
            runs = found.get(kernel, [])
            cells.append(f"{statistics.median(runs):.1f} ({len(runs)})" if runs else "—")
        lines.append(f"| {kernel} | " + " | ".join(cells) + " |")
    totals = [sum(statistics.median(r) for r in found.values()) for _, found in columns]
    lines.append("| sum of medians | " + " | ".join(f"{t:.1f}" for t in totals) + " |")
    return "\n".join(lines)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print(table(sys.argv[1:]))


if __name__ == "__main__":
    main()
