"""A plain function (no nn.Module) that uses module-level weight tensors and torch.nn.functional, like a tiny JAX port."""
import torch
import torch.nn.functional as F

torch.manual_seed(1234)
W1 = torch.randn(6, 12) * 0.3
B1 = torch.zeros(12)
W2 = torch.randn(12, 4) * 0.3
PARAMS = {"w1": W1, "b1": B1, "w2": W2, "ln_eps": 1e-5}


def mlp_forward(x, y):
    h = F.gelu(x @ PARAMS["w1"] + PARAMS["b1"])
    h = F.layer_norm(h, h.shape[-1:], eps=PARAMS["ln_eps"])
    logits = h @ PARAMS["w2"]
    return F.cross_entropy(logits, y), logits.argmax(-1)


def make_model():
    torch.manual_seed(0)
    return mlp_forward


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(5, 6, generator=g), torch.randint(0, 4, (5,), generator=g))


EXPECTED_GRAPHS = 1
