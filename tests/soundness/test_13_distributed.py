"""Class 13: distributed wrappers.

A model wrapped in ``DistributedDataParallel`` (gloo on CPU, 2 processes on
127.0.0.1, started with ``torch.multiprocessing``) and compiled with
fullgraph must train exactly as eager DDP: gradients all-reduced on every
call, the same losses and weights after several steps.  Each rank runs the
harness itself: an eager-DDP twin and a fullgraph-compiled-DDP twin, side by
side on the same process group.  Bounded: the workers get a deadline, the
process group a timeout.
"""

from __future__ import annotations

import datetime
import os
import socket
import sys
import traceback
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
from harness import SoundnessFailure

WORLD = 2
DEADLINE_S = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, port: int, which: str, backend: str, results) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import torch.distributed as dist
    import torch.nn.functional as F
    from harness import Case, Env, calls, run_case

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    try:
        dist.init_process_group(
            "gloo", rank=rank, world_size=WORLD, timeout=datetime.timedelta(seconds=60)
        )

        def build_train_step():
            torch.manual_seed(0)  # same initial weights on every rank
            model = torch.nn.Sequential(
                torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)
            )
            ddp = torch.nn.parallel.DistributedDataParallel(model)
            opt = torch.optim.SGD(ddp.parameters(), lr=0.05)

            def train_step(x, y):
                opt.zero_grad()
                loss = F.mse_loss(ddp(x), y)
                loss.backward()
                opt.step()
                return loss.detach()

            return Env(model=model, target=train_step)

        def build_forward_only():
            # the compiled object is the DDP module; the loop does backward/step
            torch.manual_seed(0)
            model = torch.nn.Sequential(
                torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)
            )
            ddp = torch.nn.parallel.DistributedDataParallel(model)
            return Env(model=model, target=ddp, opt=torch.optim.SGD(ddp.parameters(), lr=0.05))

        def rank_batch(env):
            # different data per rank: only all-reduced gradients keep the weights equal
            g = torch.Generator().manual_seed(100 + rank + 10 * len(getattr(env, "_seen", [])))
            env.__dict__.setdefault("_seen", []).append(1)
            return torch.randn(4, 6, generator=g), torch.randn(4, 2, generator=g)

        def loop_step(env):
            x, y = rank_batch(env)
            env.opt.zero_grad()
            loss = F.mse_loss(env.call(x), y)
            loss.backward()
            env.opt.step()

        from harness import Call, Do

        def build_eval():
            torch.manual_seed(0)
            model = torch.nn.Sequential(
                torch.nn.Linear(6, 8), torch.nn.GELU(), torch.nn.Linear(8, 2)
            ).eval()
            ddp = torch.nn.parallel.DistributedDataParallel(model)
            return Env(model=model, target=ddp)

        if which == "eval":
            case = Case(
                "ddp_eval_no_grad",
                build_eval,
                [
                    Call(lambda env: rank_batch(env)[0], context=lambda env: torch.no_grad())
                    for _ in range(4)
                ],
            )
        elif which == "train_step":
            case = Case("ddp_train_step", build_train_step, calls(4, rank_batch))
        elif which == "inner":
            # The recommended form: DDP stays eager, the model it wraps is compiled.
            case = Case(
                "ddp_inner_module_compiled",
                build_forward_only,
                [
                    Do(loop_step, "step"),
                    Do(loop_step, "step"),
                    Do(loop_step, "step"),
                    Call(lambda env: rank_batch(env)[0]),
                ],
            )
        else:
            case = Case(
                "ddp_forward_compiled",
                build_forward_only,
                [
                    Do(loop_step, "step"),
                    Do(loop_step, "step"),
                    Call(lambda env: rank_batch(env)[0]),
                    Do(loop_step, "step"),
                    Call(lambda env: rank_batch(env)[0]),
                ],
            )
        import harness

        def compile_inner(ddp):
            import fullgraph.runtime as fr

            compiled = fr.compile(ddp.module.forward, backend=backend)
            ddp.module.forward = compiled

            class Wrapped:  # calls the DDP module; reports the inner compiled stats
                stats = compiled.stats

                def __call__(self, *args, **kwargs):
                    return ddp(*args, **kwargs)

            return Wrapped()

        try:
            run_case(case, backend, compiler=compile_inner if which == "inner" else None)
            kind, detail = "pass", ""
        except SoundnessFailure as failure:
            kind, detail = failure.kind, str(failure)[:2000]
        last = harness.RESULTS[-1]
        results.put((rank, kind, detail, (last.case, last.calls, last.hits)))
        dist.barrier()
    except Exception:  # noqa: BLE001 - reported to the parent
        results.put((rank, "error", traceback.format_exc()[-3000:], None))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def run_ddp(which: str, backend: str = "eager") -> list:
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = _free_port()
    procs = [
        ctx.Process(target=_worker, args=(r, port, which, backend, results)) for r in range(WORLD)
    ]
    for p in procs:
        p.start()
    out = []
    try:
        for _ in range(WORLD):
            out.append(results.get(timeout=DEADLINE_S))
    except Exception as error:  # noqa: BLE001 - a worker hung or died
        out.append((-1, "error", f"no result within {DEADLINE_S}s: {error!r}", None))
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    return sorted(out)


def check(outcomes: list) -> None:
    import harness

    for rank, kind, detail, counts in outcomes:
        if kind == "error":
            pytest.fail(f"rank {rank}: {detail}")
    # rank 0 stands for the case in the summary table
    rank, kind, detail, (name, calls_, hits) = outcomes[0]
    harness.RESULTS.append(harness.CaseResult(name, "eager", kind, calls_, hits))
    failures = [(rank, kind, detail) for rank, kind, detail, _ in outcomes if kind != "pass"]
    if failures:
        rank, kind, detail = failures[0]
        raise harness.SoundnessFailure(kind, f"rank {rank}: {detail}")


@pytest.mark.timeout(DEADLINE_S + 60)
def test_ddp_train_step_compiled():
    check(run_ddp("train_step"))


@pytest.mark.timeout(DEADLINE_S + 60)
def test_ddp_module_compiled_forward():
    check(run_ddp("forward"))


@pytest.mark.timeout(DEADLINE_S + 60)
def test_ddp_eval_forward_no_grad():
    check(run_ddp("eval"))


@pytest.mark.timeout(DEADLINE_S + 60)
def test_ddp_inner_module_compiled_trains_and_replays():
    outcomes = run_ddp("inner")
    check(outcomes)
    for rank, _, _, (_, _, hits) in outcomes:
        assert hits >= 3, f"rank {rank}: the compiled inner forward replayed {hits} times"
