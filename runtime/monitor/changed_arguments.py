"""Lists the function made that a replayed call may change in place.

``random.shuffle(idx)`` (``np.random.shuffle``, the shuffle of a ``random.Random``
the program holds, an unknown C call) is a callout: the mock makes it again on
every replay.  Handed a list the function made, what it does to that list decides
everything after it (``x[idx]`` bakes the order into the graph, a loop runs in
that order, the list is returned or printed), and none of that can be read back
from the call's result.  So, for each such list:

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

A dict, set or other container the function made that a replayed call changed
refuses the record (named); so does a list whose items a replayed call returned
or the monitor follows as numbers that vary.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fullgraph.runtime import breaks
from fullgraph.runtime.capture.segments import Unsupported
from fullgraph.runtime.record.codegen import is_literal

# Containers a replayed call may change and whose new contents a record can't follow.
_OTHER_CONTAINERS = (dict, set, bytearray)


class ItemsAfter(tuple):
    """The items a replayed call left in a list the function made: the items
    themselves, or (``by_position``) the position each had before the call."""

    by_position = False


class PositionsAfter(ItemsAfter):
    by_position = True


def items_after(items: list) -> ItemsAfter:
    """The mock's read of a list after a replayed call changed it (its items are literals)."""
    return ItemsAfter(items)


def positions_after(before: list, items: list) -> PositionsAfter:
    """The mock's read of a list after a replayed call reordered it: for each item, the
    position of the same object in ``before`` (-1: an object that was not there)."""
    ids = {}
    for position, item in enumerate(before):
        ids.setdefault(id(item), position)
    read = PositionsAfter(ids.get(id(item), -1) for item in items)
    read.items = list(items)  # what to hand on if an object was not there before
    return read


@dataclasses.dataclass
class HandedList:
    """A list the function made, handed to a replayed call: the list and its copy from
    before the call (the callout is recorded on the copy)."""

    live: list
    before: list


@dataclasses.dataclass
class Handed:
    """The containers the function made among a replayed call's arguments."""

    lists: list[HandedList] = dataclasses.field(default_factory=list)
    others: list[tuple[Any, Any]] = dataclasses.field(default_factory=list)  # (it, its copy)


def before_call(run, args: tuple, kwargs: dict) -> Handed:
    """The containers the function made among a replayed call's arguments, copied as
    they are before it runs."""
    handed = Handed()
    for value in (*args, *kwargs.values()):
        if run.source_of(value) is not None:
            continue  # from outside: a later read of it is not recorded (written_containers)
        if type(value) is list and not any(h.live is value for h in handed.lists):
            handed.lists.append(HandedList(value, list(value)))
        elif isinstance(value, _OTHER_CONTAINERS):
            handed.others.append((value, _contents(value)))
    return handed


def as_before(handed: Handed, values: tuple) -> tuple:
    """A callout's arguments with each handed list replaced by its copy from before."""
    if not handed.lists:
        return values
    copies = {id(h.live): h.before for h in handed.lists}
    return tuple(copies.get(id(value), value) for value in values)


def read_after(run, handed: Handed, call, category) -> None:
    """After the replayed call (``call``: its callout, just recorded): for each handed
    list, the read of its items the mock checks with a mid-guard."""
    call_name = call.function_name
    for value, contents in handed.others:
        if _contents(value) != contents:
            raise Unsupported(
                breaks.UNSUPPORTED_CONSTRUCT,
                f"{call_name} changed a {type(value).__name__} the function made, whose "
                "new contents a replay could not follow",
            )
    for entry in handed.lists:
        call.changes_arguments = True
        _read_items(run, entry, call_name, category)


def _contents(container: Any) -> Any:
    """What a container holds, compared by identity where its items may be tensors."""
    if isinstance(container, dict):
        return [(key, id(value)) for key, value in container.items()]
    if isinstance(container, set):
        return {id(item) for item in container}
    return bytes(container)


def _read_items(run, entry: HandedList, call_name: str, category) -> None:
    live, before = entry.live, entry.before
    if id(live) in run.container_syms or any(c.result is live for c in run.tape.callouts):
        # Its items vary between calls (a replayed call's result, numbers that vary): the
        # copy the callout is recorded on would hold this call's items.
        raise Unsupported(
            breaks.UNSUPPORTED_CONSTRUCT,
            f"{call_name} is handed a list whose items vary between calls",
        )
    index = len(run.tape.callouts)
    injected = run.injected.pop(index, None)
    if isinstance(injected, ItemsAfter):
        # A replay that missed after this call made it: the same draw, on this list.
        if not injected.by_position:
            live[:] = list(injected)
        elif -1 in injected:
            live[:] = injected.items  # (only an unknown call putting new objects there)
        else:
            live[:] = [before[i] for i in injected]
    by_value = all(_immutable_literal(item) for item in (*before, *live))
    if by_value:
        helper, args, read = items_after, (entry.before,), items_after(live)
    else:
        # ``before`` as a list of its own: the mock makes it from the same objects as
        # the list the call is handed (a tuple of lists would be written as a literal).
        helper, args = positions_after, (list(before), entry.before)
        read = positions_after(before, live)
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


def _immutable_literal(value: Any) -> bool:
    if type(value) in (tuple, frozenset):
        return all(_immutable_literal(item) for item in value)
    return is_literal(value) and type(value) not in (list, dict, set)
