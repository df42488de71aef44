"""What the per-version modules share: the frame reader, static stack depths, names.

The reader finds the value stack of a frame at ``_PyInterpreterFrame.localsplus
[nlocalsplus ...]``.  Where the top of the stack is depends on the version:
CPython 3.11 saves the stack pointer into the frame before it delivers a
``sys.settrace`` opcode event, 3.12 and 3.13 do not (``stacktop`` reads -1
there: the pointer lives in a C local of the eval loop), so on those the
depth comes from a static analysis of the code object instead.  CPython's
compiler guarantees that every instruction is reached with one stack depth
(``Invalid CFG, inconsistent stackdepth`` otherwise), which is what
:func:`static_depths` recomputes from ``dis.stack_effect`` and the exception
table.  The slots below that depth hold the live operands: the instruction
reads them from memory after the instrumentation call returns, because the
frame pointer escapes into that call.
"""

from __future__ import annotations

import ctypes
import dis
import functools
import itertools
import types
from collections.abc import Callable

PTR = ctypes.sizeof(ctypes.c_void_p)
# PyFrameObject: ob_refcnt, ob_type, f_back, f_frame, ... (3.11 to 3.13, non-debug builds)
F_FRAME_OFFSET = 3 * PTR


class UnsupportedPythonError(RuntimeError):
    """The running CPython has a frame layout the monitor cannot read."""


class _Null:
    """Stands for a NULL slot on the value stack (pushed for calls since 3.11)."""

    def __repr__(self) -> str:
        return "NULL"


NULL = _Null()


def is_real_opcode(name: str) -> bool:
    """A name the interpreter can execute (``dis.opmap`` also lists pseudo-instructions
    such as 3.12's ``LOAD_METHOD``, numbered from 256, and instrumented variants)."""
    code = dis.opmap.get(name)
    return code is not None and code < 256 and not name.startswith("INSTRUMENTED_")


@functools.cache
def nlocalsplus(code: types.CodeType) -> int:
    """Number of localsplus slots (locals, cells, free variables) before the stack.

    A cell variable that is also a local (an argument, or since 3.12 the
    variable of an inlined comprehension) shares the local's slot.
    """
    cells = [c for c in code.co_cellvars if c not in code.co_varnames]
    return len(code.co_varnames) + len(cells) + len(code.co_freevars)


@functools.cache
def instructions(code: types.CodeType) -> dict[int, dis.Instruction]:
    """Instructions of ``code`` by byte offset (what ``frame.f_lasti`` gives)."""
    return {ins.offset: ins for ins in dis.get_instructions(code)}


@functools.cache
def instructions_skipping_extended_arg(code: types.CodeType) -> dict[int, dis.Instruction]:
    """Like :func:`instructions`, but an EXTENDED_ARG's offset gives the instruction it
    extends (for interpreters whose opcode event comes at the prefix only)."""
    listing = list(dis.get_instructions(code))
    by_offset = {}
    for index, ins in enumerate(listing):
        target = index
        while listing[target].opname == "EXTENDED_ARG" and target + 1 < len(listing):
            target += 1
        by_offset[ins.offset] = listing[target]
    return by_offset


def free_var_index(code: types.CodeType, oparg: int) -> int | None:
    """Index into ``fn.__closure__`` for LOAD_DEREF/STORE_DEREF's oparg, if free."""
    first_free = nlocalsplus(code) - len(code.co_freevars)
    index = oparg - first_free
    return index if 0 <= index < len(code.co_freevars) else None


class StackDepthError(RuntimeError):
    """The static stack analysis found an instruction reached with two depths."""


_TERMINATORS = frozenset(
    [
        "RETURN_VALUE",
        "RETURN_CONST",
        "RAISE_VARARGS",
        "RERAISE",
        "JUMP_FORWARD",
        "JUMP_BACKWARD",
        "JUMP_BACKWARD_NO_INTERRUPT",
    ]
)
_JUMPS = frozenset(op for op in set(dis.hasjrel) | set(getattr(dis, "hasjabs", ())) if op < 256)


@functools.cache
def _exception_table(code: types.CodeType) -> tuple:
    return tuple(dis._parse_exception_table(code))


def handler_entry(code: types.CodeType, offset: int) -> tuple[int, bool] | None:
    """The handler of ``code``'s exception table that catches what the instruction at
    ``offset`` raises: the stack depth it keeps and whether it pushes ``lasti`` (before
    the exception).  None: the exception leaves the frame."""
    for entry in _exception_table(code):
        if entry.start <= offset < entry.end:
            return entry.depth, entry.lasti
    return None


@functools.cache
def static_depths(code: types.CodeType) -> dict[int, int]:
    """Value-stack depth before each reachable instruction of ``code``, by offset."""
    listing = list(dis.get_instructions(code))
    by_offset = {ins.offset: ins for ins in listing}
    following = {a.offset: b.offset for a, b in itertools.pairwise(listing)}
    depths: dict[int, int] = {}
    work = [(listing[0].offset, 0)] if listing else []
    for entry in _exception_table(code):
        # The handler starts with the stack cut to `depth`, then lasti (if set)
        # and the exception pushed.
        work.append((entry.target, entry.depth + int(entry.lasti) + 1))
    while work:
        offset, depth = work.pop()
        while offset is not None:
            known = depths.get(offset)
            if known is not None:
                if known != depth:
                    raise StackDepthError(
                        f"{code.co_qualname} offset {offset}: depth {known} and {depth}"
                    )
                break
            depths[offset] = depth
            ins = by_offset[offset]
            arg = ins.arg if ins.opcode >= dis.HAVE_ARGUMENT else None
            if ins.opcode in _JUMPS:
                target = getattr(ins, "jump_target", None)
                if target is None:
                    target = ins.argval
                work.append((target, depth + dis.stack_effect(ins.opcode, arg, jump=True)))
            if ins.opname in _TERMINATORS:
                break
            if ins.opname == "RETURN_GENERATOR":
                # The generator's first resumption pushes the value sent (None),
                # which the next instruction (POP_TOP) drops.
                depth = 1
            else:
                depth += dis.stack_effect(ins.opcode, arg, jump=False)
            offset = following.get(offset)
    return depths


class FrameReader:
    """Reads and writes the value stack of a frame, given where its top is."""

    def __init__(self, funcobj_offset: int, localsplus_offset: int, top: Callable):
        self._funcobj = funcobj_offset
        self._localsplus = localsplus_offset
        # top(frame, iframe) -> index in localsplus one past the top of stack
        self._top = top

    def depth(self, frame: types.FrameType) -> int:
        iframe = _interp_frame(frame)
        return self._top(frame, iframe) - nlocalsplus(frame.f_code)

    def _slot(self, frame: types.FrameType, depth_from_top: int) -> ctypes.c_void_p:
        iframe = _interp_frame(frame)
        index = self._top(frame, iframe) - 1 - depth_from_top
        if depth_from_top < 0 or index < nlocalsplus(frame.f_code):
            raise IndexError("stack underflow")
        return ctypes.c_void_p.from_address(iframe + self._localsplus + index * PTR)

    def item(self, frame: types.FrameType, depth_from_top: int):
        pointer = self._slot(frame, depth_from_top).value
        if not pointer:
            return NULL
        return ctypes.cast(pointer, ctypes.py_object).value

    def replace(self, frame: types.FrameType, depth_from_top: int, value) -> None:
        slot = self._slot(frame, depth_from_top)
        old = slot.value
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(value))
        slot.value = id(value)
        if old:
            ctypes.pythonapi.Py_DecRef(ctypes.cast(old, ctypes.py_object))

    def function(self, frame: types.FrameType):
        pointer = ctypes.c_void_p.from_address(_interp_frame(frame) + self._funcobj).value
        if not pointer:
            return None
        fn = ctypes.cast(pointer, ctypes.py_object).value
        return fn if isinstance(fn, types.FunctionType) else None


def _interp_frame(frame: types.FrameType) -> int:
    return ctypes.c_void_p.from_address(id(frame) + F_FRAME_OFFSET).value


def static_top(frame: types.FrameType, iframe: int) -> int:
    """One past the top of the stack, from the static depth of the current instruction."""
    code = frame.f_code
    return nlocalsplus(code) + static_depths(code)[frame.f_lasti]


# How many stack slots an instruction consumes, where every supported version agrees.
COMMON_POPS = {
    "POP_TOP": 1,
    "STORE_ATTR": 2,
    "STORE_SUBSCR": 3,
    "STORE_GLOBAL": 1,
    "STORE_DEREF": 1,
    "STORE_NAME": 1,
    "LOAD_ATTR": 1,
    "BINARY_SUBSCR": 2,
    "IS_OP": 2,
    "CONTAINS_OP": 2,
    "RETURN_VALUE": 1,
    "YIELD_VALUE": 1,
    "GET_ITER": 1,
    "UNPACK_SEQUENCE": 1,
    "UNPACK_EX": 1,
    "LIST_APPEND": 1,
    "SET_ADD": 1,
    "MAP_ADD": 2,
    "LIST_EXTEND": 1,
    "SET_UPDATE": 1,
    "DICT_UPDATE": 1,
    "DICT_MERGE": 1,
    "DELETE_SUBSCR": 2,
    "DELETE_ATTR": 1,
    "BEFORE_WITH": 1,
    "GET_LEN": 0,
    "IMPORT_NAME": 2,
    "PUSH_EXC_INFO": 1,  # [exc] -> [previous exc, exc]
    "CHECK_EXC_MATCH": 1,  # [exc, type] -> [exc, bool]
    "POP_EXCEPT": 1,
}
COMMON_NO_POPS = frozenset(
    [
        "NOP",
        "RESUME",
        "CACHE",
        "PUSH_NULL",
        "LOAD_GLOBAL",
        "LOAD_DEREF",
        "LOAD_CLOSURE",
        "LOAD_NAME",
        "LOAD_ASSERTION_ERROR",
        "LOAD_BUILD_CLASS",
        "JUMP_FORWARD",
        "JUMP_BACKWARD",
        "JUMP_BACKWARD_NO_INTERRUPT",
        "FOR_ITER",
        "MAKE_CELL",
        "COPY_FREE_VARS",
        "EXTENDED_ARG",
        "RETURN_GENERATOR",
        "RERAISE",
        "LOAD_CONST",
        "IMPORT_FROM",
        "DELETE_GLOBAL",
        "DELETE_DEREF",
        "DELETE_NAME",
    ]
)


def make_pops(fixed: dict, no_pops: frozenset, variable: Callable):
    """``pops(ins)``: slots ``ins`` consumes (None: unknown, treat all as consumed)."""

    def pops(ins) -> int | None:
        name = ins.opname
        if name in no_pops:
            return 0
        count = fixed.get(name)
        if count is not None:
            return count
        if name in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET", "BUILD_STRING", "BUILD_SLICE"):
            return ins.arg
        if name == "RAISE_VARARGS":
            return ins.arg
        if name == "BUILD_MAP":
            return 2 * ins.arg
        if name == "BUILD_CONST_KEY_MAP":
            return ins.arg + 1
        return variable(ins)

    return pops


# BINARY_OP's oparg: the NB_* constants of Include/opcode.h (3.11) and
# Include/internal/pycore_opcode_utils.h / pycore_opcode_metadata.h (3.12, 3.13),
# the same on all three (``dis._nb_ops`` lists them; a test checks they agree).
NB_OPS = (
    "+", "&", "//", "<<", "@", "*", "%", "|", "**", ">>", "-", "/", "^",
    "+=", "&=", "//=", "<<=", "@=", "*=", "%=", "|=", "**=", ">>=", "-=", "/=", "^=",
)  # fmt: skip


def binary_ops(nb_ops: tuple) -> dict:
    """oparg -> (symbol, function) for the numeric BINARY_OPs (in-place ones compute
    the same for immutable numbers; ``@`` has no number meaning)."""
    import operator

    functions = {
        "+": operator.add,
        "&": operator.and_,
        "//": operator.floordiv,
        "<<": operator.lshift,
        "*": operator.mul,
        "%": operator.mod,
        "|": operator.or_,
        "**": operator.pow,
        ">>": operator.rshift,
        "-": operator.sub,
        "/": operator.truediv,
        "^": operator.xor,
    }
    table = {}
    for index, symbol in enumerate(nb_ops):
        plain_symbol = symbol.removesuffix("=")
        fn = functions.get(plain_symbol)
        if fn is not None:
            table[index] = (plain_symbol, fn)
    return table


# Operands of instructions whose pops the version tables leave to the symbolic
# handlers (monitor/taint.py models them itself), for code that only needs to know
# which stack slots the instruction reads.
_HANDLED_OPERANDS = {
    "BINARY_OP": 2,
    "COMPARE_OP": 2,
    "BINARY_SLICE": 3,
    "CONVERT_VALUE": 1,
    "FORMAT_SIMPLE": 1,
    "FORMAT_WITH_SPEC": 2,
    "GET_LEN": 1,  # pops nothing, but reads the object under it
}


def handled_operands(ins) -> int | None:
    """Stack slots a handled instruction reads (None: not one of them)."""
    if ins.opname == "FORMAT_VALUE":  # the value, and a format spec when flag 4 is set
        return 2 if ins.arg & 4 else 1
    return _HANDLED_OPERANDS.get(ins.opname)
