"""The value-stack reader against the values Python computes, on the running version.

Every opcode event of the functions below is recorded with the stack the
reader sees (``cpython.stack_depth`` / ``stack_item``) and the frame's
locals.  Then each instruction is checked against its successor: the
operands the reader returned, run through the operation again in plain
Python, must give the value the reader finds on the stack one instruction
later (``a * b``, ``getattr(owner, name)``, ``fn(*args, **kwargs)`` decoded
with the version's calling convention, ``container[key]``, the local a
``LOAD_FAST`` pushed, the constant a ``LOAD_CONST`` pushed...), and the
value a function returns must be the one its ``RETURN_VALUE`` found on top.
On 3.11, where the interpreter saves its stack pointer before an opcode
event, the static depth used on 3.12+ is also checked against it at every
event.
"""

from __future__ import annotations

import collections
import collections.abc
import dis
import math
import operator
import sys
import types

import pytest

from fullgraph.runtime import cpython

pytestmark = pytest.mark.skipif(
    tuple(sys.version_info[:2]) not in cpython.SUPPORTED_VERSIONS,
    reason="no stack reader for this interpreter",
)

Event = collections.namedtuple("Event", "ins stack locals saved_depth")
COMPARE = {
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
}


class Recorder:
    """Runs a call under opcode tracing and checks each instruction as the next event
    arrives (operands are live objects: a list built now is filled later)."""

    def __init__(self, codes):
        self.codes = set(codes)
        self.checked = collections.Counter()
        self.failures: list[str] = []
        self.events = 0

    def run(self, fn, *args, **kwargs):
        previous = sys.gettrace()
        cpython.start_tracing(self._on_call)
        try:
            return fn(*args, **kwargs)
        finally:
            cpython.stop_tracing(previous)

    def _on_call(self, frame, event, arg):
        if event != "call" or frame.f_code not in self.codes:
            return None
        listing = cpython.instructions(frame.f_code)
        state = {"last": None, "kwnames": None}

        def trace(frame, event, arg):
            try:
                if event == "opcode":
                    self.events += 1
                    depth = cpython.stack_depth(frame)
                    assert depth >= 0, f"negative depth at {frame.f_lasti}"
                    stack = [cpython.stack_item(frame, depth - 1 - i) for i in range(depth)]
                    saved = None
                    if sys.version_info[:2] == (3, 11):
                        saved = _static_depth(frame.f_code, frame.f_lasti)
                    now = Event(listing[frame.f_lasti], stack, dict(frame.f_locals), saved)
                    if saved is not None and now.ins.opname != "CALL":
                        # 3.11's compiler counts PRECALL's pops at PRECALL, the
                        # interpreter at CALL: the depth before CALL differs there.
                        assert saved == depth, (
                            f"{frame.f_code.co_name}@{frame.f_lasti} {now.ins.opname}: "
                            f"static depth {saved}, interpreter {depth}"
                        )
                        self.checked["static depth = interpreter's"] += 1
                    last, state["last"] = state["last"], now
                    if last is not None:
                        check_pair(state, last, now, frame, self.checked)
                elif event == "return" and state["last"] is not None:
                    last = state["last"]
                    if last.ins.opname == "RETURN_VALUE":
                        assert last.stack[-1] is arg, f"{frame.f_code.co_name} returned {arg!r}"
                        self.checked["RETURN_VALUE"] += 1
                    elif last.ins.opname == "RETURN_CONST":
                        assert last.ins.argval is arg or last.ins.argval == arg
                        self.checked["RETURN_CONST"] += 1
                    elif last.ins.opname == "YIELD_VALUE":
                        assert last.stack[-1] is arg
                        self.checked["YIELD_VALUE"] += 1
                    state["last"] = None  # a generator resumes with a fresh event
            except (AssertionError, IndexError) as error:
                self.failures.append(f"{type(error).__name__}: {error}")
            return trace

        cpython.trace_opcodes(frame, trace)
        return trace


def _static_depth(frame_code, offset) -> int:
    return cpython.static_depths(frame_code)[offset]


def _value(ins, frame_globals):
    name = ins.argval
    if name in frame_globals:
        return frame_globals[name]
    import builtins

    return getattr(builtins, name)


def check_pair(state: dict, event: Event, after: Event, frame, checked) -> None:
    """Check ``event``'s instruction against the stack at the next event ``after``."""
    code, ins, stack, top = frame.f_code, event.ins, event.stack, after.stack
    if ins.opname == "KW_NAMES":
        state["kwnames"] = code.co_consts[ins.arg]
    if after.ins.opname == "PUSH_EXC_INFO":
        return  # the instruction raised: its outputs never arrived
    name = ins.opname
    where = (
        f"{code.co_name}@{ins.offset} {name} {ins.argrepr}: {stack} -> "
        f"{after.ins.offset} {after.ins.opname} {top}"
    )
    try:
        _check_instruction(state, event, after, frame, checked, where)
    except IndexError as error:
        raise AssertionError(f"{where}: {error}") from error


def _check_instruction(state, event, after, frame, checked, where) -> None:
    code, frame_globals = frame.f_code, frame.f_globals
    ins, stack, top = event.ins, event.stack, after.stack
    name = ins.opname
    if name in ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR"):
        if ins.argval in event.locals:
            value = top[-1]
            if isinstance(value, types.CellType) and ins.argval in code.co_cellvars:
                value = value.cell_contents  # 3.13 loads a cell for a closure with LOAD_FAST
            assert value is event.locals[ins.argval], where
            checked[name] += 1
    elif name == "LOAD_FAST_LOAD_FAST":
        first, second = ins.argval
        assert top[-2] is event.locals[first] and top[-1] is event.locals[second], where
        checked[name] += 1
    elif name == "LOAD_CONST":
        assert top[-1] is ins.argval or top[-1] == ins.argval, where
        checked[name] += 1
    elif name == "LOAD_GLOBAL":
        depth = cpython.loaded_depth(ins, lambda d: top[-1 - d])
        assert top[-1 - depth] is _value(ins, frame_globals), where
        if ins.arg & 1:
            assert cpython.NULL in (top[-1], top[-2]), where
        checked[name] += 1
    elif name in ("LOAD_ATTR", "LOAD_METHOD"):
        owner = stack[-1]
        depth = cpython.loaded_depth(ins, lambda d: top[-1 - d])
        if depth is None:  # a method found on the type, then self
            method = next(
                klass.__dict__[ins.argval]
                for klass in type(owner).__mro__
                if ins.argval in klass.__dict__
            )
            assert owner in top[-2:] and method in top[-2:], where
        else:
            assert top[-1 - depth] == getattr(owner, ins.argval), where
        checked[name] += 1
    elif name == "STORE_FAST":
        if ins.argval in after.locals:
            assert after.locals[ins.argval] is stack[-1], where
            checked[name] += 1
    elif name == "STORE_FAST_STORE_FAST":
        first, second = ins.argval
        assert after.locals[first] is stack[-1] and after.locals[second] is stack[-2], where
        checked[name] += 1
    elif name == "STORE_FAST_LOAD_FAST":
        stored, loaded = ins.argval
        assert after.locals[stored] is stack[-1], where
        assert top[-1] is after.locals[loaded], where
        checked[name] += 1
    elif name == "BINARY_OP":
        _, fn = cpython.BINARY_OPS.get(ins.arg, (None, None))
        if fn is not None:
            assert top[-1] == fn(stack[-2], stack[-1]), where
            checked[name] += 1
    elif name == "COMPARE_OP":
        result = COMPARE[ins.argval](stack[-2], stack[-1])
        assert top[-1] == result, where
        checked[name] += 1
    elif name in ("BINARY_SUBSCR",):
        assert top[-1] == stack[-2][stack[-1]], where
        checked[name] += 1
    elif name == "BINARY_SLICE":
        assert top[-1] == stack[-3][stack[-2] : stack[-1]], where
        checked[name] += 1
    elif name in ("BUILD_LIST", "BUILD_TUPLE"):
        items = stack[len(stack) - ins.arg :]
        assert list(top[-1]) == items, where
        checked[name] += 1
    elif name in ("CALL", "CALL_KW"):
        fn, _, args, kwargs = cpython.call_operands(ins, lambda d: stack[-1 - d], state["kwnames"])
        state["kwnames"] = None
        if fn in PURE and not any(isinstance(a, collections.abc.Iterator) for a in args):
            assert top[-1] == fn(*args, **kwargs), where
            checked[name] += 1
    elif name == "CALL_FUNCTION_EX":
        fn_depth, args_depth, kwargs_depth = cpython.call_ex_layout(ins)
        fn = stack[-1 - fn_depth]
        args = stack[-1 - args_depth]
        kwargs = stack[-1 - kwargs_depth] if kwargs_depth is not None else {}
        if fn in PURE:
            assert top[-1] == fn(*args, **kwargs), where
            checked[name] += 1
    elif name == "UNPACK_SEQUENCE":
        assert top[len(top) - ins.arg :] == list(reversed(list(stack[-1]))), where
        checked[name] += 1
    elif name == "CONTAINS_OP":
        result = stack[-2] in stack[-1]
        assert top[-1] == (not result if ins.arg else result), where
        checked[name] += 1
    elif name == "FOR_ITER":
        assert len(top) in (len(stack) + 1, len(stack) - 1), where
        checked[name] += 1
    # Every instruction: what it did not consume is untouched below.
    pops = cpython.pops(ins) if name != "PRECALL" else None  # PRECALL unpacks bound methods
    if pops is not None and after.ins.offset == _following(code, ins):
        keep = len(stack) - pops
        assert all(a is b for a, b in zip(top[:keep], stack[:keep])), where
        checked["untouched"] += 1


def _following(code, ins) -> int | None:
    offsets = sorted(cpython.instructions(code))
    index = offsets.index(ins.offset)
    return offsets[index + 1] if index + 1 < len(offsets) else None


def pure_sum(*values, start=0):
    return sum(values, start)


PURE = {len, sum, max, min, abs, sorted, pure_sum, divmod, math.floor, str.upper, dict}

# --- the programs -----------------------------------------------------------

SCALE = 3


class Box:
    factor = 2

    def __init__(self, value):
        self.value = value

    def scaled(self, by=1):
        return self.value * self.factor * by


class Child(Box):
    def scaled(self, by=1):
        return super().scaled(by) + 1


def arithmetic(a, b):
    c = a * b + 7
    d = (c - a) // 2 % 5**2
    e = -c + abs(d) - (a < b) + (a >= b)
    return c, d, e, a / b, a << 2, b >> 1, a & b | a ^ b


def containers(xs, key):
    ys = [x * 2 for x in xs if x > 1]
    table = {k: v for k, v in zip("abc", xs)}
    total = sum(ys) + len(table) + table[key]
    a, b, *rest = xs
    first, last = xs[0], xs[-1]
    part = xs[1:3]
    xs[0:1] = [first]
    found = 3 in xs and 99 not in xs
    return total, a, b, rest, first, last, part, found, {x for x in xs}


def calls(xs):
    box = Box(5)
    child = Child(2)
    parts = (1, 2)
    kw = {"start": 10}
    out = [
        box.scaled(),
        box.scaled(by=3),
        child.scaled(2),
        max(xs, key=abs),
        pure_sum(*parts),
        pure_sum(*parts, **kw),
        pure_sum(1, 2, start=SCALE),
        sorted(xs, reverse=True),
        divmod(17, SCALE),
        str.upper("a"),
        math.floor(2.5),
        dict(a=1, b=2),  # noqa: C408 - a call with keywords is what is checked
        (lambda y: y + SCALE)(4),  # noqa: PLC3002
    ]
    return out


def control(n):
    total = 0
    i = 0
    while i < n:
        i += 1
        if i % 2 == 0:
            continue
        if i > 7:
            break
        total += i
    try:
        total += [1][n]
    except IndexError as error:
        total -= len(str(error))
    finally:
        total += 1
    with open(__file__) as handle:
        total += len(handle.readline()) > 0
    label = f"{total:>4} {n!r} {'big' if total > 3 else 'small'}"
    return total, label, n if n else None, (n and total) or -1


def closures(x):
    offset = 10

    def inner(y):
        return x + y + offset

    values = [inner(v) for v in range(3)]
    gen = sum(v * v for v in values)
    return values, gen


def generator(n):
    for i in range(n):
        yield i * SCALE


def consume(n):
    return list(generator(n)), [v for v in generator(n) if v]


def _many_constants():
    """More than 256 constants: EXTENDED_ARG in front of LOAD_CONST (and of a long jump)."""
    lines = ["def many_constants(flag=True):", "    total = 0", "    if flag:"]
    lines += [f"        total = total + {i}.5" for i in range(300)]
    lines += ["    return total"]
    namespace: dict = {}
    exec("\n".join(lines), namespace)  # noqa: S102 - generated test code, no input
    return namespace["many_constants"]


many_constants = _many_constants()


PROGRAMS = [
    (arithmetic, (7, 3)),
    (containers, ([1, 2, 3, 4], "b")),
    (calls, ([-5, 2, 3],)),
    (control, (9,)),
    (control, (0,)),
    (closures, (1,)),
    (consume, (4,)),
    (many_constants, ()),
]


def _codes(fn):
    """The code objects of ``fn`` and of everything it defines, and the helpers."""
    found = []
    pending = [fn.__code__, Box.scaled.__code__, Child.scaled.__code__, Box.__init__.__code__]
    pending += [generator.__code__, pure_sum.__code__]
    while pending:
        code = pending.pop()
        found.append(code)
        pending.extend(c for c in code.co_consts if hasattr(c, "co_code"))
    return found


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "specialized"])
@pytest.mark.parametrize(
    "program", PROGRAMS, ids=[f"{fn.__name__}{args!r}" for fn, args in PROGRAMS]
)
def test_every_operand_read_matches_python(program, warm):
    fn, args = program
    if warm:
        for _ in range(200):  # let the specializing interpreter rewrite the bytecode first
            fn(*(list(a) if isinstance(a, list) else a for a in args))
    expected = fn(*(list(a) if isinstance(a, list) else a for a in args))
    recorder = Recorder(_codes(fn))
    result = recorder.run(fn, *(list(a) if isinstance(a, list) else a for a in args))
    assert result == expected
    assert recorder.events, "no opcode events were delivered"
    assert not recorder.failures, "\n".join(recorder.failures[:10])
    checked = recorder.checked
    assert checked["untouched"] > 0, checked
    if fn is many_constants:
        extended = [i for i in dis.get_instructions(fn) if i.opname == "EXTENDED_ARG"]
        assert extended and checked["LOAD_CONST"] > 256, checked
    assert sum(v for k, v in checked.items() if k != "untouched") > 5, checked


def test_static_depths_agree_with_the_compiler_on_the_standard_library():
    """Every code object of a few big modules: one depth per instruction, and the
    deepest is the compiler's ``co_stacksize``."""
    import argparse
    import email.message
    import json.decoder
    import typing

    seen = 0
    for module in (argparse, typing, json.decoder, email.message):
        pending = [obj.__code__ for obj in vars(module).values() if hasattr(obj, "__code__")] + [
            f.__code__
            for klass in vars(module).values()
            if isinstance(klass, type)
            for f in vars(klass).values()
            if hasattr(f, "__code__")
        ]
        while pending:
            code = pending.pop()
            pending.extend(c for c in code.co_consts if hasattr(c, "co_code"))
            depths = cpython.static_depths(code)
            assert max(depths.values()) <= code.co_stacksize, code
            seen += 1
    assert seen > 200


def test_binary_op_table_is_the_interpreters():
    nb_ops = getattr(dis, "_nb_ops", None)
    if nb_ops is None:
        pytest.skip("dis has no _nb_ops table")
    symbols = [symbol for _, symbol in nb_ops]
    for index, (symbol, _) in cpython.BINARY_OPS.items():
        assert symbols[index].rstrip("=") == symbol


def test_registry_refuses_a_name_that_is_not_an_opcode():
    with pytest.raises(RuntimeError, match="not an opcode"):
        cpython.registers("NO_SUCH_OPCODE")
    # pseudo-instructions (3.12 lists LOAD_METHOD in dis.opmap at 256+) are not opcodes
    assert not cpython.opcode_exists("SETUP_FINALLY")
    assert cpython.registers("LOAD_METHOD", until=(3, 11)) == (sys.version_info[:2] == (3, 11))
