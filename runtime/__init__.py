"""fullgraph.runtime — a monitoring JIT compiler for eager PyTorch code.

Public API (being built; see docs/runtime.md):

- ``compile(fn_or_module, *, backend="inductor")`` -> a compiled callable
- ``explain(fn, *args, **kwargs)`` -> a :class:`Report`
"""
