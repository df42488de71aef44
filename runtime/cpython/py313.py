"""CPython 3.13: frame layout, stack pointer, calling convention, opcodes.

Layout (Include/internal/pycore_frame.h, 3.13): ``_PyInterpreterFrame`` is
f_executable, previous, f_funcobj, f_globals, f_builtins, f_locals,
frame_obj, instr_ptr, ``int stacktop`` (relative to localsplus),
``uint16_t return_offset``, ``char owner``, then ``localsplus[]`` (offset 72
on 64-bit builds).

As on 3.12, an opcode event comes from INSTRUMENTED_INSTRUCTION, which does
not save the stack pointer (``stacktop`` is -1 there): the depth is the
static depth of the instruction.  Unlike 3.12, setting ``f_trace_opcodes``
in the call event switches the frame's INSTRUCTION events on (gh-103615).

The calling convention changed: CALL takes [callable, self_or_NULL, args...]
(LOAD_GLOBAL and LOAD_ATTR push their NULL *above* the value), keyword calls
are CALL_KW with the names tuple on top, and CALL_FUNCTION_EX takes
[fn, NULL, args, kwargs?].
"""

from __future__ import annotations

import sys

from fullgraph.runtime.cpython import _common
from fullgraph.runtime.cpython._common import (
    COMMON_NO_POPS,
    COMMON_POPS,
    NB_OPS,
    NULL,
    PTR,
    FrameReader,
    binary_ops,
    make_pops,
    static_top,
)

VERSION = (3, 13)
_F_FUNCOBJ_OFFSET = 2 * PTR
_LOCALSPLUS_OFFSET = 9 * PTR  # 8 pointers, int stacktop, uint16 return_offset, char owner

_reader = FrameReader(_F_FUNCOBJ_OFFSET, _LOCALSPLUS_OFFSET, static_top)
stack_depth = _reader.depth
stack_item = _reader.item
replace_stack_item = _reader.replace
frame_function = _reader.function


# An instruction with an EXTENDED_ARG prefix gets an opcode event of its own
# (after the prefix's, which has no handler).
instructions = _common.instructions


def start_tracing(tracer) -> None:
    sys.settrace(tracer)


def stop_tracing(previous) -> None:
    sys.settrace(previous)


def trace_opcodes(frame, tracer) -> None:
    """In a call event: deliver opcode (not line) events of ``frame`` to ``tracer``."""
    frame.f_trace_lines = False
    frame.f_trace_opcodes = True
    # Set through the attribute, not only by returning it from the call event:
    # the setter is what switches the code object's INSTRUCTION events on (3.13.0
    # misses them for a code object not yet instrumented otherwise).
    frame.f_trace = tracer


# --- what loads push -------------------------------------------------------


def loaded_depth(ins, item) -> int | None:
    """Depth of the value a LOAD_GLOBAL / LOAD_ATTR pushed, read in its after-phase;
    None when it pushed a method found on the type and its self.

    With the low bit set, LOAD_GLOBAL pushes [value, NULL] and LOAD_ATTR pushes
    [method, self] or [value, NULL].
    """
    if ins.opname == "LOAD_GLOBAL":
        return 1 if ins.arg & 1 else 0
    if ins.opname == "LOAD_ATTR" and ins.arg & 1:
        return 1 if item(0) is NULL else None
    return 0


# --- calls -----------------------------------------------------------------


def call_operands(ins, item, kwnames):
    """(fn, depth of fn's slot, positional args, kwargs) of a CALL / CALL_KW, before it runs.

    [callable, self_or_NULL, args...] (CALL_KW: then the names tuple on top).
    With a self, callable is the function found on the type and self its first
    argument.
    """
    argc = ins.arg
    shift = 0
    if ins.opname == "CALL_KW":
        kwnames, shift = item(0), 1
    kwnames = kwnames or ()
    fn_depth = argc + 1 + shift
    fn = item(fn_depth)
    if item(argc + shift) is NULL:
        values = [item(argc - 1 - i + shift) for i in range(argc)]
    else:
        values = [item(argc - i + shift) for i in range(argc + 1)]
    split = len(values) - len(kwnames)
    return fn, fn_depth, tuple(values[:split]), dict(zip(kwnames, values[split:]))


def call_ex_layout(ins) -> tuple[int, int, int | None]:
    """Depths of (fn, positional args, kwargs or None) for CALL_FUNCTION_EX:
    [fn, NULL, args, kwargs?]."""
    has_kwargs = bool(ins.arg & 1)
    return 2 + has_kwargs, int(has_kwargs), 0 if has_kwargs else None


KW_NAMES_OP = None  # keyword names travel on the stack (CALL_KW)

# --- stack effects for the symbolic tracking --------------------------------

BRANCH_OPS = frozenset(["POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE"])
SYMBOLIC_LOADS = frozenset(["LOAD_ATTR", "LOAD_GLOBAL", "BINARY_SUBSCR", "LOAD_DEREF"])
FORMAT_OPS = frozenset(["CONVERT_VALUE", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC"])

_POPS = dict(
    COMMON_POPS,
    BINARY_SLICE=3,
    STORE_SLICE=4,
    POP_JUMP_IF_NONE=1,
    POP_JUMP_IF_NOT_NONE=1,
    LOAD_SUPER_ATTR=3,
    CALL_INTRINSIC_1=1,
    CALL_INTRINSIC_2=2,
    END_FOR=1,  # only reached when a loop ends by a jump to it
    END_SEND=2,
    LOAD_FROM_DICT_OR_DEREF=1,
    LOAD_FROM_DICT_OR_GLOBALS=1,
    CHECK_EG_MATCH=2,
    CLEANUP_THROW=3,
    TO_BOOL=1,
    CONVERT_VALUE=1,
    FORMAT_SIMPLE=1,
    FORMAT_WITH_SPEC=2,
    MAKE_FUNCTION=1,
    SET_FUNCTION_ATTRIBUTE=2,
    STORE_FAST_STORE_FAST=2,
    STORE_FAST_LOAD_FAST=1,
)
_NO_POPS = COMMON_NO_POPS | {
    "RETURN_CONST",
    "LOAD_LOCALS",
    "LOAD_FAST_CHECK",
    "LOAD_FAST_LOAD_FAST",
}


def _variable_pops(ins) -> int | None:
    name = ins.opname
    if name == "CALL":
        return ins.arg + 2
    if name == "CALL_KW":
        return ins.arg + 3
    if name == "CALL_FUNCTION_EX":
        return 3 + (ins.arg & 1)
    return None


pops = make_pops(_POPS, _NO_POPS, _variable_pops)
BINARY_OPS = binary_ops(NB_OPS)
INTRINSIC_UNARY_POSITIVE = 5  # CALL_INTRINSIC_1's oparg for `+x`
