"""A compiled module stands for the module it compiles, as ``torch.compile``'s does."""

from __future__ import annotations

import pytest
import torch

import fullgraph.runtime as fr


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 2)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.lin(x))


def test_the_module_api_reaches_the_module():
    net = Net()
    compiled = fr.compile(net, backend="eager")
    assert compiled.lin is net.lin
    assert [p for p in compiled.parameters()] == [p for p in net.parameters()]
    assert compiled.state_dict().keys() == net.state_dict().keys()
    optimizer = torch.optim.SGD(compiled.parameters(), lr=0.1)  # a training script's first line
    assert optimizer.param_groups[0]["params"][0] is net.lin.weight


def test_methods_returning_the_module_keep_it_compiled():
    net = Net()
    compiled = fr.compile(net, backend="eager")
    assert compiled.eval() is compiled and not net.training
    x = torch.randn(3, 4)
    compiled(x)
    assert torch.equal(compiled(x), net(x)) and compiled.stats.hits == 1
    assert compiled.train() is compiled and net.training
    assert compiled.to(torch.float64) is compiled and net.lin.weight.dtype is torch.float64
    assert compiled.double().float() is compiled


def test_a_missing_attribute_is_an_attribute_error():
    compiled = fr.compile(Net(), backend="eager")
    with pytest.raises(AttributeError, match="no_such"):
        getattr(compiled, "no_such")  # noqa: B009 - the attribute access is the test
    plain = fr.compile(lambda x: x + 1, backend="eager")
    with pytest.raises(AttributeError, match="parameters"):
        plain.parameters()


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.temperature = 1.0

    def forward(self, x):
        return self.lin(x) / self.temperature


def test_writes_through_the_compiled_module_reach_the_module():
    # F297: ``model = fr.compile(model); model.temperature = 4.0`` set the attribute on
    # the compiled callable; reading it back showed 4.0, calls kept dividing by 1.0.
    net, reference = Scaled(), Scaled()
    reference.load_state_dict(net.state_dict())
    compiled = fr.compile(net, backend="eager")
    x = torch.randn(3)
    for _ in range(2):
        compiled(x)
    compiled.temperature = 4.0
    reference.temperature = 4.0
    assert net.temperature == 4.0 and torch.equal(compiled(x), reference(x))
    compiled.lin = reference.lin = torch.nn.Identity()
    assert net.lin is compiled.lin and torch.equal(compiled(x), reference(x))
    compiled.training = False
    assert net.training is False
    del compiled.temperature
    assert not hasattr(net, "temperature")
    assert compiled.stats is not None and "stats" not in vars(net)  # its own state stays its own


class Head(torch.nn.Module):
    def __init__(self, compile_parts: bool):
        super().__init__()
        wrap = (lambda m: fr.compile(m, backend="eager")) if compile_parts else (lambda m: m)
        self.proj = wrap(torch.nn.Linear(4, 4))
        self.norm = wrap(torch.nn.BatchNorm1d(4))

    def forward(self, x):
        return self.norm(self.proj(x)).relu().sum()


def test_a_compiled_submodule_is_a_submodule_of_its_parent():
    # F300: ``self.proj = fr.compile(nn.Linear(4, 4))`` was a plain attribute of the
    # parent: its parameters were missing from ``parameters()`` (an optimizer never
    # trained them), from ``state_dict()`` (a checkpoint lost them), and
    # ``parent.eval()`` / ``.to()`` did not reach it.
    torch.manual_seed(0)
    eager, compiled = Head(False), Head(True)
    compiled.load_state_dict(eager.state_dict())  # BatchNorm's own loading, num_batches_tracked too
    assert isinstance(compiled.proj, torch.nn.Module)
    assert list(compiled.state_dict()) == list(eager.state_dict())
    steps = []
    for model in (eager, compiled):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        torch.manual_seed(1)
        for _ in range(4):
            optimizer.zero_grad()
            model(torch.randn(8, 4)).backward()
            optimizer.step()
        model.eval()
        steps.append(model(torch.ones(2, 4)))
    assert len(list(compiled.parameters())) == len(list(eager.parameters())) == 4
    assert torch.equal(steps[0], steps[1])
    for (name, a), (_, b) in zip(eager.state_dict().items(), compiled.state_dict().items()):
        assert torch.equal(a, b), name
    assert not compiled.norm.training and not compiled.norm.module.training
    compiled.to(torch.float64)
    assert compiled.proj.module.weight.dtype is torch.float64
    assert compiled.proj.stats.hits >= 2  # it still replays
    assert "Linear(in_features=4" in repr(compiled)


def test_a_compiled_layer_is_found_by_isinstance_walks_and_registers_on_its_module():
    # ``parent.apply(init)`` with ``isinstance(m, nn.Linear)`` (an init, a weight-decay
    # grouping) reaches a compiled layer as it reaches eager's; ``register_buffer`` /
    # ``register_parameter`` through the compiled object register on the module.
    torch.manual_seed(0)
    parent = torch.nn.Sequential(fr.compile(torch.nn.Linear(3, 3), backend="eager"))
    parent.apply(
        lambda m: torch.nn.init.zeros_(m.weight) if isinstance(m, torch.nn.Linear) else None
    )
    layer = parent[0]
    assert isinstance(layer, torch.nn.Linear) and not layer.module.weight.any()
    layer.register_buffer("mask", torch.ones(3))
    layer.register_parameter("gain", None)
    assert "mask" in layer.module._buffers and "gain" in layer.module._parameters
    assert list(parent.state_dict()) == ["0.weight", "0.bias", "0.mask"]
    x = torch.randn(3)
    assert torch.equal(parent(x), layer.module(x)) and torch.equal(parent(x), layer.module.bias)
    assert layer.stats.hits == 1


class Tempered(torch.nn.Module):
    temperature = 1.0  # a class-level default the instance overrides

    def forward(self, x):
        return x / self.temperature


def test_a_write_of_a_class_level_default_reaches_the_module():
    net = Tempered()
    compiled = fr.compile(net, backend="eager")
    for _ in range(2):
        compiled(torch.ones(2))
    compiled.temperature = 4.0
    assert net.temperature == 4.0 and torch.equal(compiled(torch.ones(2)), torch.full((2,), 0.25))


@pytest.mark.parametrize(
    "parametrize_it",
    [
        torch.nn.utils.parametrizations.spectral_norm,
        torch.nn.utils.parametrizations.weight_norm,
    ],
    ids=["spectral_norm", "weight_norm"],
)
def test_a_parametrization_registered_on_the_compiled_module(parametrize_it):
    # F324: torch gave the compiled object a class with the ``weight`` property while
    # the weight was deleted from the module it compiles: every call raised.
    torch.manual_seed(0)
    eager = torch.nn.Linear(4, 4)
    module = torch.nn.Linear(4, 4)
    module.load_state_dict(eager.state_dict())
    compiled = fr.compile(module, backend="eager")
    x = torch.randn(3, 4)
    assert torch.equal(compiled(x), eager(x))
    torch.manual_seed(1)  # spectral_norm draws its power-iteration vectors
    parametrize_it(eager)
    torch.manual_seed(1)
    compiled = parametrize_it(compiled)
    assert sorted(compiled.state_dict()) == sorted(eager.state_dict())
    assert isinstance(compiled, torch.nn.Linear)
    for _ in range(3):
        x = torch.randn(3, 4)
        torch.testing.assert_close(compiled(x), eager(x))
    assert compiled.stats.hits >= 2
    torch.nn.utils.parametrize.remove_parametrizations(eager, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(compiled, "weight")
    assert type(module) is torch.nn.Linear
    assert type(compiled).__name__ == "CompiledLinear"
    x = torch.randn(3, 4)
    torch.testing.assert_close(compiled(x), eager(x))
    # The compiled class, shared by every compiled Linear, got no property.
    assert "weight" not in vars(type(fr.compile(torch.nn.Linear(2, 2))))


def test_what_the_program_does_to_the_compiled_class_reaches_the_modules_class():
    # F339: ``type(model)`` is the compiled class: ``type(model).scale = 7.0`` landed on
    # it (reads saw 7, calls used ``Net.scale``), and ``type(model)(...)`` raised.
    class Net(torch.nn.Module):
        scale = 1.0

        def __init__(self, width=4):
            super().__init__()
            self.lin = torch.nn.Linear(width, width)

        def forward(self, x):
            return self.lin(x) * self.scale

    model = fr.compile(Net(), backend="eager")
    x = torch.randn(2, 4)
    for _ in range(2):
        model(x)
    type(model).scale = 7.0
    assert Net.scale == 7.0 and "scale" not in vars(type(model))
    torch.testing.assert_close(model(x), model.module.lin(x) * 7.0)
    copy = type(model)(width=4)  # an EMA copy: a module of the class, as eager's
    assert type(copy) is Net
    copy.load_state_dict(model.state_dict())
    torch.testing.assert_close(copy(x), model(x))
    del type(model).scale
    assert "scale" not in vars(Net)
