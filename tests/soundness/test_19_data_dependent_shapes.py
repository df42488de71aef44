"""Class 19: ops whose output sizes depend on data, kept inside the graph.

``nonzero``, ``x[mask]``, ``masked_select``, ``unique``, ``torch.where(cond)``
stay graph nodes with an unbacked size (capture/data_dependent.py) while no
Python reads those sizes.  Each case calls a fresh eager twin and the compiled
one several times with data that selects a different number of rows each time
(none at all included), and compares outputs, gradients and printed output.
Where Python does read such a size (``idx.shape[0]``, ``len``, ``numel()``,
iterating) or the tensor crosses a graph break, the record must still be
right: the read is a callout the record checks, or the ops go back to running
between graphs.
"""

from __future__ import annotations

import torch
from harness import Call, Case, backends, calls, program_env, run_case

import fullgraph.runtime as fr

SCATTER = """
import torch

torch.manual_seed(0)
encode = torch.nn.Linear(3, 4)

def forward(occupancy, points):
    idx = torch.nonzero(occupancy.flatten()).squeeze(1)
    feats = encode(points.flatten(0, 1)[idx])
    grid = feats.new_zeros(occupancy.numel(), 4).index_add(0, idx, feats)
    return grid.view(*occupancy.shape, 4).sum(dim=(0, 1))
"""


def _occupancy(env):
    occupancy = torch.rand(3, 4) > torch.rand(())  # from none to all cells occupied
    return occupancy, torch.randn(3, 4, 3)


def _empty(env):
    return torch.zeros(3, 4, dtype=torch.bool), torch.randn(3, 4, 3)


@backends(inductor=True)
def test_nonzero_gather_scatter_is_one_graph_for_any_count(backend):
    run_case(
        Case(
            "nonzero_scatter",
            lambda: program_env(SCATTER, "forward"),
            [*calls(3, _occupancy), Call(_empty), *calls(2, _occupancy)],
            min_hits=4,
            max_monitor_runs=1,
        ),
        backend,
    )


def test_nonzero_gather_scatter_has_no_break():
    ns = program_env(SCATTER, "forward").ns
    report = fr.explain(ns.forward, *_occupancy(None))
    assert len(report.graphs) == 1 and not report.breaks, report.breaks
    assert "nonzero" in report.graphs[0]["code"]


MASKED_MEAN_TRAINING = """
import torch

torch.manual_seed(0)
w = torch.nn.Parameter(torch.randn(4))

def step(x, valid):
    pred = x @ w
    loss = (pred[valid] - 1.0).pow(2).sum() / (valid.sum() + 1)
    loss.backward()
    return loss.detach()
"""


@backends(inductor=True)
def test_masked_loss_gradients_for_any_mask(backend):
    def args(env):
        return torch.randn(6, 4), torch.rand(6) > 0.5

    run_case(
        Case(
            "masked_loss_training",
            lambda: program_env(MASKED_MEAN_TRAINING, "step"),
            calls(5, args),
            watch=lambda env: env.ns.w.grad,
            min_hits=3,
        ),
        backend,
    )


SELECT_AND_WHERE = """
import torch

def forward(scores, boxes):
    keep = torch.where(scores > 0.3)[0]
    picked = torch.masked_select(scores, scores > 0.3)
    kinds = torch.unique(boxes.argmax(dim=1))
    return boxes[keep].sum(0), picked.sum(), kinds.float().mean()
"""


@backends()
def test_where_masked_select_and_unique(backend):
    def args(env):
        return torch.rand(8), torch.randn(8, 4)

    run_case(
        Case(
            "where_select_unique",
            lambda: program_env(SELECT_AND_WHERE, "forward"),
            calls(5, args),
            min_hits=3,
            max_monitor_runs=1,
        ),
        backend,
    )


SIZE_READ = """
import torch

def forward(x, mask):
    rows = x[mask]
    n = rows.shape[0]                   # Python reads a size the data decides
    if n == 0:
        return x.sum() * 0.0, 0
    return rows.sum() / n, len(rows)
"""


@backends()
def test_a_size_python_reads_is_checked(backend):
    def args(env):
        return torch.randn(5, 3), torch.rand(5) > 0.5

    def none(env):
        return torch.randn(5, 3), torch.zeros(5, dtype=torch.bool)

    run_case(
        Case(
            "size_read",
            lambda: program_env(SIZE_READ, "forward"),
            [*calls(3, args), Call(none), *calls(2, args)],
        ),
        backend,
    )


ITERATE_AND_BREAK = """
import torch

def forward(x, mask):
    idx = torch.nonzero(mask).squeeze(1)
    total = x.new_zeros(())
    for i in idx:                        # as many iterations as the data says
        total = total + x[i].sum()
    print("picked", int(mask.sum()))
    return total + idx.float().sum()     # used after the print: a graph break
"""


@backends()
def test_iterating_and_crossing_a_break(backend):
    def args(env):
        return torch.randn(5, 2), torch.rand(5) > 0.5

    run_case(
        Case(
            "iterate_and_break",
            lambda: program_env(ITERATE_AND_BREAK, "forward"),
            calls(5, args),
        ),
        backend,
    )


CENTERS = """
import torch

torch.manual_seed(0)
embed = torch.nn.Linear(5, 3)

def forward(x, labels):
    z = embed(x)
    classes, inverse = torch.unique(labels, return_inverse=True)
    sums = z.new_zeros(classes.shape[0], z.shape[1]).index_add(0, inverse, z)
    counts = torch.bincount(inverse, minlength=classes.shape[0]).clamp(min=1)
    centers = sums / counts.unsqueeze(1)
    return ((z - centers[inverse]) ** 2).sum(dim=1).mean()
"""


@backends()
def test_unique_with_its_size_read(backend):
    def args(env):
        return torch.randn(6, 5), torch.randint(0, 4, (6,))

    run_case(
        Case("unique_centers", lambda: program_env(CENTERS, "forward"), calls(6, args)),
        backend,
    )


LEN_OF_VARYING_BATCH = """
import torch

def forward(x):
    n = len(x)                      # F73: len() made a followed size a plain int
    return x.sum(0) / n, n
"""


@backends()
def test_len_of_a_tensor_whose_size_varies(backend):
    """F73: with sizes followed, ``len(x)`` was baked into the size-generic record."""
    run_case(
        Case(
            "len_of_varying_batch",
            lambda: program_env(LEN_OF_VARYING_BATCH, "forward"),
            [Call(lambda env, b=b: (torch.randn(b, 3),)) for b in (2, 3, 4, 5, 6, 4)],
            min_hits=3,
        ),
        backend,
    )
