"""What a guard checks of an outside tensor, as the monitoring run first met it.

A call may change its inputs' metadata (``x.requires_grad_(True)``,
``x.squeeze_(0)``, ``x.detach_()``, ``lin.weight.requires_grad_(False)``), so
the tensor as it is once the run ends is not what the call was given: a guard
written from it would accept the inputs the record was not made for.  The
monitor takes a :class:`TensorMeta` when it first registers a tensor (at entry
for arguments and a module's parameters), and the guard is written from it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch


@dataclasses.dataclass(frozen=True)
class TensorMeta:
    """A tensor's type, dtype, device, sizes, layout, requires_grad and dispatch keys.

    ``strides`` is None for a tensor without strides (a sparse layout).
    ``example``: the tensor it was taken from (not compared), which torch's
    native tensor-match leaf is built from when its metadata did not change;
    dropped once the guard is built (``forget_example``), so a record does not keep
    the first call's arguments alive.  (Not a weak reference: a tensor with one
    cannot be swapped, ``torch.utils.swap_tensors``.)
    """

    type: type
    dtype: torch.dtype
    device: torch.device
    layout: torch.layout
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None
    contiguous: bool
    requires_grad: bool
    dispatch_keys: str
    # Facts of a sparse or quantized tensor its shape does not give: (expression over
    # ``{t}``, value) pairs (the count of stored values, its scale and zero point).
    facts: tuple = ()
    example: Any = dataclasses.field(default=None, compare=False, repr=False)
    # The program read ``stride()``: a size-1 dimension's stride is compared too.
    strides_read: bool = dataclasses.field(default=False, compare=False, repr=False)

    @classmethod
    def of(cls, tensor: torch.Tensor) -> TensorMeta:
        # The monitor's own query: not seen by its capture mode, nor by a subclass's
        # __torch_function__ (one may refuse layout queries).
        with torch._C.DisableTorchFunction():
            return cls._of(tensor)

    @classmethod
    def taken(cls, tensor: torch.Tensor) -> TensorMeta | None:
        """``of``, or None for a tensor without metadata yet (a lazy module's
        uninitialized parameter) or one whose queries raise."""
        try:
            return cls.of(tensor)
        except Exception:  # noqa: BLE001 - any tensor subclass: its guard reads it later
            return None

    @classmethod
    def _of(cls, tensor: torch.Tensor) -> TensorMeta:
        strided = tensor.layout is torch.strided
        return cls(
            type(tensor),
            tensor.dtype,
            tensor.device,
            tensor.layout,
            tuple(tensor.shape),
            tuple(tensor.stride()) if strided else None,
            tensor.is_contiguous() if strided else False,
            tensor.requires_grad,
            repr(torch._C._dispatch_keys(tensor)),
            layout_facts(tensor),
            tensor,
        )

    def dim(self) -> int:
        return len(self.shape)

    def live_example(self) -> torch.Tensor | None:
        """The tensor this was taken from, if it still has this metadata (the call did
        not change it) and was not forgotten yet."""
        tensor = self.example
        if tensor is None or TensorMeta.taken(tensor) != self:
            return None
        return tensor

    def forget_example(self) -> None:
        object.__setattr__(self, "example", None)  # frozen for equality, not for this


# What a sparse layout's or a quantized tensor's kernels depend on beyond its shape.
_SPARSE_COO_FACTS = ("{t}._nnz()", "{t}.is_coalesced()", "{t}.sparse_dim()", "{t}.dense_dim()")
_QUANTIZED_FACTS = ("{t}.qscheme()", "{t}.q_scale()", "{t}.q_zero_point()")


def layout_facts(tensor: torch.Tensor) -> tuple:
    """(expression, value) of each fact of ``tensor`` a guard must compare."""
    if tensor.layout is torch.sparse_coo:
        expressions = _SPARSE_COO_FACTS
    elif tensor.layout is not torch.strided:  # CSR, CSC, BSR, BSC
        expressions = ("{t}._nnz()", "{t}.dense_dim()")
    elif tensor.is_quantized and tensor.qscheme() in (
        torch.per_tensor_affine,
        torch.per_tensor_symmetric,
    ):
        expressions = _QUANTIZED_FACTS
    elif tensor.is_quantized:  # per channel: its scales are a tensor of their own
        expressions = ("{t}.qscheme()", "{t}.q_per_channel_axis()")
    else:
        return ()
    values = {"t": tensor}
    return tuple((e, eval(e.format(t="t"), {}, values)) for e in expressions)
