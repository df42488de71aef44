"""An LSTM written by hand: gates from one Linear, a Python for-loop over time steps, outputs stacked."""
import torch
import torch.nn as nn


class LSTMCellScratch(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.x2h = nn.Linear(input_size, 4 * hidden_size)
        self.h2h = nn.Linear(hidden_size, 4 * hidden_size)

    def forward(self, x, hidden):
        hx, cx = hidden
        gates = self.x2h(x) + self.h2h(hx)
        ingate, forgetgate, cellgate, outgate = gates.chunk(4, 1)
        ingate = torch.sigmoid(ingate)
        forgetgate = torch.sigmoid(forgetgate)
        cellgate = torch.tanh(cellgate)
        outgate = torch.sigmoid(outgate)
        cy = torch.mul(cx, forgetgate) + torch.mul(ingate, cellgate)
        hy = torch.mul(outgate, torch.tanh(cy))
        return hy, cy


class LSTMModel(nn.Module):
    def __init__(self, input_dim=5, hidden_dim=8, output_dim=3):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.cell = LSTMCellScratch(input_dim, hidden_dim)
        self.fc = nn.Linear(hidden_dim, output_dim)

    def forward(self, x):
        h0 = torch.zeros(x.size(0), self.hidden_dim)
        c0 = torch.zeros(x.size(0), self.hidden_dim)
        outs = []
        hn, cn = h0, c0
        for seq in range(x.size(1)):
            hn, cn = self.cell(x[:, seq, :], (hn, cn))
            outs.append(hn)
        out = torch.stack(outs, dim=1)
        return self.fc(out[:, -1, :]), (hn, cn)


def make_model():
    torch.manual_seed(0)
    return LSTMModel().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 6, 5, generator=g),)


EXPECTED_GRAPHS = 1
