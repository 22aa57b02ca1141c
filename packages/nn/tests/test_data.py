"""Datasets, DataLoader ordering/shuffling/workers, transforms."""

from __future__ import annotations

import numpy as np
import pytest
from lamina.data import (
    ConcatDataset,
    DataLoader,
    Dataset,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)
from lamina.data import transforms as T


class Squares(Dataset):
    """Sample i: a transformed constant image and i * i (module level, so workers pickle it)."""

    def __init__(self, n: int, transform=None) -> None:
        self.n, self.transform = n, transform

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        image = np.full((1, 4, 4), float(i), dtype=np.float32)
        if self.transform is not None:
            image = self.transform(image)
        return image, np.int64(i * i)


def _numpy_batches(loader):
    return [tuple(np.asarray(x) for x in batch) for batch in loader]


def test_tensor_dataset_and_subset():
    ds = TensorDataset(np.arange(10).reshape(5, 2), np.arange(5))
    assert len(ds) == 5 and ds[2][0].tolist() == [4, 5]
    sub = Subset(ds, [4, 0])
    assert [int(sub[i][1]) for i in range(2)] == [4, 0]
    with pytest.raises(ValueError, match="first dimension"):
        TensorDataset(np.zeros((3, 2)), np.zeros(4))
    both = ConcatDataset([ds, sub])
    assert len(both) == 7 and int(both[6][1]) == 0


def test_random_split_is_reproducible_and_disjoint():
    ds = TensorDataset(np.arange(100))
    a = random_split(ds, [70, 30], generator=1)
    b = random_split(ds, [0.7, 0.3], generator=np.random.default_rng(1))
    assert a[0].indices == b[0].indices
    assert sorted(a[0].indices + a[1].indices) == list(range(100))
    with pytest.raises(ValueError, match="sum"):
        random_split(ds, [10, 10])


def test_loader_order_drop_last_and_len():
    ds = TensorDataset(np.arange(10), np.arange(10) * 2)
    loader = DataLoader(ds, batch_size=4, as_tensor=False)
    assert len(loader) == 3
    assert [y.tolist() for _, y in loader] == [[0, 2, 4, 6], [8, 10, 12, 14], [16, 18]]
    loader = DataLoader(ds, batch_size=4, drop_last=True, as_tensor=False)
    assert len(loader) == 2 and len(list(loader)) == 2


def test_shuffle_is_reproducible_and_changes_per_epoch():
    ds = TensorDataset(np.arange(50))
    first = [b[0].tolist() for b in DataLoader(ds, 10, shuffle=True, generator=3, as_tensor=False)]
    again = [b[0].tolist() for b in DataLoader(ds, 10, shuffle=True, generator=3, as_tensor=False)]
    assert first == again
    assert sorted(sum(first, [])) == list(range(50))
    loader = DataLoader(ds, 10, shuffle=True, generator=3, as_tensor=False)
    epoch1 = [b[0].tolist() for b in loader]
    epoch2 = [b[0].tolist() for b in loader]
    assert epoch1 == first and epoch2 != epoch1


def test_workers_give_the_same_batches_in_the_same_order():
    transform = T.Compose([T.RandomCrop(4, padding=1), T.RandomHorizontalFlip()])
    ds = Squares(37, transform)
    serial = _numpy_batches(DataLoader(ds, 5, shuffle=True, generator=7, as_tensor=False))
    parallel = _numpy_batches(DataLoader(ds, 5, shuffle=True, generator=7, num_workers=2,
                                         as_tensor=False))
    assert len(serial) == len(parallel) == 8
    for (xs, ys), (xp, yp) in zip(serial, parallel):
        np.testing.assert_array_equal(xs, xp)
        np.testing.assert_array_equal(ys, yp)


def test_custom_collate_and_worker_errors():
    ds = Squares(6)
    loader = DataLoader(ds, 3, collate_fn=lambda s: len(s), as_tensor=False)
    assert list(loader) == [3, 3]
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(ds, batch_size=0)
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(ds, num_workers=-1)


def test_default_collate_structures():
    batch = default_collate([{"x": np.zeros(2), "y": 1}, {"x": np.ones(2), "y": 2}])
    assert batch["x"].shape == (2, 2) and batch["y"].tolist() == [1, 2]


def test_transforms():
    image = np.arange(16, dtype=np.uint8).reshape(4, 4)
    x = T.ToTensor()(image)
    assert x.shape == (1, 4, 4) and x.dtype == np.float32 and x.max() == pytest.approx(15 / 255)
    assert T.ToTensor()(np.zeros((4, 4, 3), np.uint8)).shape == (3, 4, 4)
    y = T.Normalize([0.5], [0.25])(x)
    np.testing.assert_allclose(y, (x - 0.5) / 0.25, rtol=1e-6)
    with pytest.raises(ValueError, match="std"):
        T.Normalize([0.0], [0.0])
    crop = T.RandomCrop(4, padding=2)(x)
    assert crop.shape == (1, 4, 4)
    flipped = T.RandomHorizontalFlip(p=1.0)(x)
    np.testing.assert_array_equal(flipped, x[..., ::-1])
    with pytest.raises(ValueError, match="larger"):
        T.RandomCrop(9)(x)
    batch = np.stack([x, 2 * x])  # Normalize also takes (N, C, H, W) batches
    np.testing.assert_allclose(T.Normalize([0.5], [0.25])(batch), (batch - 0.5) / 0.25, rtol=1e-6)
    with pytest.raises(ValueError, match=r"Normalize: expected .*got shape \(4, 4\)"):
        T.Normalize([0.5], [0.25])(x[0])


def test_linear_transformation_and_zca():
    rng = np.random.default_rng(0)
    mixing = rng.normal(size=(12, 12))
    images = (rng.normal(size=(4000, 12)) @ mixing + 3.0).astype(np.float32).reshape(-1, 3, 2, 2)
    white = T.LinearTransformation.zca(images, eps=1e-6)
    out = white(images)
    assert out.shape == images.shape and out.dtype == np.float32
    # Whitened: zero mean, identity covariance; ZCA's matrix is symmetric.
    flat = out.reshape(len(out), -1)
    np.testing.assert_allclose(flat.mean(0), 0, atol=1e-3)
    np.testing.assert_allclose(np.cov(flat, rowvar=False, bias=True), np.eye(12), atol=2e-3)
    np.testing.assert_allclose(white.matrix, white.matrix.T, atol=1e-5)
    # One image or a batch: the same transform.
    np.testing.assert_allclose(white(images[7]), out[7], rtol=1e-5, atol=1e-5)
    # eps damps each direction's variance s to s / (s + eps).
    damped = T.LinearTransformation.zca(images, eps=5.0)(images).reshape(len(images), -1)
    s = np.linalg.eigvalsh(np.cov(images.reshape(len(images), -1), rowvar=False, bias=True))
    np.testing.assert_allclose(np.linalg.eigvalsh(np.cov(damped, rowvar=False, bias=True)),
                               s / (s + 5.0), rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match=r"C\*H\*W = 12, got shape \(3, 2, 3\)"):
        white(np.zeros((3, 2, 3), np.float32))
    with pytest.raises(ValueError, match="matrix must be"):
        T.LinearTransformation(np.eye(3), np.zeros(4))
    with pytest.raises(ValueError, match="eps must be > 0"):
        T.LinearTransformation.zca(images, eps=0)
    with pytest.raises(ValueError, match="at least 2 images"):
        T.LinearTransformation.zca(images[:1])


def test_loader_yields_tensors():
    pytest.importorskip("lamina.autograd")
    ds = TensorDataset(np.zeros((4, 3), np.float32), np.arange(4))
    x, y = next(iter(DataLoader(ds, batch_size=2)))
    assert x.shape == (2, 3) and x.dtype == "float32" and y.dtype == "int64"


class _Slow(Dataset):
    """Samples that take a while, so a worker can be killed mid-epoch."""

    def __init__(self, n: int, delay: float) -> None:
        self.n, self.delay = n, delay

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> np.ndarray:
        import time
        time.sleep(self.delay)
        return np.full(3, i, np.float32)


class _Failing(_Slow):
    def __getitem__(self, i: int) -> np.ndarray:
        if i == 5:
            raise KeyError(f"sample {i} is missing")
        return super().__getitem__(i)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_a_worker_killed_mid_epoch_raises_naming_the_worker(context):
    import os
    import signal
    import time

    from lamina.data import WorkerError

    loader = DataLoader(_Slow(400, 0.01), batch_size=4, num_workers=2, as_tensor=False,
                        multiprocessing_context=context)
    batches = iter(loader)
    next(batches)
    victim = [p for p in __import__("multiprocessing").active_children()
              if p.name == "lamina-data-worker-1"][0]
    os.kill(victim.pid, signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(WorkerError, match=rf"worker 1 \(pid {victim.pid}\) was killed by "
                       r"signal SIGKILL while batches were pending"):
        for _ in batches:
            pass
    assert time.monotonic() - start < 10
    assert not [p for p in __import__("multiprocessing").active_children()
                if p.name.startswith("lamina-data-worker")]


def test_worker_errors_reach_the_main_process_and_timeout_bounds_the_wait():
    from lamina.data import WorkerError

    loader = DataLoader(_Failing(12, 0.0), batch_size=2, num_workers=2, as_tensor=False)
    with pytest.raises(KeyError, match="sample 5 is missing"):
        list(loader)
    slow = DataLoader(_Slow(8, 2.0), batch_size=2, num_workers=1, as_tensor=False,
                      timeout=0.5)
    with pytest.raises(WorkerError, match=r"worker 0 \(pid \d+\) produced no batch within "
                       r"timeout=0.5 s"):
        next(iter(slow))
    with pytest.raises(ValueError, match="timeout"):
        DataLoader(_Slow(1, 0), timeout=-1)


def test_breaking_out_of_an_epoch_stops_the_workers():
    import multiprocessing

    loader = DataLoader(_Slow(40, 0.0), batch_size=2, num_workers=2, as_tensor=False)
    seen = []
    for batch in loader:
        seen.append(batch[:, 0].tolist())
        if len(seen) == 3:
            break
    assert seen == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    assert not [p for p in multiprocessing.active_children()
                if p.name.startswith("lamina-data-worker")]


def test_a_batch_that_cannot_be_sent_back_is_an_error_not_a_dead_worker():
    loader = DataLoader(_Slow(4, 0.0), batch_size=2, num_workers=1, as_tensor=False,
                        collate_fn=lambda samples: (lambda: samples))  # a lambda: unpicklable
    with pytest.raises(AttributeError, match="Can't pickle local object"):
        list(loader)
