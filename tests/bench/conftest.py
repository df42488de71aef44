"""Make the repository's ``bench`` package importable from the benchmark tests.

``bench/`` is a folder of scripts, not an installed package; the tests import
its modules the way ``bench/run.py`` does, from the repository root.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))
