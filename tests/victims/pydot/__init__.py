# SPDX-License-Identifier: BSD-2-Clause
"""A package for tests/victims/pydot_victim.py: py:pydot.mod.work names
function work of module pydot.mod (the dotted spelling of a module-level
function, tests/integration/test_pyhint.py)."""


class Helper:
    def assist(self):
        return 1
