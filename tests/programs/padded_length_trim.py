"""An RNN batch trimmed to its longest sequence with int(lengths.max()) before packing-free processing."""
import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self, vocab=25, dim=6, tags=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, tags)

    def forward(self, tokens, lengths):
        emb = self.embed(tokens)
        max_len = int(lengths.max())  # CHECK: FG202
        emb = emb[:, :max_len]
        h, _ = self.rnn(emb)
        mask = torch.arange(max_len)[None, :] < lengths[:, None]
        return self.out(h) * mask[..., None]


def make_model():
    torch.manual_seed(0)
    return Tagger().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(1, 25, (3, 9), generator=g)
    lengths = torch.tensor([7, 4 + seed, 2])  # the longest is always 7: one trimmed shape
    tokens[:, 7:] = 0
    return (tokens, lengths)


# lengths.max() is read in front of the graph: one graph, one record per longest length.
EXPECTED_GRAPHS = 1
