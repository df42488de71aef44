"""Small models with the typical graph breaks, for ``make demo`` and the docs.

Each module defines a model and an ``entry()`` function, the entrypoint
convention of docs/entrypoints.md: it takes no arguments and returns
``(model, args)``.  ``fullgraph check`` finds them through ``[tool.fullgraph]
entrypoints`` in the repository's pyproject.toml; the demo uses ENTRYPOINTS.
"""

ENTRYPOINTS = [
    "examples.clean_mlp:entry",
    "examples.print_in_forward:entry",
    "examples.tensor_if:entry",
    "examples.assert_on_data:entry",
    "examples.item_read:entry",
    "examples.transformer_encoder:entry",
]
