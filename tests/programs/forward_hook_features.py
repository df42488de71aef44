"""Feature extraction with register_forward_hook: hooks store intermediate activations into a dict on the model."""
import torch
import torch.nn as nn


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU())
        self.layer2 = nn.Sequential(nn.Conv2d(4, 6, 3, stride=2, padding=1), nn.ReLU())
        self.head = nn.Linear(6, 2)

    def forward(self, x):
        x = self.layer2(self.layer1(x))
        return self.head(x.mean(dim=(2, 3)))


class FeatureExtractor(nn.Module):
    def __init__(self, model, layers=("layer1", "layer2")):
        super().__init__()
        self.model = model
        self.features = {}
        for name in layers:
            getattr(self.model, name).register_forward_hook(self.save_output_hook(name))

    def save_output_hook(self, layer_id):
        def fn(_module, _input, output):
            self.features[layer_id] = output
        return fn

    def forward(self, x):
        logits = self.model(x)
        return logits, {name: f.mean(dim=1) for name, f in self.features.items()}


def make_model():
    torch.manual_seed(0)
    return FeatureExtractor(Backbone()).eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, 6, 6, generator=g),)


EXPECTED_GRAPHS = 1


def observe_state(model):
    """The activations the hooks stored on the last call."""
    return dict(model.features)
