"""Copies and pickles of a compiled callable (``copy.deepcopy(compiled_model)``)."""

from __future__ import annotations

import copy
import pickle

import torch

import fullgraph.runtime as fr


def test_deepcopy_after_calls_copies_the_model_and_starts_fresh():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    compiled = fr.compile(model, backend="eager", eager_check=False)
    x = torch.randn(4, 3)
    compiled(x), compiled(x)
    twin = copy.deepcopy(compiled)
    assert twin.module is not model and twin.records == []
    with torch.no_grad():
        twin.module.weight.add_(1.0)  # the copy's parameters are its own
    assert torch.equal(compiled(x), model(x))
    assert torch.equal(twin(x), twin.module(x))
    assert not torch.equal(twin(x), compiled(x))
    assert twin.backend_name == "eager" and twin.stats.hits == 1


def test_pickle_round_trip_of_a_compiled_module():
    model = torch.nn.Linear(3, 2)
    compiled = fr.compile(model, backend="eager", eager_check=False)
    x = torch.randn(2, 3)
    compiled(x)
    restored = pickle.loads(pickle.dumps(compiled))
    assert torch.equal(restored(x), compiled(x))
