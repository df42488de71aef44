"""The pure helpers behind runtime findings: kinds of reads, caller names, user tracebacks.

No torch and no worker: these run on every interpreter leg (3.10 included).
"""

from __future__ import annotations

import pytest

from fullgraph.lsp_server.break_hints import HINTS, hint_for, kind_at
from fullgraph.lsp_server.break_sites import by_site, caller_chain, qualified_name
from fullgraph.lsp_server.analysis.tracebacks import without_frames


@pytest.mark.parametrize(
    ("source", "column", "kind"),
    [
        ("assert t.abs().max() < 1, 'big'\n", 7, "assert"),
        ("print(f'{t.sum()} and {t}')\n", 6, "f-string"),
        ("if t.mean() > 0:\n    pass\n", 3, "branch"),
        ("while t.sum() > 0:\n    pass\n", 6, "branch"),
        ("y = 1 if t.any() else 2\n", 9, "branch"),
        ("s = t.max().item() * 0.5 + 1\n", 4, "item-arithmetic"),
        ("n += t.item()\n", 5, "item-arithmetic"),
        ("a = float(t) * 2\n", 4, "item-arithmetic"),
        ("s = t.item()\n", 4, None),  # a plain read: the category's own hint
        ("def broken(:\n", 0, None),
    ],
)
def test_the_kind_of_read_comes_from_the_statement(source, column, kind):
    assert kind_at(source, 1, column) == kind


def test_a_break_gets_its_kinds_hint_else_its_categorys(tmp_path):
    model = tmp_path / "m.py"
    model.write_text("def f(t):\n    assert t.all()\n    return t.item()\n")
    brk = {"file": str(model), "line": 2, "column": 11, "hint": "generic"}
    assert hint_for(brk) == HINTS["assert"]
    assert hint_for({**brk, "line": 3, "column": 11}) == "generic"
    assert hint_for({**brk, "file": str(tmp_path / "gone.py")}) == "generic"


def test_frames_get_their_class_names(tmp_path):
    model = tmp_path / "m.py"
    model.write_text(
        "class Block:\n"
        "    def forward(self, x):\n"
        "        return x\n\n"
        "class Model:\n"
        "    def forward(self, x):\n"
        "        return self.block(x)\n"
    )
    names = [qualified_name(model, 3, "forward"), qualified_name(model, 7, "forward")]
    assert names == ["Block.forward", "Model.forward"]
    assert qualified_name(model, 7, "missing") == "missing"
    assert caller_chain(reversed(names)) == "Model.forward → Block.forward"


def test_sites_are_grouped_with_every_entrypoint_in_order():
    found = [("a", ("FG202", 3)), ("b", ("FG202", 3)), ("b", ("FG201", 5)), ("a", ("FG202", 3))]
    assert by_site(found, key=lambda item: item) == [
        (("FG202", 3), ["a", "b"]),
        (("FG201", 5), ["b"]),
    ]


TRACEBACK = """\
Traceback (most recent call last):
  File "/x/fullgraph/runtime/monitor/driver.py", line 45, in execute
    return fn(*args)
           ^^^^^^^^^
  File "/venv/site-packages/torch/nn/modules/module.py", line 1778, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
  File "/project/model.py", line 10, in forward
    return self.helper(x)
  File "/venv/site-packages/torch/functional.py", line 5, in helper
    return g(x)
  File "/project/model.py", line 20, in g
    raise ValueError("bad")
ValueError: bad
"""


def test_a_users_traceback_starts_at_the_users_code():
    text = without_frames(
        TRACEBACK,
        lambda file: file.startswith("/x/fullgraph/"),
        lambda file: file.startswith("/project/"),
    )
    assert text.splitlines() == [
        "Traceback (most recent call last):",
        '  File "/project/model.py", line 10, in forward',
        "    return self.helper(x)",
        # Library frames between user frames stay: they are part of the story.
        '  File "/venv/site-packages/torch/functional.py", line 5, in helper',
        "    return g(x)",
        '  File "/project/model.py", line 20, in g',
        '    raise ValueError("bad")',
        "ValueError: bad",
    ]
    # Without a user frame only fullgraph's own frames go.
    no_user = without_frames(TRACEBACK, lambda file: file.startswith("/x/"), lambda file: False)
    assert "monitor.py" not in no_user and "module.py" in no_user
