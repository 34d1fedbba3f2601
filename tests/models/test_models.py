"""Model zoo: every model builds, runs forward/backward at a tiny width, and keeps its shape."""

from __future__ import annotations

import inspect

import pytest
import torch
import torchvision

from sharpness.models import MODELS, QUICK_SETTINGS, build_model, count_parameters, model_options

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one thread

# tiny settings so that the whole zoo runs in a few seconds on one CPU thread
TINY = {
    "resnet18": {"width": 0.0625},
    "wrn28_10": {"width": 0.05, "depth": 10},
    "pyramidnet110": {"width": 0.1, "depth": 8, "alpha": 12},
    "resnet50": {"width": 0.0625},
    "resnet101": {"width": 0.03125},
    "vit_b_16": {"width": 0.03},
    "vit_small": {"width": 0.125, "depth": 2},
    "cnn": {"width": 0.25},
    "fcn": {"width": 0.1},
}


def test_every_registered_model_has_tiny_and_quick_settings():
    assert set(TINY) == set(MODELS) == set(QUICK_SETTINGS)


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("in_channels,image_size", [(3, 32), (1, 16)])
def test_forward_backward(name, in_channels, image_size):
    if name == "vit_b_16" and in_channels != 3:
        with pytest.raises(ValueError, match="3-channel"):
            build_model(name, 10, in_channels, image_size, **TINY[name])
        return
    kw = dict(TINY[name])
    if name == "vit_b_16" and image_size % 16:
        pytest.skip("ViT-B/16 needs a multiple of 16")
    torch.manual_seed(0)
    model = build_model(name, 7, in_channels, image_size, **kw)
    x = torch.randn(4, in_channels, image_size, image_size)
    out = model(x)
    assert out.shape == (4, 7)
    assert torch.isfinite(out).all()
    # cross-entropy: non-zero gradient even for heads initialised at zero (torchvision ViT)
    torch.nn.functional.cross_entropy(out, torch.arange(4)).backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(g is not None for g in grads)
    assert sum(float(g.abs().sum()) for g in grads) > 0


@pytest.mark.parametrize("name", ["resnet18", "cnn", "fcn", "vit_small"])
def test_width_multiplier_shrinks_model(name):
    small = build_model(name, 10, 3, 32, width=0.25)
    big = build_model(name, 10, 3, 32, width=0.5)
    assert count_parameters(small) < count_parameters(big)


def test_full_size_parameter_counts_match_the_literature():
    # counts of the standard definitions (ResNet-18 CIFAR 11.17M, WRN-28-10 36.5M,
    # PyramidNet-110/270 about 28.3-28.5M, ResNet-50 25.6M = torchvision)
    assert count_parameters(build_model("resnet18", 10, 3, 32)) == 11_173_962
    assert abs(count_parameters(build_model("wrn28_10", 10, 3, 32)) / 1e6 - 36.5) < 0.05
    assert abs(count_parameters(build_model("pyramidnet110", 10, 3, 32)) / 1e6 - 28.4) < 0.2
    tv = torchvision.models.resnet50()
    ours = build_model("resnet50", 1000, 3, 224)
    assert count_parameters(ours) == count_parameters(tv)
    ours.load_state_dict(tv.state_dict())  # same module tree as torchvision at width 1
    x = torch.rand(1, 3, 64, 64)
    torch.testing.assert_close(ours.eval()(x), tv.eval()(x), rtol=1e-4, atol=1e-5)


def test_resnet_small_input_stem():
    small = build_model("resnet50", 10, 3, 32, width=0.0625)
    large = build_model("resnet50", 10, 3, 224, width=0.0625)
    assert small.conv1.kernel_size == (3, 3) and isinstance(small.maxpool, torch.nn.Identity)
    assert large.conv1.kernel_size == (7, 7)


def test_options_read_from_the_source_are_the_imported_builders_signatures():
    """``model_options`` reads each builder's options from its module's source (so the plan
    checks ``model_kwargs`` without torch): they are the imported builder's own keyword
    arguments, with the same defaults."""
    fixed = {"num_classes", "in_channels", "image_size", "width"}
    for name, builder in MODELS.items():
        signature = inspect.signature(builder).parameters
        assert model_options(name) == {k: p.default for k, p in signature.items()
                                       if k not in fixed}, name


def test_unknown_model_and_option_errors_name_them():
    with pytest.raises(ValueError, match="unknown model 'resnet19'.*resnet18"):
        build_model("resnet19", 10, 3, 32)
    with pytest.raises(ValueError, match="depht.*depth"):
        build_model("fcn", 10, 3, 32, depht=3)
    with pytest.raises(ValueError, match="width"):
        build_model("cnn", 10, 3, 32, width=0.0)


def test_pretrained_vit_offline_is_a_clear_error(monkeypatch, tmp_path):
    from sharpness.models import PretrainedWeightsUnavailable

    monkeypatch.setenv("TORCH_HOME", str(tmp_path))

    def no_network(*args, **kwargs):
        raise OSError("network disabled in tests")

    import sharpness.data.fetch as fetch

    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", no_network)
    monkeypatch.setattr(fetch, "download_url", no_network)
    with pytest.raises(PretrainedWeightsUnavailable, match="vit_b_16.*put it at"):
        build_model("vit_b_16", 10, 3, 32, pretrained=True)


def test_init_scale_alpha_scales_weights():
    torch.manual_seed(0)
    a = build_model("cnn", 10, 1, 16, width=0.25, alpha=1.0)
    torch.manual_seed(0)
    b = build_model("cnn", 10, 1, 16, width=0.25, alpha=3.0)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(pb, 3.0 * pa)


def test_activation_choice():
    m = build_model("fcn", 10, 1, 8, activation="tanh", width=0.1)
    assert any(isinstance(x, torch.nn.Tanh) for x in m.modules())
    with pytest.raises(ValueError, match="activation"):
        build_model("fcn", 10, 1, 8, activation="swish")


def test_mup_equals_sp_at_base_width():
    x = torch.randn(8, 1, 8, 8)
    torch.manual_seed(1)
    sp = build_model("fcn", 10, 1, 8, hidden=64, parametrization="sp")
    torch.manual_seed(1)
    mup = build_model("fcn", 10, 1, 8, hidden=64, parametrization="mup")
    torch.testing.assert_close(sp(x), mup(x))


def _logit_change_after_one_sgd_step(width: float, parametrization: str, seed: int) -> float:
    """RMS logit change after one SGD step (MSE to N(0, 9) targets) of an FCN of this width."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(64, 1, 8, 8, generator=gen)
    y = 3.0 * torch.randn(64, 10, generator=gen)
    torch.manual_seed(seed)
    model = build_model("fcn", 10, 1, 8, width=width, hidden=64, depth=2,
                        parametrization=parametrization)
    out0 = model(x)
    loss = 0.5 * (out0 - y).square().sum(1).mean()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.05 * p.grad
        return float((model(x) - out0).square().mean().sqrt())


def _mean_change(width: float, parametrization: str) -> float:
    return sum(_logit_change_after_one_sgd_step(width, parametrization, s) for s in range(3)) / 3


def test_mup_coordinate_check():
    """muP's point: with one learning rate, the function change of an SGD step stays O(1) as
    the width grows 16x (measured about 0.6-0.8x here), while in SP it grows with the width."""
    mup_ratio = _mean_change(16.0, "mup") / _mean_change(1.0, "mup")
    sp_ratio = _mean_change(16.0, "sp") / _mean_change(1.0, "sp")
    assert 0.4 < mup_ratio < 2.5
    assert sp_ratio > 6.0


def test_mup_init_is_sp_with_output_scaled_down():
    """Same seed: muP's input/hidden maps equal SP's, its logits are SP's / sqrt(m)."""
    x = torch.randn(16, 1, 8, 8)
    torch.manual_seed(3)
    sp = build_model("fcn", 10, 1, 8, width=9.0, hidden=16, parametrization="sp")
    torch.manual_seed(3)
    mup = build_model("fcn", 10, 1, 8, width=9.0, hidden=16, parametrization="mup")
    torch.testing.assert_close(mup(x), sp(x) / 3.0, rtol=1e-5, atol=1e-6)
