"""Class 44: type checks the metaclass answers, dict keys that are not strings, lists in index tuples.

Found by a probe (tenth session), each a replay of the first call's answer:

- ``isinstance(obj, Base)`` / ``issubclass(C, Base)`` were taken as pure functions of
  what their arguments are (the object's identity or type, the class's identity).
  A metaclass with its own check reads more: ``ABCMeta`` its registry
  (``Base.register(Impl)`` between calls), typing's runtime-checkable
  ``Protocol`` the object's attributes (``cfg.scale = 5.0``), and a classinfo
  tuple from outside holds classes the guard never looked at.  An object whose
  ``__class__`` was reassigned kept its identity, and so its record.  The
  guard now checks the answer again where a metaclass's check (or a tuple from
  outside) decides it, and the type of an object checked by identity.
- A dict read with a key that is not a str / int / tuple (a ``torch.dtype``, a
  ``torch.device``, a class, an Enum member, a float, bytes) was not guarded at
  all: ``EPS[x.dtype]``, ``TBL.get(x.dtype, 1.0)``, ``x.dtype in TBL``,
  ``TBL[int]``, iteration over such a dict.  Such keys are written in the guard
  (``EPS[torch.float32]``, ``BY_TYPE[int]``) or reached by the path the program
  got them from (``BY_ENUM[g['K'].A]``), and a dict read whole checks its keys
  one by one.
- ``x[:, IDX]`` / ``y[0, IDX] = v``: the list inside the index tuple went into
  the graph as a constant, unguarded (``x[IDX]`` alone was guarded).

Each program is called, the state changes between calls, it is called again;
the unchanged calls must replay.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
from harness import Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="checks44")


def ones(env):
    return (torch.ones(2),)


def results_only(env):
    """Dicts keyed by the program's own classes and Enum members: each twin has its
    own keys, so the default watch of the globals can't compare them (the results
    read every value)."""
    return {}


def script(change: str, before: int = 2, after: int = 2) -> list:
    return [*calls(before, ones), execg(change), *calls(after, ones)]


# --- isinstance / issubclass decided by a metaclass ------------------------------

ABC_REGISTER = """
import abc
import torch

class Base(abc.ABC):
    pass

class Impl:
    pass

obj = Impl()

def f(x):
    if isinstance(obj, Base):
        return x * 3
    return x + 1
"""


@backends()
def test_abc_register_between_calls(backend):
    run_case(
        Case("abc_register", prog(ABC_REGISTER), script("Base.register(Impl)"), min_hits=2),
        backend,
    )


MAPPING_REGISTER = """
import collections.abc
import torch

class MyMap:
    def __init__(self):
        self.d = {"a": 3.0}

    def __getitem__(self, k):
        return self.d[k]

m = MyMap()

def f(x):
    if isinstance(m, collections.abc.Mapping):
        return x * m["a"]
    if issubclass(MyMap, collections.abc.Mapping):
        return x * 5
    return x + 1
"""


@backends()
def test_collections_abc_register_between_calls(backend):
    run_case(
        Case(
            "collections_abc_register",
            prog(MAPPING_REGISTER),
            script("collections.abc.Mapping.register(MyMap)"),
            min_hits=2,
        ),
        backend,
    )


ISSUBCLASS_REGISTER = """
import abc
import torch

class Base(abc.ABC):
    pass

class Impl:
    pass

obj = Impl()

def f(x):
    if issubclass(type(obj), Base):
        return x * 3
    return x + 1
"""


@backends()
def test_issubclass_of_type_after_register(backend):
    run_case(
        Case(
            "issubclass_register",
            prog(ISSUBCLASS_REGISTER),
            script("Base.register(Impl)"),
            min_hits=2,
        ),
        backend,
    )


MADE_INSIDE_ABC = """
import abc
import torch

class Base(abc.ABC):
    pass

class Impl:
    pass

def f(x):
    if isinstance(Impl(), Base):
        return x * 3
    return x + 1
"""


@backends()
def test_abc_check_of_an_object_made_in_the_call(backend):
    run_case(
        Case("abc_made_inside", prog(MADE_INSIDE_ABC), script("Base.register(Impl)"), min_hits=2),
        backend,
    )


NUMBER_ABC = """
import abc
import numbers
import torch

class Scale(abc.ABC):
    pass

def f(x, n):
    if isinstance(n, numbers.Integral) and not isinstance(n, Scale):
        return x * n
    return x + n
"""


@backends()
def test_abc_check_of_an_int_argument(backend):
    def args(env):
        return torch.ones(2), 3

    run_case(
        Case(
            "abc_int_argument",
            prog(NUMBER_ABC),
            [*calls(2, args), execg("Scale.register(int)"), *calls(2, args)],
            min_hits=2,
        ),
        backend,
    )


MATCH_ABC = """
import abc
import torch

class Base(abc.ABC):
    pass

class Impl:
    pass

obj = Impl()

def f(x):
    match obj:
        case Base():
            return x * 3
        case _:
            return x + 1
"""


@backends()
def test_match_class_pattern_after_register(backend):
    run_case(
        Case("match_abc", prog(MATCH_ABC), script("Base.register(Impl)"), min_hits=2),
        backend,
    )


PROTOCOL = """
import torch
from typing import Protocol, runtime_checkable

@runtime_checkable
class HasScale(Protocol):
    scale: float

class Cfg:
    pass

cfg = Cfg()

def f(x):
    if isinstance(cfg, HasScale):
        return x * cfg.scale
    return x + 1
"""


@backends()
def test_protocol_attribute_added_between_calls(backend):
    run_case(
        Case("protocol_attribute_added", prog(PROTOCOL), script("cfg.scale = 5.0"), min_hits=2),
        backend,
    )


@backends()
def test_protocol_attribute_added_to_the_class(backend):
    run_case(
        Case("protocol_class_attribute", prog(PROTOCOL), script("Cfg.scale = 4.0"), min_hits=2),
        backend,
    )


PROTOCOL_UNREAD = """
import torch
from typing import Protocol, runtime_checkable

@runtime_checkable
class HasScale(Protocol):
    scale: float

class Cfg:
    pass

cfg = Cfg()

def f(x):
    if isinstance(cfg, HasScale):
        return x * 3
    return x + 1
"""


@backends()
def test_protocol_attribute_removed_between_calls(backend):
    # The branch reads no attribute: only the check itself knows ``scale`` is gone.
    run_case(
        Case(
            "protocol_attribute_removed",
            prog(PROTOCOL_UNREAD),
            [execg("cfg.scale = 5.0"), *calls(2, ones), execg("del cfg.scale"), *calls(2, ones)],
            min_hits=2,
        ),
        backend,
    )


PROTOCOL_MADE_INSIDE = """
import torch
from typing import Protocol, runtime_checkable

@runtime_checkable
class HasScale(Protocol):
    scale: float

class Cfg:
    pass

def f(x):
    if isinstance(Cfg(), HasScale):
        return x * 3
    return x + 1
"""


@backends()
def test_protocol_check_of_an_object_made_in_the_call(backend):
    # The object is new every call; what typing's check reads of it (its class's
    # attributes too) has no path the guard could read again: not recorded.
    run_case(
        Case("protocol_made_inside", prog(PROTOCOL_MADE_INSIDE), script("Cfg.scale = 4.0")),
        backend,
    )


CLASSINFO_TUPLE = """
import torch

class A:
    pass

class B:
    pass

TYPES = (A,)
obj = B()

def f(x):
    if isinstance(obj, TYPES):
        return x * 3
    return x + 1
"""


@backends()
def test_classinfo_tuple_from_outside_replaced(backend):
    run_case(
        Case("classinfo_tuple", prog(CLASSINFO_TUPLE), script("TYPES = (A, B)"), min_hits=2),
        backend,
    )


CLASS_REASSIGNED = """
import torch

class A:
    pass

class B:
    pass

obj = B()

def f(x):
    if isinstance(obj, A):
        return x * 3
    return x + 1
"""


@backends()
def test_object_class_reassigned_between_calls(backend):
    run_case(
        Case("class_reassigned", prog(CLASS_REASSIGNED), script("obj.__class__ = A"), min_hits=2),
        backend,
    )


UNCHANGED_CHECKS = """
import abc
import collections.abc
import numbers
import torch
from typing import Protocol, runtime_checkable

@runtime_checkable
class HasScale(Protocol):
    scale: float

class Base(abc.ABC):
    pass

class Meta(type):
    def __instancecheck__(cls, instance):
        return getattr(instance, "tagged", False)

class Tagged(metaclass=Meta):
    pass

class Cfg:
    scale = 2.0

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        self.cfg = Cfg()
        self.items = {"a": 1.0}

    def forward(self, x, n):
        y = self.lin(x)
        if isinstance(self.cfg, HasScale):
            y = y * self.cfg.scale
        if isinstance(self.items, collections.abc.Mapping) and not isinstance(self.cfg, Base):
            y = y + self.items["a"]
        if isinstance(n, numbers.Number) and isinstance(self.lin.weight, torch.nn.Parameter):
            y = y * n
        if isinstance(x, torch.Tensor) and not isinstance(x, torch.nn.Parameter):
            y = y - 1
        if isinstance(self.cfg, Tagged):
            y = y * 10
        return y

model = Model()
"""


@backends(inductor=True)
def test_unchanged_type_checks_replay(backend):
    def args(env):
        return torch.randn(3, 2), 2

    run_case(
        Case(
            "unchanged_type_checks",
            prog(UNCHANGED_CHECKS, "model"),
            [*calls(3, args), execg("model.cfg.tagged = True"), *calls(3, args)],
            min_hits=4,
        ),
        backend,
    )


# --- dict keys that are not str / int ----------------------------------------------

KEYS = """
import enum
import torch

class K(enum.Enum):
    A = 1
    B = 2

class Impl:
    pass

EPS = {torch.float32: 2.0, torch.float16: 1e-3}
BY_TYPE = {int: 2.0, Impl: 3.0}
BY_ENUM = {K.A: 2.0}
BY_DEVICE = {torch.device("cpu"): 2.0}
BY_FLOAT = {0.5: 2.0, float("inf"): 3.0}
BY_BYTES = {b"k": 2.0}
BY_TUPLE = {(torch.float32, "w"): 2.0}
NESTED = {"eps": {torch.float32: 2.0}}

class Holder:
    TABLE = {torch.float32: 2.0}

def f(x):
    return (
        x * EPS[x.dtype],
        x * BY_TYPE[int] + BY_TYPE[Impl],
        x * BY_ENUM[K.A],
        x * BY_DEVICE[x.device],
        x * BY_FLOAT[0.5] + BY_FLOAT[float("inf")],
        x * BY_BYTES[b"k"],
        x * BY_TUPLE[(x.dtype, "w")],
        x * NESTED["eps"][x.dtype],
        x * Holder.TABLE[x.dtype],
    )
"""

KEY_CHANGES = {
    "dtype": "EPS[torch.float32] = 3.0",
    "type": "BY_TYPE[int] = 4.0",
    "class": "BY_TYPE[Impl] = 4.0",
    "enum": "BY_ENUM[K.A] = 5.0",
    "device": "BY_DEVICE[torch.device('cpu')] = 6.0",
    "float": "BY_FLOAT[0.5] = 7.0",
    "float_inf": "BY_FLOAT[float('inf')] = 7.0",
    "bytes": "BY_BYTES[b'k'] = 8.0",
    "tuple": "BY_TUPLE[(torch.float32, 'w')] = 9.0",
    "nested": "NESTED['eps'][torch.float32] = 10.0",
    "class_attribute": "Holder.TABLE[torch.float32] = 11.0",
}


@backends()
@pytest.mark.parametrize("name", sorted(KEY_CHANGES))
def test_dict_read_with_a_key_that_is_not_a_string(backend, name):
    run_case(
        Case(
            f"dict_key_{name}",
            prog(KEYS),
            script(KEY_CHANGES[name]),
            watch=results_only,
            min_hits=2,
        ),
        backend,
    )


@backends()
def test_dict_keys_unchanged_replay(backend):
    run_case(
        Case("dict_keys_unchanged", prog(KEYS), [*calls(4, ones)], watch=results_only, min_hits=3),
        backend,
    )


GET_AND_MEMBERSHIP = """
import torch

TBL = {torch.float32: 2.0, torch.float16: 1e-3}
CLASSES = {int: 2.0}

def f(x):
    y = x * TBL.get(x.dtype, 1.0) + CLASSES.get(float, 0.5)
    if x.dtype in TBL:
        y = y + 1
    if float in CLASSES:
        y = y * 2
    return y
"""

GET_CHANGES = {
    "get_value": "TBL[torch.float32] = 3.0",
    "get_missing": "TBL.pop(torch.float32)",
    "class_get_added": "CLASSES[float] = 4.0",
}


@backends()
@pytest.mark.parametrize("name", sorted(GET_CHANGES))
def test_dict_get_and_membership_with_such_keys(backend, name):
    run_case(
        Case(f"dict_get_{name}", prog(GET_AND_MEMBERSHIP), script(GET_CHANGES[name]), min_hits=2),
        backend,
    )


WHOLE = """
import enum
import torch

class K(enum.Enum):
    A = 1
    B = 2

BY_TYPE = {int: 2.0, float: 3.0}
BY_ENUM = {K.A: 1.0, K.B: 2.0}

def f(x):
    y = x * sum(BY_TYPE.values())
    for k, v in BY_ENUM.items():
        y = y + v * k.value
    for k in BY_TYPE:
        y = y * 2.0 + (1.0 if k is int else 0.0)  # in the dict's order
    return y
"""

WHOLE_CHANGES = {
    "value": "BY_TYPE[float] = 5.0",
    "key_added": "BY_TYPE[bool] = 1.0",
    "order": "BY_TYPE = {float: 3.0, int: 2.0}",
    "enum_value": "BY_ENUM[K.B] = 7.0",
    "enum_key_removed": "del BY_ENUM[K.A]",
}


@backends()
@pytest.mark.parametrize("name", sorted(WHOLE_CHANGES))
def test_dict_with_such_keys_read_whole(backend, name):
    run_case(
        Case(
            f"dict_whole_{name}",
            prog(WHOLE),
            script(WHOLE_CHANGES[name]),
            watch=results_only,
            min_hits=2,
        ),
        backend,
    )


DICT_ARGUMENT = """
import torch

def f(x, table):
    return x * table[x.dtype]
"""


@backends()
def test_dict_argument_with_dtype_keys(backend):
    def args(value):
        return lambda env: (torch.ones(2), {torch.float32: value, torch.float64: 1.0})

    run_case(
        Case(
            "dict_argument_dtype_keys",
            prog(DICT_ARGUMENT),
            [*calls(2, args(2.0)), *calls(2, args(3.0))],
            min_hits=2,
        ),
        backend,
    )


# --- lists inside index tuples ---------------------------------------------------------

INDEX_TUPLE = """
import torch

IDX = [0, 1]
ROWS = [[0], [1]]

def f(x):
    y = x.clone()
    y[0, IDX] = 5.0
    return x[:, IDX], y, x[(IDX,)], x[ROWS[1], IDX], x[..., [IDX[0]]]
"""

INDEX_CHANGES = {
    "item": "IDX[1] = 3",
    "appended": "IDX.append(2)",
    "nested": "ROWS[1][0] = 0",
}


@backends(inductor=True)
@pytest.mark.parametrize("name", sorted(INDEX_CHANGES))
def test_list_inside_an_index_tuple(backend, name):
    run_case(
        Case(
            f"index_tuple_{name}",
            prog(INDEX_TUPLE),
            [
                *calls(2, lambda env: (torch.arange(16.0).reshape(4, 4),)),
                execg(INDEX_CHANGES[name]),
                *calls(2, lambda env: (torch.arange(16.0).reshape(4, 4),)),
            ],
            min_hits=2,
        ),
        backend,
    )


# --- an infinite float read by value ------------------------------------------------

INFINITE = """
import torch

LIM = float("inf")

def f(x):
    return x.clamp(max=LIM) + 1
"""


@backends()
def test_infinite_float_global_replays(backend):
    # The Python guard wrote ``v == inf`` (NameError): a call it checks never replayed.
    run_case(Case("infinite_float", prog(INFINITE), [*calls(4, ones)], min_hits=3), backend)
