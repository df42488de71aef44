"""Torch operations into torch.fx graphs: the capture mode, the graph tape and its segments, torch.cond, hoisted data checks."""
