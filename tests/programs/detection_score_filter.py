"""Detection post-processing: keep boxes above a score threshold with a boolean mask, then compute their areas."""
import torch
import torch.nn as nn


class Detector(nn.Module):
    def __init__(self, num_boxes=12, score_thresh=0.5):
        super().__init__()
        self.score_thresh = score_thresh
        self.num_boxes = num_boxes
        self.features = nn.Sequential(nn.Linear(10, 16), nn.ReLU())
        self.box_head = nn.Linear(16, num_boxes * 4)
        self.cls_head = nn.Linear(16, num_boxes)

    def forward(self, x):
        f = self.features(x)
        boxes = self.box_head(f).view(-1, 4).sigmoid() * 32
        boxes = torch.cat([boxes[:, :2], boxes[:, :2] + boxes[:, 2:]], dim=1)
        scores = self.cls_head(f).view(-1).sigmoid()
        dets = torch.cat([boxes, scores[:, None]], dim=1)[scores > self.score_thresh]  # BREAK: FG203
        areas = (dets[:, 2] - dets[:, 0]) * (dets[:, 3] - dets[:, 1])
        return (areas * dets[:, 4]).sum(), dets.shape[0]


def make_model():
    torch.manual_seed(0)
    return Detector().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(1, 10, generator=g),)


EXPECTED_GRAPHS = 2
EXPECTED_MONITOR_RUNS = None  # the number of kept boxes varies with the data
