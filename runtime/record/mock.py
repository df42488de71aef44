"""Mock generation: readable Python that replays a record without the interpreter.

The mock runs the compiled graph segments in order, the eager callouts
between them (checking the values later code depends on: *mid-guards*),
re-applies the side effects on external objects (attribute and item stores,
globals, container mutation; in-place tensor updates happen inside the
graphs) and rebuilds the return value: tuples, lists, dicts, dataclasses,
named tuples, plain objects, ``None`` and scalars.

Effects that print or log, when they come before a mid-guard, are held back
until the last mid-guard has passed, so a record abandoned half-way never
prints twice.

This module orders the mock's body; ``record/mock_values.py`` writes its values
and effects, and ``record/mock_support.py`` holds what the mock calls at run time.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import torch

from fullgraph.runtime import breaks
from fullgraph.runtime.capture.data_checks import draws_random
from fullgraph.runtime.capture.origins import CalloutOrigin, ExternalOrigin, LiftedOrigin
from fullgraph.runtime.capture.segment_modes import ANOMALY_CHECK_NAN, ANOMALY_ENABLED
from fullgraph.runtime.capture.segments import Unsupported
from fullgraph.runtime.capture.tape import GraphTape
from fullgraph.runtime.monitor.cached_calls import missed_cache
from fullgraph.runtime.monitor.state import Mutation
from fullgraph.runtime.record.codegen import Namespace, literal
from fullgraph.runtime.record.guards import GUARD_PARAMS
from fullgraph.runtime.record.midguards import is_cached_call, midguard, needs_midguard
from fullgraph.runtime.record.mock_support import Raised, in_modes
from fullgraph.runtime.record.mock_values import Effect, MockWriter, Symbols
from fullgraph.runtime.sources import Source
from fullgraph.runtime.symbolic.sizes import CalloutResultSource
from fullgraph.runtime.torch_internals import INFERENCE_MODE, tree_flatten


@dataclasses.dataclass
class MockCode:
    source: str
    namespace: dict[str, Any]
    reusable: bool
    not_reusable_reason: str | None
    rerun_safe: bool = True  # no external tensor is updated in place before the last callout
    resume_on_miss: bool = False  # a mid-guard miss must go straight to monitoring, reusing results


def generate_mock(
    tape: GraphTape,
    sources: dict[int, Source],
    input_sources: list[Source],
    mutations: list[Mutation],
    result: Any,
    ns: Namespace,
    symbols: Symbols | None = None,
) -> MockCode:
    input_index = {source: i for i, source in enumerate(input_sources)}
    symbols = symbols or Symbols()
    writer = MockWriter(tape, sources, ns, input_index, symbols)
    # 1. The effects on external objects and the return value.  Rebuilding them marks
    #    which graph values must be outputs.  A store made before a callout is applied
    #    before it (``opt.step()`` reads the lr just set), the others at the end.
    tail = MockWriter(tape, sources, ns, input_index, symbols, names=writer.names)
    tail.callout_results = writer.callout_results
    # A number the run read from outside is the value it had *then*: where a call the
    # mock makes may change it (``lr`` read, then ``sched.step()``), it is read first.
    entry_reads = _entry_reads(tape, symbols, mutations)
    for position, expr in enumerate(entry_reads):
        for side in (writer, tail):
            side.shadows.append((expr, f"e{position}"))
    for callout in tape.callouts:
        if isinstance(callout.result, Raised):  # the program may hold the exception
            writer.callout_results[id(callout.result.error)] = f"c{callout.index}.error"
        elif not _shared(callout.result) and not _returns_its_module(callout):
            writer.callout_results[id(callout.result)] = f"c{callout.index}"
    early: list[Effect] = []
    raising_effects = False  # a replayed call among the effects at the end (it may raise)
    for mutation in mutations:
        if mutation.position < len(tape.callouts):
            start, tail.before = len(tail.lines), mutation.position
            effect = tail.mutation(mutation, early=True)
            tail.before = None
            effect.temps, tail.lines[start:] = tail.lines[start:], []
            early.append(effect)
            if effect.shadow is not None:
                tail.shadows.append(effect.shadow)  # the values after it are read later
        else:
            tail.effects.extend(tail.mutation(mutation).lines)
            raising_effects = raising_effects or mutation.kind in ("call", "function")
    if symbols.result is not None and symbols.result[0] is result:
        returned = tail.settled(tail.unshadow(symbols.result[1].expr()))
    else:
        returned = tail.settled(tail.value(result))
    tape.finish()

    # 2. The body: segments and callouts in program order (a data check hoisted in
    #    front of its segment comes after the segment before it).
    callouts = _Body(writer, tape, early)
    # Outside tensors a graph updates in place before the last callout: saved before
    # the write-back, so a replay that misses or raises later leaves them as it found
    # them (BatchNorm's running stats before ``if x.sum() > 0:``).
    restored = {
        segment.index
        for segment in tape.segments
        if segment.mutates_external
        and segment.restorable
        and segment.index <= _segment_of(tape, callouts.last_callout)
    }
    undo = bool(early or restored or callouts.flags_before_midguard)
    if undo:
        writer.lines.append(_UNDO_LINE)
    if _draws_before_midguard(tape, callouts.last_midguard):
        # A replay that misses after a graph drew random numbers hands back the
        # generator as it found it: the monitoring run that follows draws them again.
        writer.lines.append("rng = rng_state()  # restored if a mid-guard misses")
        callouts.miss = "return restore_rng(rng)"
    if undo:
        callouts.miss = f"return U.undo({callouts.miss.removeprefix('return ')})"
    callouts.callouts_after(-1)
    for segment in tape.segments:
        if segment.op_count or segment.outputs:
            args = ", ".join(writer.origin_expr(origin) for _, origin in segment.placeholders)
            call = f"g{segment.index} = graph{segment.index}({args})  # {segment.op_count} ops"
            mode = segment.inference_mode
            if mode is not None and mode != tape.entry_state[INFERENCE_MODE]:
                # Its ops ran in a torch.inference_mode() block (@torch.inference_mode()),
                # or in an inference_mode(False) block of a call made in inference mode:
                # so does the graph, and its tensors are inference tensors as eager's or not.
                writer.lines.append(f"with torch.inference_mode({mode}):")
                call = "    " + call
            writer.lines.append(call)
            for origin, index in segment.writebacks:  # in-place updates of inputs
                target = writer.origin_expr(origin)
                if segment.index in restored and isinstance(
                    origin, (ExternalOrigin, CalloutOrigin)
                ):
                    writer.lines.append(f"U.tensor({target})  # put back on a miss or a raise")
                writer.lines.append(f"write_back({target}, g{segment.index}[{index}])")
            unrestored = segment.mutates_external and segment.index not in restored
            if unrestored and segment.index <= _segment_of(tape, callouts.last_midguard):
                callouts.effect_before_midguard = True
            if unrestored and segment.index <= _segment_of(tape, callouts.last_callout):
                callouts.effect_before_last_callout = True
        callouts.callouts_after(segment.index)
    callouts.effects_before(None)  # those whose values a hoisted data check came before
    effect_before_midguard = callouts.effect_before_midguard
    effect_before_last_callout = callouts.effect_before_last_callout
    effect_callout_before_midguard = callouts.effect_callout_before_midguard
    reusable, reason = True, None
    if effect_before_midguard:
        reusable = False
        reason = (
            "an external tensor is updated in place before a value the rest of the "
            "run depends on; a replay that misses there would update it twice"
        )
    if callouts.input_changed_before_midguard is not None:
        name, source = callouts.input_changed_before_midguard
        reusable = False
        reason = (
            f"{name} changes {source}, which the run read before it, and a value the "
            "rest of the run depends on comes after it: a replay that missed there "
            "would run the function again from the changed state"
        )
    if not all(effect.undoable for effect in early):
        reusable = False
        reason = (
            "an object from outside is changed by a call before a later call of the "
            "function; a replay that missed after it could not take the change back"
        )
    rerun_safe = not effect_before_last_callout
    entry = [
        f"e{i} = {expr}  # read before any call can change it" for i, expr in enumerate(entry_reads)
    ]
    effects = tail.effects
    if raising_effects:  # see mock_support.EffectRaised: raised as made, never run again
        effects = [
            "try:",
            *(f"    {line}" for line in effects),
            "except BaseException as error:",
            "    effect_raised(error)",
        ]
    body = entry + writer.lines + tail.lines + effects + _exit_state(tape) + [f"return {returned}"]
    if undo and rerun_safe:
        # A replay that raises runs the program again (compiled.py): from the state the
        # call found, so the stores and in-place updates it made first are taken back.
        first = body.index(_UNDO_LINE) + 1
        body = (
            [*body[:first], "try:"]
            + [f"    {line}" for line in body[first:]]
            + [
                "except EffectRaised:",
                "    raise",
                "except BaseException:",
                "    U.undo()",
                "    raise",
            ]
        )
    source = (
        f"def mock(I, {GUARD_PARAMS}, R=(), made=None):\n"
        f'    """Generated by fullgraph: replay the record (graphs, callouts, effects, result).\n\n'
        f"    R: results of callouts a replay that missed has already made, by index;\n"
        f"    made: filled with the results of the callouts this replay makes.\n"
        f'    """\n'
        f"    made = {{}} if made is None else made\n" + "".join(f"    {line}\n" for line in body)
    )
    return MockCode(
        source,
        ns.values,
        reusable,
        reason,
        rerun_safe=rerun_safe,
        resume_on_miss=effect_callout_before_midguard,
    )


class _Body:
    """Writes the callouts of the mock's body, with their mid-guards, in program order."""

    def __init__(self, writer: MockWriter, tape: GraphTape, early: list[Effect]):
        self.writer = writer
        self.tape = tape
        self.early = list(early)  # the stores made before a callout, in program order
        self.store_positions = [effect.position for effect in early]
        self.written: set[int] = set()  # the callouts written (or held back) so far
        self.last_midguard = max((c.index for c in tape.callouts if needs_midguard(c)), default=-1)
        # ``x.requires_grad_()`` before a mid-guard: its flag is taken back on a miss.
        self.flags_before_midguard = {
            c.index
            for c in tape.callouts
            if c.function is torch.Tensor.requires_grad_ and c.args and c.index < self.last_midguard
        }
        self.last_callout = len(tape.callouts) - 1
        self.held_back: list[str] = []
        self.effect_before_midguard = False
        self.effect_before_last_callout = False
        self.effect_callout_before_midguard = False
        self.input_changed_before_midguard: tuple[str, str] | None = None
        self.miss = "return MISS"
        # The last mid-guard is written (a data check runs in front of its graph, so an
        # effect with a smaller index can come after it).
        self.midguards_done = self.last_midguard < 0

    def _overtaken(self, callout) -> bool:
        """Whether holding ``callout`` back would move it after another effect made
        before the last mid-guard (which is not held back)."""
        if any(callout.index < p <= self.last_midguard for p in self.store_positions):
            return True  # print(metrics) then metrics["loss"] = v: it prints the old one
        if _shows_tensor(callout) and any(
            segment.writebacks
            for segment in self.tape.segments[
                callout.segment_before + 1 : _segment_of(self.tape, self.last_midguard) + 1
            ]
        ):
            return True  # print(h) then h.relu_(): held back, it would print the new values
        return any(
            later.effectful and not _output_only(later)
            for later in self.tape.callouts[callout.index + 1 : self.last_midguard + 1]
        )

    def effects_before(self, callout) -> None:
        """The stores made before ``callout`` (None: the end), in program order, once the
        callouts made before them are written (a data check hoisted in front of its
        graph comes before callouts made earlier) and the graphs their values come
        from have run (a store of a graph output waits for that graph)."""
        while self.early:
            effect = self.early[0]
            if callout is not None and (
                effect.position > callout.index
                or any(i not in self.written for i in range(effect.position))
                or _graph_needed(effect.temps + effect.lines) > callout.segment_before
            ):
                return
            self.early.pop(0)
            self.writer.lines.extend(effect.temps + effect.lines)
            if effect.shadow is not None:
                self.writer.shadows.append(effect.shadow)

    def callouts_after(self, segment_index: int) -> None:
        for callout in self.tape.callouts:
            if callout.segment_before == segment_index:
                self.callout(callout)

    def callout(self, callout) -> None:
        writer, tape = self.writer, self.tape
        self.effects_before(callout)
        self.written.add(callout.index)
        fn = writer.ns.name_for(callout.function)
        values = list(callout.args) + list(callout.kwargs.values())
        overrides = {
            key: writer.origin_expr(origin) for key, origin in callout.tensor_origins.items()
        }
        if callout.check is not None:
            check = callout.check
            inputs = ", ".join(writer.origin_expr(origin) for _, origin in check.placeholders)
            writer.lines.append(
                f"h{callout.index} = check{callout.index}({inputs})  "
                f"# {check.op_count} ops, the data the next read takes"
            )
            overrides.update({key: f"h{callout.index}[{i}]" for key, i in check.positions.items()})
        writer.tensor_overrides = overrides  # nested ones too (print([x, y]))
        rendered = [
            writer.unshadow(callout.arg_syms[i].expr())
            if i in callout.arg_syms
            else writer.value(v)
            for i, v in enumerate(values)
        ]
        if any(re.search(rf"\bc{callout.index}\b", text) for text in rendered):
            # ``g = torch.Generator(); g.manual_seed(s)`` returns ``g``: the object the
            # call is handed is only known as this call's own result.
            raise Unsupported(
                breaks.UNSUPPORTED_CONSTRUCT,
                f"{callout.function_name} is handed the object it returns, made by the call",
            )
        writer.tensor_overrides = {}
        if callout.index in self.flags_before_midguard:
            # A miss later sends the call to be monitored from the start, where an
            # in-place update of the tensor before this call must find it unflagged.
            writer.lines.append(
                f"U.requires_grad({rendered[0]}, made, {callout.index})  # taken back on a miss"
            )
        call_args = rendered[: len(callout.args)]
        call_args += [f"{k}={r}" for k, r in zip(callout.kwargs, rendered[len(callout.args) :])]
        if callout.modes is not None:  # made inside the function's no_grad block: in it again
            call_args = [*map(repr, callout.modes), fn, *call_args]
            fn = writer.ns.bind(in_modes, "in_modes")
        where = callout.location
        comment = f"# {callout.category.code} {callout.function_name}"
        if where is not None:
            comment += f" at {where.file.rsplit('/', 1)[-1]}:{where.line}"
        if callout.hoisted and callout.category is breaks.TENSOR_VALUE_READ:
            comment += " (a data check in front of the graph)"
        elif callout.hoisted:
            comment += " (a setting read in front of the graph)"
        if isinstance(callout.result, Raised):  # it raised, and the program caught it
            call = f"catching({', '.join([fn, *call_args])})"
        elif callout.effectful and not _output_only(callout) and not callout.remade_on_rerun:
            # Should it raise (a scheduler stepped past its end), the program runs again
            # from here with the error, and does not make the call a second time.
            call = f"noting(made, {callout.index}, {', '.join([fn, *call_args])})"
        else:
            call = f"{fn}({', '.join(call_args)})"
        # Output-only effects (print, logging) may wait for the mid-guards; an effect
        # later code depends on (backward() before reading .grad) may not, nor one an
        # effect made before those mid-guards would then overtake (print(..., file=out)
        # between two out.write(...) calls).
        if (
            _output_only(callout)
            and callout.index < self.last_midguard
            and not self.midguards_done
            and not self._overtaken(callout)
        ):
            # In ``made`` too: a replay that raises later hands the monitoring run it
            # reruns this result, so the print is not made a second time.
            self.held_back.append(
                f"made[{callout.index}] = {call}  {comment} (held back until the mid-guards pass)"
            )
            return
        if callout.changed_input and callout.index <= self.last_midguard:
            self.input_changed_before_midguard = (callout.function_name, callout.changed_input)
        if callout.remade_on_rerun:
            # ``model.eval()``: never handed over (the run after a miss makes it again
            # where the program does, so the code between sees the flags it set then).
            writer.lines.append(f"c{callout.index} = {call}  {comment}")
        else:
            if (
                (callout.effectful or callout.changes_state)
                and callout.index <= self.last_midguard
                and not self.midguards_done
            ):
                # A miss at a later mid-guard must not repeat this effect: the
                # monitoring run that follows is handed its result (see Missed).
                self.effect_callout_before_midguard = True
            if (
                callout.index <= self.last_midguard
            ):  # a missed replay of another record may have made it
                call = f"R[{callout.index}] if {callout.index} in R else {call}"
            writer.lines.append(f"c{callout.index} = made[{callout.index}] = {call}  {comment}")
        if is_cached_call(callout):
            missed = writer.ns.bind(missed_cache, "missed_cache")
            writer.lines.append(
                f"if {missed}(c{callout.index}):  # not in the cache: monitor the call"
            )
            writer.lines.append(f"    {self.miss}")
        if callout.guard_result:
            writer.lines.append(f"if not ({midguard(callout, writer.ns, tape)}):  # mid-guard")
            writer.lines.append(f"    {self.miss}")
        for condition in callout.conditions:
            text = writer.unshadow(condition.source(literal))
            writer.lines.append(f"if not ({text}):  # mid-guard (symbolic)")
            writer.lines.append(f"    {self.miss}")
        if callout.index == self.last_midguard:
            writer.lines.extend(self.held_back)
            self.held_back = []
            self.midguards_done = True


def _graph_needed(lines: list[str]) -> int:
    """The last graph whose outputs ``lines`` read (-1: none)."""
    return max((int(m) for line in lines for m in _GRAPH_OUTPUT.findall(line)), default=-1)


def _entry_reads(tape: GraphTape, symbols: Symbols, mutations: list[Mutation]) -> list[str]:
    """The paths of the outside numbers the mock's expressions use, when a call it makes
    may change state (an effectful callout); and the sizes it follows when it stores
    (``layer.keys = torch.cat(...)``, then ``layer.keys.shape[0]`` of before)."""
    sizes = []
    if mutations and tape.shapes is not None and tape.shapes.active:
        sizes = [leaf.text() for leaf in tape.shapes.symbols.values() if _mock_path(leaf)]
    if not any(callout.effectful for callout in tape.callouts):
        return list(dict.fromkeys(sizes))
    syms = [entry[1] for entry in symbols.stores.values()]
    syms += [sym for slots in symbols.containers.values() for sym in slots.values()]
    syms += [symbols.result[1]] if symbols.result is not None else []
    for holder in (*tape.callouts, *mutations):
        syms += list(getattr(holder, "arg_syms", {}).values())
    syms += [c.sym for callout in tape.callouts for c in callout.conditions]
    syms += [  # lifted into a graph (``e += (p - e) * lr``)
        origin.sym
        for segment in tape.segments
        for _, origin in segment.placeholders
        if isinstance(origin, LiftedOrigin)
    ]
    exprs = [leaf.expr() for sym in syms for leaf in sym.leaves() if leaf.source is not None]
    return list(dict.fromkeys(sizes + exprs))


def _mock_path(leaf: Any) -> bool:
    """A followed size the mock reads through a path (a callout's result is its own)."""
    return not isinstance(leaf.source, CalloutResultSource)


_UNDO_LINE = "U = Undo()  # the stores and updates made before a callout, taken back on a miss"
_GRAPH_OUTPUT = re.compile(r"\bg(\d+)\[")


def _exit_state(tape: GraphTape) -> list[str]:
    """The global settings the function returns with changed (``torch.set_grad_enabled(
    False)`` in an eval script): the replay leaves them as eager does.  Its graphs end
    in the state the call started with, so a replay that misses leaves nothing changed."""
    lines = []
    mode = tape.exit_grad_mode
    if mode != tape.entry_grad_mode:
        lines.append(f"torch.set_grad_enabled({mode})  # the function leaves grad mode {_on(mode)}")
    anomaly = tape.exit_anomaly
    if anomaly != {key: tape.entry_state[key] for key in anomaly}:
        enabled, check_nan = anomaly[ANOMALY_ENABLED], anomaly[ANOMALY_CHECK_NAN]
        lines.append(
            f"torch.set_anomaly_enabled({enabled}, {check_nan})  "
            f"# the function leaves anomaly detection {_on(enabled)}"
        )
    return lines


def _on(flag: bool) -> str:
    return "on" if flag else "off"


def _output_only(callout) -> bool:
    """A print or log call: an effect nothing later in the function reads."""
    return (
        callout.effectful
        and callout.result is None
        and callout.category is breaks.PYTHON_SIDE_EFFECT
        and not callout.changes_arguments
    )


def _draws_before_midguard(tape: GraphTape, last_midguard: int) -> bool:
    last = _segment_of(tape, last_midguard)
    return any(
        draws_random(node) for segment in tape.segments[: last + 1] for node in segment.graph.nodes
    )


def _returns_its_module(callout) -> bool:
    """``model.train()``, ``model.to(...)``: torch's module methods return the module
    they are called on, which keeps its own source (it is no new value of the call)."""
    result = callout.result
    if not isinstance(result, torch.nn.Module):
        return False
    receiver = getattr(callout.function, "__self__", None)
    if receiver is None and callout.args:
        receiver = callout.args[0]
    return receiver is result


def _shared(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, str)) and not isinstance(value, float)


def _shows_tensor(callout) -> bool:
    values = list(callout.args) + list(callout.kwargs.values())
    return any(isinstance(leaf, torch.Tensor) for leaf in tree_flatten(values)[0])


def _segment_of(tape: GraphTape, callout_index: int) -> int:
    if callout_index < 0:
        return -1
    return tape.callouts[callout_index].segment_before
