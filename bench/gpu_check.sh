#!/usr/bin/env bash
# The GPU check: the CUDA-marked tests (Triton kernels through Inductor, outputs
# equal to eager, graphs replayed) and the benchmark on a few transformers models,
# on the CUDA machine (Python 3.12, torch 2.11, transformers, no network).
# Writes its log and report into $GPU_CHECK_OUT (default .cache/gpu-check).
# Exit: 0 passed, 1 a test or the benchmark failed, 3 no CUDA device (nothing ran).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
OUT="${GPU_CHECK_OUT:-.cache/gpu-check}"
mkdir -p "$OUT"
LOG="$OUT/gpu-check.log"
# Without an install (the CUDA machine has no network for pip), import the checkout
# through a package folder of links: fullgraph.runtime -> runtime/, and so on.
if ! "$PYTHON" -c "import fullgraph.runtime" 2>/dev/null; then
    mkdir -p "$OUT/site/fullgraph"
    for part in runtime refactors lsp_server; do ln -sfn "$PWD/$part" "$OUT/site/fullgraph/$part"; done
    export PYTHONPATH="$PWD/$OUT/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi

if ! "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    echo "gpu-check: no CUDA device found (torch.cuda.is_available() is False): nothing ran." | tee "$LOG"
    exit 3
fi
{
    echo "gpu-check: $("$PYTHON" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, torch.cuda.get_device_name(0))')"
    "$PYTHON" -c "import fullgraph.runtime" || { echo "gpu-check: fullgraph is not importable"; exit 1; }
} 2>&1 | tee "$LOG"
status=0
timeout 300 "$PYTHON" -m pytest -q -p no:cacheprovider -m cuda tests/gpu 2>&1 | tee -a "$LOG" || status=1
timeout 240 "$PYTHON" bench/run.py --device cuda --groups transformers --models bert gpt2 resnet \
    --repetitions 20 --out-dir "$OUT" --json "$OUT/gpu-bench.json" 2>&1 | tee -a "$LOG" || status=1
echo "gpu-check: exit $status; log and report in $OUT" | tee -a "$LOG"
exit $status
