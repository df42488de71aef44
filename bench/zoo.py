"""The models the benchmark runs, each built from a small config with random weights.

A :class:`ModelCase` knows how to build its module and how to make inputs for a
batch size; nothing is downloaded (``HF_HUB_OFFLINE=1``), so configs are
spelled out here and kept small enough for the whole suite to run on two CPU
cores in minutes.  Decoder models run with ``use_cache=False``: the benchmark
measures one full forward pass, the step a training or scoring loop repeats.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# Shapes shared by the text models: a short sequence over a small vocabulary.
VOCAB_SIZE = 1000
SEQUENCE_LENGTH = 32
IMAGE_SIZE = 64


@dataclasses.dataclass(frozen=True)
class ModelInputs:
    """Positional and keyword arguments of one call."""

    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to(self, device: str) -> ModelInputs:
        def move(value: Any) -> Any:
            return value.to(device) if isinstance(value, torch.Tensor) else value

        return ModelInputs(
            tuple(move(a) for a in self.args), {k: move(v) for k, v in self.kwargs.items()}
        )


@dataclasses.dataclass(frozen=True)
class ModelCase:
    """One benchmarked model: where it comes from, how to build it and feed it."""

    name: str
    origin: str  # "transformers", or the repository file it was loaded from
    build: Callable[[], Callable[..., Any]]
    make_inputs: Callable[[int], ModelInputs]
    # Programs that ship their own inputs run at that one size; the batch size
    # passed to make_inputs is then ignored.
    fixed_inputs: bool = False


def _generator(batch_size: int) -> torch.Generator:
    # Inputs depend only on the batch size, so every compiler sees the same data.
    return torch.Generator().manual_seed(1234 + batch_size)


def _token_ids(batch_size: int, length: int = SEQUENCE_LENGTH) -> torch.Tensor:
    return torch.randint(3, VOCAB_SIZE, (batch_size, length), generator=_generator(batch_size))


def _text_inputs(batch_size: int) -> ModelInputs:
    ids = _token_ids(batch_size)
    return ModelInputs(kwargs={"input_ids": ids, "attention_mask": torch.ones_like(ids)})


def _seq2seq_inputs(batch_size: int) -> ModelInputs:
    ids = _token_ids(batch_size)
    return ModelInputs(
        kwargs={
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "decoder_input_ids": ids[:, : SEQUENCE_LENGTH // 2].clone(),
        }
    )


def _pixels(batch_size: int) -> torch.Tensor:
    return torch.randn(batch_size, 3, IMAGE_SIZE, IMAGE_SIZE, generator=_generator(batch_size))


def _image_inputs(batch_size: int) -> ModelInputs:
    return ModelInputs(kwargs={"pixel_values": _pixels(batch_size)})


def _random_weights(model_class: type, config: Any) -> torch.nn.Module:
    torch.manual_seed(0)
    return model_class(config).eval()


# --- transformers architectures ------------------------------------------------------

# The default special-token ids of GPT-2 and Whisper lie past the small vocabulary.
_SPECIAL_TOKENS = {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0}

_TEXT_ENCODER = {
    "vocab_size": VOCAB_SIZE,
    "hidden_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 256,
    "max_position_embeddings": 128,
}


def _bert() -> torch.nn.Module:
    from transformers import BertConfig, BertModel

    return _random_weights(BertModel, BertConfig(**_TEXT_ENCODER))


def _deberta_v2() -> torch.nn.Module:
    from transformers import DebertaV2Config, DebertaV2Model

    # Relative attention with both position terms: the code path that breaks graphs.
    config = DebertaV2Config(
        **_TEXT_ENCODER,
        relative_attention=True,
        position_buckets=32,
        pos_att_type=["p2c", "c2p"],
    )
    return _random_weights(DebertaV2Model, config)


def _align() -> torch.nn.Module:
    from transformers import AlignConfig, AlignModel

    text = dict(_TEXT_ENCODER)
    vision = {
        "image_size": IMAGE_SIZE,
        "width_coefficient": 0.25,
        "depth_coefficient": 0.25,
        "hidden_dim": 128,
    }
    # ALIGN has no image projection: the text projection must land on the vision
    # tower's width, the last block's 320 channels scaled by width_coefficient.
    config = AlignConfig(text_config=text, vision_config=vision, projection_dim=80)
    return _random_weights(AlignModel, config)


def _align_inputs(batch_size: int) -> ModelInputs:
    text = _text_inputs(batch_size)
    return ModelInputs(kwargs={**text.kwargs, "pixel_values": _pixels(batch_size)})


def _resnet() -> torch.nn.Module:
    from transformers import ResNetConfig, ResNetForImageClassification

    config = ResNetConfig(
        embedding_size=16,
        hidden_sizes=[16, 32, 64, 128],
        depths=[1, 1, 1, 1],
        layer_type="basic",
        num_labels=10,
    )
    return _random_weights(ResNetForImageClassification, config)


def _gpt2() -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=VOCAB_SIZE,
        n_positions=128,
        n_embd=128,
        n_layer=2,
        n_head=4,
        use_cache=False,
        **_SPECIAL_TOKENS,
    )
    return _random_weights(GPT2LMHeadModel, config)


def _t5() -> torch.nn.Module:
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(
        vocab_size=VOCAB_SIZE,
        d_model=128,
        d_kv=32,
        d_ff=256,
        num_layers=2,
        num_heads=4,
        decoder_start_token_id=0,
        use_cache=False,
    )
    return _random_weights(T5ForConditionalGeneration, config)


def _bart() -> torch.nn.Module:
    from transformers import BartConfig, BartForConditionalGeneration

    config = BartConfig(
        vocab_size=VOCAB_SIZE,
        d_model=128,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=256,
        decoder_ffn_dim=256,
        max_position_embeddings=128,
        use_cache=False,
    )
    return _random_weights(BartForConditionalGeneration, config)


# Whisper's encoder checks that the mel frames equal 2 * max_source_positions.
_WHISPER_SOURCE_POSITIONS = 64
_WHISPER_MEL_BINS = 80


def _whisper() -> torch.nn.Module:
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    config = WhisperConfig(
        vocab_size=VOCAB_SIZE,
        num_mel_bins=_WHISPER_MEL_BINS,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=256,
        decoder_ffn_dim=256,
        d_model=128,
        max_source_positions=_WHISPER_SOURCE_POSITIONS,
        max_target_positions=64,
        use_cache=False,
        decoder_start_token_id=1,
        suppress_tokens=None,
        begin_suppress_tokens=None,
        **_SPECIAL_TOKENS,
    )
    return _random_weights(WhisperForConditionalGeneration, config)


def _whisper_inputs(batch_size: int) -> ModelInputs:
    features = torch.randn(
        batch_size,
        _WHISPER_MEL_BINS,
        2 * _WHISPER_SOURCE_POSITIONS,
        generator=_generator(batch_size),
    )
    return ModelInputs(
        kwargs={"input_features": features, "decoder_input_ids": _token_ids(batch_size, 16)}
    )


TRANSFORMERS_CASES: tuple[ModelCase, ...] = (
    ModelCase("bert", "transformers", _bert, _text_inputs),
    ModelCase("deberta-v2", "transformers", _deberta_v2, _text_inputs),
    ModelCase("align", "transformers", _align, _align_inputs),
    ModelCase("resnet", "transformers", _resnet, _image_inputs),
    ModelCase("gpt2", "transformers", _gpt2, _text_inputs),
    ModelCase("t5", "transformers", _t5, _seq2seq_inputs),
    ModelCase("bart", "transformers", _bart, _seq2seq_inputs),
    ModelCase("whisper", "transformers", _whisper, _whisper_inputs),
)


# --- a model with no dependency beyond torch ------------------------------------------


class TinyMLP(torch.nn.Module):
    """Two linear layers: the smallest model with a real graph (tiny mode, overhead figures)."""

    def __init__(self, features: int = 64, hidden: int = 128) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(features, hidden)
        self.fc2 = torch.nn.Linear(hidden, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def _tiny_mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return TinyMLP().eval()


def _tiny_mlp_inputs(batch_size: int) -> ModelInputs:
    return ModelInputs(args=(torch.randn(batch_size, 64, generator=_generator(batch_size)),))


TINY_CASE = ModelCase("tiny-mlp", "bench/zoo.py", _tiny_mlp, _tiny_mlp_inputs)
