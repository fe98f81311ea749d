# SPDX-License-Identifier: BSD-2-Clause
"""Fake vllm.v1.executor.multiproc_executor: tensor parallelism, one
worker process per rank (vllm/v1/executor/multiproc_executor.py).

Engine core side: MultiprocExecutor broadcasts each RPC on a MessageQueue
and returns a FutureWrapper whose result() reads the output rank's answer.
Worker side: WorkerProc.worker_busy_loop dequeues an RPC and runs it with
_execute_worker_rpc (Worker.execute_model, Worker.sample_tokens); the
output rank answers, the model output through its "WorkerAsyncOutput"
thread (async scheduling), which is where it waits for the GPU."""
import os
import queue
import threading
from concurrent.futures import Future

import _fake
from _fake import around, inside, timed
from vllm.distributed.device_communicators.shm_broadcast import MessageQueue
from vllm.v1.worker.gpu.async_utils import AsyncOutput
from vllm.v1.worker.gpu_worker import Worker


class FutureWrapper(Future):
    def __init__(self, response_mq):
        super().__init__()
        self.response_mq = response_mq

    @timed
    def result(self, timeout=None):
        with inside():
            if not self.done():
                self.set_result(self.response_mq.dequeue()["resp"])
            with around("concurrent.futures._base", "Future.result"):
                return super().result()


class MultiprocExecutor:
    def __init__(self, world_size, child_args):
        self.workers = [_fake.Child("worker", child_args + ["--rank", str(r)],
                                    env={"RANK": str(r), "LOCAL_RANK": str(r)})
                        for r in range(world_size)]
        self.pids = [p for w in self.workers for p in w.pids]
        self.rpc_broadcast_mq = MessageQueue(readers=self.workers)
        self.output_mq = MessageQueue(channel=self.workers[0])  # output rank 0

    def execute_model(self, scheduler_output, non_block=False):
        self.rpc_broadcast_mq.enqueue(["execute_model", scheduler_output.step])
        return FutureWrapper(self.output_mq)

    def sample_tokens(self, grammar_output, non_block=False):
        self.rpc_broadcast_mq.enqueue(["sample_tokens", None])
        return FutureWrapper(self.output_mq)

    def shutdown(self):
        self.rpc_broadcast_mq.enqueue(["shutdown", None])
        return [t for w in self.workers for t in w.wait()]


class WorkerProc:
    def __init__(self, rank, parent):
        self.rank = rank
        self.worker = Worker(rank)
        self.rpc_broadcast_mq = MessageQueue(channel=parent)
        self.worker_response_mq = MessageQueue(channel=parent)
        self.async_output_queue = queue.Queue()
        self.async_output_thread = threading.Thread(target=self.async_output_busy_loop,
                                                    name="WorkerAsyncOutput", daemon=True)
        self.async_output_thread.start()

    def worker_busy_loop(self):
        while True:
            rpc = self.rpc_broadcast_mq.dequeue()
            if rpc[0] == "shutdown":
                break
            self._execute_worker_rpc(rpc)
        self.async_output_queue.put(None)
        self.async_output_thread.join()

    def _execute_worker_rpc(self, rpc_request):
        method, arg = rpc_request
        output = getattr(self.worker, method)(arg)
        if self.rank == 0:
            self.handle_output(output)

    def handle_output(self, output):
        if isinstance(output, AsyncOutput):
            self.async_output_queue.put(output)
        else:
            self.worker_response_mq.enqueue({"resp": output})

    def async_output_busy_loop(self):
        while True:
            out = self.async_output_queue.get()
            if out is None:
                return
            self.worker_response_mq.enqueue({"resp": out.get_output()})


def worker_main(args, parent):
    proc = WorkerProc(args.rank, parent)
    parent.send({"ready": [os.getpid()]})
    proc.worker_busy_loop()
    parent.send({"truth": [_fake.truth("worker", args.rank)]})
