"""Class 31: the function's own stores, replayed in program order with its callouts.

The mock applied every store into an external object (``group["lr"] = lr``,
``metrics["loss"] = v``, ``cfg.lr = v``, ``hist[0] = v``) after the last
callout, so a callout that reads the state (``opt.step()``, ``print``,
``json.dumps``) saw the previous call's value: training used the previous
learning rate.  Each store now comes before the callout made after it, and is
taken back when the replay misses at a later mid-guard or raises (the program
then runs again from the state the call found).

A list store ``xs[i] = v`` was written as ``xs.pop(i, None)`` ("the key was
absent") when ``i`` was not one of the list's values, and ``key in owner`` on a
list of tensors raised while recording: a list item is an index, never an
absent key.  The per-layer KV cache ``self.cache[i] = torch.cat(...)`` now
replays.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, Env, backends, calls, load_program, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="effect_order31")


def ones(env):
    return (torch.ones(1, 2),)


def with_lr(lr):
    return lambda env: (torch.ones(1, 2), lr)


TRAIN_LR = """
import torch
torch.manual_seed(0)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

def train_step(x, lr):
    for g in opt.param_groups:
        g["lr"] = lr
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
"""


def watch_model(env):
    model = env.ns.model
    return {
        "weight": model.weight.detach().clone(),
        "bias": model.bias.detach().clone(),
        "lr": [g["lr"] for g in env.ns.opt.param_groups],
    }


@backends(inductor=True)
def test_lr_set_in_param_groups_before_step(backend):
    run_case(
        Case(
            "lr_set_before_step",
            prog(TRAIN_LR, "train_step"),
            [Call(with_lr(lr)) for lr in (0.1, 0.2, 0.3, 0.4, 0.5, 0.5)],
            watch=watch_model,
            min_hits=3,
        ),
        backend,
    )


TRAIN_DECAY = """
import torch
torch.manual_seed(0)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.8)

def train_step(x):
    for g in opt.param_groups:
        g["lr"] *= 0.5
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
"""


@backends(inductor=True)
def test_lr_halved_in_param_groups_before_step(backend):
    run_case(
        Case(
            "lr_halved_before_step",
            prog(TRAIN_DECAY, "train_step"),
            calls(6, ones),
            watch=watch_model,
            min_hits=2,
        ),
        backend,
    )


METRICS = """
import json
import torch
metrics = {}

def step(x, v):
    metrics["loss"] = v
    print("metrics:", metrics)
    return x + 1, json.dumps(metrics)
"""


@backends(inductor=True)
def test_dict_item_written_then_printed_and_dumped(backend):
    run_case(
        Case(
            "dict_item_then_print_dumps",
            prog(METRICS, "step"),
            [Call(lambda env, v=v: (torch.ones(2), v)) for v in (0.1, 0.2, 0.3, 0.4, 0.5)],
            min_hits=3,
        ),
        backend,
    )


CONFIG_ATTR = """
import json
import torch

class Config:
    def __init__(self):
        self.lr = 0.0
        self.name = "run"

cfg = Config()

def step(x, v):
    cfg.lr = v
    return x * 2, json.dumps(vars(cfg))
"""


@backends()
def test_attribute_written_then_read_by_a_callout(backend):
    run_case(
        Case(
            "attr_then_json_vars",
            prog(CONFIG_ATTR, "step"),
            [Call(lambda env, v=v: (torch.ones(2), v)) for v in (0.1, 0.2, 0.3, 0.4, 0.5)],
            watch=lambda env: vars(env.ns.cfg),
            min_hits=3,
        ),
        backend,
    )


LIST_ITEM = """
import torch
hist = [0.0, 0.0]

def step(x, v):
    hist[1] = v
    print("hist", hist)
    return x - 1
"""


@backends()
def test_list_item_written_then_printed(backend):
    run_case(
        Case(
            "list_item_then_print",
            prog(LIST_ITEM, "step"),
            [Call(lambda env, v=v: (torch.ones(2), v)) for v in (0.5, 1.5, 2.5, 3.5, 4.5)],
            min_hits=3,
        ),
        backend,
    )


COUNTER_AND_LOG = """
import torch
n_calls, log = [0], []

def f(x):
    log.append(x)
    n_calls[0] += 1
    return x.relu()
"""


@backends(inductor=True)
def test_counter_list_and_log(backend):
    counter = iter(range(100))

    def arg(env):
        return (torch.full((2,), float(next(counter) // 2)),)  # each twin the same values

    run_case(
        Case(
            "counter_list_and_log",
            prog(COUNTER_AND_LOG, "f"),
            calls(6, arg),
            watch=lambda env: {"n": list(env.ns.n_calls), "log": len(env.ns.log)},
            min_hits=3,
        ),
        backend,
    )


KV_CACHE = """
import torch

class Decoder(torch.nn.Module):
    def __init__(self, layers=2, width=4):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(layers))
        self.cache = [torch.zeros(1, 3, width) for _ in range(layers)]

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            k = layer(x)
            self.cache[i] = torch.cat([self.cache[i][:, 1:], k], 1)  # a rolling window
            x = torch.tanh(x + self.cache[i].mean(1, keepdim=True))
        return x
"""


def build_kv_cache():
    torch.manual_seed(0)
    ns = load_program(KV_CACHE, "kv_cache31")
    return Env(ns=ns, target=ns.Decoder())


@backends(inductor=True)
def test_per_layer_list_kv_cache(backend):
    run_case(
        Case(
            "per_layer_kv_cache",
            build_kv_cache,
            calls(5, lambda env: (torch.randn(1, 1, 4),)),
            watch=lambda env: [t.clone() for t in env.target.cache],
            min_hits=3,
        ),
        backend,
    )


STORE_AROUND_MIDGUARD = """
import torch
stats = {"calls": 0, "positive": 0}
log = []

def step(x):
    stats["calls"] += 1                 # before the mid-guard: taken back on a miss
    log.append(stats["calls"])
    print("calls", stats["calls"])
    if x.sum().item() > 0:              # a mid-guard
        stats["positive"] += 1          # after it
        y = x * 2
    else:
        y = -x
    print("stats", stats)
    return y
"""


@backends(inductor=True)
def test_stores_around_a_midguard(backend):
    def signed(sign):
        return Call(lambda env: (sign * torch.rand(3) + sign,))

    run_case(
        Case(
            "stores_around_midguard",
            prog(STORE_AROUND_MIDGUARD, "step"),
            [signed(1), signed(1), signed(1), signed(-1), signed(-1), signed(1), signed(-1)],
            watch=lambda env: {"stats": dict(env.ns.stats), "log": list(env.ns.log)},
            min_hits=3,
        ),
        backend,
    )


GRAPH_OUTPUT_STORE = """
import torch
out = {}

def step(x):
    h = torch.tanh(x) * 2
    out["h"] = h                        # a graph's output
    out["n"] = h.sum().item()           # a callout's result
    print("out", out)
    return h + 1
"""


@backends(inductor=True)
def test_store_of_a_graph_output_read_by_a_later_callout(backend):
    run_case(
        Case(
            "graph_output_store_then_print",
            prog(GRAPH_OUTPUT_STORE, "step"),
            calls(5, lambda env: (torch.randn(3),)),
            watch=lambda env: dict(env.ns.out),
            tolerance={"rtol": 1e-4, "atol": 1e-5},
            min_hits=3,
        ),
        backend,
    )


RERUN_AFTER_ERROR = """
import torch
log = []
totals = {"n": 0}

def step(x):
    log.append(x.shape[0])
    totals["n"] += 1
    print("step", totals["n"])
    n = int(x.sum())                    # raises on NaN, in the replayed call
    return x * n
"""


@backends()
def test_stores_before_a_call_that_raises_are_made_once(backend):
    def fine(env):
        return (torch.ones(4),)

    def nan(env):
        return (torch.tensor([1.0, float("nan"), 1.0, 1.0]),)

    run_case(
        Case(
            "stores_before_raise",
            prog(RERUN_AFTER_ERROR, "step"),
            [*calls(3, fine), Call(nan), *calls(2, fine), Call(nan), Call(fine)],
            watch=lambda env: {"log": list(env.ns.log), "totals": dict(env.ns.totals)},
            min_hits=3,
        ),
        backend,
    )


STORE_AFTER_PRINT = """
import torch
state = {"v": 0.0}

def step(x, v):
    h = x * 2
    print("before", state)              # the value of the call before
    state["v"] = v
    if h.sum() > 0:                     # a data check hoisted in front of the graph
        h = h + 1
    return h
"""


@backends()
def test_store_after_a_print_before_a_hoisted_check(backend):
    run_case(
        Case(
            "store_after_print_before_hoisted_check",
            prog(STORE_AFTER_PRINT, "step"),
            [Call(lambda env, v=v: (torch.ones(3), v)) for v in (0.5, 1.5, 2.5, 3.5, 4.5)],
            watch=lambda env: dict(env.ns.state),
            min_hits=3,
        ),
        backend,
    )


# F142: a number the function stores before a callout and the graph after it reads
# (a step counter, a warmup factor).  The mock made the store, then read the graph's
# lifted input through the location again: every replay used ``step + 1`` twice.
COUNTER_BEFORE_PRINT = """
import torch

step = 0

def f(x):
    global step
    step += 1
    print("x", x.sum())
    return x * step
"""

WARMUP_AFTER_ITEM = """
import torch

step = 0

def f(x):
    global step
    step += 1
    if x.sum().item() > 100:
        print("big")
    warm = min(1.0, step / 4)
    return x * warm
"""

OLD_VALUE_AFTER_STORE = """
import torch

class State:
    n = 1.0

s = State()

def f(x):
    old = s.n
    s.n = old * 2
    print(x.sum())
    return x * old
"""

MODULE_UPDATE_COUNT = """
import torch

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        self.num_updates = 0

    def forward(self, x):
        self.num_updates += 1
        h = self.lin(x)
        if h.sum().item() > 1e6:
            h = h * 0
        return h * self.num_updates

model = Model()

def f(x):
    return model(x)
"""


@backends(inductor=True)
def test_a_counter_stored_before_a_print_and_read_after_it(backend):
    run_case(
        Case(
            "a_counter_stored_before_a_print_and_read_after_it",
            prog(COUNTER_BEFORE_PRINT),
            calls(5, ones),
            min_hits=3,
        ),
        backend,
    )


@backends()
def test_a_warmup_factor_after_a_data_check(backend):
    run_case(
        Case(
            "a_warmup_factor_after_a_data_check",
            prog(WARMUP_AFTER_ITEM),
            calls(6, ones),
            min_hits=3,
        ),
        backend,
    )


@backends()
def test_the_old_value_read_after_the_store(backend):
    run_case(
        Case(
            "the_old_value_read_after_the_store",
            prog(OLD_VALUE_AFTER_STORE),
            calls(5, ones),
            min_hits=3,
        ),
        backend,
    )


@backends()
def test_a_modules_update_counter_before_a_data_check(backend):
    run_case(
        Case(
            "a_modules_update_counter_before_a_data_check",
            prog(MODULE_UPDATE_COUNT),
            calls(5, ones),
            min_hits=3,
        ),
        backend,
    )
