"""What the ``torch.cond`` form of FG101 knows about torch names: data, not logic.

Two kinds of fact, each a table keyed by qualified name (``torch.tanh``,
``torch.nn.functional.gelu``, ``torch.nn.Embedding``) or by tensor-method name:

- what ``torch.cond`` can run inside a branch (it compiles both branches with
  Dynamo, whole-graph, even in eager mode, and rejects mutations of inputs and
  buffers, graph breaks and outputs that alias an input);
- which operations give a result with their input's metadata (shape, dtype,
  device, layout, stride order), the facts behind the proof that both branches
  return tensors of identical metadata.

``tests/refactors/test_cond_form.py`` checks the metadata facts against torch.
"""

from __future__ import annotations

from . import torch_facts
from .torch_facts import PURE_TENSOR_MODULES

# -- what a branch may call ---------------------------------------------------------

# Dropout draws random numbers (torch.cond keeps the draws of the branch that runs) and
# Embedding can fault on an out-of-range index: both are fine when only the taken branch
# runs.  BatchNorm is left out: in training it updates its running statistics, a buffer
# mutation torch.cond rejects.
DROPOUT_MODULES = frozenset(
    f"torch.nn.{name}"
    for name in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout")
)
COND_MODULES = PURE_TENSOR_MODULES | DROPOUT_MODULES | {"torch.nn.Embedding"}
# Layers that can return their input itself or a view of it (Dropout in eval mode returns
# its input): a branch result from one is returned as a copy, since torch.cond rejects
# an output that aliases an input.
ALIASING_MODULES = frozenset({"torch.nn.Identity", "torch.nn.Flatten", "torch.nn.Unflatten"})
ALIASING_MODULES |= DROPOUT_MODULES
ALIASING_FUNCTIONS = frozenset({"torch.nn.functional.dropout"})
# Layers torch.cond cannot run in a branch, and why.
REFUSED_MODULES = {
    f"torch.nn.{name}": (
        "updates its running statistics in training, a buffer mutation torch.cond rejects"
    )
    for name in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm")
}
# Constructor parameters that make a layer update a tensor in place (position, name),
# unless absent or literally ``False``/``None``.
INPLACE_PARAMETERS = {
    **{f"torch.nn.{name}": (0, "inplace") for name in ("ReLU", "SiLU", "Mish", "Hardswish")},
    **{f"torch.nn.{name}": (1, "inplace") for name in ("LeakyReLU", "ELU")},
    **{name: (1, "inplace") for name in DROPOUT_MODULES},
    # Embedding(max_norm=...) renormalizes rows of its weight in place on every lookup.
    "torch.nn.Embedding": (3, "max_norm"),
}
# Functions with an ``inplace`` parameter: its position.
INPLACE_FUNCTION_PARAMETERS = {
    **{
        f"torch.nn.functional.{name}": 1
        for name in ("relu", "relu6", "silu", "mish", "hardswish", "selu")
    },
    **{f"torch.nn.functional.{name}": 2 for name in ("elu", "leaky_relu", "celu")},
    "torch.nn.functional.hardtanh": 3,
    "torch.nn.functional.threshold": 3,
    "torch.nn.functional.dropout": 3,
}
# Functions and methods whose output shape depends on tensor data: Dynamo cannot capture
# them whole, so a branch calling one fails to compile.
DATA_DEPENDENT_SHAPE_FUNCTIONS = torch_facts.DATA_DEPENDENT_SHAPE_FUNCTIONS | {
    "torch.bincount",
    "torch.nn.functional.one_hot",
}
DATA_DEPENDENT_SHAPE_METHODS = torch_facts.DATA_DEPENDENT_SHAPE_METHODS | {
    "repeat_interleave",
    "bincount",
}
# torch functions with an effect outside the graph (files, the global generator's seed).
OUTSIDE_EFFECT_FUNCTIONS = frozenset(
    {
        "torch.save",
        "torch.load",
        "torch.manual_seed",
        "torch.seed",
        "torch.set_rng_state",
        "torch.compile",
        "torch.cond",
    }
)
# Tensor methods a branch may not call: value reads (a graph break), device moves,
# autograd side effects.
FORBIDDEN_METHODS = frozenset(
    {"item", "tolist", "numpy", "cpu", "cuda", "backward", "register_hook", "retain_grad"}
)

# -- metadata -----------------------------------------------------------------------

# When an operation keeps its input's metadata: for every dtype it accepts ("any"), or
# only for floating-point inputs ("floating"; integer inputs give float, complex ones may
# change).  Left out on purpose: operations autocast runs in float32 (exp, log, pow,
# softmax, layer_norm, …), whose result dtype changes inside ``torch.autocast``, and
# ``positive``, which returns its input.
ANY, FLOATING = "any", "floating"
PRESERVING_FUNCTIONS = {
    **{f"torch.{name}": ANY for name in ("relu", "clone", "neg", "negative", "sign")},
    **{f"torch.{name}": FLOATING for name in ("sigmoid", "tanh", "sin", "cos", "erf", "abs")},
    **{f"torch.nn.functional.{name}": ANY for name in ("relu", "relu6", "hardtanh")},
    **{
        f"torch.nn.functional.{name}": FLOATING
        for name in (
            "gelu",
            "silu",
            "mish",
            "elu",
            "selu",
            "celu",
            "leaky_relu",
            "hardswish",
            "hardsigmoid",
            "softsign",
            "sigmoid",
            "tanh",
        )
    },
    "torch.nn.functional.dropout": ANY,
}
PRESERVING_METHODS = {
    **{name: ANY for name in ("relu", "clone", "neg", "negative", "sign")},
    **{name: FLOATING for name in ("sigmoid", "tanh", "sin", "cos", "erf", "abs")},
}
PRESERVING_MODULES = {
    # Dropout rejects non-floating input in training and returns its input in evaluation.
    **{f"torch.nn.{name}": ANY for name in ("ReLU", "Identity")},
    **{name: ANY for name in DROPOUT_MODULES},
    **{
        f"torch.nn.{name}": FLOATING
        for name in ("GELU", "SiLU", "Tanh", "Sigmoid", "LeakyReLU", "ELU", "Mish", "Hardswish")
    },
}
# Results that are floating point whatever the input's dtype.
FLOATING_FUNCTIONS = frozenset(
    {"torch.sigmoid", "torch.tanh", "torch.sin", "torch.cos", "torch.erf"}
)
FLOATING_METHODS = frozenset(
    {"sigmoid", "tanh", "sin", "cos", "erf", "float", "double", "half", "bfloat16"}
)
# Layers whose parameters are floating point, so their result is too.
FLOATING_MODULES = frozenset(
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
        "Embedding",
        "LayerNorm",
        "GroupNorm",
        "RMSNorm",
    )
)
# Two layers of one class give results of one metadata for inputs of one metadata when
# their constructors agree on every parameter except these (a bias or a table size
# changes values, not metadata).  Constructor parameters in order, to match positional
# arguments to keywords.  Layers not listed must be built by identical constructor calls.
LAYER_PARAMETERS = {
    "torch.nn.Linear": ("in_features", "out_features", "bias", "device", "dtype"),
    "torch.nn.Embedding": (
        "num_embeddings",
        "embedding_dim",
        "padding_idx",
        "max_norm",
        "norm_type",
        "scale_grad_by_freq",
        "sparse",
        "_weight",
        "_freeze",
        "device",
        "dtype",
    ),
}
METADATA_FREE_PARAMETERS = {
    "torch.nn.Linear": frozenset({"bias"}),
    "torch.nn.Embedding": frozenset(
        {"num_embeddings", "padding_idx", "scale_grad_by_freq", "sparse", "_freeze"}
    ),
}
# Module methods that change a layer's parameters' dtype or device after construction.
CONVERTING_MODULE_METHODS = frozenset(
    {"to", "half", "float", "double", "bfloat16", "type", "cuda", "cpu", "apply", "to_empty"}
)
