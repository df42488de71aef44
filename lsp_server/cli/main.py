"""The ``fullgraph`` command line: check, explain, fix, compile, lsp.

A thin front end over the same pieces the language server uses: the static
rules (``fullgraph.refactors``) and the analysis service, which runs every
entrypoint in an isolated worker.  Exit codes (docs/cli.md): 0 nothing found,
1 breaks/findings found or an entrypoint failed to run, 2 usage or
configuration error.  Machine-readable output (``--json``, ``--sarif``) is the
only thing written to stdout in those modes; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from fullgraph.lsp_server.analysis.service import AnalysisFailed, AnalysisService
from fullgraph.lsp_server.cli import text_report
from fullgraph.lsp_server.cli.check_run import (
    EXIT_CLEAN,
    EXIT_CONFIG,
    EXIT_PROBLEMS,
    SEVERITIES,
    CheckRun,
)
from fullgraph.lsp_server.cli.sarif import to_sarif
from fullgraph.lsp_server.config import Config, load_config
from fullgraph.lsp_server.entrypoints import Entrypoint, parse_entrypoint
from fullgraph.lsp_server.errors import ConfigError
from fullgraph.lsp_server.ipynb import fix_notebook, read_cells
from fullgraph.lsp_server.notebooks import NotebookError, combine
from fullgraph.lsp_server.sources import SOURCE_SUFFIXES, iter_python_files


def find_root(start: Path) -> Path:
    """The nearest folder at or above ``start`` with a pyproject.toml, else ``start``."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / "pyproject.toml").is_file():
            return folder
    return start


def _error(message: str) -> None:
    print(f"fullgraph: error: {message}", file=sys.stderr)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _project(args: argparse.Namespace) -> tuple[Path, Config]:
    root = (args.root or find_root(Path.cwd())).resolve()
    config = load_config(root)
    if getattr(args, "timeout", None) is not None:
        config.timeout = args.timeout
    return root, config


def _service(root: Path, config: Config) -> AnalysisService:
    # A one-shot run: starting a spare worker after a crash would only cost time.
    return AnalysisService(root, config, restart_eagerly=False)


def _module_file(root: Path, entry: Entrypoint) -> list[Path]:
    base = root.joinpath(*entry.module.split("."))
    return [base.with_suffix(".py"), base / "__init__.py"]


def _entries_for(args: argparse.Namespace, root: Path, config: Config) -> list[tuple[str, str]]:
    """(entrypoint, config key) pairs: ``--entry`` values, else configured entrypoints.

    With explicit PATHS, only configured entrypoints whose module lies under them run.
    """
    if args.entry:
        for text in args.entry:
            parse_entrypoint(text, key="--entry")
        return [(text, "--entry") for text in args.entry]
    configured = [
        (text, f"tool.fullgraph.entrypoints[{index}]")
        for index, text in enumerate(config.entrypoints)
    ]
    if not args.paths:
        return configured
    wanted = [p.resolve() for p in args.paths]
    return [
        (text, key)
        for text, key in configured
        if any(
            f == p or p in f.parents
            for f in _module_file(root, parse_entrypoint(text))
            for p in wanted
        )
    ]


# -- check ------------------------------------------------------------------


def cmd_check(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    root, config = _project(args)
    paths = [Path(p) for p in args.paths] or [Path.cwd()]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        _error(f"no such file or directory: {', '.join(missing)}")
        return EXIT_CONFIG
    entries = _entries_for(args, root, config)
    run = CheckRun(
        root=root,
        static_skipped=args.no_static,
        min_severity=args.severity,
        ignore=tuple(config.ignore),
    )

    def progress(items: list, desc: str, unit: str) -> tqdm:
        return tqdm(
            items,
            desc=desc,
            unit=unit,
            file=sys.stderr,
            disable=True if args.no_progress else None,  # None: only on a terminal
            leave=False,
        )

    with _service(root, config) as service:
        if not args.no_static:
            try:
                import fullgraph.refactors  # noqa: F401
            except ImportError:
                run.static_available = False
            files = list(iter_python_files(paths, SOURCE_SUFFIXES))
            for file in progress(files, "static rules", "file"):
                run.findings.update(service.check_static([file], run.syntax_errors))
        bar = progress(entries, "analyzing", "entrypoint")
        for entry, key in bar:
            bar.set_postfix_str(entry)
            run.results.append(service.analyze(entry, key=key))

    if args.sarif:
        print(json.dumps(to_sarif(run), indent=2))
    elif args.json:
        print(json.dumps(run.to_json(), indent=2))
    else:
        for diagnostic in run.diagnostics():
            print("\n".join(text_report.diagnostic_lines(diagnostic)))
        for path, exc in sorted(run.syntax_errors.items()):
            print(text_report.syntax_error_line(path, exc))
        for result in run.results:
            print(text_report.result_line(result))
            if result.status == "user_exception" and result.error:
                print(result.error.get("traceback", "").rstrip(), file=sys.stderr)
        print(text_report.summary_line(run))
    return run.exit_code()


# -- explain ----------------------------------------------------------------


def cmd_explain(args: argparse.Namespace) -> int:
    parse_entrypoint(args.entry)
    root, config = _project(args)
    with _service(root, config) as service:
        result = service.analyze(args.entry)
    if result.status == "config_error":
        _error((result.error or {}).get("message", "configuration error"))
        return EXIT_CONFIG
    if result.report is None:
        error = result.error or {}
        _error(f"{args.entry}: {result.status}: {error.get('message', '')}")
        if error.get("traceback"):
            print(error["traceback"].rstrip(), file=sys.stderr)
        return EXIT_PROBLEMS
    if args.json:
        print(json.dumps(result.report, indent=2))
    else:
        print(text_report.format_report(result.report), end="")
        print(text_report.format_output_tail(result), end="")
    return EXIT_CLEAN if result.status == "ok" else EXIT_PROBLEMS


# -- compile ----------------------------------------------------------------

COMPILE_USAGE = """\
The module holds the entrypoint's records (grad enabled, torch.no_grad(),
torch.inference_mode()) as readable Python and needs fullgraph and torch:

  import OUT
  model = OUT.compile(my_model)   # your own instance of the entrypoint's class
  y = model(x)                    # a record's compiled graphs, else eager
  y = OUT.compiled(x)             # the model the entrypoint builds
  OUT.STATS                       # {'replays': ..., 'fallbacks': ...}

OUT.compile(target, backend="eager") runs the graphs without Inductor."""


def cmd_compile(args: argparse.Namespace) -> int:
    parse_entrypoint(args.entry)
    root, config = _project(args)
    with _service(root, config) as service:
        try:
            source = service.compile_wrapper(args.entry)
        except AnalysisFailed as failure:
            error = failure.result.error or {}
            _error(f"{args.entry}: {failure.result.status}: {error.get('message', '')}")
            if error.get("traceback"):
                print(error["traceback"].rstrip(), file=sys.stderr)
            return EXIT_CONFIG if failure.result.status == "config_error" else EXIT_PROBLEMS
    if args.output is None:
        sys.stdout.write(source)
    else:
        args.output.write_text(source, encoding="utf-8")
        print(f"wrote {args.output} ({len(source.splitlines())} lines)", file=sys.stderr)
    return EXIT_CLEAN


# -- fix --------------------------------------------------------------------


def patch_text(path: Path, source: str, fixed: str) -> list[str]:
    """A unified diff of one file that ``git apply`` and ``patch -p1`` accept from the cwd.

    Paths are relative to the working directory (``a/pkg/model.py``), whatever
    form PATHS had; a file outside the working directory keeps its absolute
    path.  A last line without a newline gets the standard marker.
    """
    shown = Path(text_report.display_path(path)).as_posix()
    lines = list(
        difflib.unified_diff(
            source.splitlines(keepends=True),
            fixed.splitlines(keepends=True),
            fromfile=f"a/{shown}",
            tofile=f"b/{shown}",
        )
    )
    marked = []
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        marked.append(line)
    return marked


def _fix_notebook(source: str, path: Path, fix_source: Callable, codes: set[str] | None) -> str:
    """A notebook's JSON with its code cells fixed; every other byte is kept.

    Refuses (:class:`NotebookError`) a notebook with a cell that does not
    parse: fixing the others would silently leave that cell's breaks.
    """
    combined = combine(read_cells(source))
    if combined.syntax_errors:
        error = combined.syntax_errors[0]
        raise NotebookError(
            f"cell {error.cell + 1} does not parse (line {error.line}: {error.message}); "
            "fix it first, the notebook was left unchanged"
        )
    fixed, _ = fix_notebook(source, lambda text: fix_source(text, str(path), codes=codes))
    return fixed


def cmd_fix(args: argparse.Namespace) -> int:
    try:
        from fullgraph.refactors import SourceSyntaxError, fix_source, workspace_entrypoints
    except ImportError as exc:
        _error(f"the refactors are not available in this installation ({exc})")
        return EXIT_CONFIG
    paths = [Path(p) for p in args.paths] or [Path.cwd()]
    codes = set(args.select) if args.select else None
    changed, failed = 0, 0
    files = list(iter_python_files(paths, SOURCE_SUFFIXES))
    # As `check`: functions a compiled function of another file calls are compiled too.
    root = find_root(Path.cwd()).resolve()
    called = workspace_entrypoints([*iter_python_files([root], (".py",)), *files], root)
    for path in files:
        try:
            source = path.read_text(encoding="utf-8")
            if path.suffix == ".ipynb":
                fixed = _fix_notebook(source, path, fix_source, codes)
            else:
                entrypoints = called.get(path.resolve(), {})
                fixed = fix_source(source, str(path), codes=codes, entrypoints=entrypoints)
        except (SourceSyntaxError, NotebookError, UnicodeDecodeError, OSError) as exc:
            print(f"{path}: cannot fix: {exc}", file=sys.stderr)
            failed += 1
            continue
        if fixed == source:
            continue
        changed += 1
        if args.diff:
            sys.stdout.writelines(patch_text(path, source, fixed))
        else:
            path.write_text(fixed, encoding="utf-8")
    verb = "would be fixed" if args.diff else "fixed"
    print(f"{changed} file{'s' * (changed != 1)} {verb}.", file=sys.stderr)
    if failed:
        return EXIT_PROBLEMS
    return EXIT_PROBLEMS if args.diff and changed else EXIT_CLEAN


# -- lsp --------------------------------------------------------------------


def cmd_lsp(args: argparse.Namespace) -> int:
    try:
        from fullgraph.lsp_server.server.main import main as server_main
    except ImportError as exc:
        _error(f"the language server is not available in this installation ({exc})")
        return EXIT_CONFIG
    return server_main(args.server_args) or 0


# -- parser -----------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fullgraph",
        description="Find and fix graph breaks in PyTorch code; compile it as one graph.",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--root",
        type=Path,
        default=None,
        help="project root (default: nearest folder with a pyproject.toml)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, handler: Callable[[argparse.Namespace], int], help_text: str):
        command = sub.add_parser(name, parents=[common], help=help_text, description=help_text)
        command.set_defaults(handler=handler)
        return command

    check = add("check", cmd_check, "static rules on PATHS plus runtime analysis of entrypoints")
    check.add_argument("paths", nargs="*", type=Path, metavar="PATHS")
    check.add_argument(
        "--entry",
        action="append",
        default=[],
        metavar="MODULE:FN",
        help="entrypoint to analyze (repeatable; replaces [tool.fullgraph] entrypoints)",
    )
    check.add_argument(
        "--timeout", type=_positive_float, metavar="SECONDS", help="per-entrypoint time limit"
    )
    output = check.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the results as JSON")
    output.add_argument("--sarif", action="store_true", help="print SARIF 2.1.0")
    check.add_argument("--no-static", action="store_true", help="skip the static rules")
    check.add_argument(
        "--severity",
        choices=SEVERITIES,
        default="warning",
        help="least severe static finding to show and fail on (default: warning)",
    )
    check.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")

    explain = add("explain", cmd_explain, "print graphs, breaks, guards and mocks of an entrypoint")
    explain.add_argument("entry", metavar="MODULE:FN")
    explain.add_argument("--timeout", type=_positive_float, metavar="SECONDS")
    explain.add_argument("--json", action="store_true", help="print the report as JSON")

    fix = add("fix", cmd_fix, "apply the safe refactors to PATHS")
    fix.add_argument("paths", nargs="*", type=Path, metavar="PATHS")
    fix.add_argument("--diff", action="store_true", help="print a diff instead of writing files")
    fix.add_argument("--select", action="append", metavar="CODE", help="only these rule codes")

    compile_ = add("compile", cmd_compile, "write the compiled wrapper module of an entrypoint")
    compile_.formatter_class = argparse.RawDescriptionHelpFormatter
    compile_.epilog = COMPILE_USAGE
    compile_.add_argument("entry", metavar="MODULE:FN")
    compile_.add_argument(
        "-o", "--output", type=Path, metavar="OUT.py", help="output file (default: stdout)"
    )
    compile_.add_argument("--timeout", type=_positive_float, metavar="SECONDS")

    lsp = add("lsp", cmd_lsp, "start the language server on stdio")
    lsp.add_argument("server_args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # exits with 2 on a usage error
    try:
        return args.handler(args)
    except ConfigError as exc:
        _error(str(exc))
        return EXIT_CONFIG
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away; don't add a traceback to its output.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PROBLEMS
