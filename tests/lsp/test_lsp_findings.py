"""Pure helpers behind the features: carrying findings over edits, reports -> findings, lenses."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from lsprotocol import types

from fullgraph.lsp_server.diagnostic import Diagnostic
from fullgraph.lsp_server.locations import definitions, entry_definition, module_name
from fullgraph.lsp_server.positions import PositionMapper
from fullgraph.lsp_server.server.features.commands import with_entrypoint, wrapper_path
from fullgraph.lsp_server.server.features.findings import carry_over, doc_href, to_diagnostic
from fullgraph.lsp_server.server.features.runtime import entry_result

OLD = "a = 1\nb = 2\nc = 3\nd = 4\n"


def finding(line, end_line=None, code="FG101"):
    return Diagnostic(code, "msg", line, 0, end_line or line, 5, "warning", fix=object())


def test_carry_over_moves_untouched_findings_and_drops_edited_ones():
    new = "a = 1\ninserted(\nb = 2\nc = 99\nd = 4\n"
    kept = carry_over([finding(1), finding(2), finding(3), finding(4), finding(2, 4)], OLD, new)
    assert [(f.line, f.end_line) for f in kept] == [(1, 1), (3, 3), (5, 5)]
    assert all(f.fix is None for f in kept)  # fixes were proven for the old text only


def test_carry_over_of_identical_text_keeps_everything_including_fixes():
    findings = [finding(2)]
    assert carry_over(findings, OLD, OLD) == findings


def test_doc_links_prefer_local_docs_then_the_base_url(tmp_path):
    (tmp_path / "docs" / "rules").mkdir(parents=True)
    (tmp_path / "docs" / "rules" / "FG199.md").write_text("# FG199")
    assert (
        doc_href("FG199", tmp_path, "https://example.invalid/docs")
        == (tmp_path / "docs/rules/FG199.md").as_uri()
    )
    assert (
        doc_href("FG298", tmp_path, "https://example.invalid/docs/")
        == "https://example.invalid/docs/codes/FG298.md"
    )
    assert doc_href(None, tmp_path, "https://x") is None


def test_static_diagnostic_has_code_link_source_and_severity():
    mapper = PositionMapper(OLD)
    diagnostic = to_diagnostic(
        finding(2), mapper, root=None, docs_base_url="https://example.invalid"
    )
    assert diagnostic.code == "FG101" and diagnostic.source == "fullgraph"
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    assert diagnostic.range.start == types.Position(line=1, character=0)
    assert diagnostic.code_description.href.endswith("FG101.md")


def write_project(root: Path) -> Path:
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    source = (
        "import torch\n\n"
        "def build():\n"
        "    return step, (torch.ones(2),)\n\n"
        "def step(x):\n"
        "    print(x)\n"
        "    return x\n"
    )
    (root / "pkg" / "mod.py").write_text(source)
    return root / "pkg" / "mod.py"


def report_for(path: Path) -> dict:
    return {
        "graph_count": 2,
        "break_count": 1,
        "function": {"qualname": "step", "file": str(path), "line": 6},
        "breaks": [
            {
                "code": "FG201",
                "category": "python-side-effect",
                "function": "builtins.print",
                "file": str(path),
                "line": 7,
                "column": 4,
                "end_line": 7,
                "end_column": 12,
                "stack": [{"file": str(path), "line": 7, "column": 4, "function": "step"}],
                "message": "Call with Python-level side effects: builtins.print",
                "explanation": "It cannot be part of an operator graph.",
                "hint": "Defer it.",
            }
        ],
        "guards": [
            {"record": 0, "source": "def guard(A):\n" + "    check()\n" * 40, "check_count": 3}
        ],
    }


def test_report_breaks_become_findings_with_stack_and_hover(tmp_path):
    path = write_project(tmp_path)
    result = SimpleNamespace(
        entry="pkg.mod:build", status="ok", report=report_for(path), error=None, duration_s=1.0
    )
    converted = entry_result(result, tmp_path, "warning")
    (brk,) = converted.findings
    assert (brk.code, brk.line, brk.column, brk.end_column) == ("FG201", 7, 4, 12)
    assert brk.stack[0].function == "step" and brk.stack[0].path == path.resolve()
    assert "2 graph(s)" in brk.hover and "**Hint:** Defer it." in brk.hover
    assert "def guard(A):" in brk.hover and "more line(s)" in brk.hover  # long guards are cut
    assert converted.summary == "pkg.mod:build: 2 graph(s), 1 break(s)"
    diagnostic = to_diagnostic(
        brk, PositionMapper(path.read_text()), root=tmp_path, docs_base_url="https://x"
    )
    assert diagnostic.related_information[0].message == "1. step"


def test_failed_analysis_is_one_finding_at_the_raising_user_frame(tmp_path):
    path = write_project(tmp_path)
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/site-packages/fullgraph/worker.py", line 10, in run\n'
        f'  File "{path}", line 4, in build\n'
        '  File "/usr/lib/python3.11/os.py", line 1, in helper\n'
        "ValueError: boom\n"
    )
    error = {"type": "ValueError", "message": "boom", "traceback": traceback}
    result = SimpleNamespace(
        entry="pkg.mod:build", status="user_exception", report=None, error=error
    )
    (failure,) = entry_result(result, tmp_path, "warning").findings
    assert failure.severity == "error" and failure.line == 4
    assert "raised an exception: ValueError: boom" in failure.message


def test_crash_without_traceback_lands_on_the_entrypoint_def(tmp_path):
    path = write_project(tmp_path)
    result = SimpleNamespace(
        entry="pkg.mod:build", status="timeout", report=None, error={"message": "60 s"}
    )
    (failure,) = entry_result(result, tmp_path, "warning").findings
    assert failure.path == path and (failure.line, failure.column, failure.end_column) == (3, 4, 9)
    assert "timed out" in failure.message


def test_definitions_find_functions_methods_and_modules_only():
    source = (
        "import torch.nn as nn\n"
        "class Net(nn.Module):\n"
        "    def forward(self, x, y=1):\n"
        "        def inner(): pass\n"
        "class Plain:\n"
        "    def method(self): pass\n"
        "async def é𝔵(a, *, b): pass\n"
    )
    found = {d.qualname: d for d in definitions(source)}
    # Python names identifiers after NFKC normalization: é𝔵 is called "éx".
    assert set(found) == {"Net", "Net.forward", "Net.forward.<locals>.inner", "Plain.method", "éx"}
    assert found["Net"].kind == "module" and found["Net.forward"].required_parameters == 1
    assert found["Plain.method"].required_parameters == 0
    assert found["éx"].required_parameters == 2
    assert (found["éx"].column, found["éx"].end_column) == (10, 12)  # code points, not bytes
    assert definitions("def broken(:\n") == []


def test_module_names_and_entry_lookup(tmp_path):
    path = write_project(tmp_path)
    assert module_name(path, tmp_path) == "pkg.mod"
    assert module_name(tmp_path / "pkg" / "__init__.py", tmp_path) == "pkg"
    assert module_name(Path("/elsewhere/x.py"), tmp_path) is None
    found_path, definition = entry_definition("pkg.mod:step", tmp_path)
    assert found_path == path and definition.line == 6
    assert entry_definition("pkg.missing:step", tmp_path) is None


def test_add_entrypoint_keeps_the_rest_of_pyproject():
    text = (
        '# my project\n[project]\nname = "x"\n\n[tool.fullgraph]\nentrypoints = ["a.b:c"]  # main\n'
    )
    updated = with_entrypoint(text, "d.e:f")
    assert updated.startswith('# my project\n[project]\nname = "x"')
    assert 'entrypoints = ["a.b:c", "d.e:f"]' in updated
    assert with_entrypoint(updated, "d.e:f") == updated  # idempotent
    assert 'entrypoints = ["d.e:f"]' in with_entrypoint("", "d.e:f")


def test_wrapper_goes_to_one_file_per_entrypoint(tmp_path):
    assert wrapper_path(tmp_path, ".fullgraph/compiled", "pkg.mod:build") == (
        tmp_path / ".fullgraph/compiled/pkg_mod_build_compiled.py"
    )


def test_stack_frames_in_other_files_are_converted_with_that_files_text(tmp_path):
    path = write_project(tmp_path)
    caller = tmp_path / "pkg" / "caller.py"
    caller.write_text("𝔵 = step(x)\n")  # the call starts at code point 4, UTF-16 unit 5
    report = report_for(path)
    report["breaks"][0]["stack"].append(
        {"file": str(caller), "line": 1, "column": 4, "function": "<module>"}
    )
    result = SimpleNamespace(entry="pkg.mod:build", status="ok", report=report, error=None)
    (brk,) = entry_result(result, tmp_path, "warning").findings
    diagnostic = to_diagnostic(
        brk, PositionMapper(path.read_text()), root=tmp_path, docs_base_url="x"
    )
    outer = diagnostic.related_information[1]
    assert outer.location.uri == caller.as_uri()
    assert outer.location.range.start == types.Position(line=0, character=5)


def test_a_crashing_rule_keeps_the_last_good_findings(tmp_path, monkeypatch):
    from fullgraph.lsp_server.server.features import linting as diag
    from fullgraph.lsp_server.server.language_server import FullgraphServer

    class Linter:
        """Stands in for the refactors' IncrementalLinter: a rule that crashes on the second lint."""

        calls = 0

        def __init__(self, path, entrypoints=()):
            self.path, self.entrypoints = path, tuple(entrypoints)

        def lint(self, text):
            type(self).calls += 1
            if type(self).calls > 1:
                raise RecursionError("rule bug")
            return [
                SimpleNamespace(
                    code="FG101",
                    message="m",
                    line=2,
                    column=0,
                    end_line=2,
                    end_column=1,
                    severity="warning",
                    fix=None,
                    refusal_reason=None,
                )
            ]

    monkeypatch.setattr(diag, "IncrementalLinter", Linter)
    server = FullgraphServer()
    server.root = tmp_path  # the workspace scan of cross-file calls reads only tmp_path
    shown = []
    monkeypatch.setattr(server, "show", lambda message, *args: shown.append(message))
    uri = (tmp_path / "m.py").as_uri()
    server.documents[uri] = diag.compute_static(server, uri, "a = 1\nb = 2\n")
    state = diag.compute_static(server, uri, "# new\na = 1\nb = 2\n")
    assert [(f.code, f.line) for f in state.findings] == [("FG101", 3)]
    assert len(shown) == 1 and "static rules failed" in shown[0]
