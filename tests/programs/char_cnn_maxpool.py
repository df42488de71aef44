"""Kim-style CNN for sentence classification: embedding, Conv1d per kernel size, max-over-time, concat, dropout."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class KimCNN(nn.Module):
    def __init__(self, vocab=40, embed_dim=8, kernel_sizes=(2, 3, 4), n_filters=4, n_classes=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed_dim, padding_idx=0)
        self.convs = nn.ModuleList([nn.Conv1d(embed_dim, n_filters, k) for k in kernel_sizes])
        self.dropout = nn.Dropout(0.5)
        self.fc = nn.Linear(len(kernel_sizes) * n_filters, n_classes)

    def forward(self, text):
        embedded = self.embedding(text).permute(0, 2, 1)
        conved = [F.relu(conv(embedded)) for conv in self.convs]
        pooled = [F.max_pool1d(conv, conv.shape[2]).squeeze(2) for conv in conved]
        cat = self.dropout(torch.cat(pooled, dim=1))
        return self.fc(cat)


def make_model():
    torch.manual_seed(0)
    return KimCNN().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, 40, (3, 10), generator=g),)


EXPECTED_GRAPHS = 1
