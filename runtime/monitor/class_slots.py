"""Special methods the interpreter finds on an object's class: what the guard checks.

``b * x``, ``if b:``, ``for v in b``, ``k in b``, ``b[k]``, ``with b:``,
``f"{b}"``, ``len(b)``, ``b(x)``, ``Box(v)`` and, where the class defines them,
``b.a`` (``__getattr__``) and ``b.a = v`` (``__setattr__``) run a method the
interpreter looks up on ``type(b)``, through the classes of its MRO and never
the instance; no attribute load the monitor could see is involved.  The method
it finds (user code) is stepped into and what it reads is guarded, but which
method runs is decided by the class, which can be patched between calls
(``Box.__mul__ = ...``) or gain a method it lacked (a ``__bool__`` where truth
came from ``__len__`` or was true by default, an ``__rmul__`` on the right
operand's subclass, which Python then asks first).

For each name the interpreter consults, the guard checks what the class
gives for it, as :mod:`method_lookups` does for explicit method loads:
``type(b).__mul__ is <fn>`` where the class attribute is the object found in
the MRO, ``hasattr(type(b), '__bool__') is False`` where no class has it
(and the metaclass has no attribute by that name to answer for it), and
otherwise the MRO walk itself (``'__or__' in type(b).__mro__[0].__dict__``).
The class is reached through the object's own path (``type(<path>)``) or,
for an object the call made, the path the class was read by (``g['Box']``).
Only classes of the program get checks: tensors, builtins and torch's,
numpy's and the standard library's classes do not (their slots are not
replaced), so a model without special methods of its own gets none.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import torch

from fullgraph.runtime.monitor import attribute_hooks, hidden_state_reads
from fullgraph.runtime.monitor.user_code import is_user_file
from fullgraph.runtime.sources import (
    AttrSource,
    ConstSource,
    ContainsSource,
    HasAttrSource,
    ItemSource,
    Source,
    TypeOfSource,
)

_IMMUTABLE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: builtin and C types, never patched

# A protocol: groups of names in the order the interpreter tries them.  Each group is
# guarded; the walk stops after a group whose first name the class has.
Protocol = tuple[tuple[str, ...], ...]
TRUTH: Protocol = (("__bool__",), ("__len__",))
ITERATION: Protocol = (("__iter__",), ("__getitem__",))
MEMBERSHIP: Protocol = (("__contains__",), ("__iter__",), ("__getitem__",))
REVERSED: Protocol = (("__reversed__",), ("__len__", "__getitem__"))
FORMAT: Protocol = (("__format__", "__str__", "__repr__"),)
CONTEXT: Protocol = (("__enter__", "__exit__"),)
CALL: Protocol = (("__call__",),)
CONSTRUCTION: Protocol = (("__new__", "__init__"),)


def single(name: str) -> Protocol:
    return ((name,),)


_BINARY = {"+": "add", "&": "and", "//": "floordiv", "<<": "lshift", "@": "matmul",
           "*": "mul", "%": "mod", "|": "or", "**": "pow", ">>": "rshift", "-": "sub",
           "/": "truediv", "^": "xor"}  # fmt: skip
# ``a < b`` asks ``type(a).__lt__``, then ``type(b).__gt__``; ``!=`` falls back to
# ``__eq__`` through object's ``__ne__``.
_COMPARE = {"<": ("__lt__", "__gt__"), "<=": ("__le__", "__ge__"), ">": ("__gt__", "__lt__"),
            ">=": ("__ge__", "__le__"), "==": ("__eq__", "__eq__"),
            "!=": ("__ne__", "__ne__")}  # fmt: skip
UNARY = {"UNARY_NEGATIVE": "__neg__", "UNARY_INVERT": "__invert__", "UNARY_POSITIVE": "__pos__"}

# Builtins that run a special method of their first argument (or of each argument).
_ON_FIRST: dict[int, Protocol] = {
    id(len): single("__len__"),
    id(abs): single("__abs__"),
    id(next): single("__next__"),
    id(hash): single("__hash__"),
    id(round): single("__round__"),
    id(repr): single("__repr__"),
    id(str): (("__str__", "__repr__"),),
    id(format): FORMAT,
    id(int): (("__int__",), ("__index__",), ("__trunc__",)),
    id(float): (("__float__",), ("__index__",)),
    id(bool): TRUTH,
    id(iter): ITERATION,
    id(reversed): REVERSED,
}
for _iterating in (list, tuple, set, frozenset, sorted, sum, any, all, enumerate):
    _ON_FIRST[id(_iterating)] = ITERATION
_ON_EACH = {id(zip): ITERATION, id(min): ITERATION, id(max): ITERATION}


def user_class(cls: type) -> bool:
    """A class of the program (defined outside torch, numpy, the standard library and
    fullgraph), whose special methods can be replaced between calls."""
    if cls.__flags__ & _IMMUTABLE:
        return False
    name = getattr(cls, "__module__", None)
    return not isinstance(name, str) or _user_module(name)


_user_modules: dict[str, bool] = {}


def _user_module(name: str) -> bool:
    known = _user_modules.get(name)
    if known is None:
        module = sys.modules.get(name)
        filename = getattr(module, "__file__", None)
        if isinstance(filename, str):
            known = is_user_file(filename)
        else:  # a program loaded from source, ``__main__`` of ``python -c``; not builtins
            known = name not in sys.builtin_module_names
        _user_modules[name] = known
    return known


# -- what the interpreter does ---------------------------------------------------


def read_protocol(run: Any, obj: Any, protocol: Protocol) -> None:
    """The interpreter runs ``protocol`` on ``obj``: guard what ``type(obj)`` gives."""
    cls = type(obj)
    if not user_class(cls):
        return
    base = _class_source(run, obj)
    if base is None:
        return
    for group in protocol:
        found = [_read_name(run, base, cls, name) for name in group]
        if found[0]:
            return


def read_lookup(run: Any, obj: Any, name: str) -> None:
    """``obj.name`` of an object without a path (one the call made) found a method or
    property on its class: the class still gives the same one."""
    cls = type(obj)
    base = _type_source(run, cls) if user_class(cls) else None
    if base is not None:
        _read_name(run, base, cls, name)


def read_attribute_hooks(run: Any, obj: Any, names: tuple[str, ...]) -> None:
    """``obj.a`` (``obj.a = v``) runs the class's own ``__getattribute__`` /
    ``__getattr__`` (``__setattr__``, ``__delattr__``) when it defines them in Python:
    guarded like the other special methods.  Classes that only inherit object's or
    torch's (``nn.Module.__getattr__``) get no check: a model pays nothing."""
    cls = type(obj)
    if not user_class(cls):
        return
    for name in names:
        # Its own hook, not the stand-in it has while a monitoring run lasts.
        method = attribute_hooks.original_of(getattr(cls, name, None))
        if isinstance(method, types.FunctionType) and is_user_file(method.__code__.co_filename):
            read_protocol(run, obj, single(name))


def read_binary(run: Any, symbol: str, left: Any, right: Any) -> None:
    """``left <symbol> right`` (``+``, ``*=``...): the left operand's method, its in-place
    form first for ``*=``, and the right operand's reflected one where the types differ."""
    hidden_state_reads.refuse_decimal_arithmetic(run, left, right)
    verb = _BINARY.get(symbol.rstrip("="))
    if verb is None:
        return
    if symbol.endswith("="):
        read_protocol(run, left, ((f"__i{verb}__", f"__{verb}__"),))
    else:
        read_protocol(run, left, single(f"__{verb}__"))
    if type(right) is not type(left):
        read_protocol(run, right, single(f"__r{verb}__"))


def inplace_method(symbol: str) -> str | None:
    """``"+="`` -> ``"__iadd__"``: the method an in-place operator asks for first."""
    verb = _BINARY.get(symbol.rstrip("="))
    return None if verb is None else f"__i{verb}__"


def read_compare(run: Any, symbol: str, left: Any, right: Any) -> None:
    names = _COMPARE.get(symbol)
    if names is None:
        return
    forward, reflected = names
    # The right operand's reflected method is asked also for two objects of one class
    # (after the left one's returned NotImplemented), unlike for arithmetic.
    also = ("__eq__",) if symbol == "!=" else ()  # object's __ne__ asks __eq__
    read_protocol(run, left, ((forward, *also),))
    read_protocol(run, right, ((reflected, *also),))


def read_call(run: Any, fn: Any, args: tuple) -> None:
    """A call that runs special methods: ``len(b)`` and the like, an object with
    ``__call__`` (not a module's: its forward is guarded, and a model would pay a check
    per layer class), and a class of the program (its ``__new__`` and ``__init__``)."""
    first, each = _ON_FIRST.get(id(fn)), _ON_EACH.get(id(fn))  # builtins live forever
    if first is not None or each is not None:
        if first is not None and args:
            read_protocol(run, args[0], first)
        if each is not None:
            several = (fn is min or fn is max) and len(args) > 1  # max(a, b) compares
            for arg in () if several else args:
                read_protocol(run, arg, each)
        return
    if isinstance(fn, (types.FunctionType, types.MethodType, types.BuiltinFunctionType)):
        return
    if isinstance(fn, type):
        base = _type_source(run, fn) if user_class(fn) else None
        if base is not None:
            for name in CONSTRUCTION[0]:
                _read_name(run, base, fn, name)
        return
    if getattr(type(fn), "__call__", None) is torch.nn.Module.__call__:  # noqa: B004
        return
    read_protocol(run, fn, CALL)


# -- where the class is, and what it has ------------------------------------------


def _class_source(run: Any, obj: Any) -> Source | None:
    """The path the guard reads ``type(obj)`` by."""
    source = run.source_of(obj)
    if source is not None:
        return TypeOfSource(source)
    return _type_source(run, type(obj))


def _type_source(run: Any, cls: type) -> Source | None:
    """The path of a class: the one the run read it by, else its module's global (an
    object the call made of a class imported inside the function, or made unseen)."""
    source = run.source_of(cls)
    if source is not None:
        return source
    namespace = getattr(sys.modules.get(cls.__module__), "__dict__", None)
    name = cls.__qualname__
    if not isinstance(namespace, dict) or namespace.get(name) is not cls:
        return None  # a class made inside a function: the code that made it is guarded
    if (id(namespace), name) in run.written:
        return None
    source = ItemSource(ConstSource(run.globals_name(namespace)), name)
    run.read(source, cls, symbolic=False)
    return source


def _read_name(run: Any, base: Source, cls: type, name: str) -> bool:
    """Guard what the interpreter finds for ``name`` on ``cls`` (at ``base``); whether
    it finds something."""
    mro = cls.__mro__
    index = next((i for i, klass in enumerate(mro) if name in klass.__dict__), None)
    if index is None:
        if _metaclass_lacks(cls, name):
            run.read(HasAttrSource(base, name), False, symbolic=False)
        else:  # ``type`` answers ``hasattr(cls, '__or__')`` itself: look in each class
            _read_mro(run, base, mro, name, len(mro))
        return False
    raw = attribute_hooks.original_of(mro[index].__dict__[name])
    try:
        through_class = attribute_hooks.original_of(getattr(cls, name))
    except Exception:  # noqa: BLE001 - a descriptor refusing class access
        through_class = _MISSING
    if through_class is raw:  # a function, a slot wrapper, None (``__hash__ = None``)
        run.read(AttrSource(base, name), raw, symbolic=False)
    else:  # a staticmethod's or classmethod's wrapper, a metaclass descriptor
        _read_mro(run, base, mro, name, index)
    return True


_MISSING = object()


def _read_mro(run: Any, base: Source, mro: tuple, name: str, index: int) -> None:
    """``name`` is in no class of ``mro`` before ``index``, and is what it was at
    ``index`` (when there is one); classes whose dict can't change are not checked."""
    mro_source = AttrSource(base, "__mro__")
    for position, klass in enumerate(mro[: index + 1]):
        if klass.__flags__ & _IMMUTABLE:
            continue
        namespace = AttrSource(ItemSource(mro_source, position), "__dict__")
        if position < index:
            run.read(ContainsSource(namespace, name), False, symbolic=False)
        else:
            found = attribute_hooks.original_of(klass.__dict__[name])
            run.read(ItemSource(namespace, name), found, symbolic=False)


def _metaclass_lacks(cls: type, name: str) -> bool:
    """Whether ``hasattr(cls, name)`` can only come from ``cls``'s MRO: no metaclass
    has that attribute or a ``__getattr__``."""
    return all(
        name not in m.__dict__ and "__getattr__" not in m.__dict__ for m in type(cls).__mro__
    )
