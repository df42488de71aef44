"""A function the monitor steps into: what of it, besides its identity, the guard reads.

The guard checks a function it reached by identity (``g['helper'] is helper``,
``type(b).__mul__ is __mul__``), and a function stays the same object when its
``__code__``, ``__defaults__`` or ``__kwdefaults__`` is reassigned: the run
followed the code it had then, and took the defaults it had then.  So each
function the monitor steps into, where it has a path, guards its code object
by identity (one check, native like the function's own) and its default
values as read; a function the call made gets its code from the function that
made it, whose code is guarded the same way.
"""

from __future__ import annotations

import types
from typing import Any

from fullgraph.runtime.sources import AttrSource, ItemSource, LenSource, Source


def read_function(run: Any, fn: Any) -> None:
    """``fn`` (a function, or a method of one) runs now: read its code and defaults."""
    source = run.source_of(fn)
    target = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if source is None or not isinstance(target, types.FunctionType):
        return
    # (A method proxies ``__code__`` and the defaults to its function.)
    run.read(AttrSource(source, "__code__"), target.__code__, symbolic=False)
    # The defaults are objects from outside the call (``acc=[]`` keeps what earlier
    # calls appended): read, not only given sources, since a default replaced
    # (``f.__defaults__ = (3,)``, ``f.__kwdefaults__["power"] = 3``) is a new value for
    # the call that uses it.  (A function without defaults is not read: giving it some
    # later does not change a call that passed every argument.)
    if target.__defaults__:
        defaults = AttrSource(source, "__defaults__")
        run.read(LenSource(defaults), len(target.__defaults__), symbolic=False)
        for i, value in enumerate(target.__defaults__):
            run.read(ItemSource(defaults, i), value, symbolic=False)
    if target.__kwdefaults__:
        kwdefaults = AttrSource(source, "__kwdefaults__")
        for name, value in target.__kwdefaults__.items():
            run.read(ItemSource(kwdefaults, name), value, symbolic=False)


def register_parts(run: Any, value: Any, source: Source) -> None:
    """The functions a value read by the run runs when called (a bound method's, a
    property's getter) get paths through it, so stepping into them reads their code."""
    if isinstance(value, types.MethodType):
        run.register(value.__func__, AttrSource(source, "__func__"))
    elif isinstance(value, property) and value.fget is not None:
        run.register(value.fget, AttrSource(source, "fget"))
