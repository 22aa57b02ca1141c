"""Transformer, TransformerEncoder and TransformerDecoder against torch.nn with copied weights.

Encoder-only, decoder-only and the full model, ``batch_first`` and ``norm_first`` both
ways, with no mask, float causal masks and boolean causal + key padding masks: outputs,
input gradients and every parameter gradient, in float32 and float64, on every
available device. Also the state dict layout, the layer copies, the causal-mask helper
and the errors for bad shapes.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _torch_helpers import assert_close, to_numpy
from lamina import autograd as ag
from lamina import nn
from lamina.nn import functional as F

torch.set_num_threads(1)
# torch's own Transformer warns that its nested-tensor fast path is off; Lamina has none.
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")

TOL = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-10)}
E, H, FF = 8, 2, 16  # d_model, nhead, dim_feedforward
N, S, T = 2, 5, 4  # batch, source length, target length
MASKS = ["none", "float_causal", "bool_causal_padding"]


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def _seq(length, batch_first, batched=True):
    if not batched:
        return (length, E)
    return (N, length, E) if batch_first else (length, N, E)


def _load(ours, theirs, dtype):
    """``theirs`` in ``dtype`` and in eval mode; ``ours`` loaded with its state dict."""
    theirs = theirs.double() if dtype == "float64" else theirs
    theirs.eval()
    ours.eval()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return theirs


def _causal(kind, length, dtype, device):
    """The same causal mask for both libraries: float -inf/0 or bool True = masked."""
    if kind == "float_causal":
        tmask = torch.nn.Transformer.generate_square_subsequent_mask(
            length, dtype=getattr(torch, dtype))
        return nn.Transformer.generate_square_subsequent_mask(length, device, dtype), tmask
    mask = np.triu(np.ones((length, length), dtype=bool), 1)
    return mask, torch.from_numpy(mask)


def _padding(length, padded):
    """(N, length) bool, True = ignore; item ``i`` pads its last ``padded[i]`` keys."""
    mask = np.zeros((N, length), dtype=bool)
    for i, count in enumerate(padded):
        mask[i, length - count:] = count > 0
    return mask, torch.from_numpy(mask)


def _masks(kind, names, dtype, device):
    """Lamina and torch keyword arguments for ``kind``; ``names`` maps arg -> length spec.

    A spec is ("causal", L) for an (L, L) attention mask or ("pad", L, padded) for an
    (N, L) key padding mask.
    """
    ours, theirs = {}, {}
    if kind == "none":
        return ours, theirs
    for arg, spec in names.items():
        if spec[0] == "causal":
            ours[arg], theirs[arg] = _causal(kind, spec[1], dtype, device)
        elif kind == "bool_causal_padding":
            ours[arg], theirs[arg] = _padding(spec[1], spec[2])
    return ours, theirs


def _compare(mod, torch_mod, inputs, device, dtype, ours_kw, torch_kw):
    """Same outputs, then the same input and parameter gradients for a random cotangent."""
    rtol, atol = TOL[dtype]
    xs = [ag.tensor(a, dtype=dtype, device=device, requires_grad=True) for a in inputs]
    txs = [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True) for a in inputs]
    out, ref = mod(*xs, **ours_kw), torch_mod(*txs, **torch_kw)
    assert out.dtype == dtype
    assert_close(out, ref, rtol, atol)
    cot = _rand(tuple(ref.shape), 99)
    (out * ag.tensor(cot, dtype=dtype, device=device)).sum().backward()
    (ref * torch.tensor(cot, dtype=ref.dtype)).sum().backward()
    for x, tx in zip(xs, txs):
        assert_close(x.grad, tx.grad, rtol, atol)
    tparams = dict(torch_mod.named_parameters())
    assert [name for name, _ in mod.named_parameters()] == list(tparams)
    for name, p in mod.named_parameters():
        assert_close(p.grad, tparams[name].grad, rtol, atol)


def _layer_kw(batch_first, norm_first):
    return {"dropout": 0.0, "batch_first": batch_first, "norm_first": norm_first}


# ----- the stacks and the full model against torch -----------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("masks", MASKS)
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_matches_torch(batch_first, norm_first, masks, dtype, device):
    torch.manual_seed(0)
    kw = _layer_kw(batch_first, norm_first)
    theirs = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(E, H, FF, **kw), 2,
                                         torch.nn.LayerNorm(E), enable_nested_tensor=False)
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, FF, **kw, device=device,
                                                            dtype=dtype),
                                 2, nn.LayerNorm(E, device=device, dtype=dtype))
    theirs = _load(ours, theirs, dtype)
    ours_kw, torch_kw = _masks(masks, {"mask": ("causal", S),
                                       "src_key_padding_mask": ("pad", S, (2, 0))},
                               dtype, device)
    _compare(ours, theirs, [_rand(_seq(S, batch_first), 1)], device, dtype, ours_kw, torch_kw)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("masks", MASKS)
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_matches_torch(batch_first, norm_first, masks, dtype, device):
    torch.manual_seed(1)
    kw = _layer_kw(batch_first, norm_first)
    theirs = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(E, H, FF, **kw), 2,
                                         torch.nn.LayerNorm(E))
    ours = nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, FF, **kw, device=device,
                                                            dtype=dtype),
                                 2, nn.LayerNorm(E, device=device, dtype=dtype))
    theirs = _load(ours, theirs, dtype)
    ours_kw, torch_kw = _masks(masks, {"tgt_mask": ("causal", T),
                                       "tgt_key_padding_mask": ("pad", T, (0, 1)),
                                       "memory_key_padding_mask": ("pad", S, (2, 1))},
                               dtype, device)
    inputs = [_rand(_seq(T, batch_first), 2), _rand(_seq(S, batch_first), 3)]
    _compare(ours, theirs, inputs, device, dtype, ours_kw, torch_kw)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("masks", MASKS)
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_matches_torch(batch_first, norm_first, masks, dtype, device):
    torch.manual_seed(2)
    kw = _layer_kw(batch_first, norm_first)
    theirs = torch.nn.Transformer(E, H, 2, 2, FF, **kw)
    ours = nn.Transformer(E, H, 2, 2, FF, **kw, device=device, dtype=dtype)
    theirs = _load(ours, theirs, dtype)
    ours_kw, torch_kw = _masks(masks, {"src_mask": ("causal", S), "tgt_mask": ("causal", T),
                                       "src_key_padding_mask": ("pad", S, (1, 0)),
                                       "tgt_key_padding_mask": ("pad", T, (0, 2)),
                                       "memory_key_padding_mask": ("pad", S, (1, 0))},
                               dtype, device)
    inputs = [_rand(_seq(S, batch_first), 4), _rand(_seq(T, batch_first), 5)]
    _compare(ours, theirs, inputs, device, dtype, ours_kw, torch_kw)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_transformer_memory_mask_float_and_unbatched(dtype, device):
    """A float (T, S) memory mask, and (S, E)/(T, E) inputs with (S,) padding masks."""
    torch.manual_seed(3)
    theirs = torch.nn.Transformer(E, H, 1, 2, FF, dropout=0.0)
    ours = nn.Transformer(E, H, 1, 2, FF, dropout=0.0, device=device, dtype=dtype)
    theirs = _load(ours, theirs, dtype)
    memory_mask = _rand((T, S), 6)
    pad = np.array([False, False, False, True, True])
    ours_kw = {"memory_mask": ag.tensor(memory_mask, dtype=dtype, device=device),
               "src_key_padding_mask": pad}
    torch_kw = {"memory_mask": torch.tensor(memory_mask, dtype=getattr(torch, dtype)),
                "src_key_padding_mask": torch.from_numpy(pad)}
    inputs = [_rand(_seq(S, False, batched=False), 7), _rand(_seq(T, False, batched=False), 8)]
    _compare(ours, theirs, inputs, device, dtype, ours_kw, torch_kw)


@pytest.mark.parametrize("activation", ["gelu", "callable"])
def test_transformer_activation_names_and_callables(activation, device):
    torch.manual_seed(4)
    ours_act, torch_act = {"gelu": ("gelu", "gelu"),
                           "callable": (F.gelu, torch.nn.functional.gelu)}[activation]
    theirs = torch.nn.Transformer(E, H, 1, 1, FF, dropout=0.0, activation=torch_act,
                                  batch_first=True)
    ours = nn.Transformer(E, H, 1, 1, FF, dropout=0.0, activation=ours_act, batch_first=True,
                          device=device)
    theirs = _load(ours, theirs, "float32")
    inputs = [_rand((N, S, E), 9), _rand((N, T, E), 10)]
    _compare(ours, theirs, inputs, device, "float32", {}, {})


def test_encoder_with_a_module_activation(device):
    """An ``nn.GELU()`` activation is a registered child, copied into every layer.

    (Only the encoder is compared: torch 2.13's ``TransformerDecoderLayer.__setstate__``
    swaps a Module activation for ``F.relu`` when ``TransformerDecoder`` deep-copies it.)
    """
    torch.manual_seed(4)
    layer = torch.nn.TransformerEncoderLayer(E, H, FF, dropout=0.0, activation=torch.nn.GELU())
    theirs = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, FF, dropout=0.0,
                                                            activation=nn.GELU(),
                                                            device=device), 2)
    assert list(ours.layers[0]._modules)[-1] == "activation"
    assert ours.layers[0].activation is not ours.layers[1].activation
    theirs = _load(ours, theirs, "float32")
    _compare(ours, theirs, [_rand((S, N, E), 9)], device, "float32", {}, {})


def test_is_causal_without_a_mask_applies_the_causal_mask(device):
    """torch needs the mask with ``*_is_causal=True``; Lamina builds it (documented)."""
    torch.manual_seed(5)
    theirs = torch.nn.Transformer(E, H, 1, 1, FF, dropout=0.0, batch_first=True)
    ours = nn.Transformer(E, H, 1, 1, FF, dropout=0.0, batch_first=True, device=device)
    theirs = _load(ours, theirs, "float32")
    gen = torch.nn.Transformer.generate_square_subsequent_mask
    torch_kw = {"src_mask": gen(S), "tgt_mask": gen(T), "src_is_causal": True,
                "tgt_is_causal": True}
    inputs = [_rand((N, S, E), 11), _rand((N, T, E), 12)]
    _compare(ours, theirs, inputs, device, "float32",
             {"src_is_causal": True, "tgt_is_causal": True}, torch_kw)


# ----- structure: state dict, copies, init, the mask helper --------------------------


def test_state_dict_loads_into_torch_both_ways():
    torch.manual_seed(6)
    ours = nn.Transformer(E, H, 2, 1, FF, dropout=0.0)
    theirs = torch.nn.Transformer(E, H, 2, 1, FF, dropout=0.0).eval()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert "encoder.layers.1.self_attn.in_proj_weight" in ours.state_dict()
    assert "decoder.norm.weight" in ours.state_dict()
    state = {k: torch.tensor(to_numpy(v)) for k, v in ours.state_dict().items()}
    theirs.load_state_dict(state, strict=True)
    src, tgt = _rand((S, N, E), 13), _rand((T, N, E), 14)
    ours.eval()
    out = ours(ag.tensor(src, dtype="float32"), ag.tensor(tgt, dtype="float32"))
    ref = theirs(torch.tensor(src, dtype=torch.float32), torch.tensor(tgt, dtype=torch.float32))
    assert_close(out, ref, *TOL["float32"])


def test_stack_layers_are_independent_deep_copies():
    layer = nn.TransformerEncoderLayer(E, H, FF, dropout=0.0)
    encoder = nn.TransformerEncoder(layer, 3)
    assert len(encoder.layers) == 3 and encoder.num_layers == 3 and encoder.norm is None
    weights = [lay.self_attn.in_proj_weight for lay in encoder.layers]
    assert len({id(w) for w in weights}) == 3 and all(w is not layer.self_attn.in_proj_weight
                                                      for w in weights)
    for w in weights:  # torch's clones start equal to the given layer
        np.testing.assert_array_equal(to_numpy(w), to_numpy(layer.self_attn.in_proj_weight))
    decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, FF), 2)
    assert [name.split(".")[:2] for name, _ in decoder.named_parameters()][0] == ["layers", "0"]
    assert len(list(nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, FF), 0)
                    .parameters())) == 0


def test_transformer_redraws_every_matrix():
    """Like torch's ``_reset_parameters``: the copied layers no longer share values."""
    model = nn.Transformer(E, H, 2, 2, FF)
    first, second = (to_numpy(model.encoder.layers[i].linear1.weight) for i in (0, 1))
    assert not np.array_equal(first, second)
    bound = np.sqrt(6.0 / (E + FF))
    assert np.abs(first).max() <= bound
    assert (model.d_model, model.nhead, model.batch_first) == (E, H, False)


def test_custom_encoder_and_decoder_are_used():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, FF, dropout=0.0), 1)
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, FF, dropout=0.0), 1)
    model = nn.Transformer(E, H, custom_encoder=enc, custom_decoder=dec)
    assert model.encoder is enc and model.decoder is dec
    assert list(model.state_dict())[0] == "encoder.layers.0.self_attn.in_proj_weight"
    assert model(ag.ones(S, N, E), ag.ones(T, N, E)).shape == (T, N, E)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_generate_square_subsequent_mask_matches_torch(dtype, device):
    ours = nn.Transformer.generate_square_subsequent_mask(6, device=device, dtype=dtype)
    ref = torch.nn.Transformer.generate_square_subsequent_mask(6, dtype=getattr(torch, dtype))
    assert ours.dtype == dtype and not ours.requires_grad
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    again = nn.Transformer.generate_square_subsequent_mask(6, device=device, dtype=dtype)
    assert again is not ours  # a fresh tensor each call, safe to modify in place


# ----- errors ----------------------------------------------------------------------------


def _model():
    return nn.Transformer(E, H, 1, 1, FF, dropout=0.0, batch_first=True)


@pytest.mark.parametrize("call,message", [
    (lambda: _model()(ag.ones(2, S, E), ag.ones(3, T, E)),
     r"Transformer\(d_model=8, nhead=2\): src \(2, 5, 8\), tgt \(3, 4, 8\) have different "
     r"batch sizes"),
    (lambda: _model()(ag.ones(2, S, 6), ag.ones(2, T, E)),
     r"Transformer\(d_model=8, nhead=2\): src \(2, 5, 6\) must have d_model=8"),
    (lambda: _model()(ag.ones(2, S, E), ag.ones(T, E)),
     r"src \(2, 5, 8\), tgt \(4, 8\) must all be 3-D \(batched\) or all 2-D"),
    (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, FF), 2)(ag.ones(S, N, 6)),
     r"TransformerEncoder\(num_layers=2\): src \(5, 2, 6\) must have d_model=8"),
    (lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, FF), 1)(
        ag.ones(T, 2, E), ag.ones(S, 3, E)),
     r"TransformerDecoder\(num_layers=1\): tgt \(4, 2, 8\), memory \(5, 3, 8\) have "
     r"different batch sizes"),
    (lambda: nn.TransformerDecoderLayer(E, H, FF)(ag.ones(T, 2, E), ag.ones(2, S, 3, E)),
     r"TransformerDecoderLayer\(d_model=8, nhead=2\): tgt \(4, 2, 8\), memory \(2, 5, 3, 8\)"),
    (lambda: nn.TransformerEncoderLayer(E, H, FF)(ag.ones(S, E + 1)),
     r"TransformerEncoderLayer\(d_model=8, nhead=2\): src \(5, 9\) must have d_model=8"),
    (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, FF), -1),
     "TransformerEncoder: num_layers must be a non-negative int, got -1"),
    (lambda: nn.Transformer.generate_square_subsequent_mask(-2), "sz must be a non-negative"),
    (lambda: nn.Transformer(E, H, 1, 1, FF, activation="swish"), "activation must be one of"),
])
def test_errors_name_the_module_and_shapes(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_shape_errors_are_shape_errors():
    with pytest.raises(nn.ShapeError):
        _model()(ag.ones(2, S, E), ag.ones(3, T, E))
    with pytest.raises(TypeError, match="the layer must be a Module"):
        nn.TransformerDecoder("layer", 2)
