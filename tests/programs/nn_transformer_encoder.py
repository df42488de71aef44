"""A text classifier on torch.nn.TransformerEncoder (batch_first) with mean pooling, as in the PyTorch tutorials."""
import torch
import torch.nn as nn


class TextClassifier(nn.Module):
    def __init__(self, vocab=50, d_model=16, nhead=2, num_layers=2, num_classes=3):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, nhead, dim_feedforward=32, dropout=0.1, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.fc = nn.Linear(d_model, num_classes)

    def forward(self, tokens):
        x = self.embedding(tokens) * (self.embedding.embedding_dim ** 0.5)
        x = self.encoder(x)
        return self.fc(x.mean(dim=1))


def make_model():
    torch.manual_seed(0)
    return TextClassifier().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, 50, (2, 7), generator=g),)


EXPECTED_GRAPHS = 1
