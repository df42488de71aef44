"""Make the repository's ``bench`` package importable from the benchmark tests.

``bench/`` is a folder of scripts, not an installed package; the tests import
its modules the way ``bench/run.py`` does, from the repository root.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
# Appended, not prepended: the root's folders (runtime/, examples/) must not shadow anything
# the other test folders import; `bench` is a regular package and is found wherever it sits.
if str(REPO_ROOT) not in sys.path:
    sys.path.append(str(REPO_ROOT))
