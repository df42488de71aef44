"""Benchmarks: fullgraph against eager PyTorch and ``torch.compile``.

``bench/run.py`` measures real models (``transformers`` architectures built
from small random-weight configs, plus the repository's own example programs)
and writes ``docs/benchmarks.md`` and ``docs/benchmarks.png``;
``bench/overhead.py`` prints the per-call overhead figures of the runtime.
"""
