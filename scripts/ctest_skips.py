#!/usr/bin/env python3
"""Counts and explains ctest's skipped tests, for scripts/test.sh's final summary.

Usage: ctest_skips.py CONSOLE_LOG LAST_TEST_LOG [--counts]
  CONSOLE_LOG    what ctest printed ("... out of N", "The following tests did not run:")
  LAST_TEST_LOG  <build>/Testing/Temporary/LastTest.log (every test's output)
With --counts prints "N tests, K skipped"; otherwise one line per skipped test with its reason: the
gtest skip message (the line after "...: Skipped") or a shell test's "SKIP: reason".
"""
import re
import sys


def skipped_names(console: str) -> list[str]:
    block = console.split("The following tests did not run:", 1)
    if len(block) < 2:
        return []
    return re.findall(r"^\s*\d+ - (.+?) \((?:Skipped|Not Run)\)$", block[1], re.M)


def reasons(last_test_log: str) -> dict[str, str]:
    found = {}
    for m in re.finditer(r"^\d+/\d+ Test: (.+?)\n.*?^Output:\n-+\n(.*?)<end of output>", last_test_log, re.M | re.S):
        name, out = m.group(1), m.group(2).splitlines()
        why = ""
        for i, line in enumerate(out):
            if line.startswith("SKIP: "):
                why = line[len("SKIP: "):]
            elif line.endswith(": Skipped") and i + 1 < len(out):
                why = out[i + 1]
            if why:
                break
        found[name] = why
    return found


def main() -> int:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    console = open(sys.argv[1], errors="replace").read()
    try:
        last = open(sys.argv[2], errors="replace").read()
    except OSError:
        last = ""
    names = skipped_names(console)
    if "--counts" in sys.argv[3:]:
        total = re.findall(r"tests? failed out of (\d+)", console)
        print(f"{total[-1] if total else '?'} tests, {len(names)} skipped")
        return 0
    why = reasons(last)
    for n in names:
        print(f"  skipped: {n}: {why.get(n) or 'no reason printed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
