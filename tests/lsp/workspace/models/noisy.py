"""An entrypoint that writes to stdout and stderr at every stage."""

import sys

import torch


def step(x):
    print("stdout from the analysed function", x.sum(), flush=True)
    return x * 2 + 1


def build():
    print("Content-Length: 9999\r\n\r\n{ noise that looks like a protocol header", flush=True)
    sys.stdout.write("x" * 100_000 + "\n")
    sys.stderr.write("stderr from the builder\n")
    return step, (torch.ones(3),)
