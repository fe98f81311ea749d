# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.distributed.device_communicators.shm_broadcast: MessageQueue,
the queue the engine core broadcasts each RPC on (execute_model,
sample_tokens) and each worker answers on. A worker's wait for the next
RPC is its MessageQueue.dequeue. Here a pipe, not shared memory."""
from _fake import inside, timed


class MessageQueue:
    def __init__(self, readers=None, channel=None):
        self.readers = readers or []  # writer side: the worker processes
        self.channel = channel  # reader side: our end of the pipe

    def enqueue(self, obj):
        for r in self.readers:
            r.send(obj)
        if not self.readers:
            self.channel.send(obj)

    @timed
    def dequeue(self):
        with inside():
            return self.channel.recv()
