"""Models an ordinary project would hand to `fullgraph compile` (tests/cli/test_wrapper_corpus.py)."""
