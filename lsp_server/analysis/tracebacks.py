"""Tracebacks of the user's program, without fullgraph's own frames.

When the user's code raises under analysis, the exception passes through the
worker, the entrypoint loader and the runtime's monitor (which calls the
user's function and steps through it).  Those frames say nothing about the
user's bug, so the traceback they see starts at their own code: every frame
whose file is part of fullgraph is left out, in each exception of a chain
too.  A failure inside fullgraph itself is not a user error and keeps its
full traceback (see the worker).
"""

from __future__ import annotations

import re
from collections.abc import Callable

_FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line \d+')


def without_frames(
    text: str,
    is_tool_file: Callable[[str], bool],
    is_user_file: Callable[[str], bool] | None = None,
) -> str:
    """Formatted traceback ``text`` less the frames whose file ``is_tool_file``.

    With ``is_user_file``, each traceback of a chain also starts at its first
    user frame (the library frames that led there, such as
    ``nn.Module.__call__``, are left out; those between user frames stay),
    unless it has none.  A frame is its ``  File "...", line N, in f`` line
    and the indented source/caret lines under it; headers, chaining notes
    ("The above exception was the direct cause ...") and the exception lines
    stay.
    """
    lines = text.splitlines(keepends=True)
    user_blocks = set()  # indexes of "Traceback" headers whose block has a user frame
    header = -1
    for index, line in enumerate(lines):
        if line.startswith("Traceback "):
            header = index
        match = _FRAME.match(line)
        if match and is_user_file is not None and is_user_file(match["file"]):
            user_blocks.add(header)
    kept: list[str] = []
    dropping = False
    reached_user = True
    for index, line in enumerate(lines):
        if line.startswith("Traceback "):
            header = index
            reached_user = header not in user_blocks
        match = _FRAME.match(line)
        if match:
            file = match["file"]
            if not reached_user and is_user_file is not None and is_user_file(file):
                reached_user = True
            dropping = is_tool_file(file) or not reached_user
        elif not line.startswith("    "):
            dropping = False
        if not dropping:
            kept.append(line)
    return "".join(kept)
