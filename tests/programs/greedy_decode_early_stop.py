"""Greedy decoding with a GRU decoder that stops when every sequence has emitted EOS (a tensor check per step)."""
import torch
import torch.nn as nn


class GreedyDecoder(nn.Module):
    def __init__(self, vocab=12, dim=8, max_steps=4, bos_id=1, eos_id=2):
        super().__init__()
        self.max_steps, self.bos_id, self.eos_id = max_steps, bos_id, eos_id
        self.embed = nn.Embedding(vocab, dim)
        self.cell = nn.GRUCell(dim, dim)
        self.out = nn.Linear(dim, vocab)

    def forward(self, context):
        h = torch.tanh(context)
        token = torch.full((context.size(0),), self.bos_id, dtype=torch.long)
        tokens, logits_all = [], []
        for _ in range(self.max_steps):
            h = self.cell(self.embed(token), h)
            logits = self.out(h)
            token = logits.argmax(dim=-1)
            tokens.append(token)
            logits_all.append(logits)
            if (token == self.eos_id).all():  # BREAK: FG202
                break
        return torch.stack(tokens, dim=1), torch.stack(logits_all, dim=1)


def make_model():
    torch.manual_seed(0)
    return GreedyDecoder().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 8, generator=g),)


# The EOS check runs after each of the 4 steps (no batch finishes early with these weights).
EXPECTED_GRAPHS = 5
