"""Class 70: numbers that vary, inside containers inside containers.

Found by the sixteenth session's probe of realistic programs (F294): a number
that varies between calls (an argument, a global, a ``random`` draw, a value read
from a tensor) put into a container that is itself put into another one
(``[[token]]``, ``[(n, 1)]``, ``[{"a": n}]``) and read there by C code
(``torch.tensor``, indexing, ``one_hot``, ``print``, ``str``, ``sum``): the outer
container had no symbols for the inner one's items, so the read took them as the
recorded call's numbers and replays kept them — the GPT-2 tutorial's greedy
``generate`` (``torch.cat([ids, torch.tensor([[next_id]])], 1)``) repeated the
first call's tokens.  A container put into another one has its varying items
guarded by value.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
from harness import Call, Case, backends, calls, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="nested70")

GREEDY_GENERATE = """
import torch
import torch.nn as nn

torch.manual_seed(0)
emb = nn.Embedding(7, 8)
head = nn.Linear(8, 7)
EOS = 2

@torch.no_grad()
def generate(ids):
    for _ in range(4):
        logits = head(emb(ids).cumsum(1))
        next_id = int(logits[0, -1].argmax())
        ids = torch.cat([ids, torch.tensor([[next_id]])], dim=1)
        if next_id == EOS:
            break
    return ids
"""


@backends()
def test_greedy_decoding_with_a_nested_token_list(backend):
    script = calls(10, lambda env: (torch.randint(0, 7, (1, 3)),))
    build = shared_prog(GREEDY_GENERATE, target="generate", name="nested70g")
    run_case(Case("greedy_generate", build, script, min_hits=3), backend)


NESTED_READS = {
    "tensor_of_rows": "return torch.tensor([[n]]) + x",
    "tensor_of_pairs": "return torch.tensor([(n, 1)]) * x[:2]",
    "index_with_nested_list": "return x[[[n % 3, 0]]]",
    "one_hot_of_nested": "return torch.nn.functional.one_hot(torch.tensor([[n % 3]]), 3) + x",
    "printed": "print([{'a': n}], [[n]]); return x",
    "formatted": "return x, str([[n]]), f'{[(n, 2)]}'",
    "summed": "return x + sum(sum([[n], [1]], []))",
    "stored_then_read": "rows = {}; rows['r'] = [n]; print(rows); return x",
}


@pytest.mark.parametrize("name", sorted(NESTED_READS))
def test_a_varying_number_read_through_a_nested_container(name):
    source = f"import torch\n\ndef f(x, n):\n    {NESTED_READS[name]}\n"
    script = [Call(lambda env, n=n: (torch.ones(3), n)) for n in (1, 2, 4, 4, 5, 5, 7)]
    run_case(Case(name, prog(source), script, min_hits=2), "eager")


RANDOM_ROTATION = """
import math
import random
import torch
import torch.nn.functional as F

max_deg = 30.0

def f(img):
    a = math.radians(random.uniform(-max_deg, max_deg))
    theta = torch.tensor(
        [[math.cos(a), -math.sin(a), 0.0], [math.sin(a), math.cos(a), 0.0]], dtype=img.dtype
    ).unsqueeze(0)
    grid = F.affine_grid(theta, img.unsqueeze(0).shape, align_corners=False)
    return F.grid_sample(img.unsqueeze(0), grid, align_corners=False)[0]
"""


def test_a_rotation_matrix_built_from_a_random_angle():
    script = calls(6, lambda env: (torch.arange(36.0).view(1, 6, 6),))
    run_case(Case("random_rotation", prog(RANDOM_ROTATION), script), "eager")
