"""GRU, GRUCell, Conv1d and ConvTranspose2d against torch.nn with copied weights.

Values, input/state gradients and every parameter gradient, in float32 and
float64, on every available device; parameter names, shapes and init as torch.
"""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest
import torch
from _torch_helpers import assert_close
from lamina import autograd as ag
from lamina import nn

torch.set_num_threads(1)

TOL = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-10)}


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def _twin(torch_mod, lamina_cls, args, kwargs, device, dtype):
    """The torch module in ``dtype`` and a lamina one built alike holding its weights."""
    torch_mod = torch_mod.double() if dtype == "float64" else torch_mod
    mod = lamina_cls(*args, **kwargs, device=device, dtype=dtype)
    mod.load_state_dict({k: v.detach().numpy() for k, v in torch_mod.state_dict().items()})
    return torch_mod, mod


def _outputs(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _outputs(o)]
    return [out]


def _compare(mod, torch_mod, inputs, device, dtype, **call):
    """Calls both on the same inputs, then backpropagates one random cotangent per output."""
    rtol, atol = TOL[dtype]
    ours = [ag.tensor(a, dtype=dtype, device=device, requires_grad=True) for a in inputs]
    theirs = [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True) for a in inputs]
    louts, touts = _outputs(mod(*ours, **call)), _outputs(torch_mod(*theirs, **call))
    assert len(louts) == len(touts)
    lsum, tsum = 0, 0
    for i, (lo, to) in enumerate(zip(louts, touts)):
        assert lo.dtype == dtype
        assert_close(lo, to, rtol, atol)
        cot = _rand(tuple(to.shape), 100 + i)
        lsum = lsum + (lo * ag.tensor(cot, dtype=dtype, device=device)).sum()
        tsum = tsum + (to * torch.tensor(cot, dtype=to.dtype)).sum()
    lsum.backward()
    tsum.backward()
    for a, t in zip(ours, theirs):
        assert_close(a.grad, t.grad, rtol, atol)
    tparams = dict(torch_mod.named_parameters())
    assert [n for n, _ in mod.named_parameters()] == list(tparams)
    for name, p in mod.named_parameters():
        assert_close(p.grad, tparams[name].grad, rtol, atol)


# ----- GRU and GRUCell ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias,with_state,batch", [(True, False, 3), (True, True, 3),
                                                    (False, True, None)])
def test_gru_cell_matches_torch(bias, with_state, batch, dtype, device):
    torch.manual_seed(0)
    t, m = _twin(torch.nn.GRUCell(4, 5, bias=bias), nn.GRUCell, (4, 5), {"bias": bias},
                 device, dtype)
    lead = () if batch is None else (batch,)
    inputs = [_rand(lead + (4,), 1)] + ([_rand(lead + (5,), 2)] if with_state else [])
    _compare(m, t, inputs, device, dtype)


GRU_CASES = [  # (num_layers, batch_first, bidirectional, bias, with_state)
    (1, False, False, True, False),
    (2, True, False, True, True),
    (1, False, True, True, True),
    (2, True, True, False, False),
    (3, False, True, True, True),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layers,batch_first,bidirectional,bias,with_state", GRU_CASES)
def test_gru_matches_torch(layers, batch_first, bidirectional, bias, with_state, dtype,
                           device):
    torch.manual_seed(1)
    kw = dict(num_layers=layers, batch_first=batch_first, bidirectional=bidirectional,
              bias=bias)
    t, m = _twin(torch.nn.GRU(3, 4, **kw), nn.GRU, (3, 4), kw, device, dtype)
    d = 2 if bidirectional else 1
    inputs = [_rand((2, 5, 3) if batch_first else (5, 2, 3), 3)]
    if with_state:
        inputs.append(_rand((d * layers, 2, 4), 4))
    _compare(m, t, inputs, device, dtype)


def test_gru_unbatched_sequence_matches_torch(device):
    torch.manual_seed(2)
    kw = dict(num_layers=2, bidirectional=True)
    t, m = _twin(torch.nn.GRU(3, 4, **kw), nn.GRU, (3, 4), kw, device, "float32")
    _compare(m, t, [_rand((6, 3), 5), _rand((4, 4), 6)], device, "float32")


def test_gru_state_dict_keys_shapes_and_torch_state_dict_load():
    t = torch.nn.GRU(6, 8, num_layers=2, bidirectional=True)
    m = nn.GRU(6, 8, num_layers=2, bidirectional=True)
    assert list(m.state_dict()) == list(t.state_dict())
    assert [tuple(v.shape) for v in m.state_dict().values()] == [
        tuple(v.shape) for v in t.state_dict().values()]
    assert "weight_ih_l1_reverse" in m.state_dict()
    assert tuple(m.weight_ih_l1.shape) == (24, 16)
    m.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), t.state_dict()[k].numpy())
    assert list(nn.GRUCell(3, 2, bias=False).state_dict()) == list(
        torch.nn.GRUCell(3, 2, bias=False).state_dict())
    assert list(nn.GRU(3, 2, 3).state_dict()) == list(torch.nn.GRU(3, 2, 3).state_dict())


def test_gru_default_init_is_uniform_within_torch_bound():
    ag.manual_seed(0)
    bound = 1.0 / np.sqrt(16)
    for m in (nn.GRU(10, 16, num_layers=2, bidirectional=True), nn.GRUCell(10, 16)):
        for p in m.parameters():
            v = p.detach().numpy()
            assert np.abs(v).max() <= bound and v.std() > 0.8 * bound / np.sqrt(3)


def test_gru_dropout_between_layers_only_in_training():
    m = nn.GRU(3, 4, num_layers=2, dropout=0.5)
    x = ag.tensor(_rand((6, 2, 3), 7).astype(np.float32))
    ag.manual_seed(0)
    a = m(x)[0].detach().numpy()
    ag.manual_seed(1)
    assert not np.allclose(a, m(x)[0].detach().numpy())
    m.eval()
    t = torch.nn.GRU(3, 4, num_layers=2, dropout=0.5).eval()
    m.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    assert_close(m(x)[0], t(torch.tensor(x.numpy()))[0], 1e-4, 1e-5)


def test_gru_output_holds_both_directions_and_h_n_their_finals():
    m = nn.GRU(3, 4, bidirectional=True)
    out, h_n = m(ag.tensor(_rand((5, 2, 3), 8).astype(np.float32)))
    o, h = out.detach().numpy(), h_n.detach().numpy()
    np.testing.assert_array_equal(o[-1, :, :4], h[0])  # forward ends at the last step
    np.testing.assert_array_equal(o[0, :, 4:], h[1])  # reverse ends at the first
    assert repr(m) == "GRU(3, 4, bidirectional=True)"


def test_gru_bad_input_names_layer_and_shapes():
    m = nn.GRU(3, 4, num_layers=2, bidirectional=True)
    with pytest.raises(nn.ShapeError, match=r"GRU\(3, 4, num_layers=2, bidirectional=True\)"
                                            r".*\(5, 2, 7\)"):
        m(ag.zeros(5, 2, 7))
    with pytest.raises(nn.ShapeError, match=r"expected h_0 of shape \(4, 2, 4\) "
                                            r"\(D \* num_layers, N, hidden_size\), got "
                                            r"\(2, 2, 4\)"):
        m(ag.zeros(5, 2, 3), ag.zeros(2, 2, 4))
    with pytest.raises(nn.ShapeError, match=r"GRUCell\(3, 4\).*hx of shape \(2, 4\).*\(2, 5\)"):
        nn.GRUCell(3, 4)(ag.zeros(2, 3), ag.zeros(2, 5))
    with pytest.raises(ValueError, match="dropout"):
        nn.GRU(3, 4, dropout=-0.1)
    with pytest.raises(ValueError, match="hidden_size"):
        nn.GRUCell(3, 0)


# ----- Conv1d ---------------------------------------------------------------------------

# (in, out, kernel, stride, padding, dilation, bias, input shape)
CONV1D_GRID = [
    (3, 4, 3, 1, 1, 1, True, (2, 3, 9)),
    (2, 5, 4, 2, 0, 1, False, (3, 2, 11)),
    (4, 3, 3, 1, 2, 2, True, (2, 4, 7)),
    (2, 3, 4, 1, "same", 1, True, (2, 2, 6)),
    (3, 2, 3, 1, "same", 2, False, (1, 3, 8)),
    (2, 2, 3, 3, "valid", 1, True, (2, 2, 10)),
    (3, 4, 3, 1, 1, 1, True, (3, 6)),  # unbatched
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cin,cout,k,s,p,d,bias,shape", CONV1D_GRID)
def test_conv1d_matches_torch(cin, cout, k, s, p, d, bias, shape, dtype, device):
    torch.manual_seed(3)
    kw = dict(stride=s, padding=p, dilation=d, bias=bias)
    t, m = _twin(torch.nn.Conv1d(cin, cout, k, **kw), nn.Conv1d, (cin, cout, k), kw, device,
                 dtype)
    _compare(m, t, [_rand(shape, 9)], device, dtype)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_functional_conv1d_matches_torch(device):
    x, w, b = _rand((2, 3, 8), 10), _rand((4, 3, 2), 11), _rand((4,), 12)
    for kw in (dict(padding="same"), dict(stride=2, padding=1, dilation=3), {}):
        ours = nn.functional.conv1d(*(ag.tensor(a, device=device) for a in (x, w, b)), **kw)
        ref = torch.nn.functional.conv1d(*(torch.tensor(a, dtype=torch.float32)
                                           for a in (x, w, b)), **kw)
        assert_close(ours, ref, 1e-4, 1e-5)


def test_conv1d_init_repr_and_state_dict_as_torch():
    ag.manual_seed(0)
    layer = nn.Conv1d(16, 32, 5)
    bound = 1.0 / np.sqrt(16 * 5)
    w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    assert w.shape == (32, 16, 5) and b.shape == (32,)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(float(w.std()) - bound / np.sqrt(3)) < 0.1 * bound
    assert repr(layer) == repr(torch.nn.Conv1d(16, 32, 5))
    assert repr(nn.Conv1d(2, 3, 3, stride=2, padding=1, dilation=2)) == repr(
        torch.nn.Conv1d(2, 3, 3, stride=2, padding=1, dilation=2))
    assert list(nn.Conv1d(2, 3, 3, bias=False).state_dict()) == list(
        torch.nn.Conv1d(2, 3, 3, bias=False).state_dict())


def test_conv1d_bad_input_names_layer_and_values():
    layer = nn.Conv1d(3, 8, 5)
    with pytest.raises(nn.ShapeError, match=r"Conv1d\(3, 8.*expected input of shape "
                                            r"\(N, 3, L\) or \(3, L\), got \(2, 4, 9\)"):
        layer(ag.zeros(2, 4, 9))
    with pytest.raises(nn.ShapeError, match=r"conv1d: kernel 5 .*reach 5.*larger than the "
                                            r"padded length 4"):
        layer(ag.zeros(1, 3, 4))
    with pytest.raises(ValueError, match="padding='same' needs stride 1"):
        nn.Conv1d(3, 8, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="kernel_size must be an int >= 1"):
        nn.Conv1d(3, 8, (3, 3))
    with pytest.raises(ValueError, match="in_channels=4 must be divisible by groups=3"):
        nn.Conv1d(4, 8, 3, groups=3)
    with pytest.raises(nn.ShapeError, match=r"conv1d: input \(2, 3, 5\).*weight \(4, 2, 3\)"):
        nn.functional.conv1d(ag.zeros(2, 3, 5), ag.zeros(4, 2, 3))
    with pytest.raises(nn.ShapeError, match=r"conv1d: bias has shape \(3,\), expected \(4,\)"):
        nn.functional.conv1d(ag.zeros(2, 2, 5), ag.zeros(4, 2, 3), ag.zeros(3))


# ----- ConvTranspose2d ------------------------------------------------------------------

# (in, out, kernel, stride, padding, output_padding, dilation, bias, input shape)
TRANSPOSE_GRID = [
    (3, 4, 3, 1, 0, 0, 1, True, (2, 3, 4, 5)),
    (4, 2, 4, 2, 1, 0, 1, True, (2, 4, 5, 5)),  # the usual 2x upsampling
    (2, 3, (3, 2), (2, 3), (1, 0), (1, 2), (1, 2), False, (1, 2, 3, 4)),
    (2, 2, 3, 2, 2, 1, 1, True, (1, 2, 2, 3)),  # output_padding past the cropped border
    (1, 2, 3, 1, 0, 1, 2, True, (2, 1, 3, 3)),  # output_padding >= stride, < dilation
    (3, 2, 3, 2, 1, 1, 1, True, (3, 4, 4)),  # unbatched
    (3, 2, 3, 2, 1, 1, 1, True, (0, 3, 4, 4)),  # empty batch
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cin,cout,k,s,p,op,d,bias,shape", TRANSPOSE_GRID)
def test_conv_transpose2d_matches_torch(cin, cout, k, s, p, op, d, bias, shape, dtype, device):
    torch.manual_seed(4)
    kw = dict(stride=s, padding=p, output_padding=op, dilation=d, bias=bias)
    t, m = _twin(torch.nn.ConvTranspose2d(cin, cout, k, **kw), nn.ConvTranspose2d,
                 (cin, cout, k), kw, device, dtype)
    _compare(m, t, [_rand(shape, 13)], device, dtype)


def test_conv_transpose2d_output_size_picks_output_padding(device):
    torch.manual_seed(5)
    t, m = _twin(torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1), nn.ConvTranspose2d,
                 (2, 3, 3), dict(stride=2, padding=1), device, "float32")
    for size in ([9, 10], (1, 3, 10, 9)):
        _compare(m, t, [_rand((1, 2, 5, 5), 14)], device, "float32", output_size=size)
    with pytest.raises(ValueError, match=r"output_size \(11, 9\).*from \(9, 9\) to \(10, 10\)"):
        m(ag.zeros(1, 2, 5, 5, device=device), output_size=(11, 9))


def test_functional_conv_transpose2d_matches_torch(device):
    x, w, b = _rand((2, 3, 4, 4), 15), _rand((3, 2, 3, 3), 16), _rand((2,), 17)
    for kw in (dict(stride=2, padding=1, output_padding=1), dict(dilation=2), {}):
        ours = nn.functional.conv_transpose2d(*(ag.tensor(a, device=device)
                                                for a in (x, w, b)), **kw)
        ref = torch.nn.functional.conv_transpose2d(*(torch.tensor(a, dtype=torch.float32)
                                                     for a in (x, w, b)), **kw)
        assert_close(ours, ref, 1e-4, 1e-5)


def test_conv_transpose2d_init_repr_and_state_dict_as_torch():
    ag.manual_seed(0)
    layer = nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1)
    # torch's fan_in for the (in, out, kh, kw) weight is out * kh * kw
    bound = 1.0 / np.sqrt(8 * 16)
    w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    assert w.shape == (16, 8, 4, 4) and b.shape == (8,)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(float(w.std()) - bound / np.sqrt(3)) < 0.1 * bound
    for kw in (dict(stride=2, padding=1), dict(output_padding=1, dilation=2, bias=False)):
        assert repr(nn.ConvTranspose2d(16, 8, 4, **kw)) == repr(
            torch.nn.ConvTranspose2d(16, 8, 4, **kw))
        assert list(nn.ConvTranspose2d(16, 8, 4, **kw).state_dict()) == list(
            torch.nn.ConvTranspose2d(16, 8, 4, **kw).state_dict())


def test_conv_transpose2d_bad_input_names_layer_and_values():
    layer = nn.ConvTranspose2d(3, 8, 3)
    with pytest.raises(nn.ShapeError, match=r"ConvTranspose2d\(3, 8.*expected input of shape "
                                            r"\(N, 3, H, W\) or \(3, H, W\), got \(2, 4, 5, 5\)"):
        layer(ag.zeros(2, 4, 5, 5))
    with pytest.raises(ValueError, match=r"output_padding \(2, 2\) must be smaller than "
                                         r"either stride \(2, 2\) or dilation \(1, 1\)"):
        nn.ConvTranspose2d(3, 8, 3, stride=2, output_padding=2)
    with pytest.raises(ValueError, match="in_channels=4 must be divisible by groups=3"):
        nn.ConvTranspose2d(4, 8, 3, groups=3)
    with pytest.raises(nn.ShapeError, match=r"conv_transpose2d: .*empty output"):
        nn.functional.conv_transpose2d(ag.zeros(1, 1, 1, 1), ag.zeros(1, 1, 1, 1), padding=1)
    with pytest.raises(nn.ShapeError, match=r"conv_transpose2d: bias has shape \(3,\)"):
        nn.functional.conv_transpose2d(ag.zeros(1, 1, 2, 2), ag.zeros(1, 2, 2, 2),
                                       ag.zeros(3))


@pytest.mark.parametrize("name", ["lamina.nn._rnn", "lamina.nn._conv"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name),
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0, name
