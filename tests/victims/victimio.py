# SPDX-License-Identifier: BSD-2-Clause
"""The driver protocol of the mixed-stack victims (pymixed.py,
pytorch_mixed.py, pyadopt.py), as pylines.py's: "ready <pid>", one line
to go, the truth file, "done" and one more line with --hold. Imported
from the victim's own folder (a script's folder is first on sys.path).
Standard library only, CPython 3.8 to 3.13."""
import json
import os
import sys


def ready():
    """Say ready and wait for the go line; False when stdin ends first."""
    sys.stdout.write("ready %d\n" % os.getpid())
    sys.stdout.flush()
    return bool(sys.stdin.readline())


def finish(truth_path, truth, hold):
    """Write the truth (when asked), then with hold say done and wait for
    one more line, so the driver stops proftrace while the process (and
    the mappings its native frames are named from) is still there."""
    if truth_path:
        with open(truth_path, "w") as f:
            json.dump(truth, f, indent=1)
    if hold:
        sys.stdout.write("done\n")
        sys.stdout.flush()
        sys.stdin.readline()
    return 0
