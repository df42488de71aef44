"""GPU tests: skipped, with the reason, where torch finds no CUDA device."""

from __future__ import annotations

import os

import pytest
import torch


def pytest_collection_modifyitems(config, items):
    # FULLGRAPH_GPU_TESTS_ON_CPU=1 runs them on the CPU, to check the tests themselves.
    if torch.cuda.is_available() or os.environ.get("FULLGRAPH_GPU_TESTS_ON_CPU") == "1":
        return
    skip = pytest.mark.skip(reason="no CUDA device: the GPU tests run on the CUDA machine")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)
