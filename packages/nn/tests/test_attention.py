"""Attention layers against PyTorch: scaled_dot_product_attention, MultiheadAttention,
Transformer encoder/decoder layers (copied weights; values and gradients; masks),
positional embeddings, and the error messages for bad input."""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest
import torch
from _torch_helpers import assert_close, copy_weights
from lamina import autograd as ag
from lamina import nn
from lamina.nn import functional as F

TOL = {"rtol": 1e-4, "atol": 1e-5}


def _pair(rng, *shape):
    a = rng.standard_normal(shape).astype(np.float32)
    return ag.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _sdpa_case(mask_kind, rng):
    if mask_kind == "bool":
        keep = rng.random((2, 1, 5, 7)) > 0.3
        keep[..., 0] = True  # every query attends to something
        return keep, torch.from_numpy(keep)
    if mask_kind == "bool_tensor":  # a bool Tensor, as a PyTorch user passes one
        keep, tkeep = _sdpa_case("bool", rng)
        return ag.tensor(keep), tkeep
    if mask_kind == "float":
        m = rng.standard_normal((5, 7)).astype(np.float32)
        return ag.tensor(m), torch.from_numpy(m)
    return None, None


@pytest.mark.parametrize("mask_kind", ["none", "bool", "bool_tensor", "float", "causal"])
def test_sdpa_matches_torch(mask_kind):
    rng = np.random.default_rng(0)
    (q, tq), (k, tk) = _pair(rng, 2, 3, 5, 8), _pair(rng, 2, 3, 7, 8)
    v, tv = _pair(rng, 2, 3, 7, 6)
    mask, tmask = _sdpa_case(mask_kind, rng)
    causal = mask_kind == "causal"
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
    ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=tmask,
                                                           is_causal=causal)
    assert_close(out, ref, **TOL)
    g = rng.standard_normal(ref.shape).astype(np.float32)
    out.backward(ag.tensor(g))
    ref.backward(torch.from_numpy(g))
    for ours, theirs in ((q, tq), (k, tk), (v, tv)):
        assert_close(ours.grad, theirs.grad, **TOL)


def test_sdpa_scale_and_dropout():
    rng = np.random.default_rng(1)
    (q, tq), (k, tk), (v, tv) = _pair(rng, 4, 6, 8), _pair(rng, 4, 6, 8), _pair(rng, 4, 6, 8)
    out = F.scaled_dot_product_attention(q, k, v, scale=0.3)
    ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, scale=0.3)
    assert_close(out, ref, **TOL)
    ag.manual_seed(0)
    dropped = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).detach().numpy()
    assert not np.allclose(dropped, out.detach().numpy())
    assert np.isfinite(dropped).all()


def _mha_pair(batch_first=True, kdim=None, vdim=None, bias=True):
    torch.manual_seed(0)
    t = torch.nn.MultiheadAttention(16, 4, bias=bias, kdim=kdim, vdim=vdim,
                                    batch_first=batch_first)
    ours = nn.MultiheadAttention(16, 4, bias=bias, kdim=kdim, vdim=vdim, batch_first=batch_first)
    assert list(ours.state_dict()) == list(t.state_dict())
    copy_weights(t, ours)
    return ours, t


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("masks", ["none", "causal_bool", "float_padding", "3d_bool",
                                   "3d_bool_tensor"])
def test_mha_matches_torch(batch_first, masks):
    rng = np.random.default_rng(2)
    ours, t = _mha_pair(batch_first)
    n, length, s = 3, 5, 6
    shape_q = (n, length, 16) if batch_first else (length, n, 16)
    shape_kv = (n, s, 16) if batch_first else (s, n, 16)
    (q, tq), (k, tk), (v, tv) = _pair(rng, *shape_q), _pair(rng, *shape_kv), _pair(rng, *shape_kv)
    kw, tkw = {}, {}
    if masks == "causal_bool":
        m = np.triu(np.ones((length, s), dtype=bool), 1)
        kw["attn_mask"], tkw["attn_mask"] = m, torch.from_numpy(m)
    elif masks == "float_padding":
        pad = np.zeros((n, s), dtype=np.float32)
        pad[0, -2:] = -np.inf
        fm = rng.standard_normal((length, s)).astype(np.float32)
        kw.update(key_padding_mask=ag.tensor(pad), attn_mask=ag.tensor(fm))
        tkw.update(key_padding_mask=torch.from_numpy(pad), attn_mask=torch.from_numpy(fm))
    elif masks in ("3d_bool", "3d_bool_tensor"):
        m = rng.random((n * 4, length, s)) > 0.7
        m[..., 0] = False
        kw["attn_mask"], tkw["attn_mask"] = m, torch.from_numpy(m)
        if masks == "3d_bool_tensor":  # a bool Tensor, as a PyTorch user passes one
            kw["attn_mask"] = ag.tensor(m)
    out, w = ours(q, k, v, **kw)
    ref, tw = t(tq, tk, tv, **tkw)
    assert_close(out, ref, **TOL)
    assert_close(w, tw, **TOL)
    g = rng.standard_normal(ref.shape).astype(np.float32)
    (out * ag.tensor(g)).sum().backward()
    (ref * torch.from_numpy(g)).sum().backward()
    for ours_t, theirs in ((q, tq), (k, tk), (v, tv)):
        assert_close(ours_t.grad, theirs.grad, **TOL)
    grads = dict(ours.named_parameters())
    for name, p in t.named_parameters():
        assert_close(grads[name].grad, p.grad, **TOL)


def test_mha_separate_kv_dims_unbatched_and_per_head_weights():
    rng = np.random.default_rng(3)
    ours, t = _mha_pair(kdim=10, vdim=12)
    (q, tq), (k, tk), (v, tv) = _pair(rng, 2, 4, 16), _pair(rng, 2, 6, 10), _pair(rng, 2, 6, 12)
    out, w = ours(q, k, v, average_attn_weights=False)
    ref, tw = t(tq, tk, tv, average_attn_weights=False)
    assert_close(out, ref, **TOL)
    assert_close(w, tw, **TOL)
    ours, t = _mha_pair(bias=False)
    x, tx = _pair(rng, 5, 16)
    out, w = ours(x, x, x, need_weights=True)
    ref, tw = t(tx, tx, tx)
    assert_close(out, ref, **TOL)
    assert_close(w, tw, **TOL)
    assert ours(x, x, x, need_weights=False)[1] is None


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_matches_torch(norm_first, activation):
    rng = np.random.default_rng(4)
    torch.manual_seed(0)
    t = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, activation=activation,
                                         batch_first=True, norm_first=norm_first)
    ours = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, activation=activation,
                                      batch_first=True, norm_first=norm_first)
    assert list(ours.state_dict()) == list(t.state_dict())
    copy_weights(t, ours)
    x, tx = _pair(rng, 2, 5, 16)
    pad = np.zeros((2, 5), dtype=bool)
    pad[1, -1] = True
    mask = np.triu(np.ones((5, 5), dtype=bool), 1)
    out = ours(x, src_mask=mask, src_key_padding_mask=pad)
    ref = t(tx, src_mask=torch.from_numpy(mask), src_key_padding_mask=torch.from_numpy(pad))
    assert_close(out, ref, **TOL)
    out.sum().backward()
    ref.sum().backward()
    assert_close(x.grad, tx.grad, **TOL)
    grads = dict(ours.named_parameters())
    for name, p in t.named_parameters():
        assert_close(grads[name].grad, p.grad, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch(norm_first):
    rng = np.random.default_rng(5)
    torch.manual_seed(0)
    t = torch.nn.TransformerDecoderLayer(16, 4, 32, dropout=0.0, batch_first=True,
                                         norm_first=norm_first)
    ours = nn.TransformerDecoderLayer(16, 4, 32, dropout=0.0, batch_first=True,
                                      norm_first=norm_first)
    assert list(ours.state_dict()) == list(t.state_dict())
    copy_weights(t, ours)
    (x, tx), (mem, tmem) = _pair(rng, 2, 5, 16), _pair(rng, 2, 7, 16)
    mask = np.triu(np.ones((5, 5), dtype=bool), 1)
    out = ours(x, mem, tgt_mask=mask)
    ref = t(tx, tmem, tgt_mask=torch.from_numpy(mask))
    assert_close(out, ref, **TOL)
    out.sum().backward()
    ref.sum().backward()
    assert_close(x.grad, tx.grad, **TOL)
    assert_close(mem.grad, tmem.grad, **TOL)


def test_mha_is_causal_builds_the_mask():
    rng = np.random.default_rng(6)
    ours, t = _mha_pair()
    x, tx = _pair(rng, 2, 5, 16)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5)
    out, _ = ours(x, x, x, is_causal=True)
    ref, _ = t(tx, tx, tx, attn_mask=mask, is_causal=True)
    assert_close(out, ref, **TOL)


def test_positional_embeddings():
    pe = nn.SinusoidalPositionalEncoding(8, 20)
    table = pe(20).numpy()
    pos, i = 7, 2
    assert np.isclose(table[pos, 2 * i], np.sin(pos / 10000 ** (2 * i / 8)), atol=1e-6)
    assert np.isclose(table[pos, 2 * i + 1], np.cos(pos / 10000 ** (2 * i / 8)), atol=1e-6)
    np.testing.assert_array_equal(pe(3, offset=7).numpy(), table[7:10])
    assert list(pe.state_dict()) == []
    learned = nn.PositionalEmbedding(10, 4, std=0.02)
    np.testing.assert_array_equal(learned(4, offset=2).detach().numpy(),
                                  learned.weight.detach().numpy()[2:6])
    learned(3).sum().backward()
    assert learned.weight.grad.numpy()[:3].sum() == pytest.approx(12.0)
    assert learned.weight.grad.numpy()[3:].sum() == 0.0


@pytest.mark.parametrize("call, message", [
    (lambda: nn.MultiheadAttention(10, 3), "embed_dim 10 must be divisible by num_heads 3"),
    (lambda: nn.MultiheadAttention(8, 2, batch_first=True)(ag.ones(2, 3, 6), ag.ones(2, 3, 6),
                                                           ag.ones(2, 3, 6)),
     r"expected query of width 8, got shape \(2, 3, 6\)"),
    (lambda: nn.MultiheadAttention(8, 2, batch_first=True)(
        ag.ones(2, 3, 8), ag.ones(2, 4, 8), ag.ones(2, 4, 8), attn_mask=np.zeros((3, 3), bool)),
     r"attn_mask must have shape \(3, 4\) or \(4, 3, 4\).*got \(3, 3\)"),
    (lambda: nn.MultiheadAttention(8, 2, batch_first=True)(
        ag.ones(2, 3, 8), ag.ones(2, 4, 8), ag.ones(2, 4, 8),
        key_padding_mask=np.zeros((2, 3), bool)),
     r"key_padding_mask must have shape \(2, 4\).*got \(2, 3\)"),
    (lambda: F.scaled_dot_product_attention(ag.ones(2, 3, 8), ag.ones(2, 4, 6), ag.ones(2, 4, 6)),
     "same embedding size: 8 != 6"),
    (lambda: F.scaled_dot_product_attention(ag.ones(2, 3, 8), ag.ones(2, 4, 8), ag.ones(2, 5, 8)),
     "same sequence length: 4 != 5"),
    (lambda: F.scaled_dot_product_attention(ag.ones(2, 3, 8), ag.ones(2, 4, 8), ag.ones(2, 4, 8),
                                            attn_mask=np.ones((3, 5), bool)),
     r"attn_mask of shape \(3, 5\) does not broadcast to the scores' shape \(2, 3, 4\)"),
    (lambda: nn.PositionalEmbedding(8, 4)(9), "maximum length 8 .*sequence length 9"),
    (lambda: nn.TransformerEncoderLayer(8, 2, activation="tanh"), "activation must be one of"),
])
def test_errors_name_the_sizes(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("name", ["lamina.nn._attention", "lamina.nn._transformer",
                                  "lamina.nn._positional"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name),
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
