"""SARIF 2.1.0 output of a check run, for code-scanning UIs.

One run with the static rules (``FG1xx``) and runtime break categories
(``FG2xx``) as ``tool.driver.rules``, one result per diagnostic.  Locations are
relative to ``%SRCROOT%`` (the project root) when the file lies under it.
Columns: SARIF columns are 1-based, and ``columnKind`` says they count Unicode
code points, which is what the report's 0-based columns count.  A runtime
break's user call stack becomes the result's ``stacks`` (innermost frame
first, as SARIF orders them); a file that does not parse is one ``FG001``
error result at the syntax error; entrypoints that failed to run are tool
execution notifications.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from fullgraph.lsp_server.cli.check_run import CheckRun, tool_version
from fullgraph.lsp_server.diagnostic import SYNTAX_ERROR_CODE, Diagnostic

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
LEVELS = {"error": "error", "warning": "warning", "information": "note", "hint": "note"}


def _rule_entries() -> list[dict[str, Any]]:
    """Every rule fullgraph knows: static rules if installed, then runtime categories."""
    rules: list[dict[str, Any]] = [
        {
            "id": SYNTAX_ERROR_CODE,
            "name": "syntax-error",
            "shortDescription": {"text": "The file does not parse; no rule ran on it."},
            "fullDescription": {
                "text": "The static rules read a file only when it parses; a file with a "
                "syntax error is reported once, at the error, and not checked further."
            },
            "defaultConfiguration": {"level": "error"},
            "properties": {"origin": "static"},
        }
    ]
    try:
        from fullgraph.refactors import RULES
    except ImportError:
        RULES = {}
    for code, rule in sorted(RULES.items()):
        # MESSAGE is a template ("{call} is ..."); the docs' first sentence reads better.
        description = " ".join(str(getattr(rule, "WHAT_IT_DOES", "") or rule.NAME).split())
        entry = {
            "id": code,
            "name": rule.NAME,
            "shortDescription": {"text": description.split(". ")[0].rstrip(".") + "."},
            "fullDescription": {"text": description},
            "defaultConfiguration": {"level": LEVELS.get(getattr(rule, "SEVERITY", ""), "warning")},
            "properties": {"origin": "static"},
        }
        why = getattr(rule, "WHY_IS_THIS_BAD", "")
        if why:
            entry["help"] = {"text": " ".join(why.split())}
        rules.append(entry)
    for code, category in sorted(_break_categories().items()):
        rules.append(
            {
                "id": code,
                "name": category.name,
                "shortDescription": {"text": category.title},
                "fullDescription": {"text": category.explanation},
                "help": {"text": category.hint},
                "defaultConfiguration": {"level": "warning"},
                "properties": {"origin": "runtime"},
            }
        )
    return rules


def _break_categories() -> dict[str, Any]:
    """The runtime's catalog of break categories, also where the runtime can't be imported.

    The ``fullgraph.runtime`` package imports torch, which the static-only
    install (Python 3.10, no torch) lacks; ``breaks.py`` itself is plain data,
    so then it is loaded from its file.
    """
    try:
        from fullgraph.runtime.breaks import CATEGORIES
    except ImportError:
        name = "_fullgraph_runtime_breaks"
        if name not in sys.modules:
            package = importlib.util.find_spec("fullgraph.runtime")
            if package is None or not package.submodule_search_locations:
                return {}
            path = Path(next(iter(package.submodule_search_locations))) / "breaks.py"
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                return {}
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # dataclasses looks its module up while building
            spec.loader.exec_module(module)
        return sys.modules[name].CATEGORIES
    return CATEGORIES


def _artifact(path: Path, root: Path) -> dict[str, Any]:
    path = Path(path).resolve()
    try:
        return {"uri": path.relative_to(root).as_posix(), "uriBaseId": SRCROOT}
    except ValueError:
        return {"uri": path.as_uri()}


def _location(
    path: Path, root: Path, region: dict[str, int], message: str = "", cell: int | None = None
) -> dict[str, Any]:
    location: dict[str, Any] = {
        "physicalLocation": {"artifactLocation": _artifact(path, root), "region": region}
    }
    if cell is not None:
        # SARIF has no notion of cells: the region is within the cell named here.
        location["properties"] = {"cell": cell}
    if message:
        location["message"] = {"text": message}
    return location


def _region(diagnostic: Diagnostic) -> dict[str, int]:
    return {
        "startLine": diagnostic.line,
        "startColumn": diagnostic.column + 1,
        "endLine": diagnostic.end_line,
        "endColumn": diagnostic.end_column + 1,
    }


def _result(diagnostic: Diagnostic, rule_index: dict[str, int], root: Path) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": diagnostic.code,
        "level": LEVELS.get(diagnostic.severity, "warning"),
        "message": {"text": diagnostic.message},
        "locations": [_location(diagnostic.path, root, _region(diagnostic), cell=diagnostic.cell)],
    }
    if diagnostic.code in rule_index:
        result["ruleIndex"] = rule_index[diagnostic.code]
    if diagnostic.stack:
        frames = [
            {
                "location": _location(
                    frame.path,
                    root,
                    {"startLine": frame.line, "startColumn": frame.column + 1},
                    f"in {frame.function}",
                )
            }
            for frame in reversed(diagnostic.stack)
        ]
        result["stacks"] = [{"message": {"text": "user call stack"}, "frames": frames}]
    properties: dict[str, Any] = {"origin": diagnostic.origin}
    if diagnostic.hint:
        properties["hint"] = diagnostic.hint
    if diagnostic.entries:
        properties["entrypoints"] = diagnostic.entries
    result["properties"] = properties
    return result


def _syntax_result(
    path: Path, error: Exception, rule_index: dict[str, int], root: Path
) -> dict[str, Any]:
    line, column = getattr(error, "line", 1) or 1, getattr(error, "column", 0) or 0
    message = getattr(error, "message", str(error))
    return {
        "ruleId": SYNTAX_ERROR_CODE,
        "ruleIndex": rule_index[SYNTAX_ERROR_CODE],
        "level": "error",
        "message": {"text": f"SyntaxError: {message} (the file was not checked)"},
        "locations": [
            _location(
                path,
                root,
                {"startLine": line, "startColumn": column + 1},
                cell=getattr(error, "cell", None),
            )
        ],
        "properties": {"origin": "static"},
    }


def to_sarif(run: CheckRun) -> dict[str, Any]:
    root = run.root.resolve()
    rules = _rule_entries()
    rule_index = {rule["id"]: index for index, rule in enumerate(rules)}
    notifications = [
        {
            "level": "error",
            "message": {
                "text": f"{result.entry}: {result.status}: {(result.error or {}).get('message', '')}"
            },
            "properties": {"entry": result.entry, "status": result.status},
        }
        for result in run.failed() + run.config_errors()
    ]
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "fullgraph",
                        "version": tool_version(),
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {SRCROOT: {"uri": root.as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "invocations": [
                    {
                        "executionSuccessful": not notifications,
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "results": [_result(d, rule_index, root) for d in run.diagnostics()]
                + [
                    _syntax_result(path, error, rule_index, root)
                    for path, error in sorted(run.syntax_errors.items())
                ],
            }
        ],
    }
