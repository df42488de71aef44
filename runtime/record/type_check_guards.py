"""The guard's checks of ``isinstance`` / ``issubclass`` answers a metaclass decides.

``monitor/type_checks.py`` says which answers need one (an ABC's registry, a
runtime-checkable Protocol's attributes); here each becomes a :class:`Check`:
on the subject's path where it has one (a native lambda leaf on that manager),
else on a constant in the guard's Python rest.  The classes are bound by name
(imported by the generated wrapper, or read through the path the run found them
by).
"""

from __future__ import annotations

import builtins
import types
from collections.abc import Iterable
from typing import Any

from fullgraph.runtime.record.codegen import Namespace
from fullgraph.runtime.record.guards import Check


def type_check_guards(type_checks: Iterable[Any], ns: Namespace) -> list[Check]:
    checks = []
    for check in type_checks:
        paths = dict(check.paths)
        info = _classinfo(check.classinfo, ns, paths)
        call, answer = check.fn.__name__, check.result
        why = f"{call}(..., {info}) is {answer}: the metaclass's own check decides it"
        if check.source is not None:
            checks.append(
                Check(
                    (check.source,),
                    lambda name, call=call, info=info, answer=answer: (
                        f"{call}({name}, {info}) is {answer}"
                    ),
                    f"{why} ({check.source.expr()})",
                )
            )
        else:
            text = f"{call}({_constant(check.subject, ns)}, {info}) is {answer}"
            checks.append(Check((), lambda text=text: text, why))
    return checks


def _classinfo(classinfo: Any, ns: Namespace, paths: dict) -> str:
    if type(classinfo) is tuple:
        parts = [_classinfo(item, ns, paths) for item in classinfo]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    if isinstance(classinfo, types.UnionType):
        return " | ".join(_classinfo(item, ns, paths) for item in classinfo.__args__)
    hint = getattr(classinfo, "__name__", None) or type(classinfo).__name__.lower()
    if getattr(builtins, hint, classinfo) is not classinfo:
        hint = f"k_{hint}"  # a class of the program named like a builtin the guard uses
    return ns.bind(classinfo, hint, provenance=paths.get(id(classinfo)))


def _constant(value: Any, ns: Namespace) -> str:
    if isinstance(value, type):
        return _classinfo(value, ns, {})
    return ns.expr(value)  # a number, a string, None
