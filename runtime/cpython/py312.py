"""CPython 3.12: frame layout, stack pointer, calling convention, opcodes.

Layout (Include/internal/pycore_frame.h, 3.12): ``_PyInterpreterFrame`` is
f_code, previous, f_funcobj, f_globals, f_builtins, f_locals, frame_obj,
prev_instr, ``int stacktop``, ``uint16_t return_offset``, ``char owner``,
then ``localsplus[]`` (offset 72 on 64-bit builds).

Tracing is built on sys.monitoring (PEP 669): an opcode event is an
INSTRUCTION event raised from INSTRUMENTED_INSTRUCTION, which does *not*
save the stack pointer into the frame (``stacktop`` reads -1 there), so the
depth is the static depth of the instruction (``_common.static_depths``).

Two quirks of 3.12's legacy tracing: INSTRUCTION events are switched on only
when the frame that calls ``sys.settrace`` has ``f_trace_opcodes`` set
(setting it on a frame later has no effect, CPython gh-103615 / gh-114480),
after which every frame gets the C callback, which checks its own
``f_trace_opcodes``.
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

VERSION = (3, 12)
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
    frame = sys._getframe()
    frame.f_trace_opcodes = True  # makes _PyEval_SetTrace enable INSTRUCTION events
    try:
        sys.settrace(tracer)
    finally:
        frame.f_trace_opcodes = False
        # A frame holding itself is a cycle: its callers' frames (the monitored call's
        # arguments) would live until the cyclic collector ran.
        del frame


def stop_tracing(previous) -> None:
    sys.settrace(previous)


def trace_opcodes(frame, tracer) -> None:
    """In a call event: deliver opcode (not line) events of ``frame`` to ``tracer``."""
    frame.f_trace_lines = False
    frame.f_trace_opcodes = True


# --- what loads push -------------------------------------------------------


def loaded_depth(ins, item) -> int | None:
    """Depth of the value a LOAD_GLOBAL / LOAD_ATTR pushed, read in its after-phase;
    None when it pushed a method found on the type and its self.

    LOAD_GLOBAL with the low bit pushes [NULL, value]; LOAD_ATTR with the low
    bit (the old LOAD_METHOD) pushes [method, self] or [NULL, value].
    """
    if ins.opname == "LOAD_ATTR" and ins.arg & 1:
        return 0 if item(1) is NULL else None
    return 0


# --- calls -----------------------------------------------------------------


def call_operands(ins, item, kwnames):
    """(fn, depth of fn's slot, positional args, kwargs) of a CALL, before it runs.

    3.12 (no PRECALL): [NULL, callable, args...] or [method, self, args...];
    KW_NAMES names the trailing keyword arguments.
    """
    argc = ins.arg
    kwnames = kwnames or ()
    bound = item(argc + 1)
    if bound is NULL:
        fn, fn_depth = item(argc), argc
        values = [item(argc - 1 - i) for i in range(argc)]
    else:
        fn, fn_depth = bound, argc + 1
        values = [item(argc - i) for i in range(argc + 1)]
    split = len(values) - len(kwnames)
    return fn, fn_depth, tuple(values[:split]), dict(zip(kwnames, values[split:]))


def call_ex_layout(ins) -> tuple[int, int, int | None]:
    """Depths of (fn, positional args, kwargs or None) for CALL_FUNCTION_EX:
    [NULL, fn, args, kwargs?]."""
    has_kwargs = bool(ins.arg & 1)
    return 1 + has_kwargs, int(has_kwargs), 0 if has_kwargs else None


KW_NAMES_OP = "KW_NAMES"

# --- stack effects for the symbolic tracking --------------------------------

BRANCH_OPS = frozenset(["POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE"])
SYMBOLIC_LOADS = frozenset(["LOAD_ATTR", "LOAD_GLOBAL", "BINARY_SUBSCR", "LOAD_DEREF"])
FORMAT_OPS = frozenset(["FORMAT_VALUE"])

_POPS = dict(
    COMMON_POPS,
    BINARY_SLICE=3,
    STORE_SLICE=4,
    POP_JUMP_IF_NONE=1,
    POP_JUMP_IF_NOT_NONE=1,
    LOAD_SUPER_ATTR=3,
    CALL_INTRINSIC_1=1,
    CALL_INTRINSIC_2=2,
    END_FOR=2,  # POP_TOP; POP_TOP (only reached when a loop ends by a jump to it)
    END_SEND=2,
    LOAD_FROM_DICT_OR_DEREF=1,
    LOAD_FROM_DICT_OR_GLOBALS=1,
    CHECK_EG_MATCH=2,
    CLEANUP_THROW=3,
)
_NO_POPS = COMMON_NO_POPS | {"KW_NAMES", "RETURN_CONST", "LOAD_LOCALS", "LOAD_FAST_CHECK"}


def _variable_pops(ins) -> int | None:
    name = ins.opname
    if name == "CALL":
        return ins.arg + 2
    if name == "CALL_FUNCTION_EX":
        return 3 + (ins.arg & 1)
    if name == "FORMAT_VALUE":
        return 1 + bool(ins.arg & 4)
    if name == "MAKE_FUNCTION":  # the code object, under the parts its flags name
        return 1 + (ins.arg & 0x0F).bit_count()
    return None


pops = make_pops(_POPS, _NO_POPS, _variable_pops)
BINARY_OPS = binary_ops(NB_OPS)
INTRINSIC_UNARY_POSITIVE = 5  # CALL_INTRINSIC_1's oparg for `+x`
