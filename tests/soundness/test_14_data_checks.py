"""Class 14: value reads run as data checks in front of the graph.

A ``bool(t)`` / ``t.item()`` / ``t.tolist()`` whose tensor comes from the
call's inputs through a few pure ops runs before the graph instead of
splitting it (runtime/capture/data_checks.py).  These cases change the data the read
decides on between calls (in place too, so no metadata guard can notice), and
put in the slice what must keep the read where it is: an in-place update
before the read, a random op, a lifted global, sizes that vary.
"""

from __future__ import annotations

import torch
from harness import Call, Case, Do, backends, calls, program_env, run_case

MASK_SKIP = """
import torch

def attend(x, mask):
    # transformers' masking code: skip the mask when nothing is padded
    if mask.to(torch.bool).all():
        return torch.softmax(x, dim=-1)
    return torch.softmax(x.masked_fill(~mask.bool(), -1e9), dim=-1)
"""


def full_mask(env):
    return torch.randn(2, 5), torch.ones(2, 5, dtype=torch.long)


def padded_mask(env):
    mask = torch.ones(2, 5, dtype=torch.long)
    mask[1, 3:] = 0
    return torch.randn(2, 5), mask


@backends(inductor=True)
def test_padding_mask_skip_follows_the_data(backend):
    run_case(
        Case(
            "padding_mask_skip",
            lambda: program_env(MASK_SKIP, "attend"),
            [
                *calls(3, full_mask),
                *calls(2, padded_mask),
                *calls(2, full_mask),
                *calls(2, padded_mask),
            ],
            min_hits=6,
            max_monitor_runs=2,
        ),
        backend,
    )


IN_PLACE_MASK = """
import torch

mask = torch.ones(4, dtype=torch.bool)

def gate(x):
    if mask.all():
        return x * 2
    return x * mask
"""


def test_mask_global_updated_in_place_between_calls():
    # Same tensor object, same metadata: only the data check can tell the paths apart.
    def pad(env):
        env.ns.mask[2] = False

    def unpad(env):
        env.ns.mask.fill_(True)

    run_case(
        Case(
            "mask_global_in_place",
            lambda: program_env(IN_PLACE_MASK, "gate"),
            [
                *calls(2, lambda env: (torch.randn(4),)),
                Do(pad, "mask[2] = False"),
                *calls(2, lambda env: (torch.randn(4),)),
                Do(unpad, "mask.fill_(True)"),
                *calls(2, lambda env: (torch.randn(4),)),
            ],
            min_hits=3,
        ),
        "eager",
    )


UPDATED_BEFORE_READ = """
import torch

def shifted(x):
    y = x * 1.0
    y.sub_(5.0)              # the read below must see this update
    if (y > 0).all():
        return y + 1
    return y - 1
"""


UPDATED_INPUT_BEFORE_READ = """
import torch

def flip_then_test(x):
    x.mul_(-1)               # the program's own update of its argument
    if x.sum() > 0:
        return x * 2
    return x * 3
"""

VIEW_UPDATED_BEFORE_READ = """
import torch

def zero_row_then_test(x):
    x[0].zero_()             # through a view of the argument
    if x.any():
        return x + 1
    return x - 1
"""


def positive(env):
    return (torch.rand(3) + 0.5,)


def negative(env):
    return (-torch.rand(3) - 0.5,)


def big(env):
    return (torch.rand(3) + 6.0,)


def test_update_before_the_read_keeps_it_in_place():
    run_case(
        Case(
            "updated_before_read",
            lambda: program_env(UPDATED_BEFORE_READ, "shifted"),
            [*calls(2, positive), *calls(2, big), *calls(2, positive)],
        ),
        "eager",
    )


def test_input_updated_before_the_read():
    run_case(
        Case(
            "input_updated_before_read",
            lambda: program_env(UPDATED_INPUT_BEFORE_READ, "flip_then_test"),
            [*calls(2, positive), *calls(2, negative), *calls(2, positive)],
        ),
        "eager",
    )


def test_view_of_input_updated_before_the_read():
    def rows(values):
        return lambda env: (values.clone(),)

    run_case(
        Case(
            "view_updated_before_read",
            lambda: program_env(VIEW_UPDATED_BEFORE_READ, "zero_row_then_test"),
            [
                *calls(2, rows(torch.tensor([[1.0, 2.0], [0.0, 0.0]]))),
                *calls(2, rows(torch.tensor([[1.0, 2.0], [3.0, 0.0]]))),
                *calls(2, rows(torch.tensor([[1.0, 2.0], [0.0, 0.0]]))),
            ],
        ),
        "eager",
    )


RANDOM_IN_SLICE = """
import torch

def maybe_drop(x):
    keep = torch.rand(x.shape[0]) > 0.5     # drawn once per call, not twice
    if keep.any():
        return x * keep
    return x
"""


@backends(inductor=True)
def test_random_op_in_the_slice(backend):
    run_case(
        Case(
            "random_in_slice",
            lambda: program_env(RANDOM_IN_SLICE, "maybe_drop"),
            calls(6, lambda env: (torch.randn(2),)),
        ),
        backend,
    )


ITEM_INTO_GRAPH = """
import torch

def normalize(x, y):
    peak = x.abs().max().item()      # a Python float computed from the input
    return y / (peak + 1.0)
"""


def test_item_value_flows_into_the_graph():
    run_case(
        Case(
            "item_into_graph",
            lambda: program_env(ITEM_INTO_GRAPH, "normalize"),
            calls(5, lambda env: (torch.randn(4) * 3, torch.randn(4))),
        ),
        "eager",
    )


READ_AND_USED = """
import torch

def count_and_scale(x, mask):
    present = mask.any()
    if present:
        return x * present + mask.sum()     # the tensor the read took is used again
    return x
"""


def test_read_tensor_is_also_used_by_the_graph():
    def masks(values):
        return lambda env: (torch.randn(3), torch.tensor(values))

    run_case(
        Case(
            "read_and_used",
            lambda: program_env(READ_AND_USED, "count_and_scale"),
            [
                *calls(2, masks([True, False, True])),
                *calls(2, masks([False, False, False])),
                *calls(2, masks([False, True, False])),
            ],
            min_hits=3,
        ),
        "eager",
    )


GLOBAL_THRESHOLD = """
import torch

THRESHOLD = 0.0

def clip_if_large(x):
    if (x > THRESHOLD).all():
        return x.clamp(max=1.0)
    return x
"""


def test_global_threshold_in_the_slice_changes():
    def raise_threshold(env):
        env.ns.THRESHOLD = 10.0

    def lower_threshold(env):
        env.ns.THRESHOLD = -10.0

    run_case(
        Case(
            "global_threshold",
            lambda: program_env(GLOBAL_THRESHOLD, "clip_if_large"),
            [
                *calls(2, positive),
                Do(raise_threshold, "THRESHOLD = 10"),
                *calls(2, positive),
                Do(lower_threshold, "THRESHOLD = -10"),
                *calls(2, negative),
            ],
        ),
        "eager",
    )


PRINT_AROUND_CHECK = """
import torch

def logged(x, mask):
    h = x * 2
    print("start", h.shape)
    if mask.all():
        out = h + 1
    else:
        out = h - 1
    print("done")
    return out
"""


def test_prints_around_the_check_keep_their_order_and_count():
    def mask(values):
        return lambda env: (torch.randn(3), torch.tensor(values))

    run_case(
        Case(
            "print_around_check",
            lambda: program_env(PRINT_AROUND_CHECK, "logged"),
            [
                *calls(2, mask([True, True, True])),
                *calls(2, mask([True, False, True])),
                *calls(2, mask([True, True, True])),
            ],
            min_hits=3,
        ),
        "eager",
    )


def test_sizes_that_vary_with_a_data_check():
    def batch(rows, padded):
        def make(env):
            mask = torch.ones(rows, 6, dtype=torch.long)
            if padded:
                mask[0, 4:] = 0
            return torch.randn(rows, 6), mask

        return make

    run_case(
        Case(
            "sizes_vary_with_check",
            lambda: program_env(MASK_SKIP, "attend"),
            [
                Call(batch(2, False)),
                Call(batch(3, False)),
                Call(batch(4, False)),
                Call(batch(5, True)),
                Call(batch(6, True)),
                Call(batch(7, False)),
            ],
        ),
        "eager",
    )


def test_grad_mode_changes_around_a_data_check():
    def grad_input(env):
        return (torch.randn(3, requires_grad=True), torch.tensor([True, True, False]))

    run_case(
        Case(
            "grad_mode_with_check",
            lambda: program_env(READ_AND_USED, "count_and_scale"),
            [
                *calls(2, grad_input),
                *calls(2, grad_input, context=lambda env: torch.no_grad()),
                *calls(2, grad_input),
            ],
        ),
        "eager",
    )


TOGGLE_THEN_READ = """
import torch

def toggle(x, flag):
    flag.logical_not_()      # updates the very tensor the read takes
    if flag:
        return x + 1
    return x - 1
"""


def test_read_of_an_input_the_segment_updated_waits_for_the_update():
    def flag(value):
        return lambda env: (torch.zeros(2), torch.tensor(value))

    run_case(
        Case(
            "toggle_then_read",
            lambda: program_env(TOGGLE_THEN_READ, "toggle"),
            [*calls(2, flag(True)), *calls(2, flag(False)), *calls(2, flag(True))],
        ),
        "eager",
    )
