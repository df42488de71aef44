"""A path run's writes into memory it did not allocate, stopped before they happen.

The torch-function mode sees calls such as ``F.batch_norm(x, mean, var,
training=True)``, ``F.embedding(ids, w, max_norm=1.0)``, ``torch._foreach_add_(
bufs, 1)`` or ``x.view(-1).mul_(0)``, but not that they write into a tensor from
outside the call (the running statistics, the weight, a list of buffers, the
memory ``x`` shares with its view).  Below autograd every operation is an aten
op whose schema marks the arguments it writes (``Tensor(a!)``), so a dispatch
mode checks them: while a path of data-dependent branches runs speculatively
(``monitor/branch_exploration.py``), an op about to write memory that no op of
this path allocated raises :class:`SpeculationBlocked` instead.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from fullgraph.runtime.capture.data_checks import storage_key
from fullgraph.runtime.monitor.speculation import SpeculationBlocked
from fullgraph.runtime.torch_internals import tree_flatten

_RUNNING_STATS = ("running_mean", "running_var")


class OutsideWrites(TorchDispatchMode):
    def __init__(self, run: Any):
        super().__init__()
        self.run = run
        self.fresh: set[int | None] = {0}  # storages this path allocated (0: no memory)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        schema = func._schema
        values = {
            argument.name: args[position] if position < len(args) else kwargs.get(argument.name)
            for position, argument in enumerate(schema.arguments)
        }
        for argument in schema.arguments:
            written = argument.alias_info is not None and argument.alias_info.is_write
            # ``native_batch_norm`` updates the running statistics its schema does not mark.
            written = written or (
                argument.name in _RUNNING_STATS and values.get("training") is True
            )
            if not written:
                continue
            for tensor in _tensors(values[argument.name]):
                if storage_key(tensor) not in self.fresh:
                    what = f"writes into a tensor from before it ({func.name()})"
                    self.run.speculation_problem = self.run.speculation_problem or what
                    raise SpeculationBlocked(what)
        result = func(*args, **kwargs)
        returns = schema.returns
        outputs = result if isinstance(result, (tuple, list)) else (result,)
        for position, output in enumerate(outputs):
            aliases = position < len(returns) and returns[position].alias_info is not None
            if not aliases:  # new memory (a view or an in-place result keeps its input's)
                self.fresh.update(storage_key(t) for t in _tensors(output))
        return result


def _tensors(value: Any) -> list[torch.Tensor]:
    return [leaf for leaf in tree_flatten(value)[0] if isinstance(leaf, torch.Tensor)]
