# SPDX-License-Identifier: BSD-2-Clause
"""Calls pydot.mod.work() (a module-level function of a package's module)
and Runner.run() a known number of times, for the dotted py: probes and
the typo suggestions of tests/integration/test_pyhint.py.

Protocol (as pyengine.py): print "ready <pid>", wait for one line on
stdin, make --calls calls of each, write the truth (JSON: {"work": calls
of work, "run": calls of Runner.run}) to --truth, then, with --hold, print
"done" and wait for one more line before exiting.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

import pydot.mod  # noqa: E402


def main(argv):
    truth, calls, hold = None, 200, False
    i = 0
    while i < len(argv):
        if argv[i] == "--truth":
            truth = argv[i + 1]
            i += 1
        elif argv[i] == "--calls":
            calls = int(argv[i + 1])
            i += 1
        elif argv[i] == "--hold":
            hold = True
        i += 1
    sys.stdout.write("ready %d\n" % os.getpid())
    sys.stdout.flush()
    if not sys.stdin.readline():
        return 3
    r = pydot.mod.Runner()
    for _ in range(calls):
        pydot.mod.work()
        r.run()
    if truth:
        with open(truth, "w") as f:
            json.dump({"work": 2 * calls, "run": calls}, f)
    if hold:
        sys.stdout.write("done\n")
        sys.stdout.flush()
        sys.stdin.readline()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
