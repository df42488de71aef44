"""``fullgraph fix`` on a copy of every transformers modeling file, checked (issue 18).

1. Runs ``fix_source`` (what ``fullgraph fix`` writes) on each
   ``transformers/models/*/modeling_*.py`` and keeps the files it changed, in a
   temporary folder (the installed package is never touched).
2. Imports every changed file as a sibling of the original
   (``transformers.models.<m>.modeling_<m>__fixed``, so its relative imports
   resolve in the installed package).
3. For the model classes of a changed file (``PreTrainedModel`` subclasses, up to
   ``--models-per-file``), builds the file's ``*Config`` with tiny sizes, builds
   the original and the fixed class from one seed, copies the weights across,
   runs both in eval mode on the same random inputs (``input_ids``,
   ``pixel_values``, ``input_values`` or ``input_features``, whichever ``forward``
   takes) and compares
   every output tensor exactly; then counts Dynamo's graph breaks on each with
   ``torch._dynamo.explain`` (the fixed count must be lower or equal).

    .venv/bin/python bench/real_code_fix.py [--limit N] [--only m1,m2] [--models-per-file 4] [--json OUT]

A model whose tiny config or inputs this script cannot build is listed as
skipped, with the reason.  Prints a JSON summary; exits 1 when a changed file
does not import, an output differs or a break count grows.  Not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib.util
import inspect
import io
import json
import pathlib
import sys
import tempfile
import time
import warnings

TINY = {
    "vocab_size": 99,
    "hidden_size": 32,
    "d_model": 32,
    "embed_dim": 32,
    "num_hidden_layers": 2,
    "num_layers": 2,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "num_attention_heads": 4,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 37,
    "encoder_ffn_dim": 37,
    "decoder_ffn_dim": 37,
    "d_ff": 37,
    "d_kv": 8,
    "max_position_embeddings": 64,
    "image_size": 32,
    "patch_size": 8,
    "num_channels": 3,
    "conv_dim": (32, 32),
    "conv_stride": (5, 2),
    "conv_kernel": (10, 3),
    "tdnn_dim": (32, 32),
    "tdnn_kernel": (5, 3),
    "tdnn_dilation": (1, 2),
    "xvector_output_dim": 16,
    "num_conv_pos_embeddings": 16,
    "num_conv_pos_embedding_groups": 2,
    "classifier_proj_size": 16,
}


def modeling_files() -> list[pathlib.Path]:
    import transformers

    root = pathlib.Path(transformers.__file__).parent / "models"
    return sorted(root.glob("*/modeling_*.py"))


def load_fixed(original: pathlib.Path, fixed_path: pathlib.Path):
    package = f"transformers.models.{original.parent.name}"
    name = f"{package}.{original.stem}__fixed"
    spec = importlib.util.spec_from_file_location(name, fixed_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def tiny_config(module):
    from transformers import PretrainedConfig

    configs = [
        value
        for value in vars(module).values()
        if inspect.isclass(value)
        and issubclass(value, PretrainedConfig)
        and value is not PretrainedConfig
        and not getattr(value, "sub_configs", None)  # composite configs: not built here
    ]
    if not configs:
        return None, "no plain *Config class in the module"
    config_class = configs[0]
    default = config_class()
    kwargs = {key: value for key, value in TINY.items() if hasattr(default, key)}
    if "conv_dim" in kwargs:
        kwargs["num_feat_extract_layers"] = len(kwargs["conv_dim"])
    return config_class(**kwargs), None


def inputs_for(model, config):
    import torch

    parameters = inspect.signature(model.forward).parameters
    generator = torch.Generator().manual_seed(1)
    if "input_ids" in parameters:
        vocab = getattr(config, "vocab_size", 99) or 99
        inputs = {"input_ids": torch.randint(0, vocab, (2, 7), generator=generator)}
        if "decoder_input_ids" in parameters:
            inputs["decoder_input_ids"] = torch.randint(0, vocab, (2, 5), generator=generator)
        return inputs
    if "pixel_values" in parameters:
        size, channels = getattr(config, "image_size", 32), getattr(config, "num_channels", 3)
        if not isinstance(size, int):
            return None
        return {"pixel_values": torch.randn(2, channels, size, size, generator=generator)}
    if "input_values" in parameters:
        return {"input_values": torch.randn(2, 4000, generator=generator)}
    dim = getattr(config, "feature_projection_input_dim", None)
    if "input_features" in parameters and isinstance(dim, int):
        # (batch, frames, features), as wav2vec2-bert's feature extractor makes them.
        return {"input_features": torch.randn(2, 50, dim, generator=generator)}
    return None


def tensors_of(output) -> list:
    import torch

    if isinstance(output, torch.Tensor):
        return [output]
    if hasattr(output, "to_tuple"):
        output = output.to_tuple()
    if isinstance(output, (tuple, list)):
        return [t for item in output for t in tensors_of(item)]
    return []


def run_quietly(function, *args, **kwargs):
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def break_count(model, inputs) -> int:
    import torch

    torch._dynamo.reset()
    explanation = run_quietly(torch._dynamo.explain(model), **inputs)
    return explanation.graph_break_count


def check_models(original_module, fixed_module, limit: int) -> list[dict]:
    import torch
    from transformers import PreTrainedModel

    results = []
    config, reason = tiny_config(original_module)
    classes = [
        name
        for name, value in vars(original_module).items()
        if inspect.isclass(value)
        and issubclass(value, PreTrainedModel)
        and value.__module__ == original_module.__name__
        and not name.endswith("PreTrainedModel")
    ]
    if config is None:
        return [{"model": name, "skipped": reason} for name in classes[:limit]]
    for name in classes[:limit]:
        entry: dict = {"model": name}
        try:
            torch.manual_seed(0)
            before = getattr(original_module, name)(config).eval()
            torch.manual_seed(0)
            after = getattr(fixed_module, name)(config).eval()
            after.load_state_dict(before.state_dict())
            inputs = inputs_for(before, config)
            if inputs is None:
                entry["skipped"] = "no input this script knows how to make"
                results.append(entry)
                continue
            with torch.no_grad():
                expected = tensors_of(run_quietly(before, **inputs))
                got = tensors_of(run_quietly(after, **inputs))
        except Exception as error:  # noqa: BLE001 - a model this script cannot build
            entry["skipped"] = f"{type(error).__name__}: {str(error)[:120]}"
            results.append(entry)
            continue
        entry["outputs"] = len(expected)
        entry["equal"] = len(expected) == len(got) and all(
            a.shape == b.shape and torch.equal(a, b) for a, b in zip(expected, got)
        )
        try:
            with torch.no_grad():
                entry["breaks_before"] = break_count(before, inputs)
                entry["breaks_after"] = break_count(after, inputs)
        except Exception as error:  # noqa: BLE001
            entry["explain_error"] = f"{type(error).__name__}: {str(error)[:120]}"
        results.append(entry)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="only the first N files")
    parser.add_argument("--only", default="", help="comma-separated model folders (wav2vec2,…)")
    parser.add_argument("--models-per-file", type=int, default=4)
    parser.add_argument("--json", type=pathlib.Path, default=None)
    options = parser.parse_args(argv)

    from fullgraph.refactors import fix_source

    files = modeling_files()[: options.limit or None]
    if options.only:
        wanted = set(options.only.split(","))
        files = [f for f in files if f.parent.name in wanted]
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fullgraph-fix-"))
    started = time.perf_counter()
    changed: list[tuple[pathlib.Path, pathlib.Path, int]] = []
    lines = 0
    for path in files:
        source = path.read_text(encoding="utf-8")
        lines += source.count("\n")
        fixed = fix_source(source, str(path))
        if fixed != source:
            target = folder / path.parent.name / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(fixed, encoding="utf-8")
            diff = difflib.unified_diff(source.splitlines(), fixed.splitlines(), lineterm="")
            changed_lines = sum(1 for d in diff if d[:1] in "+-" and d[:3] not in ("+++", "---"))
            changed.append((path, target, changed_lines))
    fix_seconds = time.perf_counter() - started

    import torch

    torch.set_num_threads(2)
    report: dict = {
        "files": len(files),
        "lines": lines,
        "fix_s": round(fix_seconds, 1),
        "fix_s_per_1k_lines": round(fix_seconds / max(lines, 1) * 1000, 3),
        "changed_files": len(changed),
        "copies_in": str(folder),
        "changed": [],
    }
    failures = []
    for original_path, fixed_path, changed_lines in changed:
        name = f"transformers.models.{original_path.parent.name}.{original_path.stem}"
        entry: dict = {"file": f"{original_path.parent.name}/{original_path.name}"}
        entry["changed_lines"] = changed_lines
        try:
            original = importlib.import_module(name)
            fixed = load_fixed(original_path, fixed_path)
            entry["imports"] = True
        except Exception as error:  # noqa: BLE001
            entry["imports"] = False
            entry["import_error"] = f"{type(error).__name__}: {error}"
            failures.append(f"{entry['file']} does not import")
            report["changed"].append(entry)
            continue
        entry["models"] = check_models(original, fixed, options.models_per_file)
        for model in entry["models"]:
            if model.get("equal") is False:
                failures.append(f"{entry['file']} {model['model']}: outputs differ")
            if model.get("breaks_after", 0) > model.get("breaks_before", 0):
                failures.append(f"{entry['file']} {model['model']}: more graph breaks")
        report["changed"].append(entry)
    models = [m for entry in report["changed"] for m in entry.get("models", [])]
    compared = [m for m in models if "equal" in m]
    report["models_compared"] = len(compared)
    report["models_equal"] = sum(1 for m in compared if m["equal"])
    report["models_skipped"] = len(models) - len(compared)
    counted = [m for m in compared if "breaks_after" in m]
    report["breaks_before"] = sum(m["breaks_before"] for m in counted)
    report["breaks_after"] = sum(m["breaks_after"] for m in counted)
    report["total_s"] = round(time.perf_counter() - started, 1)
    report["failures"] = failures
    print(json.dumps(report, indent=1))
    if options.json is not None:
        options.json.write_text(json.dumps(report, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
