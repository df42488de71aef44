"""The torch-function mode that routes the monitored run's torch calls, and how the
monitor classifies a call before the tape sees it.

``CaptureMode`` hands every torch-level call (torch functions, ``Tensor`` methods
and operators, ``nn.functional``) to the monitor's handler with its real
arguments.  ``VALUE_READS`` and ``DATA_DEPENDENT`` name the calls that cannot
become graph nodes: they run eagerly as callouts between segments.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from fullgraph.runtime.torch_internals import TorchFunctionMode, device_constructors

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
    """Routes every torch-level call of the monitored run to ``handler``.

    ``default_device``: the device of the caller's ``torch.device(...)`` block or
    ``set_default_device``.  Its mode sits below this one and would add ``device=``
    to a factory only after the handler recorded the call: the call is handed over
    with the device the factory will use, so the graph makes its tensors there.
    """

    def __init__(self, handler: Callable, default_device: torch.device | None = None):
        super().__init__()
        self.handler = handler
        self.paused = False
        self.default_device = default_device
        self.constructors = device_constructors() if default_device is not None else ()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.paused:
            return func(*args, **kwargs)
        if func in self.constructors and kwargs.get("device") is None:
            kwargs = {**kwargs, "device": self.default_device}
        return self.handler(func, args, kwargs)
