"""RNNCell, LSTMCell, RNN and LSTM against torch.nn with copied weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _torch_helpers import assert_close, copy_weights
from lamina import autograd as ag
from lamina import nn

RTOL, ATOL = 1e-4, 1e-5  # float32 through up to a dozen recurrent steps

_rng = np.random.default_rng(7)


def _pair(shape: tuple[int, ...]) -> tuple[ag.Tensor, torch.Tensor]:
    x = _rng.standard_normal(shape).astype(np.float32)
    return ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def _flat(out):
    """Tensors of a nested (output, state) result, in order."""
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _check(lamina_mod, torch_mod, x_shape, states=(), **tol):
    """Forward values, then input, state and every weight gradient for a random cotangent."""
    copy_weights(torch_mod, lamina_mod)
    lx, tx = _pair(x_shape)
    pairs = [_pair(s) for s in states]
    lstate = [p[0] for p in pairs]
    tstate = [p[1] for p in pairs]
    largs = (lx,) + ((tuple(lstate) if len(lstate) == 2 else lstate[0],) if states else ())
    targs = (tx,) + ((tuple(tstate) if len(tstate) == 2 else tstate[0],) if states else ())
    louts, touts = _flat(lamina_mod(*largs)), _flat(torch_mod(*targs))
    assert len(louts) == len(touts)
    lsum, tsum = 0, 0
    for lo, to in zip(louts, touts):
        assert_close(lo, to, RTOL, ATOL)
        cot = _rng.standard_normal(tuple(to.shape)).astype(np.float32)
        lsum = lsum + (lo * ag.tensor(cot)).sum()
        tsum = tsum + (to * torch.tensor(cot)).sum()
    lsum.backward()
    tsum.backward()
    assert_close(lx.grad, tx.grad, RTOL, ATOL)
    for ls, ts in zip(lstate, tstate):
        assert_close(ls.grad, ts.grad, RTOL, ATOL)
    tparams = dict(torch_mod.named_parameters())
    for name, p in lamina_mod.named_parameters():
        assert_close(p.grad, tparams[name].grad, RTOL, ATOL)


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
@pytest.mark.parametrize("with_state", [False, True])
def test_rnn_cell(nonlinearity, with_state):
    torch.manual_seed(0)
    t = torch.nn.RNNCell(4, 5, nonlinearity=nonlinearity)
    m = nn.RNNCell(4, 5, nonlinearity=nonlinearity)
    _check(m, t, (3, 4), [(3, 5)] if with_state else [])


@pytest.mark.parametrize("with_state", [False, True])
def test_lstm_cell(with_state):
    torch.manual_seed(1)
    t, m = torch.nn.LSTMCell(4, 5), nn.LSTMCell(4, 5)
    _check(m, t, (3, 4), [(3, 5), (3, 5)] if with_state else [])


def test_cells_unbatched_and_without_bias():
    torch.manual_seed(2)
    _check(nn.RNNCell(3, 2, bias=False), torch.nn.RNNCell(3, 2, bias=False), (3,), [(2,)])
    _check(nn.LSTMCell(3, 2, bias=False), torch.nn.LSTMCell(3, 2, bias=False), (3,),
           [(2,), (2,)])


@pytest.mark.parametrize("num_layers", [1, 3])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("with_state", [False, True])
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn(num_layers, batch_first, with_state, nonlinearity):
    torch.manual_seed(3)
    kw = dict(num_layers=num_layers, batch_first=batch_first, nonlinearity=nonlinearity)
    t, m = torch.nn.RNN(4, 5, **kw), nn.RNN(4, 5, **kw)
    shape = (2, 6, 4) if batch_first else (6, 2, 4)
    _check(m, t, shape, [(num_layers, 2, 5)] if with_state else [])


@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("with_state", [False, True])
def test_lstm(num_layers, batch_first, with_state):
    torch.manual_seed(4)
    t = torch.nn.LSTM(4, 5, num_layers=num_layers, batch_first=batch_first)
    m = nn.LSTM(4, 5, num_layers=num_layers, batch_first=batch_first)
    shape = (3, 7, 4) if batch_first else (7, 3, 4)
    states = [(num_layers, 3, 5)] * 2 if with_state else []
    _check(m, t, shape, states)


def test_unbatched_sequences_and_no_bias():
    torch.manual_seed(5)
    _check(nn.LSTM(3, 4, 2, bias=False), torch.nn.LSTM(3, 4, 2, bias=False), (5, 3),
           [(2, 4), (2, 4)])
    _check(nn.RNN(3, 4, 2), torch.nn.RNN(3, 4, 2), (5, 3), [(2, 4)])


def test_dropout_between_layers_only_in_training():
    m = nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    x = ag.tensor(_rng.standard_normal((6, 2, 3)).astype(np.float32))
    ag.manual_seed(0)
    a = m(x)[0].detach().numpy()
    ag.manual_seed(1)
    b = m(x)[0].detach().numpy()
    assert not np.allclose(a, b)
    m.eval()
    np.testing.assert_array_equal(m(x)[0].detach().numpy(), m(x)[0].detach().numpy())
    t = torch.nn.LSTM(3, 4, num_layers=2, dropout=0.5).eval()
    copy_weights(t, m)
    assert_close(m(x)[0], t(torch.tensor(x.numpy()))[0], RTOL, ATOL)


def test_state_dict_names_and_torch_state_dict_loads():
    t = torch.nn.LSTM(6, 8, num_layers=2)
    m = nn.LSTM(6, 8, num_layers=2)
    assert list(m.state_dict()) == list(t.state_dict())
    assert [tuple(v.shape) for v in m.state_dict().values()] == [
        tuple(v.shape) for v in t.state_dict().values()]
    m.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), t.state_dict()[k].numpy())
    r = nn.RNN(3, 2, num_layers=3, bias=False)
    assert list(r.state_dict()) == list(torch.nn.RNN(3, 2, num_layers=3, bias=False).state_dict())
    assert list(nn.LSTMCell(3, 2).state_dict()) == list(torch.nn.LSTMCell(3, 2).state_dict())


def test_default_init_is_uniform_within_bound():
    m = nn.LSTM(10, 16, num_layers=2)
    for p in m.parameters():
        v = p.detach().numpy()
        assert np.abs(v).max() <= 0.25 and v.std() > 0.1


def test_output_is_last_layer_and_final_states_are_last_step():
    m = nn.LSTM(3, 4, num_layers=2)
    out, (h, c) = m(ag.tensor(_rng.standard_normal((5, 2, 3)).astype(np.float32)))
    np.testing.assert_array_equal(out.detach().numpy()[-1], h.detach().numpy()[-1])
    assert c.shape == (2, 2, 4)


def test_bad_shapes_name_the_layer_and_shapes():
    m = nn.LSTM(3, 4, num_layers=2)
    with pytest.raises(nn.ShapeError, match=r"LSTM\(3, 4, num_layers=2\).*\(5, 2, 7\)"):
        m(ag.zeros(5, 2, 7))
    with pytest.raises(nn.ShapeError, match=r"LSTM\(3, 4, num_layers=2\): expected h_0 of "
                                            r"shape \(2, 2, 4\).*got \(1, 2, 4\)"):
        m(ag.zeros(5, 2, 3), (ag.zeros(1, 2, 4), ag.zeros(2, 2, 4)))
    with pytest.raises(nn.ShapeError, match=r"c_0 of shape \(2, 2, 4\).*\(2, 2, 5\)"):
        m(ag.zeros(5, 2, 3), (ag.zeros(2, 2, 4), ag.zeros(2, 2, 5)))
    with pytest.raises(TypeError, match="pair"):
        m(ag.zeros(5, 2, 3), ag.zeros(2, 2, 4))
    with pytest.raises(nn.ShapeError, match=r"RNN\(3, 4\).*got \(2, 3, 3, 3\)"):
        nn.RNN(3, 4)(ag.zeros(2, 3, 3, 3))
    with pytest.raises(nn.ShapeError, match=r"RNN\(3, 4\).*got \(\)"):
        nn.RNN(3, 4)(ag.tensor(1.0))
    with pytest.raises(nn.ShapeError, match=r"L >= 1, got \(2, 0, 3\)"):
        nn.LSTM(3, 4, batch_first=True)(ag.zeros(2, 0, 3))
    with pytest.raises(nn.ShapeError, match=r"RNNCell\(3, 4\).*hx of shape \(2, 4\).*\(3, 4\)"):
        nn.RNNCell(3, 4)(ag.zeros(2, 3), ag.zeros(3, 4))
    with pytest.raises(nn.ShapeError, match=r"LSTMCell\(3, 4\).*\(2, 5\)"):
        nn.LSTMCell(3, 4)(ag.zeros(2, 5))
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="dropout"):
        nn.LSTM(3, 4, dropout=1.5)


def test_embedding_out_of_range_ids_raise_index_error():
    emb = nn.Embedding(10, 3)
    with pytest.raises(IndexError, match=r"token id 12 .* vocabulary of size 10"):
        emb(ag.tensor(np.array([[1, 12], [3, 4]])))
    with pytest.raises(IndexError, match=r"token id -1 .* size 10"):
        emb(ag.tensor(np.array([-1])))


def test_embedding_is_a_gather_with_scatter_add_backward():
    emb = nn.Embedding(6, 2)
    ids = ag.tensor(np.array([[1, 1], [4, 1]]))
    out = emb(ids)
    assert type(out.grad_fn).__name__ == "Take"
    out.sum().backward()
    np.testing.assert_array_equal(emb.weight.grad.numpy()[:, 0], [0, 3, 0, 0, 1, 0])


def test_lstm_and_rnn_on_every_device(device):
    torch.manual_seed(6)
    for t, m in ((torch.nn.LSTM(3, 4, 2), nn.LSTM(3, 4, 2, device=device)),
                 (torch.nn.RNN(3, 4, 2), nn.RNN(3, 4, 2, device=device))):
        copy_weights(t, m)
        x = _rng.standard_normal((5, 2, 3)).astype(np.float32)
        lx, tx = ag.tensor(x, device=device, requires_grad=True), torch.tensor(
            x, requires_grad=True)
        out, tout = m(lx)[0], t(tx)[0]
        assert_close(out, tout, RTOL, ATOL)
        out.sum().backward()
        tout.sum().backward()
        assert_close(lx.grad, tx.grad, RTOL, ATOL)
        assert_close(m.weight_hh_l1.grad, t.weight_hh_l1.grad, RTOL, ATOL)
