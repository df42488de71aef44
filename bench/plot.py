"""Drawing ``docs/benchmarks.png``: speedup over eager per model, both compilers.

One horizontal bar pair per model at its largest inputs, on a log scale with
a line at 1× (left of it the compiler is slower than eager).  Models a
compiler did not produce a time for get no bar for it.
"""

from __future__ import annotations

from pathlib import Path

from bench.compilers import EAGER, FULLGRAPH, TORCH_COMPILE
from bench.suite import OK, ModelResult

COLORS = {TORCH_COMPILE: "#4c72b0", FULLGRAPH: "#dd8452"}


def speedups(result: ModelResult, compiler: str) -> float | None:
    if result.status != OK:
        return None
    eager, other = result.compilers.get(EAGER), result.compilers.get(compiler)
    if not eager or not other or eager.status != OK or other.status != OK or not eager.step_s:
        return None
    size = list(eager.step_s)[-1]
    if size not in other.step_s:
        return None
    return eager.step_s[size] / other.step_s[size]


def draw(results: list[ModelResult], path: Path, device: str) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    names = [r.name for r in results]
    height = max(3.0, 0.28 * len(names) + 1.5)
    figure, axes = plt.subplots(figsize=(8, height))
    bar = 0.4
    for offset, compiler in ((-bar / 2, TORCH_COMPILE), (bar / 2, FULLGRAPH)):
        positions, values = [], []
        for index, result in enumerate(results):
            value = speedups(result, compiler)
            if value is not None:
                positions.append(index + offset)
                values.append(value)
        axes.barh(positions, values, height=bar, color=COLORS[compiler], label=compiler)
    axes.axvline(1.0, color="black", linewidth=0.8)
    axes.set_xscale("log")
    # Plain "0.5×, 1×, 2×" labels: the default log-scale minor labels overlap.
    axes.xaxis.set_major_locator(ticker.LogLocator(base=2))
    axes.xaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:g}×"))
    axes.xaxis.set_minor_formatter(ticker.NullFormatter())
    axes.set_ylim(len(names) - 0.5, -0.5)
    axes.set_yticks(range(len(names)), names, fontsize=7)
    axes.set_xlabel("speedup over eager (eager step time / compiled step time), largest inputs")
    axes.set_title(f"fullgraph and torch.compile against eager ({device})")
    axes.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
