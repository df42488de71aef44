"""A Lightning-style training_step(batch, batch_idx) on a dict batch, returning the loss and logged metrics."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class LitClassifier(nn.Module):
    def __init__(self, lr=1e-3):
        super().__init__()
        self.hparams = {"lr": lr, "label_smoothing": 0.1}
        self.model = nn.Sequential(nn.Embedding(20, 8), nn.Flatten(), nn.Linear(8 * 5, 4))

    def training_step(self, batch, batch_idx):
        logits = self.model(batch["input_ids"])
        loss = F.cross_entropy(logits, batch["labels"], label_smoothing=self.hparams["label_smoothing"])
        acc = (logits.argmax(dim=-1) == batch["labels"]).float().mean()
        return {"loss": loss, "log": {"train_acc": acc, "batch_idx": batch_idx}}

    def forward(self, batch, batch_idx):
        return self.training_step(batch, batch_idx)


def make_model():
    torch.manual_seed(0)
    return LitClassifier().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    batch = {
        "input_ids": torch.randint(0, 20, (6, 5), generator=g),
        "labels": torch.randint(0, 4, (6,), generator=g),
    }
    return (batch, 7)


EXPECTED_GRAPHS = 1
