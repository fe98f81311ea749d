# SPDX-License-Identifier: BSD-2-Clause
"""Run the integration tests (functions named test_* in test_*.py here).

usage: run.py [NAME-SUBSTRING ...]
Prints one line per test and a closing "integration: N passed, N failed, N skipped".
"""
import glob
import importlib
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip  # noqa: E402


def main():
    want = sys.argv[1:]
    if os.geteuid() != 0:
        print("integration: all skipped: proftrace needs root (BPF, uprobes)")
        print("integration: 0 passed, 0 failed, 1 skipped")
        return 0
    passed = failed = skipped = 0
    failures = []
    for path in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "test_*.py"))):
        mod = importlib.import_module(os.path.basename(path)[:-3])
        for name in sorted(n for n in dir(mod) if n.startswith("test_")):
            full = "%s.%s" % (mod.__name__, name)
            if want and not any(w in full for w in want):
                continue
            t0 = time.monotonic()
            try:
                getattr(mod, name)()
            except Skip as e:
                skipped += 1
                print("SKIP %s: %s" % (full, e), flush=True)
                continue
            except Exception:
                failed += 1
                failures.append(full)
                print("FAIL %s (%.1fs)" % (full, time.monotonic() - t0), flush=True)
                traceback.print_exc()
                continue
            passed += 1
            print("ok   %s (%.1fs)" % (full, time.monotonic() - t0), flush=True)
    if failures:
        print("integration: failing: %s" % " ".join(failures))
    print("integration: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
