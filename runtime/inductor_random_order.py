"""Keep random draws in program order inside Inductor graphs (torch before 2.13).

fullgraph compiles with Inductor's ``fallback_random``: each random op is a call of
eager's kernel on torch's own generator, so a replay draws eager's numbers, but
only if the compiled code makes the draws in the program's order.  torch 2.13
guarantees that (``post_grad._chain_random_ops_for_ordering`` and guards in the
passes below); torch 2.11 and 2.12 do not, and three of their passes move two
draws that no data edge orders:

- ``post_grad.reorder_for_locality`` (inference graphs) moves a node to just
  before its first user, so ``a = randn(4); w = randn(4); return w, a`` draws
  ``w`` first;
- ``memory.reorder_for_peak_memory`` (the scheduler) reorders kernels for memory;
- ``post_grad.move_constructors_to_gpu`` moves a CPU ``randn`` whose users are on
  the GPU to the GPU, where it draws from the CUDA generator instead.

:func:`install` wraps each of them, once per process and only on such a torch:
when ``fallback_random`` is on and the graph draws random numbers, the pass is
skipped (what 2.13 does for those nodes, made coarser).  Compiles without
``fallback_random`` (the user's own ``torch.compile``) run the passes unchanged.
"""

from __future__ import annotations

import functools

import torch


def _draws(target) -> bool:
    return isinstance(target, torch._ops.OpOverload) and (
        torch.Tag.nondeterministic_seeded in target.tags
    )


def _graph_draws(graph: torch.fx.Graph) -> bool:
    return any(node.op == "call_function" and _draws(node.target) for node in graph.nodes)


def _scheduler_nodes_draw(nodes) -> bool:
    for node in nodes:
        get_origins = getattr(node, "get_origins", None)
        if get_origins is None:  # a node kind without origins: assume it may draw
            return True
        if any(_draws(getattr(origin, "target", None)) for origin in get_origins()):
            return True
    return False


def needed() -> bool:
    """Whether this torch's Inductor may reorder random draws (before 2.13)."""
    from torch._inductor.fx_passes import post_grad

    return not hasattr(post_grad, "_chain_random_ops_for_ordering")


def _skipped_when(draws):
    """Wrap a pass so that it returns its input unchanged where ``draws`` says the
    graph draws random numbers under ``fallback_random``."""

    def wrap(original):
        @functools.wraps(original)
        def ordered(subject, *args, **kwargs):
            from torch._inductor import config

            if config.fallback_random and draws(subject):
                return subject if isinstance(subject, list) else None
            return original(subject, *args, **kwargs)

        ordered.__fullgraph_random_order__ = True
        return ordered

    return wrap


def options(draws_random: bool) -> dict:
    """Inductor options under which a graph draws eager's numbers in eager's order.

    On a torch before 2.13 a graph that draws also turns the two reordering passes
    off by their options: the wrapped passes would skip them anyway, but options
    are part of the key of Inductor's on-disk cache, so a graph compiled (wrongly)
    before this fix is compiled again instead of loaded.
    """
    install()
    chosen = {"fallback_random": True}
    if draws_random and needed():
        chosen.update(reorder_for_locality=False, reorder_for_peak_memory=False)
    return chosen


@functools.cache
def install() -> bool:
    """Wrap the reordering passes of a torch that lacks 2.13's ordering; returns
    whether it did."""
    if not needed():
        return False
    from torch._inductor import memory
    from torch._inductor.fx_passes import post_grad

    on_graph = _skipped_when(_graph_draws)
    for name in ("reorder_for_locality", "move_constructors_to_gpu"):
        original = getattr(post_grad, name, None)
        if original is not None and not hasattr(original, "__fullgraph_random_order__"):
            setattr(post_grad, name, on_graph(original))
    original = getattr(memory, "reorder_for_peak_memory", None)
    if original is not None and not hasattr(original, "__fullgraph_random_order__"):
        memory.reorder_for_peak_memory = _skipped_when(_scheduler_nodes_draw)(original)
    return True
