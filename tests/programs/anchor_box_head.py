"""An RPN/SSD-style head: anchors generated in forward with meshgrid, box deltas decoded to (x1, y1, x2, y2)."""
import math

import torch
import torch.nn as nn


class AnchorHead(nn.Module):
    def __init__(self, in_ch=8, sizes=(4.0, 8.0), ratios=(0.5, 1.0, 2.0), stride=4):
        super().__init__()
        self.stride = stride
        self.sizes, self.ratios = sizes, ratios
        self.num_anchors = len(sizes) * len(ratios)
        self.backbone = nn.Sequential(nn.Conv2d(3, in_ch, 3, stride=stride, padding=1), nn.ReLU())
        self.cls_logits = nn.Conv2d(in_ch, self.num_anchors, 1)
        self.bbox_pred = nn.Conv2d(in_ch, self.num_anchors * 4, 1)

    def cell_anchors(self):
        ws, hs = [], []
        for size in self.sizes:
            for ratio in self.ratios:
                ws.append(size * math.sqrt(1.0 / ratio))
                hs.append(size * math.sqrt(ratio))
        w, h = torch.tensor(ws), torch.tensor(hs)
        return torch.stack([-w, -h, w, h], dim=1) / 2

    def grid_anchors(self, feat_h, feat_w):
        shifts_x = torch.arange(0, feat_w, dtype=torch.float32) * self.stride
        shifts_y = torch.arange(0, feat_h, dtype=torch.float32) * self.stride
        shift_y, shift_x = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
        shifts = torch.stack((shift_x, shift_y, shift_x, shift_y), dim=-1).reshape(-1, 1, 4)
        return (shifts + self.cell_anchors().view(1, -1, 4)).reshape(-1, 4)

    def decode(self, deltas, anchors):
        widths = anchors[:, 2] - anchors[:, 0]
        heights = anchors[:, 3] - anchors[:, 1]
        ctr_x = anchors[:, 0] + 0.5 * widths
        ctr_y = anchors[:, 1] + 0.5 * heights
        dx, dy, dw, dh = deltas.unbind(-1)
        dw = dw.clamp(max=math.log(1000.0 / 16))
        dh = dh.clamp(max=math.log(1000.0 / 16))
        pred_ctr_x = dx * widths + ctr_x
        pred_ctr_y = dy * heights + ctr_y
        pred_w = torch.exp(dw) * widths
        pred_h = torch.exp(dh) * heights
        return torch.stack([pred_ctr_x - 0.5 * pred_w, pred_ctr_y - 0.5 * pred_h,
                            pred_ctr_x + 0.5 * pred_w, pred_ctr_y + 0.5 * pred_h], dim=-1)

    def forward(self, images):
        feat = self.backbone(images)
        n, _, h, w = feat.shape
        scores = self.cls_logits(feat).permute(0, 2, 3, 1).reshape(n, -1).sigmoid()
        deltas = self.bbox_pred(feat).permute(0, 2, 3, 1).reshape(n, -1, 4)
        anchors = self.grid_anchors(h, w)
        boxes = self.decode(deltas, anchors)
        boxes = boxes.clamp(min=0, max=images.shape[-1])
        return scores, boxes


def make_model():
    torch.manual_seed(0)
    return AnchorHead().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, 16, 16, generator=g),)


EXPECTED_GRAPHS = 1
