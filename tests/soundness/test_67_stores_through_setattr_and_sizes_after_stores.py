"""Class 67: stores through a class's own ``__setattr__``; sizes read after a store.

Found by the fifteenth session's probe of transformers usage (F285, F286):

- ``self.config.problem_type = ...`` inside a model's forward (83 transformers
  models do it): the config's class has its own ``__setattr__``, which calls
  ``super().__setattr__(k, v)``, a bound method-wrapper the monitor took for the
  unbound ``object.__setattr__(self, k, v)``: no store was recorded, so replays
  left the attribute as the caller had set it.
- ``layer.keys = torch.cat([layer.keys, x]); ...; return layer.keys.shape[0]`` in a
  size-generic record whose mock makes a call after the store: the size was read
  through the path after the mock's store had replaced the tensor (off by the
  growth: a cache's ``get_seq_length()``).
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="stores67")

OWN_SETATTR = """
import torch

class Config:
    def __setattr__(self, key, value):
        super().__setattr__(key, value)

config = Config()
config.problem_type = None

def f(x):
    if config.problem_type is None:
        config.problem_type = "single_label"
    return x + 1
"""


@backends()
def test_a_store_through_a_classs_own_setattr(backend):
    reset = execg("config.problem_type = None")
    script = [Call(lambda env: (torch.ones(2),)), reset, *calls(2, lambda env: (torch.ones(2),))]
    script += [reset, Call(lambda env: (torch.ones(2),))]
    watch = lambda env: env.ns.config.problem_type
    run_case(Case("own_setattr", prog(OWN_SETATTR), script, min_hits=2, watch=watch), backend)


SIZE_AFTER_STORE = """
import functools
import torch

@functools.lru_cache(None)
def warn_once(message):
    return None

class Layer:
    def __init__(self):
        self.keys = torch.zeros(0, 2)

layer = Layer()

def f(x, layer):
    layer.keys = torch.cat([layer.keys, x], 0)
    warn_once("deprecated")
    return layer.keys.shape[0]
"""


@backends()
def test_a_size_read_after_the_mock_stores_over_its_path(backend):
    watch = lambda env: env.ns.layer.keys
    script = calls(6, lambda env: (torch.ones(1, 2), env.ns.layer))
    run_case(
        Case("size_after_store", prog(SIZE_AFTER_STORE), script, min_hits=2, watch=watch), backend
    )
