#!/usr/bin/env python3
"""The tests a `make test` run skipped, with their reasons, read from ctest's and pytest's JUnit files:
skip_report.py <ctest.xml> <pytest.xml> [--require-only-gpu-skips].

A ctest test skips by exiting 77 (SKIP_RETURN_CODE; the doctest main prints one "SAGEJIT-SKIP: <case>:
<reason>" line per skipped case, tests/skip_support.hpp); a pytest test through pytest.skip. Only GPU
tests may skip in CI (ctest's test_gpu_*, pytest's *_gpu.py): with --require-only-gpu-skips any other
skip makes the exit status 1, after the list."""
import ast
import os
import sys
import xml.etree.ElementTree as ElementTree

SKIP_LINE = "SAGEJIT-SKIP: "


def _skipped_cases(path):
    """(testcase, its <skipped> element) for every skipped case of a JUnit file."""
    for case in ElementTree.parse(path).iter("testcase"):
        skipped = case.find("skipped")
        if skipped is not None:
            yield case, skipped


def _ctest_skips(path):
    for case, skipped in _skipped_cases(path):
        name = case.get("name", "?")
        output = case.findtext("system-out") or ""
        reasons = [line[len(SKIP_LINE):].strip() for line in output.splitlines() if line.startswith(SKIP_LINE)]
        for reason in reasons or [skipped.get("message") or "no reason given"]:
            yield "ctest", name, reason, name.startswith("test_gpu_")


def _pytest_skips(path):
    for case, skipped in _skipped_cases(path):
        module = case.get("classname", "")
        name = f"{module}::{case.get('name', '?')}" if module else case.get("name", "?")  # "" : a whole file
        reason = skipped.get("message") or ""
        if not reason or reason == "collection skipped":  # a module-level skip: "<file>:<line>: <reason>"
            reason = (skipped.text or reason or "no reason given").strip()
            try:  # pytest writes ('<file>', <line>, 'Skipped: <reason>')
                reason = str(ast.literal_eval(reason)[2])
            except (ValueError, SyntaxError, TypeError, IndexError):
                pass
        gpu = any(part.endswith("_gpu") for part in (module or name).split("."))
        yield "pytest", name, reason.strip(), gpu


def main(argv):
    strict = "--require-only-gpu-skips" in argv
    paths = [arg for arg in argv if not arg.startswith("--")]
    if len(paths) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    skips, missing = [], []
    for path, reader in zip(paths, (_ctest_skips, _pytest_skips)):
        if os.path.isfile(path):
            skips.extend(reader(path))
        else:
            missing.append(path)
    print(f"Skipped tests: {len(skips)}" + ("" if skips else " (none)"))
    groups = {}  # the parametrized cases of one test with one reason are one line
    for runner, name, reason, gpu in skips:
        key = (runner, name.split("[", 1)[0], reason, gpu)
        groups[key] = groups.get(key, 0) + 1
    for (runner, name, reason, gpu), count in groups.items():
        times = f" (x{count})" if count > 1 else ""
        print(f"  {runner} {name}{times}{'' if gpu else ' [not a GPU test]'}: {reason}")
    for path in missing:
        print(f"  (no report at {path}: that part of the tests did not run)")
    not_gpu = [name for _, name, _, gpu in skips if not gpu]
    if strict and (not_gpu or missing):
        print(f"error: only GPU tests may skip here, and {len(not_gpu)} other test(s) did"
              + (" and a report is missing" if missing else ""), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
