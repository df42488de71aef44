"""CPython 3.11: frame layout, stack pointer, calling convention, opcodes.

Layout (Include/internal/pycore_frame.h, 3.11): ``_PyInterpreterFrame`` is
f_func, f_globals, f_builtins, f_locals, f_code, frame_obj, previous,
prev_instr, ``int stacktop``, then ``localsplus[]``.  The eval loop saves the
stack pointer (``_PyFrame_SetStackPointer``) before ``maybe_call_line_trace``
delivers an opcode event, so ``localsplus[nlocalsplus .. stacktop)`` is the
live stack there.
"""

from __future__ import annotations

import ctypes
import sys

from fullgraph.runtime.cpython._common import (
    COMMON_NO_POPS,
    COMMON_POPS,
    NB_OPS,
    NULL,
    PTR,
    FrameReader,
    binary_ops,
    instructions_skipping_extended_arg,
    make_pops,
)

VERSION = (3, 11)
_F_FUNC_OFFSET = 0
_STACKTOP_OFFSET = 8 * PTR
_LOCALSPLUS_OFFSET = 9 * PTR


def _saved_top(frame, iframe: int) -> int:
    return ctypes.c_int.from_address(iframe + _STACKTOP_OFFSET).value


_reader = FrameReader(_F_FUNC_OFFSET, _LOCALSPLUS_OFFSET, _saved_top)
stack_depth = _reader.depth
stack_item = _reader.item
replace_stack_item = _reader.replace
frame_function = _reader.function


# 3.11 delivers the opcode event of an instruction with an EXTENDED_ARG prefix
# at the prefix, and none at the instruction itself.
instructions = instructions_skipping_extended_arg


def start_tracing(tracer) -> None:
    sys.settrace(tracer)


def stop_tracing(previous) -> None:
    sys.settrace(previous)


def trace_opcodes(frame, tracer) -> None:
    """In a call event: deliver opcode (not line) events of ``frame`` to ``tracer``."""
    frame.f_trace_lines = False
    frame.f_trace_opcodes = True


# --- what loads push -------------------------------------------------------


def loaded_depth(ins, item) -> int | None:
    """Depth of the value a LOAD_GLOBAL / LOAD_ATTR / LOAD_METHOD pushed, read in
    its after-phase; None when it pushed a method found on the type and its self."""
    if ins.opname == "LOAD_METHOD":
        # [method, self] or [NULL, value]
        return 0 if item(1) is NULL else None
    return 0  # LOAD_GLOBAL pushes [NULL, value] when its low bit is set


# --- calls -----------------------------------------------------------------


def call_operands(ins, item, kwnames):
    """(fn, depth of fn's slot, positional args, kwargs) of a CALL, before it runs.

    3.11: [NULL, callable, args...] or [method, self, args...]; PRECALL comes
    first and KW_NAMES names the trailing keyword arguments.
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


KW_NAMES_OP = "KW_NAMES"  # names the keywords of the next CALL (co_consts[oparg])

# --- stack effects for the symbolic tracking --------------------------------

BRANCH_OPS = frozenset(
    [
        "POP_JUMP_FORWARD_IF_TRUE",
        "POP_JUMP_FORWARD_IF_FALSE",
        "POP_JUMP_BACKWARD_IF_TRUE",
        "POP_JUMP_BACKWARD_IF_FALSE",
        "JUMP_IF_TRUE_OR_POP",
        "JUMP_IF_FALSE_OR_POP",
    ]
)
# Loads whose pushed value may be an external number the run follows symbolically.
SYMBOLIC_LOADS = frozenset(
    ["LOAD_ATTR", "LOAD_GLOBAL", "BINARY_SUBSCR", "LOAD_DEREF", "LOAD_METHOD"]
)
FORMAT_OPS = frozenset(["FORMAT_VALUE"])

_POPS = dict(
    COMMON_POPS,
    LOAD_METHOD=1,
    PRINT_EXPR=1,
    LIST_TO_TUPLE=1,
    POP_JUMP_FORWARD_IF_NONE=1,
    POP_JUMP_FORWARD_IF_NOT_NONE=1,
    POP_JUMP_BACKWARD_IF_NONE=1,
    POP_JUMP_BACKWARD_IF_NOT_NONE=1,
)
_NO_POPS = COMMON_NO_POPS | {"KW_NAMES", "PRECALL", "LOAD_CLASSDEREF", "GEN_START"}


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
