"""A Hugging Face-style model returning a ModelOutput-like dataclass with optional loss and hidden states."""
from dataclasses import dataclass
from typing import Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class SequenceClassifierOutput:
    loss: Optional[torch.Tensor] = None
    logits: torch.Tensor = None
    hidden_states: Optional[Tuple[torch.Tensor, ...]] = None


class TinyClassifier(nn.Module):
    def __init__(self, vocab=30, hidden=8, num_labels=2, num_layers=2):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(num_layers))
        self.classifier = nn.Linear(hidden, num_labels)
        self.num_labels = num_labels

    def forward(self, input_ids, labels=None, output_hidden_states=True):
        hidden = self.embeddings(input_ids)
        all_hidden = (hidden,) if output_hidden_states else None
        for layer in self.layers:
            hidden = torch.tanh(layer(hidden))
            if output_hidden_states:
                all_hidden = all_hidden + (hidden,)
        logits = self.classifier(hidden[:, 0])
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1))
        return SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=all_hidden)


def make_model():
    torch.manual_seed(0)
    return TinyClassifier().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, 30, (3, 5), generator=g), torch.randint(0, 2, (3,), generator=g))


EXPECTED_GRAPHS = 1
