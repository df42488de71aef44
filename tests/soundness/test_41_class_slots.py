"""Class 41: special methods and code objects replaced after the record was made.

Operators, truth tests, ``for``, ``in``, subscripts, ``with``, f-strings,
``len()`` and the like, calls of instances and classes, and a class's own
``__getattr__`` / ``__setattr__`` find their method through the object's TYPE,
not through an attribute load the monitor sees: ``b * x`` runs
``type(b).__mul__``.  The monitor stepped into that method as user code and
guarded what it read, but not the lookup itself, so ``Box.__mul__ = ...``
between calls (or a ``__bool__``, ``__rmul__``, ``__eq__``, ``__iter__`` added
to a class that had none, which changes where the interpreter goes) replayed
the old answer.  A method looked up on an object the call made had the same hole
(``Box(2.0).scale(x)``: the lookup was guarded only for objects from outside),
and so did a function's ``__code__``, ``__defaults__`` and ``__kwdefaults__``
reassigned after recording (``g.__code__ = h.__code__``).

Fixed in ``monitor/class_slots.py``: each implicit dispatch on an object of a
user-defined class guards what the class gives for each name the interpreter
consults (``type(b).__mul__ is <fn>``, or ``hasattr(type(b), '__bool__') is
False`` for a name it lacks), and every user function the monitor steps into
guards its code object (``<path>.__code__ is <code>``) and its defaults
(``monitor/function_reads.py``).
Tensors, builtins and torch's classes get no such checks (their slots can't be
replaced).  Each case replaces, adds or reassigns one thing between calls (one
parameter per kind: each failed on its own before the fix); the calls before
and after the change must replay.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
from harness import Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="slots41")


def ones(env):
    return (torch.ones(2),)


BINARY = """
import torch

class Box:
    def __init__(self, v):
        self.v = v

    def __mul__(self, other):
        return other * self.v

    def __radd__(self, other):
        return other + self.v

b = Box(2.0)

def f(x):
    return b * x + (1.0 + b)
"""


@backends()
@pytest.mark.parametrize(
    "change",
    [
        "Box.__mul__ = lambda self, other: other * 100",  # mul
        "Box.__radd__ = lambda self, other: other - 50",  # radd
    ],
    ids=["mul", "radd"],
)
def test_binary_operators_replaced_on_the_class(backend, change):
    run_case(
        Case(
            "binary_operators_replaced_on_the_class",
            prog(BINARY),
            [
                *calls(2, ones),
                execg(change),
                *calls(2, ones),
            ],
            min_hits=2,
        ),
        backend,
    )


REFLECTED = """
import torch

class Meter:
    def __init__(self, v):
        self.v = v

    def __mul__(self, other):
        return self.v * 2.0

class Fine(Meter):
    pass

a = Meter(1.0)
c = Fine(3.0)

def f(x):
    return x * (a * c)
"""


@backends()
@pytest.mark.parametrize(
    "change",
    [
        "Fine.__rmul__ = lambda self, other: 7.0",  # rmul
    ],
    ids=["rmul"],
)
def test_a_reflected_method_added_to_the_right_operands_subclass(backend, change):
    """A subclass on the right that gains ``__rmul__`` is asked before the left
    operand's ``__mul__`` (Python's rule for operands of a subclass)."""
    run_case(
        Case(
            "a_reflected_method_added_to_the_right_operands_subclass",
            prog(REFLECTED),
            [
                *calls(2, ones),
                execg(change),
                *calls(2, ones),
            ],
            min_hits=2,
        ),
        backend,
    )


INPLACE = """
import torch

class Acc:
    def __init__(self):
        self.total = 0.0

    def __iadd__(self, other):
        self.total = self.total + other
        return self

def f(x):
    acc = Acc()
    acc += x
    acc += x * 2
    return acc.total

def subtract(self, other):
    self.total = self.total - other
    return self
"""


@backends()
@pytest.mark.parametrize(
    "change",
    [
        "Acc.__iadd__ = subtract",  # iadd
    ],
    ids=["iadd"],
)
def test_an_inplace_operator_of_an_object_the_call_made(backend, change):
    run_case(
        Case(
            "an_inplace_operator_of_an_object_the_call_made",
            prog(INPLACE),
            [
                *calls(2, ones),
                execg(change),
                *calls(2, ones),
            ],
            min_hits=2,
        ),
        backend,
    )


UNARY = """
import torch

class Sign:
    def __init__(self, v):
        self.v = v

    def __neg__(self):
        return -self.v

    def __invert__(self):
        return self.v * 10

    def __pos__(self):
        return self.v + 1

    def __abs__(self):
        return abs(self.v)

s = Sign(-2.0)

def f(x):
    return x * (-s) + x * (~s) + (+s) + abs(s)
"""


@backends()
@pytest.mark.parametrize(
    "change",
    [
        "Sign.__neg__ = lambda self: 100.0",  # neg
        "Sign.__invert__ = lambda self: 1000.0",  # invert
        "Sign.__pos__ = lambda self: -7.0",  # pos
        "Sign.__abs__ = lambda self: 0.5",  # abs
    ],
    ids=["neg", "invert", "pos", "abs"],
)
def test_unary_operators_replaced_on_the_class(backend, change):
    run_case(
        Case(
            "unary_operators_replaced_on_the_class",
            prog(UNARY),
            [
                *calls(2, ones),
                execg(change),
                *calls(2, ones),
            ],
            min_hits=2,
        ),
        backend,
    )


TRUTH = """
import torch

class Flag:
    def __init__(self, on):
        self.on = on

    def __bool__(self):
        return self.on

class Items:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

class Plain:
    pass

flag = Flag(True)
items = Items(2)
plain = Plain()

def f(x):
    if flag:
        x = x + 1
    if items:
        x = x * 2
    if not plain:
        x = x - 100
    return x * 3 if (plain and True) is True else x * 5
"""


@backends()
@pytest.mark.parametrize(
    "change",
    [
        "Flag.__bool__ = lambda self: False",  # bool replaced
        "Items.__bool__ = lambda self: False",  # bool added over len
        "Plain.__bool__ = lambda self: False",  # bool added
        "Plain.__len__ = lambda self: 0",  # len added
    ],
    ids=["bool replaced", "bool added over len", "bool added", "len added"],
)
def test_truth_of_an_object_whose_class_changed(backend, change):
    """``if flag:``, ``if items:`` (truth from ``__len__``), ``not plain`` and
    ``plain and True`` (true by default), then a ``__bool__`` or ``__len__`` replaced
    or added."""
    run_case(
        Case(
            "truth_of_an_object_whose_class_changed",
            prog(TRUTH),
            [
                *calls(2, ones),
                execg(change),
                *calls(2, ones),
            ],
            min_hits=2,
        ),
        backend,
    )


ITERATION = """
import torch

class Seq:
    def __getitem__(self, i):
        if i >= 3:
            raise IndexError(i)
        return float(i)

class Bag:
    def __init__(self):
        self.items = [1.0, 2.0]

    def __iter__(self):
        return iter(self.items)

class Countdown:
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return self

    def __next__(self):
        if self.n == 0:
            raise StopIteration
        self.n -= 1
        return float(self.n)

bag = Bag()

def f(x):
    for v in bag:
        x = x * v
    for v in Countdown(2):
        x = x - v
    return x

def g(x):
    for v in Seq():
        x = x + v
    return x

def stop(self):
    raise StopIteration
"""


@backends()
@pytest.mark.parametrize(
    "change",
    [
        "Bag.__iter__ = lambda self: iter([3.0])",  # iter
        "Countdown.__next__ = stop",  # next
    ],
    ids=["iter", "next"],
)
def test_iteration_methods_replaced_on_the_class(backend, change):
    run_case(
        Case(
            "iteration_methods_replaced_on_the_class",
            prog(ITERATION),
            [
                *calls(2, ones),
                execg(change),
                *calls(2, ones),
            ],
            min_hits=2,
        ),
        backend,
    )


@backends()
@pytest.mark.parametrize(
    "change",
    [
        "Seq.__iter__ = lambda self: iter([5.0])",  # iter added
    ],
    ids=["iter added"],
)
def test_iter_added_to_a_class_iterated_by_getitem(backend, change):
    run_case(
        Case(
            "iter_added_to_a_class_iterated_by_getitem",
            prog(ITERATION, target="g"),
            [
                *calls(2, ones),
                execg(change),
                *calls(2, ones),
            ],
            min_hits=2,
        ),
        backend,
    )


CONTAINER = """
import torch

class Table:
    def __init__(self):
        self.data = {"a": 1.0, "b": 2.0}

    def __getitem__(self, k):
        return self.data[k]

    def __contains__(self, k):
        return k in self.data

    def __len__(self):
        return len(self.data)

class Chain:
    def __iter__(self):
        return iter(["a", "b"])

def f(x):
    t, chain = Table(), Chain()  # made by the call: no path to re-read them by
    if "a" in t:
        x = x + t["b"]
    if "c" in chain:
        x = x * 100
    return x * len(t)
"""


@backends()
@pytest.mark.parametrize(
    "change",
    [
        "Table.__getitem__ = lambda self, k: 10.0",  # getitem
        "Table.__len__ = lambda self: 5",  # len
        "Table.__contains__ = lambda self, k: False",  # contains
        "Chain.__contains__ = lambda self, k: True",  # contains added
    ],
    ids=["getitem", "len", "contains", "contains added"],
)
def test_container_methods_replaced_or_added(backend, change):
    """Objects the call made, so no path re-reads them (``"c" in chain`` was
    decided by ``__iter__``)."""
    run_case(
        Case(
            "container_methods_replaced_or_added",
            prog(CONTAINER),
            [
                *calls(2, ones),
                execg(change),
                *calls(2, ones),
            ],
            min_hits=2,
        ),
        backend,
    )


STORES = """
import torch

class Store:
    def __init__(self):
        self.data = {}
        self.n = 0

    def __setitem__(self, k, v):
        self.n += 1
        self.data[k] = v

    def __getitem__(self, k):
        return self.data[k]

    def __delitem__(self, k):
        self.n += 1
        self.data.pop(k, None)

store = Store()

def f(x):
    store["sum"] = 1.0
    del store["old"]
    return x + 1

def set_other(self, k, v):
    self.n += 10
    self.data["other"] = v

def delete_nothing(self, k):
    self.n -= 1
"""


@backends()
@pytest.mark.parametrize(
    "change",
    [
        "Store.__setitem__ = set_other",  # setitem
        "Store.__delitem__ = delete_nothing",  # delitem
    ],
    ids=["setitem", "delitem"],
)
def test_item_stores_through_replaced_methods(backend, change):
    """The store itself was replayed besides the stores its method made (each
    replay ran ``__setitem__`` once more); now the method's own stores are the effects."""
    run_case(
        Case(
            "item_stores_through_replaced_methods",
            prog(STORES),
            [
                *calls(3, ones),  # the second call finds the counter varying
                execg(change),
                *calls(2, ones),
            ],
            watch=lambda env: {"n": env.ns.store.n, "data": dict(env.ns.store.data)},
            min_hits=2,
        ),
        backend,
    )


CALLS = """
import torch

class Scaler:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return x * self.k

class Span:
    def __init__(self):
        self.depth = 0

    def __enter__(self):
        self.depth += 1
        return 2.0

    def __exit__(self, *exc):
        self.depth -= 1
        return False

span = Span()

def enter5(self):
    self.depth += 1
    return 5.0

def f(x):
    with span as k:
        x = x * k
    return Scaler(3.0)(x)

def exit_closing(self, *exc):
    self.depth -= 1
    self.closed = True
    return False
"""


@backends()
@pytest.mark.parametrize(
    "change",
    [
        "Scaler.__call__ = lambda self, x: x - self.k",  # call
        "Span.__enter__ = enter5",  # enter
        "Span.__exit__ = exit_closing",  # exit
    ],
    ids=["call", "enter", "exit"],
)
def test_call_and_with_methods_replaced_on_the_class(backend, change):
    run_case(
        Case(
            "call_and_with_methods_replaced_on_the_class",
            prog(CALLS),
            [
                *calls(2, ones),
                execg(change),
                *calls(2, ones),
            ],
            watch=lambda env: {"span": dict(vars(env.ns.span))},
            min_hits=2,
        ),
        backend,
    )


COMPARE = """
import torch

class Version:
    def __init__(self, n):
        self.n = n

    def __lt__(self, other):
        return self.n < other.n

class Key:
    pass

v1, v2 = Version(1), Version(2)
k1, k2 = Key(), Key()

def f(x):
    if v1 < v2:
        x = x + 1
    if k1 == k2:
        x = x * 100
    return x
"""


@backends()
@pytest.mark.parametrize(
    "change",
    [
        "Version.__lt__ = lambda self, other: False",  # lt
        "Key.__eq__ = lambda self, other: True",  # eq added
    ],
    ids=["lt", "eq added"],
)
def test_comparisons_replaced_or_added(backend, change):
    run_case(
        Case(
            "comparisons_replaced_or_added",
            prog(COMPARE),
            [
                *calls(2, ones),
                execg(change),
                *calls(2, ones),
            ],
            min_hits=2,
        ),
        backend,
    )


FORMAT = """
import torch

class Unit:
    def __format__(self, spec):
        return "2"

class Named:
    def __str__(self):
        return "3"

unit = Unit()
named = Named()

def f(x):
    return x * float(f"{unit}") + float(f"{named}")
"""


@backends()
@pytest.mark.parametrize(
    "change",
    [
        "Unit.__format__ = lambda self, spec: '5'",  # format
        "Named.__str__ = lambda self: '7'",  # str
    ],
    ids=["format", "str"],
)
def test_formatting_methods_replaced_on_the_class(backend, change):
    """``f"{unit}"`` runs ``__format__``; object's asks ``__str__``."""
    run_case(
        Case(
            "formatting_methods_replaced_on_the_class",
            prog(FORMAT),
            [
                *calls(2, ones),
                execg(change),
                *calls(2, ones),
            ],
            min_hits=2,
        ),
        backend,
    )


BUILTINS = """
import torch

class Level:
    def __init__(self, n):
        self.n = n

    def __int__(self):
        return self.n

class Pair:
    def __iter__(self):
        return iter([1.0, 2.0])

level = Level(2)
pair = Pair()

def f(x):
    return x * int(level) + sum(pair) + max(pair) + len(list(pair))
"""


@backends()
@pytest.mark.parametrize(
    "change",
    [
        "Level.__int__ = lambda self: 5",  # int
        "Pair.__iter__ = lambda self: iter([4.0, 0.5])",  # iter
    ],
    ids=["int", "iter"],
)
def test_builtins_running_special_methods(backend, change):
    """``int(level)``, ``sum(pair)``, ``max(pair)``, ``list(pair)``."""
    run_case(
        Case(
            "builtins_running_special_methods",
            prog(BUILTINS),
            [
                *calls(2, ones),
                execg(change),
                *calls(2, ones),
            ],
            min_hits=2,
        ),
        backend,
    )


ATTRIBUTES = """
import torch

class Lazy:
    def __init__(self):
        self.base = 2.0

    def __getattr__(self, name):
        return self.base * 3

class Tracked:
    def __init__(self):
        object.__setattr__(self, "log", [])

    def __setattr__(self, name, value):
        self.log.append(name)
        object.__setattr__(self, name, value)

tracked = Tracked()

def f(x):
    tracked.scale = 2.0
    return x * Lazy().missing

def set_tagged(self, name, value):
    self.log.append("tagged " + name)
    object.__setattr__(self, name, value)
"""


@backends()
@pytest.mark.parametrize(
    "change",
    [
        "Lazy.__getattr__ = lambda self, name: 10.0",  # getattr
        "Tracked.__setattr__ = set_tagged",  # setattr
    ],
    ids=["getattr", "setattr"],
)
def test_attribute_hooks_replaced_on_the_class(backend, change):
    """A class's own ``__getattr__`` / ``__setattr__`` run by attribute loads and stores."""
    run_case(
        Case(
            "attribute_hooks_replaced_on_the_class",
            prog(ATTRIBUTES),
            [
                *calls(2, ones),
                execg(change),
                *calls(2, ones),
            ],
            watch=lambda env: {"log": list(env.ns.tracked.log)},
            min_hits=2,
        ),
        backend,
    )


MADE = """
import torch

class Box:
    def __init__(self, v):
        self.v = v

    def scale(self, x, k=1.0):
        return x * self.v * k

    def __mul__(self, other):
        return other * self.v

def f(x):
    b = Box(2.0)
    return b.scale(x) + b * x

def triple(self, v):
    self.v = v * 3
"""


@backends()
@pytest.mark.parametrize(
    "change",
    [
        "Box.scale = lambda self, x, k=1.0: x * 10",  # method
        "Box.__mul__ = lambda self, other: other - 1",  # mul
        "Box.__init__ = triple",  # init
        "Box.scale.__defaults__ = (5.0,)",  # method defaults
    ],
    ids=["method", "mul", "init", "method defaults"],
)
def test_methods_of_an_object_the_call_made(backend, change):
    """``Box(2.0).scale(x)``: the method load was guarded for objects from outside only."""
    run_case(
        Case(
            "methods_of_an_object_the_call_made",
            prog(MADE),
            [
                *calls(2, ones),
                execg(change),
                *calls(2, ones),
            ],
            min_hits=2,
        ),
        backend,
    )


CODE = """
import torch

def helper(x):
    return x + 1

class Net:
    def act(self, x):
        return x * 2

net = Net()

def f(x):
    return helper(x) * net.act(x)

def other(x):
    return x - 1

def other_act(self, x):
    return x * 5

def other_f(x):
    return x * 0 + 42
"""


@backends()
@pytest.mark.parametrize(
    "change",
    [
        "f.__code__ = other_f.__code__",  # f
    ],
    ids=["f"],
)
def test_code_of_the_compiled_function_reassigned(backend, change):
    run_case(
        Case(
            "code_of_the_compiled_function_reassigned",
            prog(CODE),
            [
                *calls(2, ones),
                execg(change),
                *calls(2, ones),
            ],
            min_hits=2,
        ),
        backend,
    )


@backends()
@pytest.mark.parametrize(
    "change",
    [
        "helper.__code__ = other.__code__",  # helper
        "Net.act.__code__ = other_act.__code__",  # method
    ],
    ids=["helper", "method"],
)
def test_code_of_a_called_function_or_method_reassigned(backend, change):
    run_case(
        Case(
            "code_of_a_called_function_or_method_reassigned",
            prog(CODE),
            [
                *calls(2, ones),
                execg(change),
                *calls(2, ones),
            ],
            min_hits=2,
        ),
        backend,
    )


SPECIAL_DEFAULTS = """
import torch

class Gain:
    def __call__(self, x, k=2.0, *, shift=0.0):
        return x * k + shift

def f(x):
    return Gain()(x)
"""


@backends()
@pytest.mark.parametrize(
    "change",
    [
        "Gain.__call__.__defaults__ = (3.0,)",  # defaults
        "Gain.__call__.__kwdefaults__ = {'shift': 1.0}",  # kwdefaults
    ],
    ids=["defaults", "kwdefaults"],
)
def test_defaults_of_a_special_method_reassigned(backend, change):
    run_case(
        Case(
            "defaults_of_a_special_method_reassigned",
            prog(SPECIAL_DEFAULTS),
            [
                *calls(2, ones),
                execg(change),
                *calls(2, ones),
            ],
            min_hits=2,
        ),
        backend,
    )


EVERYTHING = """
import torch

class Vec:
    def __init__(self, v):
        self.v = v

    def __mul__(self, other):
        return other * self.v

    def __rmul__(self, other):
        return other * self.v

    def __neg__(self):
        return Vec(-self.v)

    def __bool__(self):
        return self.v != 0

    def __len__(self):
        return 2

    def __iter__(self):
        return iter([self.v, self.v])

    def __getitem__(self, i):
        return self.v

    def __contains__(self, k):
        return k == self.v

    def __eq__(self, other):
        return isinstance(other, Vec) and other.v == self.v

    __hash__ = None

    def __call__(self, x):
        return x + self.v

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

w = Vec(2.0)

def helper(x, k=1.0):
    return x * k

def f(x):
    y = helper(w * x) + 3 * w
    if w and -w != w and 2.0 in w:
        y = y + len(w) + w[0]
    for v in w:
        y = y + v
    with Vec(1.0) as u:
        y = u(y)
    return w(y)
"""


@backends()
def test_nothing_replaced_replays(backend):
    """Every kind above on one class, nothing changed: each call after the first replays."""
    run_case(
        Case("nothing_replaced_replays", prog(EVERYTHING), calls(6, ones), min_hits=5),
        backend,
    )
