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
        "nbytes",
        "itemsize",
        "output_nr",
        "_version",
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
        "tolist",
        "untyped_storage",
        "storage",
        "dim_order",
    }
)
# Tensor methods that return a Python bool computed from tensor data.
DATA_DEPENDENT_BOOL_METHODS = frozenset({"equal", "allclose", "is_nonzero", "is_set_to"})
# Prefixes of tensor methods and attributes that return Python bools (``is_contiguous``,
# ``is_cuda``, ``has_names``).
NON_TENSOR_MEMBER_PREFIXES = ("is_", "has_")
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
        "torch.result_type",
        "torch.promote_types",
        "torch.can_cast",
        "torch.finfo",
        "torch.iinfo",
        "torch.broadcast_shapes",
        "torch.seed",
        "torch.initial_seed",
        "torch.sym_int",
        "torch.sym_float",
        "torch.sym_max",
        "torch.sym_min",
        "torch.sym_not",
        "torch.autocast",
        "torch.inference_mode",
        "torch.vmap",
        "torch.save",
        "torch.load",
        "torch.use_deterministic_algorithms",
        "torch.Generator",
    }
)
# Where a ``torch.*`` call is known to return a tensor: the operator namespaces.
# Everything else under ``torch`` (``torch.distributed``, ``torch.jit``,
# ``torch.cuda``, ``torch.autograd``, ``torch.backends``, ``torch.compiler``,
# ``torch._dynamo``, ``torch.utils`` …) returns bools, ints, handles or objects
# as often as tensors, so its results are of unknown kind.
TENSOR_NAMESPACES = frozenset(
    {"torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special"}
)
# Prefixes of names in those namespaces that return Python values (``torch.is_tensor``,
# ``torch.get_default_dtype``, ``torch.set_printoptions``, ``torch.are_…``).
NON_TENSOR_PREFIXES = ("is_", "get_", "set_", "are_", "use_", "has_")
# Constructors in the ``torch`` namespace that build tensors from sizes or data.
TENSOR_CONSTRUCTORS = frozenset(
    {
        "torch.Tensor",
        "torch.FloatTensor",
        "torch.DoubleTensor",
        "torch.HalfTensor",
        "torch.BFloat16Tensor",
        "torch.LongTensor",
        "torch.IntTensor",
        "torch.ShortTensor",
        "torch.CharTensor",
        "torch.ByteTensor",
        "torch.BoolTensor",
    }
)
# torch functions that always return a tuple (or a named tuple) of tensors.
TUPLE_TORCH = frozenset(
    {
        "torch.sort",
        "torch.topk",
        "torch.chunk",
        "torch.split",
        "torch.unbind",
        "torch.kthvalue",
        "torch.mode",
        "torch.aminmax",
        "torch.std_mean",
        "torch.var_mean",
        "torch.meshgrid",
        "torch.broadcast_tensors",
        "torch.tensor_split",
        "torch.hsplit",
        "torch.vsplit",
        "torch.dsplit",
        "torch.frexp",
        "torch.histogram",
        "torch.lu",
        "torch.qr",
        "torch.svd",
        "torch.slogdet",
        "torch.lobpcg",
        "torch.linalg.eig",
        "torch.linalg.eigh",
        "torch.linalg.svd",
        "torch.linalg.qr",
        "torch.linalg.slogdet",
        "torch.linalg.lu",
        "torch.linalg.lu_factor",
        "torch.linalg.lu_factor_ex",
        "torch.linalg.lstsq",
        "torch.linalg.inv_ex",
        "torch.linalg.cholesky_ex",
        "torch.linalg.solve_ex",
        "torch.linalg.ldl_factor",
        "torch.linalg.ldl_factor_ex",
    }
)
# torch functions that return a tuple when given a dimension (``torch.max(x, 1)``).
TUPLE_WITH_DIM_TORCH = frozenset(
    {"torch.max", "torch.min", "torch.median", "torch.nanmedian", "torch.unique", "torch.where"}
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
        "torch.empty_strided",
        *TENSOR_CONSTRUCTORS,
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
