"""Mid-guards: the checks a mock makes after a callout before it goes on.

A callout's result decides what the rest of the record did (a tensor's
metadata, a literal, the exception it raised); the mock checks it right after
the call and misses when it differs (``record/mock.py`` places the checks).
"""

from __future__ import annotations

from typing import Any

import torch

from fullgraph.runtime import breaks
from fullgraph.runtime.capture.segments import Unsupported
from fullgraph.runtime.capture.tape import GraphTape
from fullgraph.runtime.monitor.cached_calls import from_cache
from fullgraph.runtime.monitor.changed_arguments import ItemsAfter
from fullgraph.runtime.record.codegen import Namespace, is_literal, literal
from fullgraph.runtime.record.guards import IDENTITY_CHECKED, tensor_check
from fullgraph.runtime.record.mock_support import Raised, exception_fields


def needs_midguard(callout) -> bool:
    """Whether the mock checks something after the callout before going on: its
    result, conditions on it, or (a cached call) that the cache held it."""
    return callout.guard_result or bool(callout.conditions) or is_cached_call(callout)


def is_cached_call(callout) -> bool:
    """A call of an ``lru_cache`` wrapper, made through ``from_cache``: the mock misses
    when the cache did not hold it (``monitor/cached_calls.py``)."""
    return callout.function is from_cache


def midguard(callout, ns: Namespace, tape: GraphTape) -> str:
    """The check of the callout's result the replay must pass to go on."""
    name = f"c{callout.index}"
    value = callout.result
    if isinstance(value, torch.Tensor):
        # In a size-generic record the sizes of a callout's tensor are symbols too.
        dims = tape.varying_dims(value) if tape.generic_sizes else frozenset()
        return tensor_check(name, callout.result_meta.get(id(value)) or value, ns, dims)
    if isinstance(value, Raised):
        error = value.error
        kind = ns.bind(type(error), type(error).__name__)
        fields = exception_fields(error)
        extra = f", {literal(fields)}" if fields else ""
        return f"raised_as({name}, {kind}, {literal(error.args)}{extra})"
    if value is None or isinstance(value, bool):
        return f"{name} is {value!r}"
    if isinstance(value, ItemsAfter):  # what random.shuffle left in a list the function made
        return f"{name} == {literal(tuple(value))}"
    if is_literal(value):
        return f"type({name}) is {type(value).__name__} and {name} == {literal(value)}"
    if isinstance(value, IDENTITY_CHECKED):  # a function looked up in a registry
        return f"{name} is {ns.bind(value, constant_hint(value))}"
    if type(value) in (tuple, list) and all(
        item is None or isinstance(item, torch.Tensor) for item in value
    ):  # torch.autograd.grad's tuple of gradients
        checks = [f"type({name}) is {type(value).__name__}", f"len({name}) == {len(value)}"]
        for position, item in enumerate(value):
            if item is None:
                checks.append(f"{name}[{position}] is None")
            else:
                dims = tape.varying_dims(item) if tape.generic_sizes else frozenset()
                meta = callout.result_meta.get(id(item)) or item
                checks.append(tensor_check(f"{name}[{position}]", meta, ns, dims))
        return " and ".join(checks)
    raise Unsupported(
        breaks.UNSUPPORTED_CONSTRUCT,
        f"{callout.function_name} returned a {type(value).__name__} the rest of the run reads",
    )


def constant_hint(value: Any) -> str:
    return getattr(value, "__name__", None) or type(value).__name__.lower()
