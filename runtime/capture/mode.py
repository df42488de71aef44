"""The torch-function mode that routes the monitored run's torch calls, and how the
monitor classifies a call before the tape sees it.

``CaptureMode`` hands every torch-level call (torch functions, ``Tensor`` methods
and operators, ``nn.functional``) to the monitor's handler with its real
arguments.  ``VALUE_READS`` and ``DATA_DEPENDENT`` name the calls that cannot
become graph nodes: they run eagerly as callouts between segments.
"""

from __future__ import annotations

from collections.abc import Callable

from fullgraph.runtime.torch_internals import TorchFunctionMode

# Tensor methods whose result moves tensor data into Python.
VALUE_READS = frozenset(
    [
        "item",
        "tolist",
        "numpy",
        "__bool__",
        "__int__",
        "__float__",
        "__index__",
        "__complex__",
        "__format__",
        "__repr__",
        "__str__",
        "__array__",
        "equal",
        "allclose",
        "is_nonzero",
        "__reduce_ex__",
        "__hash__",
    ]
)
# Operations whose output shape depends on tensor data.
DATA_DEPENDENT = frozenset(
    [
        "nonzero",
        "masked_select",
        "unique",
        "unique_consecutive",
        "argwhere",
        "bincount",
        "nonzero_static",
        "_pack_padded_sequence",  # rows: the sum of the lengths (pack_padded_sequence)
    ]
)


class CaptureMode(TorchFunctionMode):
    """Routes every torch-level call of the monitored run to ``handler``."""

    def __init__(self, handler: Callable):
        super().__init__()
        self.handler = handler
        self.paused = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.paused:
            return func(*args, **kwargs)
        return self.handler(func, args, kwargs)
