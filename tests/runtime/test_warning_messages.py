"""A replayed ``warnings.warn`` carries this call's message.

The replay issues the warning at the user's line (``warn_at``), so the call's
arguments move to other positions; a message built from a value read from the
graph (``f"loss {v}"``) has to move with its expression, not stay the
monitored call's text.
"""

from __future__ import annotations

import warnings

import torch

import fullgraph.runtime as fr


def warns_with_the_loss(x):
    loss = x.sum().item()
    warnings.warn(f"loss {loss}")
    warnings.warn(f"scaled {loss * 2}", category=RuntimeWarning)
    return x * 2


def test_the_message_of_a_replayed_warning_is_this_calls():
    compiled = fr.compile(warns_with_the_loss, backend="eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(4):
            compiled(torch.full((2,), float(i)))
    messages = [(str(w.message), w.category, w.lineno) for w in caught]
    line = warns_with_the_loss.__code__.co_firstlineno
    expected = []
    for i in range(4):
        loss = 2.0 * i
        expected += [(f"loss {loss}", UserWarning, line + 2)]
        expected += [(f"scaled {loss * 2}", RuntimeWarning, line + 3)]
    assert messages == expected
    assert compiled.stats.hits == 3


def deprecated_entry(x):
    warnings.warn("deprecated_entry is deprecated", FutureWarning, stacklevel=2)
    return _helper(x)


def _helper(x):
    warnings.warn("called through a helper", UserWarning, stacklevel=3)
    return x + 1


def _warnings_of(fn, x):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(x)  # the line the warnings name
    return [(str(w.message), w.category, w.filename, w.lineno) for w in caught]


def test_a_stacklevel_past_the_function_names_the_callers_line():
    # ``stacklevel=2`` of a deprecation warning names the line that called the
    # function; the compiled function is called from fullgraph's own frames, and a
    # replay makes the warning from the mock: both must still name the caller's line.
    compiled = fr.compile(deprecated_entry, backend="eager")
    expected = _warnings_of(deprecated_entry, torch.ones(2))
    assert expected[0][2] == __file__
    for _ in range(3):
        assert _warnings_of(compiled, torch.ones(2)) == expected
    assert compiled.stats.hits == 2


def test_a_module_filter_on_the_callers_module_silences_a_replayed_warning():
    compiled = fr.compile(deprecated_entry, backend="eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=FutureWarning, module=__name__)
        for _ in range(3):
            compiled(torch.ones(2))
    assert [str(w.message) for w in caught] == ["called through a helper"] * 3
    assert compiled.stats.hits == 2
