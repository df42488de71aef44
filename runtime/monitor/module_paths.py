"""The path a guard reads a module by: ``sys.modules[name]``.

A module imported inside the function, or one whose switches library code reads
(``torch.distributions.Distribution._validate_args``), is reached through
``sys.modules`` and read by identity: a module replaced there is another call.
"""

from __future__ import annotations

import sys
from typing import Any

from fullgraph.runtime.sources import ConstSource, ItemSource


def module_source(run: Any, name: str) -> ItemSource:
    """``sys.modules[name]``, read by identity (the read registers the module's path)."""
    source = ItemSource(ItemSource(ConstSource(run.globals_name(vars(sys))), "modules"), name)
    run.read(source, sys.modules[name], symbolic=False)
    return source
