"""A Siamese network: one shared encoder applied to two inputs, cosine similarity and a contrastive margin loss."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SiameseNetwork(nn.Module):
    def __init__(self, margin=1.0):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(1, 4, 3), nn.ReLU(inplace=True), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 3 * 3, 6)
        )
        self.margin = margin

    def forward_once(self, x):
        return self.cnn(x)

    def forward(self, input1, input2, label):
        output1 = self.forward_once(input1)
        output2 = self.forward_once(input2)
        euclidean_distance = F.pairwise_distance(output1, output2, keepdim=True)
        loss = torch.mean((1 - label) * torch.pow(euclidean_distance, 2)
                          + label * torch.pow(torch.clamp(self.margin - euclidean_distance, min=0.0), 2))
        return F.cosine_similarity(output1, output2), loss


def make_model():
    torch.manual_seed(0)
    return SiameseNetwork().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(3, 1, 8, 8, generator=g)
    b = torch.randn(3, 1, 8, 8, generator=g)
    label = torch.randint(0, 2, (3, 1), generator=g).float()
    return (a, b, label)


EXPECTED_GRAPHS = 1
