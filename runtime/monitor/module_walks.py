"""``self.parameters()`` and torch's other walks of a module tree, guarded as they go.

``Module.parameters``, ``named_parameters``, ``buffers``, ``modules``,
``children`` (and their named forms) are torch's Python, which the monitor
does not step into: the tensors they yield get sources (the monitor finds
them in the module tree), but which members exist was read unguarded, so a
layer added or a parameter registered after the first call left the replay
summing the old set (``sum(p.pow(2).sum() for p in self.parameters())``).

The call is swapped for :func:`guarded_walk`, which yields exactly what
torch's walk yields and, before each item, guards what torch had to read to
get there: in walk order, each module up to the item's owner (its identity),
the keys of its ``_modules`` and of the member dict the walk lists
(``_parameters`` or ``_buffers``), and each member: a missing one by value,
a tensor by its metadata, and two members of equal metadata as two objects
(or one), so a weight tied or untied since the record (which changes what the
deduplicating walk yields) is a miss.  ``next(self.parameters())``
(a model's device or dtype) guards only the first module's members.
"""

from __future__ import annotations

import copy
import inspect
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch

from fullgraph.runtime.monitor.iteration import MODULE_DICTS
from fullgraph.runtime.sources import AttrSource, KeysSource, Source, TypeOfSource

_Module = torch.nn.Module

# method -> (the named walk torch's method is built on, the member dict it lists or
# None for a walk of modules, whether each item is a (name, value) pair)
_WALKS: dict[Callable, tuple[Callable, str | None, bool]] = {
    _Module.parameters: (_Module.named_parameters, "_parameters", False),
    _Module.named_parameters: (_Module.named_parameters, "_parameters", True),
    _Module.buffers: (_Module.named_buffers, "_buffers", False),
    _Module.named_buffers: (_Module.named_buffers, "_buffers", True),
    _Module.modules: (_Module.named_modules, None, False),
    _Module.named_modules: (_Module.named_modules, None, True),
    _Module.children: (_Module.named_children, None, False),
    _Module.named_children: (_Module.named_children, None, True),
}


# torch's Python methods that read a module tree (members, hooks, settings, class)
# and give back plain objects: replayed, their results checked (a layer's settings
# changed between calls is another ``repr``).  ``state_dict`` is guarded instead.
_TREE_READERS = frozenset(
    [
        "__repr__",
        "__str__",
        "extra_repr",
        "_get_name",
        "get_parameter",
        "get_buffer",
    ]
)


def reads_tree_unobserved(fn: Any, target: Any, args: tuple) -> bool:
    """``repr(m)``, ``m.extra_repr()``, ``m.get_parameter("w")``, ``copy.deepcopy(m)``:
    torch's Python (or the copy module) reads the module tree unobserved."""
    if any(target is reader for reader in (repr, str, format, copy.copy, copy.deepcopy)):
        return bool(args) and isinstance(args[0], _Module)
    name = getattr(target, "__name__", "")
    return name in _TREE_READERS and isinstance(_receiver(fn, args), _Module)


def guarding_state_dict(run: Any, fn: Any, target: Any, args: tuple) -> Callable | None:
    """What to call instead of ``m.state_dict`` (torch's own): it guards what torch
    reads (every module on the way, its parameters' and buffers' keys, which buffers
    are not persistent, its state-dict hooks), then runs it.  None: not torch's
    ``state_dict`` of a module from outside the call."""
    module = _receiver(fn, args)
    if target is not _Module.state_dict or not isinstance(module, _Module):
        return None
    source = run.source_of(module)
    if source is None or run.written_external(module):
        return None
    bound = isinstance(fn, types.MethodType)

    def state_dict(*call_args: Any, **call_kwargs: Any) -> Any:
        rest = call_args if bound else call_args[1:]
        if rest or "destination" in call_kwargs:
            run.refuse("state_dict(destination, ...) fills a dict the monitor does not follow")
        else:
            for members in ("_parameters", "_buffers"):
                _Walk(run, module, source, "", True, members, False).finish()
            for _, child, child_source in _Walk(run, module, source, "", True, None, False).order:
                _guard_state_dict_settings(run, child, child_source)
        return _Module.state_dict(module, *rest, **call_kwargs)

    run.keepalive.append(state_dict)
    return state_dict


def _guard_state_dict_settings(run: Any, module: _Module, source: Source) -> None:
    run.read(TypeOfSource(source), type(module), symbolic=False)  # _save_to_state_dict
    run.register(
        module._non_persistent_buffers_set, AttrSource(source, "_non_persistent_buffers_set")
    )
    run.read_whole(module._non_persistent_buffers_set)
    for hooks in ("_state_dict_pre_hooks", "_state_dict_hooks"):
        run.read(
            KeysSource(AttrSource(source, hooks)), tuple(getattr(module, hooks)), symbolic=False
        )


def _receiver(fn: Any, args: tuple) -> Any:
    """The object a method call is on: a bound method's, or (after LOAD_METHOD, the
    plain function on the stack) the first argument."""
    return fn.__self__ if isinstance(fn, types.MethodType) else (args[0] if args else None)


def module_dict_view(fn: Any, target: Any, name: str, args: tuple) -> Any:
    """The ModuleDict (or ParameterDict) whose ``items/keys/values`` this call is, if any."""
    if name not in ("items", "keys", "values"):
        return None
    owner = _receiver(fn, args)
    if not isinstance(owner, MODULE_DICTS):
        return None
    return owner if getattr(type(owner), name, None) is target else None


def walk_of(target: Any) -> bool:
    """Whether ``target`` (a function, not bound) is one of torch's module walks."""
    try:
        return target in _WALKS
    except TypeError:  # an unhashable callable
        return False


def guarding_walk(run: Any, fn: Any, target: Callable, args: tuple) -> Callable | None:
    """What to call instead of ``fn`` (the walk ``target``, bound or with its module
    first in ``args``): a walk that guards as it goes; None for a module the call made
    or changed, which the guard at entry can say nothing about, and for a call that is
    no walk.  ``m.state_dict`` is swapped for a guarded one too."""
    if not walk_of(target):
        return guarding_state_dict(run, fn, target, args)
    bound = isinstance(fn, types.MethodType)
    module = _receiver(fn, args)
    source = run.source_of(module) if isinstance(module, _Module) else None
    if source is None or run.written_external(module):
        return None

    def walk(*call_args: Any, **call_kwargs: Any) -> Any:
        rest = call_args if bound else call_args[1:]
        return guarded_walk(run, target, module, source, rest, call_kwargs)

    run.keepalive.append(walk)
    return walk


def guarded_walk(
    run: Any, method: Callable, module: _Module, source: Source, args: tuple, kwargs: dict
) -> Iterator:
    """What ``method(module, *args, **kwargs)`` returns, guarding each step in ``run``."""
    named, members, pairs = _WALKS[method]
    bound = inspect.signature(method).bind(module, *args, **kwargs)
    bound.apply_defaults()
    options = {k: v for k, v in bound.arguments.items() if k != "self"}
    if options.pop("memo", None) is not None:
        # A caller's own memo set changes which modules the walk skips: guard it all.
        walk = _Walk(run, module, source, "", True, members, True)
        walk.finish()
        return method(module, *args, **kwargs)
    # ``parameters()`` is ``named_parameters()`` without the names, and so on.
    steps = _walk(run, module, source, named, options, members, pairs)
    return ModuleWalk(steps, source, method.__name__, args, kwargs)


class ModuleWalk:
    """The iterator a walk returns, which the mock can make again: handed to a callout
    (``clip_grad_norm_(self.parameters(), 1.0)``), it is written ``M.parameters()``."""

    def __init__(self, steps: Iterator, source: Source, name: str, args: tuple, kwargs: dict):
        self._steps = steps
        self.source, self.name, self.args, self.kwargs = source, name, args, kwargs

    def __iter__(self) -> ModuleWalk:
        return self

    def __next__(self) -> Any:
        return next(self._steps)


def _walk(run, module, source, named, options, members, pairs) -> Iterator:
    children = named is _Module.named_children
    walk = _Walk(
        run,
        module,
        source,
        options.get("prefix", ""),
        options.get("recurse", True) and not children,
        members,
        options.get("remove_duplicate", True),
    )
    for index, item in enumerate(named(module, **options)):
        name, _ = item
        if children:
            walk.root_children(index + 1)
        elif members is None:
            walk.reached(index)  # a walk of modules: the item is the module at ``index``
        else:
            walk.reached(walk.positions[name.rpartition(".")[0] if "." in name else walk.prefix])
        yield item if pairs else item[1]
    walk.finish()


class _Walk:
    """What torch's walk of one module tree has read so far, guarded in ``run``.

    The walk visits modules depth first.  When it yields something of the module at
    position ``j``, it has read every module before ``j`` that is not an ancestor of
    ``j`` in full (their subtrees are done), each ancestor's ``_modules`` up to the
    child it went down into, and the members of ``j``.
    """

    def __init__(self, run, module, source, prefix, recurse, members, remove_duplicate):
        self.run, self.members, self.prefix = run, members, prefix
        self.order: list[tuple[str, _Module, Source]] = []
        if recurse:
            for path, child in module.named_modules(
                prefix=prefix, remove_duplicate=remove_duplicate
            ):
                self.order.append((path, child, _source_of_path(source, path, prefix)))
        else:
            self.order.append((prefix, module, source))
        self.positions = {path: index for index, (path, _, _) in enumerate(self.order)}
        self.seen = -1  # the last position reached
        self.members_seen: dict[tuple, list[tuple[torch.Tensor, Source]]] = {}
        self.open: list[int] = []  # reached, their _modules not read in full yet

    def reached(self, position: int) -> None:
        path = self.order[position][0]
        for index in range(self.seen + 1, position + 1):
            self._members_of(index)
            self.open.append(index)
        self.seen = max(self.seen, position)
        still_open = []
        for index in self.open:
            ancestor = self.order[index][0]
            if index == position:
                still_open.append(index)
            elif _is_ancestor(ancestor, path, self.prefix):
                # Read up to the child on the way down to ``path``.
                step = path[len(ancestor) :].lstrip(".").split(".")[0]
                keys = tuple(self.order[index][1]._modules)
                self._modules_of(index, keys.index(step) + 1 if step in keys else None)
                still_open.append(index)
            else:
                self._modules_of(index, None)
        self.open = still_open

    def root_children(self, upto: int) -> None:
        """``children()``: the root's first ``upto`` children were yielded."""
        self._members_of(0)
        self._modules_of(0, upto)

    def finish(self) -> None:
        """The walk ran to its end: it read everything."""
        for index in range(len(self.order)):
            if index > self.seen:
                self._members_of(index)
            self._modules_of(index, None)

    def _members_of(self, index: int) -> None:
        _, module, source = self.order[index]
        run = self.run
        if run.written_external(module):
            return  # changed by the call before it walked it: not recordable (noted)
        run.read(source, module, symbolic=False)
        if self.members is None:
            return
        listed = getattr(module, self.members)
        run.read(KeysSource(AttrSource(source, self.members)), tuple(listed), symbolic=False)
        for key, member in listed.items():
            member_source = AttrSource(source, key)
            run.read(member_source, member, symbolic=False)  # one tensor twice: an alias
            if isinstance(member, torch.Tensor):
                self._distinct_from_earlier(member, member_source)

    def _distinct_from_earlier(self, member: torch.Tensor, source: Source) -> None:
        """Which tensors the deduplicating walk skips depends on identity: a member that
        is another object than an earlier one of the same metadata must stay so (tied
        later, the walk would yield one tensor fewer; members that differ in metadata
        can't be tied without the metadata check failing)."""
        key = (type(member), member.dtype, member.device, member.shape, member.requires_grad)
        for earlier, earlier_source in self.members_seen.get(key, ()):
            if earlier is not member:
                self.run.distinct.append((earlier_source, source))
        self.members_seen.setdefault(key, []).append((member, source))

    def _modules_of(self, index: int, upto: int | None) -> None:
        """Guard the keys of a module's ``_modules`` (the first ``upto``) and those children."""
        _, module, source = self.order[index]
        children = list(module._modules.items())[:upto]
        modules_source = AttrSource(source, "_modules")
        self.run.read(
            KeysSource(modules_source, upto), tuple(k for k, _ in children), symbolic=False
        )
        for name, child in children:
            # A child shared with another place is walked once: the guard sees the alias.
            self.run.read(AttrSource(source, name), child, symbolic=False)


def _source_of_path(root: Source, path: str, prefix: str) -> Source:
    relative = path[len(prefix) :].lstrip(".") if prefix else path
    source = root
    for part in relative.split(".") if relative else ():
        source = AttrSource(source, part)
    return source


def _is_ancestor(ancestor: str, path: str, prefix: str) -> bool:
    if ancestor == path:
        return False
    if ancestor == prefix:
        return True  # the root
    return path.startswith(ancestor + ".")
