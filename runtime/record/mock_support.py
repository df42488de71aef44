"""What a generated mock calls at run time: the miss marker, rebuilding the
program's objects, writing in-place updates back, and the random generator's state.

A mock made in this process and one written into a generated wrapper module
(``runtime/wrapper/template.py``) both call these, by the names in ``HELPERS``.
Nothing here generates code.
"""

from __future__ import annotations

import collections
import types

import torch

from fullgraph.runtime.monitor import stored_state, user_code
from fullgraph.runtime.torch_internals import tree_flatten


class Missed:
    """A replay that did not apply: the guard failed, or a mid-guard did.

    The results of the callouts the replay already made reach the caller through
    the ``made`` dict it passed to the mock, not through this object.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISS"


MISS = Missed()


def noting(made: dict, index: int, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, an effect; if it raises, ``made`` keeps the error, so the
    run of the program that follows raises it there instead of calling again."""
    try:
        return fn(*args, **kwargs)
    except BaseException as error:
        made[index] = Raised(error)
        raise


class EffectRaised(Exception):
    """A replayed effect at the end of a mock raised (``heapq.heappush(Q, (p, t))``
    comparing tensors on a tie, ``L.sort()``): the effects before it are made and the
    effect itself may have changed its object before raising, as eager's call did.
    Running the program again would make them twice: the replay raises ``error``, at
    the point eager raises it.  (A program that catches it there is not replayed
    right: see FINDINGS, F369.)"""

    def __init__(self, error: BaseException):
        super().__init__(error)
        self.error = error


def effect_raised(error: BaseException):
    raise EffectRaised(error)


class Raised:
    """What a callout gave when it raised an exception the program went on to catch
    (``try: torch.cuda.is_current_stream_capturing() except Exception: ...``): the mock
    makes the call through :func:`catching` and a mid-guard checks ``raised_as``."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error

    def __repr__(self) -> str:
        return f"Raised({self.error!r})"


def catching(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, or :class:`Raised` holding the exception it raised."""
    try:
        return fn(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - the program caught it: the mid-guard decides
        return Raised(error)


# Attributes of builtin exceptions that are not made from ``args`` (``OSError(2, "No
# such file", path)`` keeps ``path`` apart; ``ImportError(msg, name=...)``).
_EXCEPTION_FIELDS = ("filename", "filename2", "name", "path", "obj")


def exception_fields(error: BaseException) -> dict:
    """The attributes of ``error`` its ``args`` don't decide, as a mid-guard checks them:
    a builtin exception's own fields, and what its ``__dict__`` holds."""
    fields = {field: getattr(error, field) for field in _EXCEPTION_FIELDS if hasattr(error, field)}
    fields.update(getattr(error, "__dict__", None) or {})
    return fields


def raised_as(result, kind: type, args: tuple, fields: dict | None = None) -> bool:
    """The mid-guard of a callout that raised: it raised again, the same exception."""
    if type(result) is not Raised or type(result.error) is not kind or result.error.args != args:
        return False
    return not fields or exception_fields(result.error) == fields


def make_dataclass_instance(cls, init: dict, others: dict):
    """Rebuild a dataclass (including ``ModelOutput``-style ones) from field values."""
    obj = cls(**init)
    for name, value in others.items():
        object.__setattr__(obj, name, value)
    return obj


def make_plain_object(cls, state: dict):
    """Rebuild a plain Python object created by the program, without calling __init__."""
    obj = cls.__new__(cls)
    for name, value in state.items():
        object.__setattr__(obj, name, value)
    return obj


def write_back(target: torch.Tensor, value: torch.Tensor) -> None:
    """Copy a graph's in-place update of an input back into the input.

    A leaf that requires grad (a parameter updated by ``p.data = ...`` or under
    ``no_grad``) is written without autograd, as the program's update was.
    """
    if target.requires_grad and target.is_leaf:
        with torch.no_grad():
            target.copy_(value)
    else:
        target.copy_(value)


def leaves(value):
    """The leaves of a callout's result, in the order the record numbered them."""
    return tree_flatten(value)[0]


def rng_state() -> tuple:
    """torch's generator states (CPU, and each CUDA device once CUDA is in use)."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda


def in_modes(grad: bool, inference: bool, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` in the grad mode and inference mode a callout was made in."""
    with torch.inference_mode(inference), torch.set_grad_enabled(grad):
        return fn(*args, **kwargs)


def restore_rng(state: tuple) -> Missed:
    """Put back the generator states ``rng_state`` took; the mock then returns MISS."""
    cpu, cuda = state
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)
    return MISS


class _Absent:
    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()  # what an attribute or item was before a store created it


class Undo:
    """The stores a replay applied before a mid-guard or a later call, taken back if the
    replay misses there or raises (the program then runs again from the state the call
    found, so ``group["lr"] *= 0.5`` or ``log.append(x)`` is not made twice).

    Each ``item`` / ``attr`` / ``cell`` call returns the value the store replaces: what
    the program had read there before its store."""

    __slots__ = ("saved",)

    def __init__(self):
        self.saved: list = []

    def item(self, owner, key, via=None):
        """``via``: the container class whose methods put the item back, where the
        program overrides ``owner``'s (they would make their effects again)."""
        if via is not None and issubclass(via, dict):
            old = via.get(owner, key, ABSENT)
        elif isinstance(owner, dict):
            old = owner.get(key, ABSENT)
        elif hasattr(type(owner), "keys"):  # a ModuleDict
            old = owner[key] if key in owner else ABSENT  # noqa: SIM401 - no .get
        else:
            try:
                old = owner[key]
            except (IndexError, KeyError):
                old = ABSENT
        self.saved.append((_restore_item, _Plain(owner, via) if via else owner, key, old))
        return old

    def attr(self, owner, name):
        if user_code.is_program_function(getattr(type(owner), "__getattribute__", None)):
            # Not through the program's own lookup, which may transform what it hands out.
            state = stored_state.attribute_state(owner, name)
            old = state[1] if state[0] == "value" else ABSENT
            self.saved.append((_restore_attr, owner, name, old))
            return old
        state = getattr(owner, "__dict__", None)
        instance = not isinstance(state, dict) or name in state or _managed(owner, name)
        old = getattr(owner, name, ABSENT) if instance else ABSENT
        self.saved.append((_restore_attr, owner, name, old))
        return old

    def cell(self, cell):
        try:
            old = cell.cell_contents
        except ValueError:
            old = ABSENT
        self.saved.append((_restore_cell, cell, None, old))
        return old

    def length(self, owner, via=None) -> None:
        """Before appends to a list: the items after its current length are dropped."""
        self.saved.append((_restore_length, _Plain(owner, via) if via else owner, None, len(owner)))

    def contents(self, owner, via=None) -> None:
        """Before a call that changes a container: its items are put back."""
        target = _Plain(owner, via) if via else owner
        if isinstance(owner, dict):
            old = dict(owner)
        elif isinstance(owner, set):
            old = set(owner)
        else:  # list, deque, bytearray
            old = list(owner)
        self.saved.append((_restore_contents, target, None, old))

    def requires_grad(self, target, made: dict, index: int) -> None:
        """Before ``target.requires_grad_()``, callout ``index``: the flag, put back on a
        miss or a raise; the call is then no longer among those ``made`` (the record
        tried next, or the monitoring run, flags the tensor again)."""
        self.saved.append((_restore_requires_grad, target, (made, index), target.requires_grad))

    def tensor(self, target) -> None:
        """Before a graph's in-place update of a tensor from outside is written back
        (``self.count += 1`` on a buffer): its values, put back on a miss or a raise,
        so the program that runs next updates it once."""
        self.saved.append((_restore_tensor, target, None, target.detach().clone()))

    def undo(self, value=MISS):
        """Take back every store made, last first; returns ``value``."""
        saved, self.saved = self.saved, []
        failed = None
        for restore, owner, key, old in reversed(saved):
            try:
                restore(owner, key, old)
            except Exception as error:  # noqa: BLE001 - the other stores still go back
                failed = failed or error
        if failed is not None:
            raise failed
        return value


UNDOABLE_CONTAINERS = (list, dict, set, collections.deque, bytearray)
GROWING_METHODS = ("append", "extend", "__iadd__")


def _managed(owner, name) -> bool:
    """A slot, a module's parameter / buffer / submodule (kept outside ``__dict__``), or
    state a C type keeps for the instance (a tensor's ``requires_grad``, ``grad``,
    ``data``), which is put back by setting it, never by deleting it."""
    if isinstance(owner, torch.nn.Module):
        return any(name in getattr(owner, d, {}) for d in ("_parameters", "_buffers", "_modules"))
    for klass in type(owner).__mro__:
        if name in (getattr(klass, "__slots__", ()) or ()):
            return True
        descriptor = klass.__dict__.get(name)
        if descriptor is not None:
            return isinstance(descriptor, (types.GetSetDescriptorType, types.MemberDescriptorType))
    return False


class _Plain:
    """A container seen through the methods of ``via``, one of its bases (the
    program's overrides of them are not run when a store is taken back)."""

    __slots__ = ("owner", "via")

    def __init__(self, owner, via):
        self.owner, self.via = owner, via

    def __contains__(self, key):
        return self.via.__contains__(self.owner, key)

    def __setitem__(self, key, value):
        self.via.__setitem__(self.owner, key, value)

    def __delitem__(self, key):
        self.via.__delitem__(self.owner, key)

    def clear(self):
        self.via.clear(self.owner)

    def update(self, items):
        self.via.update(self.owner, items)

    def extend(self, items):
        self.via.extend(self.owner, items)


def _restore_item(owner, key, old) -> None:
    if old is not ABSENT:
        owner[key] = old
    elif key in owner:
        del owner[key]


def _restore_attr(owner, name, old) -> None:
    # Through the library's attribute methods where the program's class has its own:
    # they ran under the monitor, and their other effects are taken back on their own.
    if old is not ABSENT:
        (user_code.library_class(owner, "__setattr__") or object).__setattr__(owner, name, old)
    else:  # (no ``hasattr``: it would build a ``cached_property`` the call deleted)
        discard_attr(owner, name, user_code.library_class(owner, "__delattr__"))


def _restore_cell(cell, _, old) -> None:
    if old is not ABSENT:
        cell.cell_contents = old
    else:
        try:
            del cell.cell_contents
        except ValueError:
            pass


def _restore_tensor(target, _, old) -> None:
    with torch.no_grad():
        target.copy_(old)


def _restore_requires_grad(target, call, flag) -> None:
    made, index = call
    made.pop(index, None)
    target.requires_grad_(flag)


def _restore_length(owner, _, length) -> None:
    del owner[length:]


def _restore_contents(owner, _, old) -> None:
    kind = owner.via if isinstance(owner, _Plain) else type(owner)
    if issubclass(kind, (dict, set, collections.deque)):
        owner.clear()
        owner.update(old) if not issubclass(kind, collections.deque) else owner.extend(old)
    else:
        owner[:] = old


def discard_attr(owner, name, via=None) -> None:
    """``del owner.name`` when the instance has it: the call stored the attribute and
    deleted it again (``self._stash = ...; del self._stash``), so the state it leaves
    is "absent" whether or not the attribute was there before.  ``via``: the class whose
    ``__delattr__`` deletes it, where the program's class has its own (replayed apart)."""
    try:
        if via is None:
            delattr(owner, name)
        else:
            via.__delattr__(owner, name)
    except AttributeError:
        pass


def discard(owner, key) -> None:
    """``del owner[key]`` when it is there (a mapping without ``pop(key, default)``)."""
    if key in owner:
        del owner[key]


# The names the generated mock calls these by (its namespace binds them; a generated
# wrapper module defines them from this module).
HELPERS = {
    "MISS": MISS,
    "Missed": Missed,
    "Raised": Raised,
    "EffectRaised": EffectRaised,
    "effect_raised": effect_raised,
    "catching": catching,
    "noting": noting,
    "raised_as": raised_as,
    "write_back": write_back,
    "make_dataclass_instance": make_dataclass_instance,
    "make_plain_object": make_plain_object,
    "leaves": leaves,
    "rng_state": rng_state,
    "restore_rng": restore_rng,
    "Undo": Undo,
    "ABSENT": ABSENT,
    "discard": discard,
    "discard_attr": discard_attr,
}
