"""A monitoring run that can't become a record stops monitoring, not the records.

A model whose setting switches it onto an unsupported construct (here a
generator made inside the call, which a replay cannot make again) used to run
eagerly from then on, even for the calls its existing record fits.  Now the
records keep replaying what their guards accept; only the other calls run
eagerly, and no further monitoring run is made for them.
"""

from __future__ import annotations

import pytest
import torch

import fullgraph.runtime as fr
import fullgraph.runtime.compiled as fr_compiled

flag = {"noise": False}


def step(x):
    if flag["noise"]:
        generator = torch.Generator().manual_seed(0)
        return x + torch.rand(x.shape, generator=generator)
    return x * 2


def test_records_replay_after_a_run_that_could_not_be_recorded():
    flag["noise"] = False
    compiled = fr.compile(step, backend="eager")
    x = torch.randn(3)
    compiled(x)
    compiled(x)
    assert compiled.stats.hits == 1
    flag["noise"] = True
    noisy = x + torch.rand(3, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(compiled(x), noisy)  # monitored, not recordable
    torch.testing.assert_close(compiled(x), noisy)  # eager, not monitored again
    stats = compiled.stats
    assert stats.monitor_runs == 2
    assert stats.fallback_reason is None
    assert "Generator" in stats.monitoring_stopped
    assert stats.fallbacks == 1
    flag["noise"] = False
    torch.testing.assert_close(compiled(x), x * 2)
    assert stats.hits == 2 and stats.monitor_runs == 2


def test_without_records_the_function_runs_eagerly():
    flag["noise"] = True
    compiled = fr.compile(step, backend="eager")
    x = torch.randn(3)
    compiled(x)
    assert "Generator" in compiled.stats.fallback_reason
    assert compiled.stats.monitoring_stopped is None
    flag["noise"] = False
    torch.testing.assert_close(compiled(x), x * 2)
    assert compiled.stats.monitor_runs == 1 and compiled.stats.fallbacks == 1


class LazilyHooked(torch.nn.Module):
    """Installs a forward hook on its first call and marks itself, as transformers'
    output capturing does on the first call that asks for hidden states."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(3, 3)

    def forward(self, x):
        if not getattr(self, "hooked", False):
            self.layer.register_forward_hook(lambda module, args, output: output * 2)
            self.hooked = True
        return self.layer(x).relu()


def test_a_run_that_set_the_program_up_gets_one_more_monitoring_run():
    torch.manual_seed(0)
    model, twin = LazilyHooked(), LazilyHooked()
    twin.load_state_dict(model.state_dict())
    compiled = fr.compile(model, backend="eager")
    for _ in range(4):
        x = torch.randn(2, 3)
        torch.testing.assert_close(compiled(x), twin(x), rtol=0, atol=0)
    stats = compiled.stats
    # The installing run can't be a record (its hook handle can't be made again); the
    # next call is monitored with the hook in place and replays from then on.
    assert stats.monitor_runs == 2 and stats.hits == 2
    assert "register_forward_hook" in stats.unrecorded_reason
    assert stats.fallback_reason is None and stats.monitoring_stopped is None


class AlwaysHooking(torch.nn.Module):
    """Installs a hook on every call: no run of it is recordable."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(3, 3)

    def forward(self, x):
        self.layer.register_forward_hook(lambda module, args, output: output + 1)
        self.hooked = True
        return self.layer(x)


def test_a_function_no_call_of_which_can_be_recorded_stops_being_monitored():
    torch.manual_seed(0)
    model, twin = AlwaysHooking(), AlwaysHooking()
    twin.load_state_dict(model.state_dict())
    compiled = fr.compile(model, backend="eager")
    x = torch.randn(2, 3)
    for _ in range(fr_compiled.UNRECORDED_LIMIT + 2):
        torch.testing.assert_close(compiled(x), twin(x), rtol=0, atol=0)
    stats = compiled.stats
    assert stats.monitor_runs == fr_compiled.UNRECORDED_LIMIT
    assert f"{fr_compiled.UNRECORDED_LIMIT} calls in a row" in stats.fallback_reason
    assert "register_forward_hook" in stats.fallback_reason
    assert stats.fallbacks == 2 and stats.hits == 0


class LazyNoise(torch.nn.Module):
    """Makes its generator on the first call: that run can't be a record (no replay can
    make the generator again), the calls after it draw from the stored one."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(3, 3)

    def forward(self, x):
        if not hasattr(self, "noise"):
            self.noise = torch.Generator().manual_seed(0)
        return self.layer(x) + torch.rand(3, generator=self.noise)


def test_a_lazily_made_generator_replays_from_the_second_run():
    torch.manual_seed(0)
    model, twin = LazyNoise(), LazyNoise()
    twin.load_state_dict(model.state_dict())
    compiled = fr.compile(model, backend="eager")
    x = torch.randn(2, 3)
    for _ in range(5):
        torch.testing.assert_close(compiled(x), twin(x), rtol=0, atol=0)
    stats = compiled.stats
    assert stats.monitor_runs == 2 and stats.hits == 3
    assert "Generator" in stats.unrecorded_reason
    assert stats.fallback_reason is None and stats.monitoring_stopped is None


def _strict(cls):
    """A config class whose ``__setattr__`` is made by a decorator and reads the
    decorator's closure (huggingface_hub's ``@strict`` on transformers' configs): the
    monitor has no path to that closure, so a store through it can't be recorded."""
    original_setattr = cls.__setattr__

    def __strict_setattr__(self, name, value):
        for validator in self.__validators__.get(name, []):
            validator(value)
        original_setattr(self, name, value)

    cls.__setattr__ = __strict_setattr__
    return cls


class BaseConfig:
    attribute_map: dict = {}

    def __setattr__(self, key, value):
        if key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        super().__setattr__(key, value)


@_strict
class HeadConfig(BaseConfig):
    __validators__: dict = {}
    problem_type: str | None = None


class ClassificationHead(torch.nn.Module):
    """Sets ``config.problem_type`` on its first call with labels, as transformers'
    ``*ForSequenceClassification`` heads do; later calls only read it."""

    def __init__(self):
        super().__init__()
        self.config = HeadConfig()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x, labels):
        logits = self.fc(x)
        if self.config.problem_type is None:
            self.config.problem_type = "single_label_classification"
        if self.config.problem_type == "single_label_classification":
            return torch.nn.functional.cross_entropy(logits, labels)
        return logits.sum()


def test_a_first_call_that_sets_up_the_config_through_its_setter_still_compiles():
    model = ClassificationHead()
    compiled = fr.compile(model, backend="eager")
    reference = ClassificationHead()
    reference.load_state_dict(model.state_dict())
    for _ in range(4):
        x, labels = torch.randn(2, 4), torch.tensor([0, 2])
        torch.testing.assert_close(compiled(x, labels), reference(x, labels))
    stats = compiled.stats
    assert stats.fallback_reason is None
    # The first run records the store through the setter (its closure has a path
    # through the class: F120's class_slots); the second call misses it and records.
    assert (stats.monitor_runs, stats.hits) == (2, 2)


def checked_step(x, valid):
    if not valid:
        raise ValueError("invalid batch")
    return x + 1


def test_calls_that_raise_say_why_they_were_not_recorded_and_stop_after_a_few():
    compiled = fr.compile(checked_step, backend="eager")
    x = torch.randn(3)
    for _ in range(fr_compiled.UNRECORDED_LIMIT - 1):
        with pytest.raises(ValueError, match="invalid batch"):
            compiled(x, False)
    stats = compiled.stats
    assert stats.unrecorded == fr_compiled.UNRECORDED_LIMIT - 1
    assert "raised ValueError" in stats.unrecorded_reason
    assert "raised ValueError" in compiled.report().notes[-1]
    torch.testing.assert_close(compiled(x, True), x + 1)  # recorded: the count restarts
    torch.testing.assert_close(compiled(x, True), x + 1)
    assert stats.hits == 1 and stats.monitoring_stopped is None
    for _ in range(fr_compiled.UNRECORDED_LIMIT):
        with pytest.raises(ValueError, match="invalid batch"):
            compiled(x, False)
    assert f"{fr_compiled.UNRECORDED_LIMIT} calls in a row" in stats.monitoring_stopped
    monitored = stats.monitor_runs
    with pytest.raises(ValueError, match="invalid batch"):
        compiled(x, False)  # eager now, not monitored
    torch.testing.assert_close(compiled(x, True), x + 1)  # the record still replays
    assert stats.monitor_runs == monitored and stats.hits == 2
