#!/usr/bin/env python3
"""Where a kernel's warps wait, per SASS instruction, from Nsight Compute's source page.

Reads the CSV that `ncu --import <report> --page source --print-source sass --csv` writes (as
bench/h200_profile_kernel.sh does) and prints a Markdown ledger: the warp-state samples by reason
over the whole kernel, the same by opcode, and the instructions that hold the most samples with
their leading reasons. A sample is one warp seen in one state; 'selected' is a warp issuing.
    python3 bench/ncu_stall_ledger.py <name>-sass.csv [--top N]
"""
import argparse
import collections
import csv
import sys

ALL = "Warp Stall Sampling (All Samples)"


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header_at = next((i for i, r in enumerate(rows) if ALL in r), None)
    if header_at is None:
        sys.exit(f"{path}: no '{ALL}' column (is it ncu's source page as CSV?)")
    header = rows[header_at]
    return header, [r for r in rows[header_at + 1:] if len(r) == len(header)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv")
    parser.add_argument("--top", type=int, default=25, help="instructions listed (default 25)")
    args = parser.parse_args()
    header, rows = load(args.csv)
    col = {name: i for i, name in enumerate(header)}
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]

    def count(row, name):
        text = row[col[name]].replace(",", "")
        return int(text) if text.isdigit() else 0

    total = sum(count(r, ALL) for r in rows)
    if total == 0:
        sys.exit(f"{args.csv}: no samples")
    base = int(rows[0][col["Address"]], 16)
    by_reason = collections.Counter()
    by_opcode = collections.Counter()
    for r in rows:
        for reason in reasons:
            by_reason[reason[len("stall_"):]] += count(r, reason)
        source = r[col["Source"]].split()
        opcode = next((w for w in source if not w.startswith("@")), "?")
        by_opcode[opcode] += count(r, ALL)
    print(f"{total} samples over {len(rows)} instructions\n")
    print("| reason | share |\n|---|---|")
    for reason, n in by_reason.most_common():
        if n:
            print(f"| {reason} | {100 * n / total:.1f}% |")
    print("\n| opcode | share |\n|---|---|")
    for opcode, n in by_opcode.most_common(15):
        print(f"| {opcode} | {100 * n / total:.1f}% |")
    print("\n| offset | share | instruction | leading reasons (samples) |\n|---|---|---|---|")
    for r in sorted(rows, key=lambda r: -count(r, ALL))[:args.top]:
        lead = sorted(((count(r, x), x[len("stall_"):]) for x in reasons), reverse=True)[:3]
        print(f"| {int(r[col['Address']], 16) - base:#06x} | {100 * count(r, ALL) / total:.2f}% | "
              f"`{' '.join(r[col['Source']].split())[:64]}` | " + ", ".join(f"{n} {v}" for v, n in lead if v) + " |")


if __name__ == "__main__":
    main()
