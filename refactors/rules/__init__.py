"""The rule registry: one module per rule, collected here in code order."""

from __future__ import annotations

from ..rule import Rule
from .fg101_tensor_condition import TensorConditionRule
from .fg102_python_side_effect import PythonSideEffectRule
from .fg103_tensor_validation import TensorValidationRule
from .fg104_tensor_value_read import TensorValueReadRule
from .fg105_data_dependent_shape import DataDependentShapeRule
from .fg106_hybridization import HybridizationRule

RULES: dict[str, type[Rule]] = {
    rule.CODE: rule
    for rule in (
        TensorConditionRule,
        PythonSideEffectRule,
        TensorValidationRule,
        TensorValueReadRule,
        DataDependentShapeRule,
        HybridizationRule,
    )
}

__all__ = ["RULES"]
