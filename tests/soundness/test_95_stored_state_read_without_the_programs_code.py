"""Class 95: the state a store left, read without running the program's code (found 2026-12-07).

F356-F359 (object-model probe of the eighteenth session): the mock replays a store
as the state it left, and that state was read with ``getattr`` / ``owner[key]``
while the user's call was still being monitored.  A ``dict`` subclass whose
``__getitem__`` transforms handed back the transformed value, which replays stored
(F356); ``del net.table`` of a ``functools.cached_property`` had ``hasattr`` build
the table again on the monitored call (F357); ``del c.v`` of a property with a
deleter, or ``del obj.tmp`` with the class's own ``__delattr__``, was replayed as a
deletion that ran the deleter again, the property's setter too (F358); ``del
cfg.scale`` that uncovered the class attribute ``Cfg.scale`` left the instance
holding ``Cfg.scale``'s value, so a later change of the class was not seen, and the
read of ``cfg.scale`` after the deletion was not guarded (F359).
"""

from __future__ import annotations

from functools import partial

import torch
from harness import Call, Case, backends, calls, execg, run_case
from harness import prog as shared_prog

prog = partial(shared_prog, name="stored95")


def _vector(env):
    return (torch.randn(3),)


TRANSFORMING_DICT = """
import torch

class Scaled(dict):
    def __getitem__(self, key):
        return dict.__getitem__(self, key) * 10

D = Scaled(a=1.0)

def f(x):
    D["a"] = 2.0
    y = x * 1
    D["b"] = 3.0
    D["a"] = 4.0
    return y + D["a"]
"""


@backends()
def test_stores_into_a_dict_whose_getitem_transforms(backend):
    reset = execg("D.clear(); dict.__setitem__(D, 'a', 1.0)")
    script = [Call(_vector), reset, Call(_vector), Call(_vector), reset, Call(_vector)]
    watch = lambda env: dict(env.ns.D)
    # (min_hits=1: the class's ``dict.__getitem__(self, key)`` reads all of ``D`` as the
    # call leaves it, so only a call whose ``D`` is already that state replays: a cost.)
    case = Case("transforming", prog(TRANSFORMING_DICT), script, min_hits=1, watch=watch)
    run_case(case, backend)


CACHED_PROPERTY_DELETED = """
import functools
import torch

BUILDS = []

class Tables:
    @functools.cached_property
    def table(self):
        BUILDS.append(1)
        return torch.ones(3)

tables = Tables()

def f(x):
    y = x + tables.table
    del tables.table
    return y
"""


@backends()
def test_a_cached_property_the_call_builds_and_deletes(backend):
    watch = lambda env: (len(env.ns.BUILDS), "table" in vars(env.ns.tables))
    case = Case("cached", prog(CACHED_PROPERTY_DELETED), calls(4, _vector), min_hits=2, watch=watch)
    run_case(case, backend)


PROPERTY_DELETER = """
import torch

class Setting:
    def __init__(self):
        self._v = 1.0
        self.log = []

    @property
    def v(self):
        return self._v

    @v.setter
    def v(self, value):
        self.log.append(("set", value))
        self._v = value

    @v.deleter
    def v(self):
        self.log.append("del")
        self._v = 0.0

setting = Setting()

def f(x):
    setting.v = 2.0
    y = x * setting.v
    del setting.v
    return y
"""


@backends()
def test_a_property_with_a_deleter(backend):
    watch = lambda env: (list(env.ns.setting.log), env.ns.setting._v)
    case = Case("deleter", prog(PROPERTY_DELETER), calls(4, _vector), min_hits=2, watch=watch)
    run_case(case, backend)


OWN_DELATTR = """
import torch

LOG = []

class Holder:
    def __delattr__(self, name):
        LOG.append(name)
        object.__delattr__(self, name)

holder = Holder()

def f(x):
    holder.tmp = x.sum()
    y = x * 2
    del holder.tmp
    return y
"""


@backends()
def test_a_class_with_its_own_delattr(backend):
    watch = lambda env: (list(env.ns.LOG), vars(env.ns.holder))
    case = Case("own_delattr", prog(OWN_DELATTR), calls(4, _vector), min_hits=2, watch=watch)
    run_case(case, backend)


MODULE_DELATTR = """
import torch

LOG = []

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def __delattr__(self, name):
        LOG.append(name)
        super().__delattr__(name)

    def forward(self, x):
        y = self.lin(x)
        self.extra = y * 2
        z = self.extra + 1
        del self.extra
        return z

net = Net()
"""


@backends()
def test_a_module_with_its_own_delattr(backend):
    watch = lambda env: (list(env.ns.LOG), sorted(vars(env.ns.net)))
    case = Case(
        "module_delattr",
        prog(MODULE_DELATTR, target="net"),
        calls(4, _vector),
        min_hits=2,
        watch=watch,
    )
    run_case(case, backend)


CLASS_ATTRIBUTE_UNCOVERED = """
import torch

class Config:
    scale = 1.0

cfg = Config()

def f(x):
    cfg.scale = 2.0
    y = x * cfg.scale
    del cfg.scale
    return y + cfg.scale
"""


@backends()
def test_a_deletion_that_uncovers_a_class_attribute(backend):
    script = [
        Call(_vector),
        Call(_vector),
        execg("Config.scale = 5.0"),
        Call(_vector),
        Call(_vector),
    ]
    watch = lambda env: (vars(env.ns.cfg), env.ns.Config.scale)
    case = Case("uncovered", prog(CLASS_ATTRIBUTE_UNCOVERED), script, min_hits=2, watch=watch)
    run_case(case, backend)


MODULE_DICT_STORE = """
import types
import torch

settings = types.ModuleType("settings")
settings.scale = 1.0

def f(x):
    settings.__dict__["scale"] = settings.scale * 2
    return x * settings.scale
"""


@backends()
def test_a_store_into_a_modules_dict(backend):
    """F371: ``mod.__dict__[k] = v`` was not recorded (the module's ``__dict__`` had no
    path), so replays left the setting as it was."""
    reset = execg("settings.scale = 1.0")
    script = [Call(_vector), Call(_vector), reset, Call(_vector), Call(_vector)]
    watch = lambda env: env.ns.settings.scale
    run_case(Case("module_dict", prog(MODULE_DICT_STORE), script, watch=watch), backend)


DICT_REPLACED = """
import torch

class Holder:
    pass

holder = Holder()
holder.scale = 3.0

def f(x):
    holder.__dict__ = {"scale": 5.0}
    return x * holder.scale
"""


@backends()
def test_an_objects_dict_replaced(backend):
    """F372: ``o.__dict__ = {...}`` then ``o.scale`` read the value at entry."""
    reset = execg("holder.scale = 3.0")
    script = [Call(_vector), reset, Call(_vector), reset, Call(_vector)]
    watch = lambda env: dict(vars(env.ns.holder))
    run_case(Case("dict_replaced", prog(DICT_REPLACED), script, watch=watch), backend)
