"""Class 69: views of memory the call updates, handed on or written through.

Found by the sixteenth session's probe of the tensor API (F292, F293):

- A view of an input or buffer the graph updates in place, stored into an object
  from outside (``self.k[1] = x; self.window = self.k[:2]``, ``LOG.append(x[:2])``,
  ``LOG.append(x.detach())``): the graph computes the update on a copy, which the
  mock writes back, so the stored tensor was a view of the copy.  Later updates of
  the buffer did not show through it (the program's next call read a stale window).
- ``a = x.detach().numpy(); a[1] = -1``: a store into a numpy array sharing a
  tensor's memory writes the tensor; the store was taken for one into an array the
  call made, and replays lost it.
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, Do, backends, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="views69")

CACHE_WINDOW = """
import torch

class Cache(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("k", torch.zeros(4, 2))
        self.window = None

    def forward(self, x):
        self.k.mul_(0.5)  # decay the whole cache
        prev = 0.0 if self.window is None else float(self.window.sum())
        self.k[1] = x
        self.window = self.k[:2]  # a view kept for the next call
        return x * prev

m = Cache()
"""


@backends()
def test_a_view_of_an_updated_buffer_kept_on_the_module(backend):
    new_sequence = Do(lambda env: setattr(env.ns.m, "window", None), "m.window = None")
    ones = lambda env: (torch.ones(2),)
    script = [Call(ones), new_sequence, Call(ones), *calls(3, ones)]
    watch = lambda env: (env.ns.m.k, env.ns.m.window)
    build = shared_prog(CACHE_WINDOW, target="m", name="views69m")
    run_case(Case("kept_window", build, script, watch=watch), backend)


KEPT_VIEWS = """
import torch

KEPT = []

def f(x):
    x.mul_(2)
    KEPT.append(x[:2])  # views of the caller's x
    KEPT.append(x.detach())
    return x.sum()
"""


def _argument_kept(env):
    x = torch.ones(4)
    env.ns.LAST = x
    return (x,)


def _caller_updates_it(env, result):
    env.ns.LAST.add_(100)  # eager's kept views show it


@backends()
def test_views_of_an_updated_argument_kept_in_a_global_list(backend):
    script = calls(4, _argument_kept, then=_caller_updates_it)
    watch = lambda env: list(env.ns.KEPT)
    run_case(Case("kept_views", prog(KEPT_VIEWS), script, watch=watch), backend)


NUMPY_WRITES = """
import numpy as np
import torch

def f(x):
    a = x.detach().numpy()
    a[1] = -1.0  # writes x
    y = x * 2
    b = np.asarray(y)
    b[0] = 99.0  # writes y
    return y + 1
"""


@backends()
def test_stores_into_numpy_arrays_that_share_a_tensors_memory(backend):
    script = calls(4, lambda env: (torch.randn(3),))
    run_case(Case("numpy_writes", prog(NUMPY_WRITES), script), backend)


KEPT_IN_OBJECTS = """
import dataclasses

import torch

class Holder:
    def __init__(self, t):
        self.t = t

@dataclasses.dataclass(slots=True)  # F329: slots were not looked into
class CacheOut:
    keys: torch.Tensor

KEPT = []

def f(x):
    x.mul_(2)
    KEPT.append(Holder(x[:2]))  # a view of the caller's x, in an object
    return CacheOut(x[1:])
"""


def _returned_and_kept(env, result):
    env.ns.LAST.add_(100)
    env.ns.RETURNED = result


@backends()
def test_views_of_an_updated_argument_inside_objects(backend):
    # F323: the objects were not looked into, so replays handed out views of the
    # graph's copy inside them.
    script = calls(4, _argument_kept, then=_returned_and_kept)
    watch = lambda env: ([h.t for h in env.ns.KEPT], env.ns.RETURNED.keys)
    run_case(Case("kept_in_objects", prog(KEPT_IN_OBJECTS), script, watch=watch), backend)


RETURNED_IN_SLOTS = """
import dataclasses

import torch

@dataclasses.dataclass(slots=True)
class CacheOut:
    keys: torch.Tensor

def f(x):
    x.mul_(2)
    return CacheOut(x[1:])
"""


@backends()
def test_a_view_of_an_updated_argument_in_a_slotted_dataclass(backend):
    # F329: slots were not looked into.
    script = calls(4, _argument_kept, then=_returned_and_kept)
    watch = lambda env: env.ns.RETURNED.keys
    run_case(Case("returned_in_slots", prog(RETURNED_IN_SLOTS), script, watch=watch), backend)


SIZE_STORED_NEXT_TO_AN_UPDATE = """
import torch

class Meter:
    def __init__(self):
        self.sum = torch.zeros(())
        self.count = 0

meter = Meter()

def f(x):
    meter.sum += x.sum()  # an outside tensor updated in place
    meter.count += x.size(0)  # a followed size stored into an outside object
    return x * 2
"""


@backends()
def test_a_size_stored_next_to_an_in_place_update(backend):
    # F342 (the ImageNet example's AverageMeter with a smaller last batch): looking
    # for views in the stored size walked fullgraph's own SizeInt into the monitor's
    # internals until the recursion limit; every later call ran eagerly.
    batch = lambda n: lambda env: (torch.randn(n, 3),)
    script = [Call(batch(n)) for n in (8, 8, 8, 5, 8, 8, 6, 8)]
    watch = lambda env: (env.ns.meter.sum, env.ns.meter.count)
    case = Case("size_stored", prog(SIZE_STORED_NEXT_TO_AN_UPDATE), script, min_hits=4, watch=watch)
    run_case(case, backend)
