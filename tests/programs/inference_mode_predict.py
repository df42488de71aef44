"""A predict() helper decorated with @torch.inference_mode() returning labels, confidences and top-2 indices."""
import torch
import torch.nn as nn


def make_model():
    torch.manual_seed(0)
    classifier = nn.Sequential(nn.Flatten(), nn.Linear(12, 10), nn.ReLU(), nn.Linear(10, 5)).eval()

    @torch.inference_mode()
    def predict(images):
        logits = classifier(images)
        probs = logits.softmax(dim=-1)
        confidence, label = probs.max(dim=-1)
        top2 = probs.topk(2, dim=-1).indices
        return {"label": label, "confidence": confidence, "top2": top2}

    return predict


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 3, 2, 2, generator=g),)


EXPECTED_GRAPHS = 1
