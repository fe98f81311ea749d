# SPDX-License-Identifier: BSD-2-Clause
"""docs/targets.md's Errors section shows what proftrace prints: each
example message of its blocks is produced from a targets file written for
it (same line, column and text), exit 2, so the page cannot drift from
the program again (issue 24 found one the program no longer printed)."""
import os
import re
import subprocess
import tempfile

from harness import PROFTRACE, ROOT, eq

# the targets file behind each message, in the order the page shows them
INPUTS = [
    "# 1\n# 2\n# 3\nstpe native:exe:f\n",
    "# 1\nstep native:exe:f\n" + "# x\n" * 6 + "step native:exe:g\n",
    "# 1\n# 2\nbucket engine.a native:exe:f\n# 4\nbucket engine.a native:exe:g\n",
    "# 1\n# 2\nbucket g.a native:libcuda[.so:cuInit\n",
    "step native:exe:f\n" + "# x\n" * 5 + "set warmup_step 5\n",
    "step native:exe:f\n" + "# x\n" * 6 + "set ringbuf_mb 3\n",
    "# 1\nstep py:train.py:step\n",
    "# 1\nstep py:step\n",
    "# 1\nstep native:exe:f\nbucket engine native:exe:g\n",
    "# nothing but a comment\n",
]


def shown_messages():
    """Every 'targets.conf:L:C: error: ...' line of the Errors section's
    code blocks."""
    with open(os.path.join(ROOT, "docs", "targets.md")) as f:
        text = f.read()
    sect = text.split("\n## Errors\n", 1)[1].split("\n## ", 1)[0]
    out = []
    for block in re.findall(r"```\n(.*?)```", sect, re.S):
        out += [x for x in block.splitlines() if re.match(r"targets\.conf:\d+:\d+: error: ", x)]
    return out


def test_errors_section_is_what_proftrace_prints():
    shown = shown_messages()
    eq(len(shown), len(INPUTS), "messages shown in docs/targets.md's Errors section")
    tmp = tempfile.mkdtemp(prefix="pt-it-")
    for want, text in zip(shown, INPUTS):
        with open(os.path.join(tmp, "targets.conf"), "w") as f:
            f.write(text)
        p = subprocess.run([PROFTRACE, "-p", str(os.getpid()), "--targets", "targets.conf",
                            "--dry-run"], cwd=tmp, capture_output=True, text=True, timeout=30)
        eq(p.returncode, 2, "exit code for %r" % text)
        eq(p.stderr.strip(), "proftrace: " + want, "message for %r" % text)
