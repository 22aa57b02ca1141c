"""The lines a PyTorch user writes first, each doing what PyTorch does (issue 20's list).

One test per line of the snippet, on every device; a line needing a dtype a
device lacks skips by asking the device (``kernel_dtypes``), so it runs there
as soon as the backend gains the dtype.
"""

from __future__ import annotations

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
import pytest
import torch
from lamina.data import TextCorpus

X = np.arange(12.0, dtype=np.float32).reshape(3, 4)


def _need(device: str, kernel: str, dtype: str) -> None:
    if dtype not in nd.get_device(device).kernel_dtypes[kernel]:
        pytest.skip(f"device {device}'s {kernel} lacks {dtype}")


def _pair(device: str):
    return ag.tensor(X, device=device), torch.from_numpy(X.copy())


def test_accuracy_of_argmax_equals_labels(device):
    _need(device, "ewise_eq", "bool")
    _need(device, "reduce_sum", "int64")
    logits = np.random.default_rng(0).standard_normal((8, 5)).astype(np.float32)
    y = np.random.default_rng(1).integers(0, 5, 8)
    acc = (ag.tensor(logits, device=device).argmax(1) == ag.tensor(y, device=device)).sum()
    want = (torch.from_numpy(logits).argmax(1) == torch.from_numpy(y)).sum()
    assert acc.dtype == ag.int64 and acc.item() == want.item()


def test_mask_read(device):
    _need(device, "ewise_gt", "bool")
    x, t = _pair(device)
    assert x[x > 2].tolist() == t[t > 2].tolist()


def test_long_of_a_mask_gathers_rows(device):
    _need(device, "ewise_gt", "bool")
    x, t = _pair(device)
    got, want = x[(x > 2).long()], t[(t > 2).long()]
    assert got.shape == tuple(want.shape) and got.tolist() == want.tolist()


def test_item_assignment(device):
    x, t = _pair(device)
    x[0, 0] = 10
    t[0, 0] = 10
    assert x.tolist() == t.tolist()


def test_int_tensor_times_a_number(device):
    _need(device, "scalar_mul", "int64")
    got, want = ag.tensor([1, 2], device=device) * 2, torch.tensor([1, 2]) * 2
    assert got.dtype == ag.int64 and got.tolist() == want.tolist()


def test_float32_times_float64_promotes(device):
    _need(device, "ewise_mul", "float64")
    got = ag.tensor(np.ones(2, np.float32), device=device) * ag.tensor(np.ones(2), device=device)
    want = torch.tensor(np.ones(2, np.float32)) * torch.tensor(np.ones(2))
    assert got.dtype.name == str(want.dtype).removeprefix("torch.")
    assert got.tolist() == want.tolist()


def test_dlpack_both_ways(device):
    x = ag.tensor(X, device=device).cpu()
    assert torch.from_dlpack(x).tolist() == X.tolist()
    assert np.from_dlpack(x).tolist() == X.tolist()


def test_torch_tensor_of_a_lamina_tensor(device):
    # .cpu() as in test_dlpack_both_ways: a CPU-only PyTorch refuses cuda memory
    x = ag.tensor(X, device=device).cpu()
    assert torch.tensor(x).tolist() == X.tolist()
    assert torch.tensor(ag.tensor(3.0, device=device).cpu()).item() == 3.0


def test_pytorch_spellings(device):
    x, t = _pair(device)
    assert x.mean(axis=1).tolist() == t.mean(axis=1).tolist()
    assert x.t().tolist() == t.t().tolist()
    assert x.cpu().device.name in ("cpu", "numpy")
    a = np.ones(3, np.float32)
    assert ag.from_numpy(a).tolist() == torch.from_numpy(a).tolist()
    with ag.inference_mode():
        assert not (ag.ones(2, requires_grad=True, device=device) * 2).requires_grad


def test_logsumexp_over_several_or_all_dims(device):
    x, t = _pair(device)
    np.testing.assert_allclose(ag.logsumexp(x, (0, 1)).item(), torch.logsumexp(t, (0, 1)).item(),
                               rtol=1e-6)
    np.testing.assert_allclose(ag.logsumexp(x, None).item(), torch.logsumexp(t, (0, 1)).item(),
                               rtol=1e-6)


def test_text_corpus_maps_unseen_test_tokens_to_unk():
    corpus = TextCorpus("the cat sat\n", "the dog\n", "a cat\n")
    unk = corpus.vocab.itos.index("<unk>")
    assert corpus.test.tolist() == [unk, corpus.vocab.itos.index("cat"),
                                    corpus.vocab.itos.index("<eos>")]
