"""Class 53: data-dependent branches merged into one graph (monitor/branch_exploration.py).

A function whose only eager calls are ``bool(t)`` of tensors is run path by
path and recorded as one graph with ``torch.cond``.  What could go wrong: a
path the exploration never ran (its state read by nothing the guard checks),
a path that has an effect (a print, a store, a random draw) run early, a
gradient through the untaken branch (NaN from a division by zero), a path that
returns its input itself, a loop on data whose paths never end.  Each case
takes both outcomes over its calls and changes state between them; where the
merge must happen the case also asks for replays.
"""

from __future__ import annotations

import torch
from harness import Call, Case, backends, execg, prog, run_case

CLIP = """
import torch

torch.manual_seed(0)
fc = torch.nn.Linear(6, 6)
limit = 3.0

def f(x):
    h = fc(x)
    norm = h.norm()
    if norm > limit:
        h = h * (limit / (norm + 1e-6))
    return torch.tanh(h)
"""


def big(env):
    return (3.0 * torch.randn(2, 6),)


def small(env):
    return (0.05 * torch.randn(2, 6),)


@backends(inductor=True)
def test_clip_by_norm_both_paths_and_a_changed_limit(backend):
    script = [Call(big), Call(small), Call(big), Call(small), execg("limit = 0.01"), Call(small)]
    script += [Call(big), execg("fc.weight.data.mul_(0.5)"), Call(big), Call(small)]
    run_case(Case("clip_by_norm", prog(CLIP), script, min_hits=5, max_monitor_runs=2), backend)


MASKED_LOSS = """
import torch

torch.manual_seed(0)
fc = torch.nn.Linear(4, 2)

def f(x, target, valid):
    pred = fc(x)
    mask = valid.unsqueeze(-1).expand_as(pred).float()
    if mask.sum() > 0:
        loss = ((pred - target).abs() * mask).sum() / mask.sum()
    else:
        loss = pred.sum() * 0.0
    return loss
"""


def batch(valid_rows):
    def make(env):
        valid = torch.zeros(5, dtype=torch.bool)
        valid[:valid_rows] = True
        return torch.randn(5, 4), torch.randn(5, 2), valid

    return make


def backward(env, loss):
    loss.backward()


def grads(env):
    return {"w": env.ns.fc.weight.grad, "b": env.ns.fc.bias.grad}


@backends(inductor=True)
def test_masked_loss_gradients_through_both_paths(backend):
    # The untaken branch of an empty batch divides by zero: only the branch taken may
    # run (torch.cond), or the gradients are NaN.
    script = [Call(batch(n), then=backward) for n in (3, 0, 5, 0, 2)]
    script.insert(3, execg("fc.weight.grad = None"))
    case = Case("masked_loss_grads", prog(MASKED_LOSS), script, watch=grads, min_hits=3)
    run_case(case, backend)


EARLY_EXIT = """
import torch

torch.manual_seed(0)
layers = torch.nn.ModuleList(torch.nn.Linear(6, 6) for _ in range(3))
heads = torch.nn.ModuleList(torch.nn.Linear(6, 3) for _ in range(3))
threshold = 0.6

def f(x):
    logits = None
    for layer, head in zip(layers, heads):
        x = torch.relu(layer(x)) + x
        logits = head(x)
        conf = torch.softmax(logits, dim=-1).max(dim=-1).values
        if (conf > threshold).all():
            return logits
    return logits
"""


def scaled(scale):
    return lambda env: (scale * torch.randn(2, 6),)


@backends()
def test_early_exit_chain_of_branch_points(backend):
    script = [Call(scaled(s)) for s in (0.5, 8.0, 0.5, 2.0, 8.0, 0.5)]
    script += [execg("threshold = 0.99"), Call(scaled(8.0)), Call(scaled(0.5))]
    run_case(Case("early_exit", prog(EARLY_EXIT), script, min_hits=4), backend)


NAN_GUARD = """
import torch

torch.manual_seed(0)
fc = torch.nn.Linear(5, 4)

def f(x):
    logits = fc(x)
    if torch.isnan(logits).any():
        logits = torch.nan_to_num(logits, nan=0.0)
    logp = torch.log_softmax(logits, dim=-1)
    if logp.min() < -5.0:
        logp = logp.clamp(min=-5.0)
    return logp
"""


def with_nan(scale):
    def make(env):
        x = torch.randn(3, 5) * scale
        x[0, 0] = float("nan")
        return (x,)

    return make


def rows(scale):
    return lambda env: (scale * torch.randn(3, 5),)


@backends()
def test_two_sequential_branches_four_paths(backend):
    script = [Call(rows(s)) for s in (1.0, 10.0)] + [Call(with_nan(1.0)), Call(with_nan(10.0))]
    script += [Call(rows(1.0)), Call(with_nan(10.0)), Call(rows(10.0))]
    run_case(Case("nan_guard", prog(NAN_GUARD), script, min_hits=5), backend)


OTHER_PATH_STATE = """
import torch

class Gate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.extra = torch.nn.Linear(4, 4)
        self.scale = 2.0

    def forward(self, x):
        h = self.fc(x)
        if h.mean() > 0:
            return self.extra(h) * self.scale  # read only on this path
        return h - 1

torch.manual_seed(0)
model = Gate()
"""


def positive(env):
    return (torch.randn(3, 4).abs() * 4 + 2,)


def negative(env):
    return (-(torch.randn(3, 4).abs() * 4 + 2),)


def _first_positive_mean(env):
    # Make the data decide through the weights: a fixed linear map with bias.
    with torch.no_grad():
        env.ns.model.fc.weight.copy_(torch.eye(4))
        env.ns.model.fc.bias.zero_()


@backends()
def test_state_read_only_on_the_other_path_is_guarded(backend):
    from harness import Do

    script = [Do(_first_positive_mean, "identity weights"), Call(negative), Call(negative)]
    script += [execg("model.scale = 5.0"), Call(positive), Call(negative)]
    script += [execg("model.extra = torch.nn.Identity()"), Call(positive), Call(negative)]
    script += [execg("model.extra.training = False"), Call(positive)]
    case = Case("other_path_state", prog(OTHER_PATH_STATE, target="model"), script, min_hits=1)
    run_case(case, backend)


EFFECT_ON_ONE_PATH = """
import torch

torch.manual_seed(0)
fc = torch.nn.Linear(4, 4)
log = []

def f(x):
    h = fc(x)
    if h.mean() > 0:
        log.append(float(h.mean()))   # an effect on one path only
        print("positive")
        h = h * 2
    return h
"""

RANDOM_ON_ONE_PATH = """
import torch

torch.manual_seed(0)
fc = torch.nn.Linear(4, 4)

def f(x):
    h = fc(x)
    if h.mean() > 0:
        h = torch.nn.functional.dropout(h, 0.5, training=True)
    return h * 3
"""

RAISES_ON_ONE_PATH = """
import torch

torch.manual_seed(0)
fc = torch.nn.Linear(4, 4)

def f(x):
    h = fc(x)
    if torch.isnan(h).any():
        raise ValueError("NaN in the activations")
    return h.relu()
"""

RETURNS_ITS_INPUT = """
import torch

def f(x):
    if x.sum() > 0:
        return x * 2
    return x
"""

LOOP_ON_DATA = """
import torch

def f(x):
    while x.norm() > 1.0:
        x = x / 2
    return x + 1
"""


def shifted(shift):
    return lambda env: (torch.randn(3, 4) + shift,)


def nan_input(env):
    x = torch.randn(3, 4)
    x[1, 1] = float("nan")
    return (x,)


@backends()
def test_paths_that_cannot_merge_still_give_eager_results(backend):
    mixed = [Call(shifted(s)) for s in (-3.0, 3.0, -3.0, 3.0, -3.0)]
    run_case(Case("effect_on_one_path", prog(EFFECT_ON_ONE_PATH), mixed), backend)
    run_case(Case("random_on_one_path", prog(RANDOM_ON_ONE_PATH), mixed), backend)
    raising = [Call(shifted(0.0)), Call(nan_input), Call(shifted(0.0)), Call(shifted(1.0))]
    run_case(Case("raises_on_one_path", prog(RAISES_ON_ONE_PATH), raising), backend)
    run_case(Case("returns_its_input", prog(RETURNS_ITS_INPUT), mixed), backend)
    loop = [Call(shifted(s)) for s in (0.0, 5.0, 0.0, 20.0)]
    run_case(Case("loop_on_data", prog(LOOP_ON_DATA), loop), backend)


GRAD_MODES = """
import torch

torch.manual_seed(0)
fc = torch.nn.Linear(4, 4)

def f(x):
    h = fc(x)
    if h.mean() > 0:
        h = h.sigmoid()
    return h.sum(-1)
"""


@backends()
def test_merged_record_under_changing_grad_mode_and_autocast(backend):
    script = [
        Call(shifted(3.0)),
        Call(shifted(-3.0)),
        Call(shifted(3.0), context=lambda env: torch.no_grad()),
    ]
    script += [Call(shifted(-3.0), context=lambda env: torch.autocast("cpu", dtype=torch.bfloat16))]
    script += [Call(shifted(-3.0)), Call(shifted(3.0))]
    run_case(Case("grad_modes", prog(GRAD_MODES), script, min_hits=2), backend)


# -- Paths the data does not take must change nothing (found by the adversarial probe) --

UNTAKEN_PATH_EFFECTS = {
    "view_of_an_outside_tensor_updated": """
import torch
buf = torch.ones(3)

def f(x):
    if x.sum() > 0:
        return x * 2
    buf.view(-1).mul_(0)
    return x * 3
""",
    "running_stats_updated_inside_an_op": """
import torch
import torch.nn.functional as F
mean, var = torch.zeros(3), torch.ones(3)

def f(x):
    if x.sum() > 0:
        return x * 2
    return F.batch_norm(x.unsqueeze(0).repeat(2, 1), mean, var, training=True).sum(0)
""",
    "outside_list_extended_in_place": """
import torch
history = []

def f(x):
    if x.sum() > 0:
        return x * 2
    global history
    history += [1]
    return x * 3
""",
    "outside_iterator_advanced": """
import torch
import itertools
counter = itertools.count()

def f(x):
    if x.sum() > 0:
        return x * 2
    return x * next(counter)
""",
    "outside_counter_updated": """
import collections
import torch
seen = collections.Counter()

def f(x):
    if x.sum() > 0:
        return x * 2
    seen.update("n")
    return x * 3
""",
    "outside_generator_drawn": """
import torch
gen = torch.Generator().manual_seed(0)

def f(x):
    if x.sum() > 0:
        return x * 2
    return x + torch.rand(3, generator=gen)
""",
    "outside_objects_returned": """
import torch
pos, neg = [], []

def f(x):
    if x.sum() > 0:
        return x * 2, pos
    return x * 3, neg
""",
    "grad_mode_switched_off": """
import torch

def f(x):
    if x.sum() > 0:
        return x * 2
    torch.set_grad_enabled(False)
    return x * 3
""",
    "default_dtype_changed": """
import torch

def f(x):
    if x.sum() > 0:
        return x * 2
    torch.set_default_dtype(torch.float64)
    return x * 3
""",
    "anomaly_detection_on": """
import torch

def f(x):
    if x.sum() > 0:
        return x * 2
    torch.autograd.set_detect_anomaly(True)
    return x * 3
""",
    "library_warning": """
import torch

def f(x):
    if x.sum() > 0:
        return x * 2
    a, b = torch.meshgrid(x, x)
    return a[0] + b[0]
""",
    "defaultdict_missing_key": """
import collections
import torch
seen = collections.defaultdict(float)

def f(x):
    if x.sum() > 0:
        return x * 2
    return x * seen["neg"]
""",
    "numpy_fill": """
import numpy as np
import torch
history = np.ones(3)

def f(x):
    if x.sum() > 0:
        return x * 2
    history.fill(5.0)
    return x * 3
""",
    "del_method": """
import torch
history = []

class Scratch:
    def __del__(self):
        history.append(1)

def f(x):
    if x.sum() > 0:
        return x * 2
    s = Scratch()
    return x * 3
""",
    "weakref_finalize": """
import weakref
import torch
history = []

class Scratch:
    pass

def f(x):
    if x.sum() > 0:
        return x * 2
    s = Scratch()
    weakref.finalize(s, history.append, 1)
    return x * 3
""",
    "flipped_outcome_no_data_takes": """
import torch

def f(x):
    y = x.abs() + 1
    if (y < 1).any():
        y = -y
    while (y < 0).any():
        y = y * 2
    return y
""",
}


def watch_globals(env):
    return {
        name: value
        for name, value in vars(env.ns).items()
        if name in ("buf", "mean", "var", "history", "seen", "pos", "neg")
    } | ({"gen": env.ns.gen.get_state()} if hasattr(env.ns, "gen") else {})


def ones(env):
    return (torch.ones(3),)


@backends()
def test_a_path_the_data_does_not_take_changes_nothing(backend):
    # The data takes the positive path every call; exploring the other one must not
    # make its effect (nor hang on an outcome no data can take).
    for name, source in UNTAKEN_PATH_EFFECTS.items():
        script = [Call(ones) for _ in range(4)]
        case = Case(name, prog(source), script, watch=watch_globals, compare_warnings=True)
        run_case(case, backend)


NEGATIVE_ZERO = """
import torch

def f(x):
    if x.sum() > 0:
        return x * 2, 0.0
    return x * 3, -0.0
"""


@backends()
def test_paths_returning_equal_but_different_numbers(backend):
    script = [Call(shifted(s)) for s in (3.0, -3.0, 3.0, -3.0)]
    run_case(Case("negative_zero", prog(NEGATIVE_ZERO), script), backend)


ONE_SIDED_PARAMETER = """
import torch

torch.manual_seed(0)
fc = torch.nn.Linear(4, 4)
extra = torch.nn.Linear(4, 4)

def f(x):
    h = fc(x)
    if h.mean() > 0:
        return extra(h).sum()
    return (h * 2).sum()
"""


def extra_grads(env):
    return {"extra": env.ns.extra.weight.grad, "fc": env.ns.fc.weight.grad}


@backends(inductor=True)
def test_a_parameter_only_the_untaken_path_uses_gets_no_gradient(backend):
    # torch.cond's backward would give ``extra`` a zero gradient where eager gives none.
    script = [Call(shifted(-3.0), then=backward) for _ in range(3)]
    script.append(Call(shifted(3.0), then=backward))
    case = Case("one_sided_parameter", prog(ONE_SIDED_PARAMETER), script, watch=extra_grads)
    run_case(case, backend)
