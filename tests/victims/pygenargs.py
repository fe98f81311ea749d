# SPDX-License-Identifier: BSD-2-Clause
"""A generator and a coroutine whose argument is read at each of their
activations (count tokens ... arg:n), for tests/integration/test_agent.py:
on 3.8-3.11 their trampolines must hand the agent the original's own frame.

Per step i (100 steps): gen(n) and co(n) with n = i % 5 + 1; gen yields 3
times (4 activations), co awaits once (2 activations): 6n tokens a step,
1,800 in all. Protocol: print "ready <pid>", run at a line on stdin, exit.
"""
import asyncio, os, sys
def gen(n):
    for k in range(3):
        yield n
async def co(n):
    await asyncio.sleep(0)
    return n
def step(loop, i):
    return sum(gen(i % 5 + 1)) + loop.run_until_complete(co(i % 5 + 1))
print("ready", os.getpid(), flush=True)
sys.stdin.readline()
loop = asyncio.new_event_loop()
for i in range(100):
    step(loop, i)
