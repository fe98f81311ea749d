# SPDX-License-Identifier: BSD-2-Clause
"""The demo engine of `make demo`: a continuous-batching LLM server loop.

A small model of what vLLM's or SGLang's engine core does every step, with
the GPU replaced by pure-Python arithmetic and a sleep:

  RequestSource       arrivals from a seeded RNG (bursty Poisson per step),
                      prompt lengths (log-normal, 8..2048 tokens), max new
                      tokens (log-normal, 4..512)
  Scheduler           waiting and running queues; each step admits work
                      under a token budget (chunked prefill) and a maximum
                      batch size; KV cache in fixed-size blocks from a
                      fixed pool; when a running request needs a block and
                      none is free, the newest running request is preempted
                      (its blocks freed, recomputed later: vLLM's policy)
  ModelRunner         execute_model(batch, num_scheduled, num_tokens,
                      kv_lens), under @inference_mode() as vLLM's is:
                      prepare_inputs (token ids, positions, KV slots, block
                      table), forward (a fake matmul: work proportional to
                      the number of tokens and to the total KV length, then
                      a sleep standing for waiting on the GPU), then
  Sampler.sample      softmax over a logits row per sequence, RNG pick
  Scheduler.update_from_output, Detokenizer.detokenize
                      append the tokens, finish requests (max tokens, EOS
                      or a stop string), free their blocks, build the
                      output text

  Engine.step()       one step: schedule, execute, process outputs
  Engine.run()        the server loop: take new arrivals, step

Steps vary: prefill chunks make some steps hundreds of tokens, others are
pure decode; the batch grows and shrinks with the bursts; KV lengths grow
as requests decode. A step takes a few ms (forward most of it).

Every phase method carries @timed(PHASE): the engine's own timing (as a
server keeps step metrics), the ground truth of tests/integration/
test_demo.py. Its wrapper calls the method as fn(*args, **kwargs), which
CPython 3.11 runs from C code (as it does the wrappers of torch's
Module.__call__ and @torch.inference_mode() in real engines); so under
Debian 12's python3 (3.11), where proftrace sees only the calls made from C
code, every step and phase call is still seen and steps and buckets are
exact. 3.8-3.10 are exact anyway; 3.12 and 3.13 need PYTHONPERFSUPPORT=1
(scripts/demo.sh sets it), as any program does.

Runs unchanged on CPython 3.8 to 3.13, standard library only.

Options:
  --steps N       stop after N steps (default: run until SIGTERM/SIGINT)
  --truth FILE    write the ground truth (JSON) here at exit
  --seed S        RNG seed (default 1): same seed, same requests and steps
  --hold          print "ready <pid>" and wait for one line on stdin before
                  the first step (test drivers attach in between; exit 3 on
                  EOF); without it "ready <pid>" is printed once the first
                  READY_AFTER steps have run

SIGTERM and SIGINT end the loop after the current step; the truth is
written and the exit status is 0.

Ground truth (--truth): python, pid, seed, steps, phases (per phase name
in PHASES: calls and total_s, time.perf_counter around every call, in the
@timed wrapper, and off_s, the part of it the thread was not running, as
below), per_step (parallel lists, one entry per step: step_s and
<phase>_s; <phase>_off_s, the part of those the thread was not running:
the wrapper's wall time less its thread CPU time, time.thread_time read
inside the perf_counter pair, so never less than the time it was
preempted or stolen by the host; num_tokens (tokens computed), tokens
(tokens generated), batch (requests in the batch), kv_lens (each
request's KV length after the step)),
requests (arrived, finished, preemptions), tokens_generated.
"""
import argparse
import contextlib
import functools
import json
import math
import os
import random
import signal
import sys
import time

perf_counter = time.perf_counter
thread_time = time.thread_time

PHASES = ("step", "schedule", "prepare", "forward", "sample", "postproc")
READY_AFTER = 10  # steps before "ready" (without --hold)

# Engine configuration (vLLM's names where there is one).
MAX_NUM_SEQS = 64            # requests per batch
MAX_NUM_BATCHED_TOKENS = 512  # token budget per step (chunked prefill)
BLOCK_SIZE = 16              # tokens per KV-cache block
NUM_GPU_BLOCKS = 1000        # KV-cache pool: 16000 tokens
EOS_PROB = 1.0 / 400         # chance that a sampled token is EOS

# Fake model sizes: the cost of a step. forward's loops do HIDDEN
# multiply-adds per token and one per ATTN_STRIDE KV positions; the device
# "runs" DEVICE_BASE_S plus per-token and per-KV-position times.
HIDDEN = 64
ATTN_STRIDE = 2
VOCAB = 512
LOGITS = 48  # logits computed per sequence (a slice of the vocabulary)
DEVICE_BASE_S = 0.001
DEVICE_TOKEN_S = 1.5e-6
DEVICE_KV_S = 4e-8


# --- the engine's own timing (the ground truth) -----------------------------

class StepStats:
    """Per-phase totals, and per-step figures when keep is set."""

    def __init__(self):
        self.keep = False
        self.calls = dict.fromkeys(PHASES, 0)
        self.total = dict.fromkeys(PHASES, 0.0)
        self.total_off = dict.fromkeys(PHASES, 0.0)
        self.cur = dict.fromkeys(PHASES, 0.0)  # the running step's phases
        self.cur_vals = None
        self.cur_off = dict.fromkeys(PHASES, 0.0)
        self.per_step = {p + "_s": [] for p in PHASES}
        self.per_step.update((p + "_off_s", []) for p in PHASES)
        for k in ("num_tokens", "tokens", "batch", "kv_lens"):
            self.per_step[k] = []

    def add(self, phase, seconds, off=0.0):
        self.calls[phase] += 1
        self.total[phase] += seconds
        self.cur[phase] += seconds
        self.cur_off[phase] += off
        self.total_off[phase] += off
        if phase == "step":  # the outermost phase: the step is over
            if self.keep:
                for p in PHASES:
                    self.per_step[p + "_s"].append(self.cur[p])
                    self.per_step[p + "_off_s"].append(self.cur_off[p])
                v = self.cur_vals or {"num_tokens": 0, "tokens": 0, "batch": 0,
                                      "kv_lens": []}
                for k, x in v.items():
                    self.per_step[k].append(x)
            self.cur = dict.fromkeys(PHASES, 0.0)
            self.cur_off = dict.fromkeys(PHASES, 0.0)
            self.cur_vals = None

    def record_step(self, num_tokens, tokens, batch, kv_lens):
        self.cur_vals = {"num_tokens": num_tokens, "tokens": tokens, "batch": batch,
                         "kv_lens": list(kv_lens)}


STATS = StepStats()


def timed(phase):
    """Time every call of the method into STATS under phase."""

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            t0 = perf_counter()
            c0 = thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                c1 = thread_time()
                t1 = perf_counter()
                STATS.add(phase, t1 - t0, max(0.0, (t1 - t0) - (c1 - c0)))

        return wrapper

    return decorate


class inference_mode(contextlib.ContextDecorator):
    """Stands for torch.inference_mode(): no autograd inside the model."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# --- requests -----------------------------------------------------------------

class Request:
    __slots__ = ("rid", "prompt", "max_new_tokens", "output", "num_computed_tokens",
                 "blocks", "pieces", "text", "finished")

    def __init__(self, rid, prompt, max_new_tokens):
        self.rid = rid
        self.prompt = prompt  # token ids
        self.max_new_tokens = max_new_tokens
        self.output = []      # generated token ids
        self.num_computed_tokens = 0  # tokens whose KV is in the cache
        self.blocks = []      # KV-cache block ids
        self.pieces = []      # detokenized text pieces
        self.text = ""
        self.finished = False


class RequestSource:
    """Arrivals per step: Poisson with a rate that comes in bursts."""

    def __init__(self, rng):
        self.rng = rng
        self.next_rid = 0

    def _poisson(self, lam):
        limit, k, p = math.exp(-lam), 0, self.rng.random()
        while p > limit:
            k += 1
            p *= self.rng.random()
        return k

    def poll(self, step_index):
        # bursts: the rate swings between 0.05 and 0.95 requests per step
        # over a period of ~500 steps, plus an opening burst
        lam = 0.5 + 0.45 * math.sin(step_index / 80.0)
        n = self._poisson(lam) + (24 if step_index == 0 else 0)
        reqs = []
        for _ in range(n):
            plen = min(2048, max(8, int(self.rng.lognormvariate(5.0, 0.9))))
            gen = min(512, max(4, int(self.rng.lognormvariate(4.3, 0.8))))
            prompt = [self.rng.randrange(VOCAB) for _ in range(plen)]
            reqs.append(Request(self.next_rid, prompt, gen))
            self.next_rid += 1
        return reqs


# --- scheduler ----------------------------------------------------------------

class BlockPool:
    def __init__(self, num_blocks):
        self.free = list(range(num_blocks))

    def blocks_needed(self, req, num_new):
        have = len(req.blocks) * BLOCK_SIZE
        need = req.num_computed_tokens + num_new - have
        return 0 if need <= 0 else -(-need // BLOCK_SIZE)

    def allocate(self, req, n):
        if n > len(self.free):
            return False
        for _ in range(n):
            req.blocks.append(self.free.pop())
        return True

    def release(self, req):
        self.free.extend(req.blocks)
        req.blocks = []


class SchedulerOutput:
    __slots__ = ("requests", "num_scheduled", "num_tokens", "preempted")

    def __init__(self):
        self.requests = []       # the batch, in order
        self.num_scheduled = []  # tokens computed this step, per request
        self.num_tokens = 0
        self.preempted = 0


class Scheduler:
    def __init__(self):
        self.waiting = []  # FIFO; preempted requests go back to the front
        self.running = []  # in admission order
        self.pool = BlockPool(NUM_GPU_BLOCKS)
        self.finished = 0
        self.preemptions = 0

    def add_request(self, req):
        self.waiting.append(req)

    def _preempt(self, req):
        self.pool.release(req)
        req.num_computed_tokens = 0  # recompute: prompt and output so far
        self.running.remove(req)
        self.waiting.insert(0, req)
        self.preemptions += 1

    @timed("schedule")
    def schedule(self):
        out = SchedulerOutput()
        budget = MAX_NUM_BATCHED_TOKENS
        # requests the detokenizer stopped (stop string) since the last step
        for req in [r for r in self.running if r.finished]:
            self.running.remove(req)
            self.pool.release(req)
            self.finished += 1
        # running requests first: one decode token each, or the next chunk
        # of a prompt still being prefilled
        i = 0
        while i < len(self.running) and budget > 0:
            req = self.running[i]
            n = min(len(req.prompt) + len(req.output) - req.num_computed_tokens, budget)
            need = self.pool.blocks_needed(req, n)
            while not self.pool.allocate(req, need):
                victim = self.running[-1]  # the newest one gives way
                self._preempt(victim)
                out.preempted += 1
                if victim is req:
                    break
            else:
                out.requests.append(req)
                out.num_scheduled.append(n)
                budget -= n
                i += 1
                continue
            break  # req itself was preempted: nothing after it runs either
        # then admit waiting requests while there is room
        while self.waiting and budget > 0 and len(self.running) < MAX_NUM_SEQS:
            req = self.waiting[0]
            n = min(len(req.prompt) + len(req.output) - req.num_computed_tokens, budget)
            if not self.pool.allocate(req, self.pool.blocks_needed(req, n)):
                break
            self.waiting.pop(0)
            self.running.append(req)
            out.requests.append(req)
            out.num_scheduled.append(n)
            budget -= n
        out.num_tokens = MAX_NUM_BATCHED_TOKENS - budget
        return out

    @timed("postproc")
    def update_from_output(self, sched, token_ids):
        """Advance each request; the ones that completed their prompt get
        the sampled token. Returns [(request, token)] and frees finished
        requests."""
        outputs = []
        for req, n, tok in zip(sched.requests, sched.num_scheduled, token_ids):
            req.num_computed_tokens += n
            if req.num_computed_tokens < len(req.prompt) + len(req.output):
                continue  # a prompt chunk: nothing sampled yet
            req.output.append(tok)
            outputs.append((req, tok))
            if len(req.output) >= req.max_new_tokens or tok == 0:
                req.finished = True
        for req, _ in outputs:
            if req.finished:
                self.running.remove(req)
                self.pool.release(req)
                self.finished += 1
        return outputs


# --- model runner, sampler, detokenizer -------------------------------------

class ModelInputs:
    __slots__ = ("input_ids", "positions", "slot_mapping", "query_start_loc", "block_table")


class ModelRunner:
    def __init__(self, rng, sampler):
        self.weights = [rng.uniform(-1.0, 1.0) for _ in range(HIDDEN)]
        self.lm_head = [rng.uniform(-1.0, 1.0) for _ in range(LOGITS)]
        self.sampler = sampler

    @timed("prepare")
    def prepare_inputs(self, batch, num_scheduled, num_tokens, kv_lens):
        """Flatten the batch into the model's inputs: token ids, positions
        and KV-cache slots of the num_tokens tokens computed this step, and
        the block table (each request's blocks, padded)."""
        inputs = ModelInputs()
        input_ids = [0] * num_tokens
        positions = [0] * num_tokens
        slots = [0] * num_tokens
        starts = [0]
        width = max(len(req.blocks) for req in batch)
        block_table = []
        t = 0
        for req, n, kv_len in zip(batch, num_scheduled, kv_lens):
            all_ids = req.prompt + req.output if req.output else req.prompt
            blocks = req.blocks
            for pos in range(kv_len - n, kv_len):
                input_ids[t] = all_ids[pos]
                positions[t] = pos
                slots[t] = blocks[pos // BLOCK_SIZE] * BLOCK_SIZE + pos % BLOCK_SIZE
                t += 1
            starts.append(t)
            block_table.append(blocks + [-1] * (width - len(blocks)))
        inputs.input_ids = input_ids
        inputs.positions = positions
        inputs.slot_mapping = slots
        inputs.query_start_loc = starts
        inputs.block_table = block_table
        return inputs

    @timed("forward")
    def forward(self, input_ids, positions, kv_lens):
        """The model: MLP work per token, attention work per KV position,
        then the host waits for the device. Returns a logits row for the
        last token of each sequence."""
        w = self.weights
        acc = 0.0
        for tok, pos in zip(input_ids, positions):
            x = (tok ^ pos) * 0.001953125
            for wj in w:
                acc += x * wj
            acc *= 0.5
        hidden = []
        for kv_len in kv_lens:
            h = acc
            for j in range(0, kv_len, ATTN_STRIDE):
                h += j * 1e-7
            hidden.append(h)
        # the kernels were launched; wait for the device (cudaStreamSynchronize)
        time.sleep(DEVICE_BASE_S + DEVICE_TOKEN_S * len(input_ids) + DEVICE_KV_S * sum(kv_lens))
        head = self.lm_head
        return [[math.sin(h * c + k) for k, c in enumerate(head)] for h in hidden]

    @inference_mode()
    def execute_model(self, batch, num_scheduled, num_tokens, kv_lens):
        """One forward pass over the batch; returns a token per request."""
        inputs = self.prepare_inputs(batch, num_scheduled, num_tokens, kv_lens)
        logits = self.forward(inputs.input_ids, inputs.positions, kv_lens)
        return self.sampler.sample(logits, batch)


class Sampler:
    def __init__(self, rng, temperature=0.8):
        self.rng = rng
        self.inv_t = 1.0 / temperature

    @timed("sample")
    def sample(self, logits, batch):
        """One token per sequence: softmax with temperature, then a draw."""
        token_ids = []
        exp, inv_t, rng = math.exp, self.inv_t, self.rng
        for row, req in zip(logits, batch):
            m = max(row)
            probs = [exp((x - m) * inv_t) for x in row]
            r = rng.random() * sum(probs)
            k = 0
            for k, p in enumerate(probs):
                r -= p
                if r <= 0.0:
                    break
            if rng.random() < EOS_PROB:
                token_ids.append(0)  # EOS
            else:
                token_ids.append(1 + (k * 131 + req.rid * 7 + len(req.output)) % (VOCAB - 1))
        return token_ids


class Detokenizer:
    STOPS = ("</s>", "\n\n", "kaka ")

    def __init__(self, rng):
        syll = ["ka", "to", "ri", "en", "mo", "sa", "lu", "ve", "in", "or", "at", "es"]
        self.vocab = ["</s>"] + ["".join(rng.choice(syll) for _ in range(1 + i % 3)) +
                                 (" " if i % 4 else "") + ("\n" if i % 97 == 0 else "")
                                 for i in range(1, VOCAB)]

    @timed("postproc")
    def detokenize(self, outputs):
        """Incremental detokenization: append each new token's text, look
        for a stop string in the recent text, and build the whole output
        text of requests that finish."""
        vocab = self.vocab
        for req, tok in outputs:
            req.pieces.append(vocab[tok])
            tail = "".join(req.pieces[-8:])
            for stop in self.STOPS:
                if stop in tail:
                    req.finished = True
            if req.finished:
                req.text = "".join(req.pieces)


# --- the engine -----------------------------------------------------------------

class Engine:
    def __init__(self, seed):
        rng = random.Random(seed)
        self.source = RequestSource(random.Random(rng.random()))
        self.scheduler = Scheduler()
        self.runner = ModelRunner(rng, Sampler(random.Random(rng.random())))
        self.detokenizer = Detokenizer(rng)
        self.steps = 0
        self.stop = False
        self.tokens_generated = 0

    @timed("step")
    def step(self):
        """One engine step; returns the number of tokens generated."""
        sched = self.scheduler.schedule()
        batch = sched.requests
        num_tokens = sched.num_tokens
        kv_lens = [req.num_computed_tokens + n for req, n in zip(batch, sched.num_scheduled)]
        if batch:
            token_ids = self.runner.execute_model(batch, sched.num_scheduled, num_tokens,
                                                  kv_lens)
            outputs = self.scheduler.update_from_output(sched, token_ids)
            self.detokenizer.detokenize(outputs)
        else:
            outputs = []
        self.tokens_generated += len(outputs)
        STATS.record_step(num_tokens, len(outputs), len(batch), kv_lens)
        return len(outputs)

    def run(self, max_steps=None, on_ready=None):
        while not self.stop and (max_steps is None or self.steps < max_steps):
            for req in self.source.poll(self.steps):
                self.scheduler.add_request(req)
            self.step()
            self.steps += 1
            if on_ready and self.steps == READY_AFTER:
                on_ready()


# --- main -------------------------------------------------------------------------

def write_truth(path, engine, seed):
    truth = {
        "python": "%d.%d.%d" % sys.version_info[:3],
        "pid": os.getpid(),
        "seed": seed,
        "steps": engine.steps,
        "phases": {p: {"calls": STATS.calls[p], "total_s": STATS.total[p],
                       "off_s": STATS.total_off[p]} for p in PHASES},
        "per_step": STATS.per_step,
        "requests": {"arrived": engine.source.next_rid, "finished": engine.scheduler.finished,
                     "preemptions": engine.scheduler.preemptions},
        "tokens_generated": engine.tokens_generated,
    }
    with open(path, "w") as f:
        json.dump(truth, f, indent=1)
        f.write("\n")


def main(argv):
    ap = argparse.ArgumentParser(description="proftrace's demo engine: a continuous-batching "
                                 "LLM server loop in pure Python")
    ap.add_argument("--steps", type=int, default=None, help="steps to run (default: forever)")
    ap.add_argument("--truth", help="write the ground truth (JSON) here at exit")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hold", action="store_true",
                    help='print "ready PID", wait for a line on stdin, then run')
    args = ap.parse_args(argv)
    if args.steps is not None and args.steps < 0:
        ap.error("--steps must be >= 0")

    engine = Engine(args.seed)
    STATS.keep = bool(args.truth)

    def on_signal(signum, frame):
        engine.stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def ready():
        sys.stdout.write("ready %d\n" % os.getpid())
        sys.stdout.flush()

    if args.hold:
        ready()
        if not sys.stdin.readline():
            return 3
        engine.run(args.steps)
    else:
        engine.run(args.steps, on_ready=ready)
        if engine.steps < READY_AFTER:
            ready()
    if args.truth:
        write_truth(args.truth, engine, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
