"""A Feature Pyramid Network neck taking a list of backbone maps: lateral 1x1 convs, top-down nearest upsampling."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class FPN(nn.Module):
    def __init__(self, in_channels_list=(4, 8, 16), out_channels=6):
        super().__init__()
        self.inner_blocks = nn.ModuleList(nn.Conv2d(c, out_channels, 1) for c in in_channels_list)
        self.layer_blocks = nn.ModuleList(
            nn.Conv2d(out_channels, out_channels, 3, padding=1) for _ in in_channels_list
        )

    def forward(self, features):
        last_inner = self.inner_blocks[-1](features[-1])
        results = [self.layer_blocks[-1](last_inner)]
        for idx in range(len(features) - 2, -1, -1):
            inner_lateral = self.inner_blocks[idx](features[idx])
            feat_shape = inner_lateral.shape[-2:]
            inner_top_down = F.interpolate(last_inner, size=feat_shape, mode="nearest")
            last_inner = inner_lateral + inner_top_down
            results.insert(0, self.layer_blocks[idx](last_inner))
        return results


def make_model():
    torch.manual_seed(0)
    return FPN().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    features = [
        torch.randn(1, 4, 16, 16, generator=g),
        torch.randn(1, 8, 8, 8, generator=g),
        torch.randn(1, 16, 4, 4, generator=g),
    ]
    return (features,)


EXPECTED_GRAPHS = 1
