"""Detection post-processing before NMS: keep boxes whose score passes a threshold
(``keep = scores > t``; ``boxes[keep]``), then the top-scoring kept box per image."""

import torch
from torch import nn


class ThresholdHead(nn.Module):
    def __init__(self, threshold=0.5):
        super().__init__()
        self.score = nn.Linear(4, 1)
        self.threshold = threshold

    def forward(self, feats, boxes):
        scores = torch.sigmoid(self.score(feats)).squeeze(-1)
        keep = scores > self.threshold
        kept_boxes, kept_scores = boxes[keep], scores[keep]
        weighted = (kept_boxes * kept_scores.unsqueeze(-1)).sum(0)
        return weighted, kept_scores.sum()


def make_model():
    torch.manual_seed(0)
    return ThresholdHead().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(10, 4, generator=g), torch.rand(10, 4, generator=g)


EXPECTED_GRAPHS = 1
