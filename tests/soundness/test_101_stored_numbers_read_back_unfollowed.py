"""Class 101: numbers the call stored, read back where no symbol follows them (found 2026-12-07).

The nineteenth session's adversarial probe of its own fixes:

- F373: ``WINDOW[1] = loss; sum(WINDOW)``, ``meter.last = loss; getattr(meter,
  "last")``, ``sum(w for k, w in D.items())``, ``D.setdefault("a", 0.0)`` after
  ``D["a"] = v``: C code read the stored number, which was neither followed nor
  guarded, so replays used the first call's.  Such a read pins the stored number.
- F374: ``counts[0] = counts[1]`` (or ``bounds[1] = x.mean().item()``) into a list
  the call built with symbols, then ``counts[0]`` or ``lo, hi = bounds``: the slot
  kept the symbol of the number it held before (a small int shared by both slots
  passed the identity check of F361; unpacking checked nothing).
- F375: ``layer.__dict__.setdefault("scale", 1.0)`` where ``scale`` is there: F365
  took it for a store, so ``layer.scale`` after it was not guarded.
- F376: ``stepmod.increment()`` (``global n; n += 1`` in a helper module) then
  ``stepmod.n``: the store into the module's namespace and the read of its attribute
  were two names for one slot only for modules in ``sys.modules``; the run now knows
  every module it reached by its namespace, and a load takes the latest store under
  either name.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, Do, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="stored101")


def _scaled(scale):
    return lambda env: (torch.ones(3) * scale,)


STORED_THEN_C_READ = """
import torch

WINDOW = [0.0, 0.0]
D = {"a": 0.0, "b": 1.0}

class Meter:
    pass

meter = Meter()
meter.last = 0.0

def f(x):
    loss = x.sum().item()
    WINDOW[1] = loss
    meter.last = loss
    D["a"] = loss
    avg = sum(WINDOW) / len(WINDOW)
    total = sum(w for k, w in D.items())
    return x * avg, x * getattr(meter, "last"), x * total, x * D.setdefault("a", 0.0)
"""


@backends()
def test_a_stored_number_read_back_by_c_code(backend):
    script = [Call(_scaled(s)) for s in (1, 1, 2, 3, 3)]
    watch = lambda env: (list(env.ns.WINDOW), vars(env.ns.meter), dict(env.ns.D))
    run_case(Case("c_read", prog(STORED_THEN_C_READ), script, min_hits=2, watch=watch), backend)


SLOT_REPLACED = """
import torch

def f(x, labels):
    counts = [int((labels == 0).sum()), int((labels == 1).sum())]
    counts[0] = counts[1]
    bounds = [x.min().item(), x.max().item()]
    bounds[1] = x.mean().item()
    lo, hi = bounds
    return x * counts[0], lo + hi
"""


@backends()
def test_a_slot_of_a_built_list_replaced_by_another_number(backend):
    def args(labels):
        return lambda env: (torch.arange(4.0), torch.tensor(labels))

    script = [Call(args(v)) for v in ([0, 1, 2, 2], [0, 1, 2, 2], [0, 0, 1, 2], [0, 0, 0, 1])]
    run_case(Case("slot", prog(SLOT_REPLACED), script, min_hits=1), backend)


SETDEFAULT_PRESENT = """
import torch

class Layer:
    pass

layer = Layer()
layer.scale = 2.0

def f(x):
    layer.__dict__.setdefault("scale", 1.0)
    return x * layer.scale
"""


@backends()
def test_setdefault_of_an_attribute_that_is_there(backend):
    script = [*calls(2, _scaled(1)), execg("layer.scale = 3.0"), *calls(2, _scaled(1))]
    watch = lambda env: dict(vars(env.ns.layer))
    run_case(Case("setdefault", prog(SETDEFAULT_PRESENT), script, min_hits=2, watch=watch), backend)


HELPER_MODULE = """
import types
import torch

stepmod = types.ModuleType("stepmod")
exec(
    "n = 0\\n"
    "def increment():\\n"
    "    global n\\n"
    "    n += 1\\n"
    "def get():\\n"
    "    return n\\n",
    stepmod.__dict__,
)

def f(x):
    stepmod.increment()
    stepmod.n += 1
    return x * stepmod.n + stepmod.get()
"""


@backends()
def test_a_global_of_a_helper_module_stored_then_read_as_its_attribute(backend):
    def reset(env):
        env.ns.stepmod.n = 0

    script = [*calls(3, _scaled(1)), Do(reset, "stepmod.n = 0"), *calls(3, _scaled(1))]
    watch = lambda env: env.ns.stepmod.n
    run_case(Case("helper_module", prog(HELPER_MODULE), script, min_hits=2, watch=watch), backend)
