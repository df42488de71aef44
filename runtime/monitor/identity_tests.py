"""``a is b`` / ``a is not b`` in the program: what the guard must hold for the answer.

One object reached through two paths is guarded as an alias where the second path
is read; two distinct objects must be guarded to stay two, or a record made for
``f(x, y)`` replays ``f(x, x)`` down the branch taken for distinct ones.  (``is None``
and the ``POP_JUMP_IF_NONE`` family test against a constant: the operand's read is
guarded by value, which says whether it is None.)  Equal strings, numbers and tuples
may or may not be one object (``mode is TRAIN`` with a string from ``json.loads``),
and guards compare them by value: such a test refuses the record.
"""

from __future__ import annotations

from typing import Any

from fullgraph.runtime.record.guards import IDENTITY_CHECKED


def guard(run: Any, left: object, right: object) -> None:
    """The identity test ``left is right`` ran in ``run``."""
    if _equal_values(left, right):
        run.refuse(f"an identity test between equal {type(left).__name__} values")
        return
    _record_distinct(run, left, right)


# Exact types whose objects are guarded by value (an IntEnum member is not one).
_VALUE_TYPES = (str, bytes, int, float, complex, tuple, frozenset)


def _equal_values(left: object, right: object) -> bool:
    """Whether ``left is right`` is an identity test no guard by value decides: two
    equal values of these types, other than the ones CPython keeps one of (small
    ints, the empty tuple and string, one-character strings)."""
    if type(left) not in _VALUE_TYPES or type(right) is not type(left):
        return False
    if type(left) is int and -5 <= left <= 256:
        return False
    if type(left) in (str, bytes) and len(left) <= 1:
        return False
    if type(left) in (tuple, frozenset) and not left:
        return False
    try:
        return bool(left == right)
    except Exception:  # noqa: BLE001 - a tuple holding a tensor: not a value test
        return False


def _record_distinct(run: Any, left: object, right: object) -> None:
    """Record the distinctness an identity test between ``left`` and ``right`` decided.

    Only objects that both have a source: one the call made is another object than
    everything from outside whatever the guard says.  A source is where the object was
    at entry, also when the program reaches it through state it wrote itself
    (``self.last = x`` then ``y is self.last`` compares ``y`` with ``x``): the check is
    on the entry objects, as the replayed program's own stores reproduce the rest.
    Numbers, strings and None have no source (their identity is interning, which a
    guard by value does not pin; ``is None`` is decided by that value)."""
    if left is right:
        return  # one object: guarded as an alias where its second path was read
    first, second = run.source_of(left), run.source_of(right)
    if first is None or second is None or first == second:
        return
    if (
        isinstance(left, IDENTITY_CHECKED)
        and isinstance(right, IDENTITY_CHECKED)
        and first in run.reads
        and second in run.reads
    ):
        return  # both checked against their own object already (``type(x) is Foo``)
    run.distinct.append((first, second))
