# SPDX-License-Identifier: BSD-2-Clause
"""Fake sglang.srt.managers.detokenizer_manager: the detokenizer process
("sglang::detokenizer"): DetokenizerManager.event_loop receives each batch
of token ids from the scheduler and handle_batch_token_id_out decodes it
(python/sglang/srt/managers/detokenizer_manager.py)."""
import os

import _fake
from _fake import inside, spin, timed


class DetokenizerManager:
    def __init__(self, parent):
        self.parent = parent

    def event_loop(self):
        while True:
            msg = self.parent.recv()
            if "stop" in msg:
                return
            self.handle_batch_token_id_out(msg["out"])

    @timed
    def handle_batch_token_id_out(self, recv_obj):
        with inside():
            spin(300)


def run_detokenizer_process(args, parent):
    manager = DetokenizerManager(parent)
    parent.send({"ready": [os.getpid()]})
    manager.event_loop()
    parent.send({"truth": [_fake.truth("detokenizer")]})
