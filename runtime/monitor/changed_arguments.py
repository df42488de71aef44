"""Lists the function made that a replayed call changes in place.

``random.shuffle(idx)`` (``np.random.shuffle``, the shuffle of a ``random.Random``
the program holds, an unknown C call) is a callout: the mock makes it again on
every replay.  Handed a list the function made, what it does to that list decides
everything after it (``x[idx]`` bakes the order into the graph, a loop runs in
that order, the list is returned or printed), and none of that can be read back
from the call's result.  So, for each list the call changed, and for every list
handed to a random draw (a shuffle that left the order as it was decided it too):

- the run copies the list before the call, and the callout is recorded on the
  copy: the mock makes the list as it was then and hands it to the call (the
  program's own list is made again, with what it held when the run ended, where
  the mock needs it);
- right after the call, a read of the list's items is recorded as a callout of
  its own (``items_after`` / ``positions_after``) whose result a mid-guard checks,
  so a replay whose draw gave another order misses there instead of replaying
  the first call's order.  Items that are immutable literals are compared by
  value, others by the position each had before the call;
- a replay that misses there hands what it read to the next record or to the
  monitoring run (``injected``): the monitoring run puts those items into the
  program's list instead of drawing again, so no draw is made twice.

A container the call left alone (``json.dumps(rows)``, ``q.put(rows)``) is handed
over as it is (a call that keeps it sees what the program does to it next), but the
mock makes it as the function *left* it: one the function changed after the call
refuses the record (``refuse_changed_after``).  An output that only shows its
arguments (``print("so far", rows)`` in a loop that appends to ``rows``) is handed
a copy of each as it was at the call.  A dict, set or bytearray the function made
that a replayed call changed refuses the record; so does a list whose items a
replayed call returned or the monitor follows as numbers that vary.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fullgraph.runtime import breaks
from fullgraph.runtime.capture.segments import Unsupported
from fullgraph.runtime.monitor.annotation_table import qualified_name
from fullgraph.runtime.record.codegen import is_literal

# Containers the function makes that a replayed call may change.
_MADE = (list, tuple, dict, set, bytearray)
# Modules whose calls draw from a random state (``random.Random.shuffle``, numpy's).
_DRAWS = ("random.", "numpy.random.")


class ItemsAfter(tuple):
    """The items a replayed call left in a list the function made: the items
    themselves, or (``by_position``) the position each had before the call.
    ``argument``: which of the call's arguments the list was."""

    by_position = False
    argument = 0


class PositionsAfter(ItemsAfter):
    by_position = True


def items_after(items: list, argument: int) -> ItemsAfter:
    """The mock's read of a list after a replayed call changed it (its items are literals)."""
    read = ItemsAfter(items)
    read.argument = argument
    return read


def positions_after(before: list, items: list, argument: int) -> PositionsAfter:
    """The mock's read of a list after a replayed call reordered it: for each item, the
    position of the same object in ``before`` (-1: an object that was not there)."""
    ids: dict[int, int] = {}
    for position, item in enumerate(before):
        ids.setdefault(id(item), position)
    read = PositionsAfter(ids.get(id(item), -1) for item in items)
    read.argument = argument
    read.items = list(items)  # what to hand on if an object was not there before
    return read


@dataclasses.dataclass
class HandedList:
    """A list the function made, handed to a replayed call as argument ``argument``
    (keywords after the positional ones), and its copy from before the call."""

    argument: int
    live: list
    before: list


@dataclasses.dataclass
class Handed:
    """The containers the function made among a replayed call's arguments: the lists
    (each with its copy from before the call), and every one of them (any kind) with
    its argument position, a deep copy and its state by identity (``_state``)."""

    lists: list[HandedList] = dataclasses.field(default_factory=list)
    made: list[tuple[int, Any, Any, Any]] = dataclasses.field(default_factory=list)


def before_call(run, args: tuple, kwargs: dict) -> Handed:
    """The containers the function made among a replayed call's arguments, copied as
    they are before it runs."""
    handed = Handed()
    for argument, value in enumerate((*args, *kwargs.values())):
        if run.source_of(value) is not None or not isinstance(value, _MADE):
            continue  # from outside: a later read of it is not recorded (written_containers)
        handed.made.append((argument, value, _copy(run, value), _state(run, value)))
        if type(value) is list and not any(h.live is value for h in handed.lists):
            handed.lists.append(HandedList(argument, value, list(value)))
    return handed


def settle(run, handed: Handed, fn: Any, call_name: str) -> None:
    """Once the call returned: keep the lists to read back after it (a run that resumes a
    replay which missed after this call reads back the lists that replay read: their
    reads are in ``injected``, after the call's own result).  The containers the call
    left alone are checked at the end of the run (``refuse_changed_after``)."""
    first = len(run.tape.callouts) + 1  # the call's own callout comes first
    resumed = []
    while isinstance(run.injected.get(first + len(resumed)), ItemsAfter):
        resumed.append(run.injected[first + len(resumed)].argument)
    if resumed:
        by_argument = {h.argument: h for h in handed.lists}
        handed.lists = [by_argument[a] for a in resumed if a in by_argument]
    else:
        draws = qualified_name(fn).startswith(_DRAWS)
        handed.lists = [h for h in handed.lists if draws or _changed(h)]
    read_back = {id(h.live) for h in handed.lists}
    for _, value, _, state in handed.made:
        if id(value) in read_back:
            continue
        if _state(run, value) != state:
            raise Unsupported(
                breaks.UNSUPPORTED_CONSTRUCT,
                f"{call_name} changed a {type(value).__name__} the function made, whose "
                "new contents a replay could not follow",
            )
        run.handed_containers.append((value, state, call_name))


def as_before(handed: Handed, values: tuple, first: int = 0, copies: bool = False) -> tuple:
    """A callout's arguments (from argument ``first`` on) with each list read back
    replaced by its copy from before the call; with ``copies``, every container the
    function made by its deep copy from then (an output showing them)."""
    if copies:
        replaced = {argument: copy for argument, _, copy, _ in handed.made}
        return tuple(replaced.get(first + i, value) for i, value in enumerate(values))
    if not handed.lists:
        return values
    by_id = {id(h.live): h.before for h in handed.lists}
    return tuple(by_id.get(id(value), value) for value in values)


def refuse_changed_after(run) -> None:
    """At the end of the run: a container the function made, handed to a replayed call
    that left it alone and changed by the function afterwards, is made by the mock as
    the function left it, which the call never saw (and a call that keeps it, such as
    ``q.put(rows)``, would see it change).  A container a replayed call returned and
    the function changed: the mock would use the one the call returns, unchanged."""
    handed = (
        "a {kind} the function made was handed to {call} and changed afterwards: "
        "a replay would hand the call what the function left in it"
    )
    returned = (
        "the {kind} {call} returned was changed by the function: "
        "a replay would use the one the call returns, unchanged"
    )
    watched = ((run.handed_containers, handed), (run.returned_containers, returned))
    for entries, message in watched:
        for value, state, call_name in entries:
            if _state(run, value) != state:
                run.refuse(message.format(kind=type(value).__name__, call=call_name))
                return


def note_returned(run, value: Any, call_name: str) -> None:
    """A container a replayed call returned (``ids.tolist()``): the mock uses the one the
    call returns then, so the function must leave it as it came (checked at the end)."""
    if isinstance(value, (list, dict, set, bytearray)):
        run.returned_containers.append((value, _state(run, value), call_name))


def read_after(run, handed: Handed, call, category) -> None:
    """After the replayed call (``call``: its callout, just recorded): for each list
    kept by ``settle``, the read of its items the mock checks with a mid-guard."""
    for entry in handed.lists:
        call.changes_arguments = True  # never held back behind the read's mid-guard
        _read_items(run, entry, call.function_name, category)


def _read_items(run, entry: HandedList, call_name: str, category) -> None:
    live, before = entry.live, entry.before
    if id(live) in run.container_syms or any(c.result is live for c in run.tape.callouts):
        # Its items vary between calls (a replayed call's result, numbers that vary): the
        # copy the callout is recorded on would hold this call's items.
        raise Unsupported(
            breaks.UNSUPPORTED_CONSTRUCT,
            f"{call_name} is handed a list whose items vary between calls",
        )
    injected = run.injected.pop(len(run.tape.callouts), None)
    if isinstance(injected, ItemsAfter):
        # A replay that missed after this call made it: the same draw, on this list.
        if not injected.by_position:
            live[:] = list(injected)
        elif -1 in injected:
            live[:] = injected.items  # (only an unknown call putting new objects there)
        else:
            live[:] = [before[i] for i in injected]
    if all(_immutable_literal(item) for item in (*before, *live)):
        helper, args, read = (
            items_after,
            (before, entry.argument),
            items_after(live, entry.argument),
        )
    else:
        # ``before`` as a list of its own: the mock makes it from the same objects as
        # the list the call is handed (a tuple of lists would be written as a literal).
        helper, args = positions_after, (list(before), before, entry.argument)
        read = positions_after(before, live, entry.argument)
        if -1 in read:
            raise Unsupported(
                breaks.UNSUPPORTED_CONSTRUCT,
                f"{call_name} put objects into a list the function made that a replay "
                "could not check",
            )
    callout = run.tape.record_callout(
        helper,
        f"items of the list {call_name} was handed",
        args,
        {},
        read,
        category,
        effectful=False,
        guard_result=True,
    )
    # The call's own callout already names the place: no second break there.
    if callout.location in run.breaks:
        run.breaks.remove(callout.location)
    callout.location = None


def _changed(entry: HandedList) -> bool:
    live, before = entry.live, entry.before
    return len(live) != len(before) or any(a is not b for a, b in zip(live, before))


def _state(run, value: Any, depth: int = 0) -> Any:
    """What a container the function made holds, down through the containers it made,
    compared by identity (its items may be tensors)."""
    if depth > 6 or run.source_of(value) is not None:
        return id(value)
    if isinstance(value, (list, tuple)):
        return (type(value), tuple(_state(run, item, depth + 1) for item in value))
    if isinstance(value, dict):
        return (dict, tuple((key, _state(run, item, depth + 1)) for key, item in value.items()))
    if isinstance(value, (set, frozenset)):
        return (type(value), frozenset(id(item) for item in value))
    if isinstance(value, bytearray):
        return bytes(value)
    return id(value)


def _copy(run, value: Any, depth: int = 0) -> Any:
    """A copy of a container the function made, and of those it made inside it."""
    if depth > 6 or run.source_of(value) is not None:
        return value
    if type(value) in (list, tuple):
        return type(value)(_copy(run, item, depth + 1) for item in value)
    if type(value) is dict:
        return {key: _copy(run, item, depth + 1) for key, item in value.items()}
    if type(value) is set:
        return set(value)
    return value


def _immutable_literal(value: Any) -> bool:
    if type(value) in (tuple, frozenset):
        return all(_immutable_literal(item) for item in value)
    return is_literal(value) and type(value) not in (list, dict, set)
