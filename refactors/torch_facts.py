"""What fullgraph knows about torch names: data for the static rules, not logic.

Which attributes and methods of a tensor are metadata, which read its value,
which torch functions return something other than a tensor, which ``torch.nn``
layers are pure.  Adding a fact is one line in a table.
"""

from __future__ import annotations

METADATA_ATTRIBUTES = frozenset(
    {
        "shape",
        "dtype",
        "device",
        "ndim",
        "is_cuda",
        "requires_grad",
        "layout",
        "is_leaf",
        "is_sparse",
        "is_quantized",
        "grad_fn",
        "names",
        "is_meta",
    }
)
TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "real", "imag", "data"})
METADATA_METHODS = frozenset(
    {
        "size",
        "dim",
        "numel",
        "ndimension",
        "nelement",
        "stride",
        "is_contiguous",
        "data_ptr",
        "element_size",
        "is_floating_point",
        "is_complex",
        "get_device",
        "storage_offset",
        "type",
        "__len__",
    }
)
# Methods that move tensor data into Python: a graph break wherever they appear.
VALUE_READ_METHODS = frozenset({"item", "tolist", "numpy"})
VALUE_READ_BUILTINS = frozenset({"int", "float", "bool", "complex"})
# Methods that return tuples (or tensors) depending on their arguments.
TUPLE_METHODS = frozenset(
    {
        "max",
        "min",
        "sort",
        "topk",
        "chunk",
        "split",
        "unbind",
        "kthvalue",
        "median",
        "mode",
        "tensor_split",
        "aminmax",
    }
)
# Methods that mark an unannotated parameter as a tensor.
TENSOR_HINT_METHODS = frozenset(
    {
        "sum",
        "mean",
        "any",
        "all",
        "abs",
        "relu",
        "sigmoid",
        "tanh",
        "softmax",
        "clone",
        "detach",
        "float",
        "half",
        "matmul",
        "view",
        "reshape",
        "unsqueeze",
        "squeeze",
        "permute",
        "transpose",
        "contiguous",
        "norm",
        "exp",
        "log",
        "pow",
        "clamp",
        "masked_fill",
        "to",
        "cpu",
        "cuda",
        "nonzero",
        "item",
        "tolist",
        "numpy",
        "isnan",
        "isfinite",
        "std",
        "var",
        "amax",
        "amin",
        "argmax",
        "argmin",
        "gt",
        "lt",
        "ge",
        "le",
        "eq",
        "ne",
    }
)
# torch functions whose result is not a tensor.
NON_TENSOR_TORCH = frozenset(
    {
        "torch.is_tensor",
        "torch.numel",
        "torch.is_floating_point",
        "torch.is_complex",
        "torch.get_default_dtype",
        "torch.device",
        "torch.Size",
        "torch.dtype",
        "torch.equal",
        "torch.allclose",
        "torch.is_nonzero",
        "torch.is_grad_enabled",
        "torch.no_grad",
        "torch.enable_grad",
        "torch.manual_seed",
        "torch.set_grad_enabled",
        "torch.compile",
        "torch._assert_async",
        "torch.is_storage",
        "torch.typename",
    }
)
# torch.nn layers whose call returns one tensor, computed without effects or data-dependent
# faults (so it may also run when its branch is not taken).
PURE_TENSOR_MODULES = frozenset(
    f"torch.nn.{name}"
    for name in (
        "Linear",
        "Bilinear",
        "Conv1d",
        "Conv2d",
        "Conv3d",
        "ConvTranspose1d",
        "ConvTranspose2d",
        "ConvTranspose3d",
        "LayerNorm",
        "GroupNorm",
        "RMSNorm",
        "Identity",
        "ReLU",
        "GELU",
        "SiLU",
        "Tanh",
        "Sigmoid",
        "Softmax",
        "LogSoftmax",
        "LeakyReLU",
        "ELU",
        "Softplus",
        "Mish",
        "Hardswish",
        "Flatten",
        "Unflatten",
        "AvgPool1d",
        "AvgPool2d",
        "MaxPool1d",
        "MaxPool2d",
        "AdaptiveAvgPool1d",
        "AdaptiveAvgPool2d",
    )
)
# Layers that return one tensor but have effects in training (random numbers, running stats).
EFFECTFUL_TENSOR_MODULES = frozenset(
    f"torch.nn.{name}"
    for name in (
        "Dropout",
        "Dropout1d",
        "Dropout2d",
        "BatchNorm1d",
        "BatchNorm2d",
        "BatchNorm3d",
        "Embedding",
    )
)
# torch functions whose positional arguments are sizes or Python numbers.
SIZE_TAKING_TORCH = frozenset(
    {
        "torch.zeros",
        "torch.ones",
        "torch.empty",
        "torch.full",
        "torch.rand",
        "torch.randn",
        "torch.randint",
        "torch.arange",
        "torch.linspace",
        "torch.logspace",
        "torch.eye",
        "torch.tensor",
        "torch.as_tensor",
        "torch.manual_seed",
        "torch.Generator",
        "torch.device",
        "torch.Size",
        "torch.randperm",
    }
)
# torch functions that return a Python bool computed from tensor data.
DATA_DEPENDENT_BOOL_TORCH = frozenset({"torch.equal", "torch.allclose", "torch.is_nonzero"})
TENSOR_ANNOTATIONS = frozenset(
    {
        "torch.Tensor",
        "torch.FloatTensor",
        "torch.LongTensor",
        "torch.nn.Parameter",
        "torch.BoolTensor",
    }
)
PRIMITIVE_ANNOTATIONS = frozenset(
    {
        "int",
        "float",
        "bool",
        "str",
        "bytes",
        "complex",
        "builtins.int",
        "builtins.float",
        "builtins.bool",
        "builtins.str",
    }
)

# Functions and methods whose output's shape depends on tensor data (FG105 reports them).
DATA_DEPENDENT_SHAPE_FUNCTIONS = frozenset(
    {
        "torch.nonzero",
        "torch.argwhere",
        "torch.masked_select",
        "torch.unique",
        "torch.unique_consecutive",
        "torch.repeat_interleave",
    }
)
DATA_DEPENDENT_SHAPE_METHODS = frozenset(
    {"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive"}
)
