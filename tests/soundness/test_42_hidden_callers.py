"""Class 42: code the monitor does not step into that changes the program's objects,
and program code that runs where the program did not call it.

- ``random.shuffle(idx)`` of a list the function made (``list(range(n))``, a list
  comprehension, a copy of a global): the draw was replayed in order, but on the
  list as the run left it, and the list's new order had already been baked into
  what followed (``x[idx]``, a loop over it, the list returned or printed): every
  replay gave the first call's permutation.  A replayed call handed a list the
  function made is now followed by a read of that list's items, which a mid-guard
  checks (one record per order, the orders that come again replay); a replay that
  misses there hands the order on to the monitoring run, so nothing is drawn
  twice.  ``np.random.shuffle`` of a list, a ``random.Random`` of the program's
  and ``random.sample`` / ``choices`` / ``choice`` / ``np.random.permutation`` /
  ``torch.randperm(n).tolist()`` (whose results were mid-guarded already) are here
  too.
- The same family, found while fixing it: a list the function builds, printed on
  the way (``print("so far", seen)`` in a loop that appends to it), printed its
  final state on every replay, and one handed to a call that left it alone
  (``json.dumps(rows)``, ``q.put(rows)``) and changed afterwards was handed as the
  function left it.  A print is handed a copy of each container as it was; such a
  call refuses the record.
- A class whose ``__getattribute__`` or ``__getattr__`` counts accesses: the
  monitor's own reads (``isinstance`` reads ``__class__`` through
  ``__getattribute__``, its ``hasattr`` probes, a guard re-reading ``A[1].scale``)
  ran the program's hook, so the first call counted 45 accesses where eager
  counted 1, and every replay counted 2.  While fullgraph's own code runs, such
  hooks of the program's classes are set aside (the monitor sees the plain
  attributes); a record that would read through a hook that changed something
  when the program ran it is refused, a pure one (a wrapper forwarding to what it
  wraps) still replays.  ``getattr(cfg, "p")`` and ``hasattr(cfg, "p")`` of a
  property that logs its reads ran the getter once more in the monitor (its own
  ``hasattr``) and on every replay (a guard's ``hasattr(A, 'p')``): the property
  itself is guarded instead, as for ``cfg.p``.
- ``Tensor.apply_`` / ``map_`` / ``map2_`` with a Python function: torch calls it
  once per element from C; recording it was an internal error, it is a refusal
  that names the call.
- The harness's ``known_objects`` crashed on a class whose metaclass
  ``__getattr__`` raises ``KeyError`` (``dataclasses.is_dataclass`` uses
  ``hasattr``).
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="hidden42")


def four(env):
    return (torch.arange(4.0),)


def fresh(env):
    return (torch.randn(3),)


# ---------------------------------------------------------------------------
# Containers the function made, handed to calls the mock makes again

LOCAL_SHUFFLE = """
import random
import torch

def f(x):
    idx = list(range(4))
    random.shuffle(idx)
    return x[idx]
"""


@backends()
def test_shuffle_of_a_local_list_used_as_an_index(backend):
    run_case(
        Case("shuffle_of_a_local_list_used_as_an_index", prog(LOCAL_SHUFFLE), calls(6, four)),
        backend,
    )


BUILT_SHUFFLE = """
import random
import torch

def f(x):
    idx = [i for i in range(2)]
    random.shuffle(idx)
    return x[torch.tensor(idx)] * 2
"""


@backends()
def test_shuffle_of_a_built_list_replays_the_orders_that_come_again(backend):
    # Two items, two orders: each order gets its record, the calls that draw it again
    # replay it (the shuffle is made by the replay, the mid-guard checks its order).
    run_case(
        Case(
            "shuffle_of_a_built_list_replays_the_orders_that_come_again",
            prog(BUILT_SHUFFLE),
            calls(8, lambda env: (torch.arange(2.0),)),
            min_hits=4,
        ),
        backend,
    )


LOOP_ORDER = """
import random
import torch

order = [0, 1, 2]

def f(x):
    mine = list(order)
    random.shuffle(mine)
    out = torch.zeros(())
    for position, i in enumerate(mine):
        out = out * 10 + x[i] * (position + 1)
    return out, mine
"""


@backends()
def test_shuffle_decides_a_loop_order_and_is_returned(backend):
    run_case(
        Case(
            "shuffle_decides_a_loop_order_and_is_returned",
            prog(LOOP_ORDER),
            [
                *calls(5, lambda env: (torch.arange(3.0),)),
                execg("order.append(3)"),
                *calls(3, four),
            ],
        ),
        backend,
    )


SHUFFLE_PRINTED = """
import random
import torch

def f(x):
    idx = list(range(3))
    random.shuffle(idx)
    print("order", idx)
    return x * 2
"""


@backends()
def test_shuffled_list_printed(backend):
    run_case(
        Case("shuffled_list_printed", prog(SHUFFLE_PRINTED), calls(5, fresh)),
        backend,
    )


GLOBAL_SHUFFLE = """
import random
import torch

deck = [0, 1, 2, 3]
other = [0, 1, 2]

def f(x):
    random.shuffle(deck)
    random.shuffle(other)   # shuffled, never read here: the replay shuffles it again
    return x[deck]
"""

GLOBAL_SHUFFLE_UNREAD = """
import random
import torch

deck = [0, 1, 2, 3]

def f(x):
    random.shuffle(deck)
    return x * 2
"""


@backends()
def test_shuffle_of_a_global_list(backend):
    run_case(Case("shuffle_of_a_global_list", prog(GLOBAL_SHUFFLE), calls(5, four)), backend)
    run_case(
        Case(
            "shuffle_of_a_global_list_unread",
            prog(GLOBAL_SHUFFLE_UNREAD),
            calls(5, four),
            min_hits=3,
        ),
        backend,
    )


NUMPY_AND_OWN_GENERATOR = """
import random
import numpy as np
import torch

rng = random.Random(7)

def f(x):
    a = list(range(4))
    np.random.shuffle(a)
    b = list(range(4))
    rng.shuffle(b)
    return x[a] + 10 * x[b]
"""


@backends()
def test_numpy_shuffle_and_a_generator_of_the_program(backend):
    run_case(
        Case(
            "numpy_shuffle_and_a_generator_of_the_program",
            prog(NUMPY_AND_OWN_GENERATOR),
            calls(5, four),
            watch=lambda env: env.ns.rng.getstate(),
        ),
        backend,
    )


DRAWN_INDICES = """
import random
import numpy as np
import torch

def f(x):
    a = random.sample(range(4), 2)
    b = random.choices(range(4), k=2)
    c = random.choice([0, 1, 2, 3])
    d = np.random.permutation(4).tolist()
    e = torch.randperm(4).tolist()
    return x[a].sum() + x[b].sum() * 10 + x[c] * 100 + x[d] * 1000 + x[e]
"""


@backends()
def test_drawn_indices_sample_choices_permutation(backend):
    run_case(
        Case("drawn_indices_sample_choices_permutation", prog(DRAWN_INDICES), calls(5, four)),
        backend,
    )


COIN = """
import random
import torch

def f(x):
    sides = ["heads", "tails"]
    random.shuffle(sides)
    return x * 2 if sides[0] == "heads" else x - 1
"""


@backends()
def test_a_missed_shuffle_is_not_drawn_again(backend):
    # Two records, one per outcome: a replay of the one that misses after its shuffle
    # hands the order to the other record or the monitoring run (the RNG state is
    # compared after every call: a second draw would show).
    run_case(
        Case("a_missed_shuffle_is_not_drawn_again", prog(COIN), calls(10, fresh), min_hits=5),
        backend,
    )


PRINTED_WHILE_BUILT = """
import torch

def f(x):
    seen = []
    for i in range(3):
        seen.append(i)
        print("so far", seen, {"n": len(seen)})
    return x * 2
"""


@backends()
def test_print_of_a_list_the_loop_builds(backend):
    # Each print shows the list as it was then (the mock made it as the run left it).
    run_case(
        Case(
            "print_of_a_list_the_loop_builds",
            prog(PRINTED_WHILE_BUILT),
            calls(3, fresh),
            min_hits=2,
        ),
        backend,
    )


HANDED_THEN_CHANGED = """
import json
import queue
import torch

q = queue.Queue()
sent = []

def f(x):
    rows = [1, 2]
    text = json.dumps(rows)     # sees [1, 2]
    q.put(rows)                 # keeps the list itself
    rows.append(3)
    sent.append(q.get())
    return x * len(text)
"""


@backends()
def test_a_list_handed_to_a_call_then_changed(backend):
    run_case(
        Case("a_list_handed_to_a_call_then_changed", prog(HANDED_THEN_CHANGED), calls(3, fresh)),
        backend,
    )


# ---------------------------------------------------------------------------
# Attribute hooks of the program's classes

COUNTED_GETATTRIBUTE = """
import torch

accesses = 0

class Counted:
    def __init__(self):
        self.scale = 2.0

    def __getattribute__(self, name):
        global accesses
        accesses += 1
        return object.__getattribute__(self, name)

counted = Counted()

def f(x):
    return x * counted.scale
"""


@backends()
def test_getattribute_counting_accesses_on_a_global(backend):
    run_case(
        Case(
            "getattribute_counting_accesses_on_a_global",
            prog(COUNTED_GETATTRIBUTE),
            [*calls(2, fresh), execg("counted.scale = 3.0"), *calls(2, fresh)],
        ),
        backend,
    )


COUNTED_ARGUMENT = """
import torch

accesses = 0

class Counted:
    def __init__(self):
        self.scale = 2.0

    def __getattribute__(self, name):
        global accesses
        accesses += 1
        return object.__getattribute__(self, name)

def make():
    return Counted()

def f(x, c):
    return x * c.scale
"""


@backends()
def test_getattribute_counting_accesses_on_an_argument(backend):
    run_case(
        Case(
            "getattribute_counting_accesses_on_an_argument",
            prog(COUNTED_ARGUMENT),
            calls(4, lambda env: (torch.randn(3), env.ns.make())),
        ),
        backend,
    )


MADE_COUNTED = """
import torch

accesses = 0

class Counted:
    def __init__(self, scale):
        self.scale = scale

    def __getattribute__(self, name):
        global accesses
        accesses += 1
        return object.__getattribute__(self, name)

def f(x):
    c = Counted(2.0)
    return x * c.scale
"""


@backends()
def test_getattribute_of_an_object_made_in_the_call_replays(backend):
    # Nothing outside the call is read through the hook: its store is replayed, once.
    run_case(
        Case(
            "getattribute_of_an_object_made_in_the_call_replays",
            prog(MADE_COUNTED),
            calls(4, fresh),
            min_hits=2,
        ),
        backend,
    )


COUNTED_GETATTR = """
import torch

log = []

class Lazy:
    def __getattr__(self, name):
        log.append(name)
        return 3.0

lazy = Lazy()

def f(x):
    return x * lazy.scale
"""


@backends()
def test_getattr_fallback_logging_accesses(backend):
    run_case(
        Case("getattr_fallback_logging_accesses", prog(COUNTED_GETATTR), calls(4, fresh)), backend
    )


FORWARDING_WRAPPER = """
import torch

class Config:
    def __init__(self):
        self.scale = 2.0

class Wrapper:
    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

cfg = Wrapper(Config())

def f(x):
    return x * cfg.scale + cfg.__getattr__("scale")   # the hook called by name too
"""


@backends()
def test_pure_getattr_forwarding_still_replays(backend):
    run_case(
        Case(
            "pure_getattr_forwarding_still_replays",
            prog(FORWARDING_WRAPPER),
            [*calls(3, fresh), execg("cfg.inner.scale = 5.0"), *calls(3, fresh)],
            min_hits=3,
        ),
        backend,
    )


COUNTED_PROPERTY = """
import torch

reads = []

class Cfg:
    @property
    def scale(self):
        reads.append("scale")
        return 4.0

    @property
    def broken(self):
        reads.append("broken")
        raise AttributeError("broken")

cfg = Cfg()

def f(x):
    # getattr / hasattr of a property: the monitor's own hasattr and a guard's
    # hasattr(A, 'scale') ran the getter again
    flags = getattr(cfg, "scale") + hasattr(cfg, "scale") + hasattr(cfg, "broken")
    return x * cfg.scale * flags
"""


@backends()
def test_property_logging_reads_replays(backend):
    run_case(
        Case("property_logging_reads_replays", prog(COUNTED_PROPERTY), calls(4, fresh), min_hits=2),
        backend,
    )


# ---------------------------------------------------------------------------
# Python functions torch calls per element

PER_ELEMENT = """
import torch

seen = []

def f(x):
    y = x.clone()
    y.apply_(lambda v: v * 2)
    z = x.clone()
    z.map_(x, lambda a, b: seen.append(b) or a + b)
    w = x.clone()
    w.map2_(x, x, lambda a, b, c: a + b + c)
    return y + z + w
"""


@backends()
def test_apply_map_with_a_python_function_is_refused_by_name(backend):
    result = run_case(
        Case(
            "apply_map_with_a_python_function_is_refused_by_name",
            prog(PER_ELEMENT),
            calls(3, fresh),
            watch=lambda env: len(env.ns.seen),
        ),
        backend,
    )
    reason = result.fallback_reason or ""
    assert "apply_" in reason and "internal error" not in reason, reason


# ---------------------------------------------------------------------------
# The harness itself

METACLASS_KEYERROR = """
import torch

class Registry(type):
    def __getattr__(cls, name):
        raise KeyError(name)

class Table(metaclass=Registry):
    scale = 2.0

def f(x):
    return x * Table.scale
"""


@backends()
def test_class_whose_metaclass_getattr_raises_keyerror(backend):
    run_case(
        Case(
            "class_whose_metaclass_getattr_raises_keyerror",
            prog(METACLASS_KEYERROR),
            [*calls(2, fresh), execg("Table.scale = 3.0"), *calls(2, fresh)],
            min_hits=2,
        ),
        backend,
    )
