"""CIFAR-10 reader: the real files, small written files, damaged files, and the restricted
unpickler refusing pickles that would run code."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
from conftest import shared_data_dir
from lamina.data import CIFAR10, DataLoader, DatasetFileError, SafeUnpickler, load_cifar_batch
from lamina.data import transforms as T
from lamina.models.recipes.cifar10 import (
    cifar10_datasets,
    parameter_groups,
    shifted_views,
    tta_accuracy,
)


@pytest.fixture
def cifar_dir():
    """The real CIFAR-10 folder; skips the test when it is absent."""
    path = shared_data_dir() / "cifar10"
    if not (path / "data_batch_1").is_file():
        pytest.skip(f"CIFAR-10 not found at {path} (set LAMINA_DATA to the shared data folder)")
    return path


def _write_batch(path, n: int, seed: int = 0, overrides=None) -> tuple[np.ndarray, list[int]]:
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
    labels = [int(v) for v in rng.integers(0, 10, n)]
    batch = {b"batch_label": b"test", b"labels": labels, b"data": data,
             b"filenames": [b"img_%d.png" % i for i in range(n)]}
    batch.update(overrides or {})
    path.write_bytes(pickle.dumps(batch, protocol=3))
    return data, labels


def _tiny_cifar(root, n: int = 4) -> tuple[np.ndarray, np.ndarray]:
    images, labels = [], []
    for i in range(1, 6):
        data, lab = _write_batch(root / f"data_batch_{i}", n, seed=i)
        images.append(data)
        labels += lab
    _write_batch(root / "test_batch", n, seed=9)
    return np.concatenate(images).reshape(-1, 3, 32, 32), np.array(labels)


def test_small_written_files(tmp_path):
    images, labels = _tiny_cifar(tmp_path)
    ds = CIFAR10(tmp_path, train=True)
    assert len(ds) == 20 and ds.data.dtype == np.uint8 and ds.targets.dtype == np.int64
    np.testing.assert_array_equal(ds.data, images)
    np.testing.assert_array_equal(ds.targets, labels)
    image, label = ds[7]
    assert image.shape == (3, 32, 32) and int(label) == labels[7]
    assert len(CIFAR10(tmp_path, train=False)) == 4


def test_recipe_datasets_normalise_and_augment(tmp_path):
    _tiny_cifar(tmp_path, n=8)
    train, test = cifar10_datasets(tmp_path, "crop-flip", train_size=16)
    x, y = next(iter(DataLoader(train, 16, shuffle=True, generator=0, as_tensor=False)))
    assert x.shape == (16, 3, 32, 32) and x.dtype == np.float32 and y.shape == (16,)
    x2, _ = next(iter(DataLoader(train, 16, shuffle=True, generator=0, as_tensor=False)))
    np.testing.assert_array_equal(x, x2)  # augmentation is reproducible from the seed
    plain, _ = next(iter(DataLoader(test, 8, as_tensor=False)))
    raw = CIFAR10(tmp_path, train=False).data[:8].astype(np.float32)
    expected = (raw / 255 - np.array([0.4914, 0.4822, 0.4465]).reshape(3, 1, 1)) \
        / np.array([0.2470, 0.2435, 0.2616]).reshape(3, 1, 1)
    np.testing.assert_allclose(plain, expected, rtol=1e-5, atol=1e-5)
    # Crops of the 1-pixel padded image: the image moved by at most one pixel, zeros
    # (the mean colour after normalising) filling what comes in.
    train1, _ = cifar10_datasets(tmp_path, "crop-flip", train_size=16, crop_padding=1)
    x, _ = next(iter(DataLoader(train1, 16, as_tensor=False)))
    for got, image in zip(x, train1.images):
        views = list(shifted_views(image[None], 1))
        assert any(np.array_equal(got, v[0]) for v in views)


def test_recipe_datasets_zca(tmp_path):
    _tiny_cifar(tmp_path, n=8)
    plain_train, plain_test = cifar10_datasets(tmp_path, "none")
    train, test = cifar10_datasets(tmp_path, "none", zca_eps=0.5)
    white = T.LinearTransformation.zca(plain_train.images, 0.5)  # fitted on training images
    np.testing.assert_allclose(train.images, white(plain_train.images), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(test.images, white(plain_test.images), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(train.targets, plain_train.targets)
    with pytest.raises(ValueError, match="augment must be one of"):
        cifar10_datasets(tmp_path, "rotate")
    with pytest.raises(ValueError, match="crop_padding and zca_eps must be >= 0"):
        cifar10_datasets(tmp_path, zca_eps=-1.0)


def test_shifted_views_and_tta_accuracy():
    rng = np.random.default_rng(0)
    images = rng.normal(size=(6, 3, 5, 5)).astype(np.float32)
    views = list(shifted_views(images, 2))
    assert len(views) == 2 * 5 * 5 and all(v.shape == images.shape for v in views)
    np.testing.assert_array_equal(views[12], images)  # (dy, dx) = (0, 0), not mirrored
    np.testing.assert_array_equal(views[25 + 12], images[..., ::-1])
    # views[13] is the image moved one pixel left: column j holds column j + 1.
    np.testing.assert_array_equal(views[13][..., :, :-1], images[..., :, 1:])
    assert not views[13][..., :, -1].any()
    # A linear classifier: TTA's argmax of summed softmaxes, computed directly.
    w = rng.normal(size=(75, 4)).astype(np.float32)
    targets = rng.integers(0, 4, 6)

    def logits(x):
        return x.reshape(len(x), -1) @ w
    probs = sum(np.exp(z - z.max(1, keepdims=True)) / np.exp(z - z.max(1, keepdims=True))
                .sum(1, keepdims=True) for z in map(logits, views))
    expected = float(np.mean(probs.argmax(1) == targets))
    assert tta_accuracy(logits, images, targets, shift=2, batch_size=4) == expected
    plain = list(shifted_views(images, 0))
    assert len(plain) == 2 and np.array_equal(plain[0], images)


def test_parameter_groups_decay_only_matrices_and_kernels():
    from lamina.models import ResNet9
    model = ResNet9()
    decayed, free = parameter_groups(model, 0.0)
    assert all(p.ndim > 1 for p in decayed["params"]) and "weight_decay" not in decayed
    assert all(p.ndim == 1 for p in free["params"]) and free["weight_decay"] == 0.0
    assert len(decayed["params"]) + len(free["params"]) == len(list(model.parameters()))
    assert len(decayed["params"]) == 10  # 8 convolutions, 2 linear layers


def test_missing_file_is_named(tmp_path):
    _tiny_cifar(tmp_path)
    os.remove(tmp_path / "data_batch_3")
    with pytest.raises(FileNotFoundError, match="data_batch_3"):
        CIFAR10(tmp_path)


def test_truncated_file(tmp_path):
    path = tmp_path / "data_batch_1"
    _write_batch(path, 3)
    raw = path.read_bytes()
    for cut in (len(raw) // 2, len(raw) - 5, 10):
        path.write_bytes(raw[:cut])
        with pytest.raises(DatasetFileError, match="data_batch_1"):
            load_cifar_batch(path)


def test_tampered_contents(tmp_path):
    path = tmp_path / "batch"
    _write_batch(path, 3, overrides={b"data": np.zeros((3, 100), np.uint8)})
    with pytest.raises(DatasetFileError, match=r"uint8 \(N, 3072\).*\(3, 100\)"):
        load_cifar_batch(path)
    _write_batch(path, 3, overrides={b"labels": [1, 2]})
    with pytest.raises(DatasetFileError, match="3 images but labels 2"):
        load_cifar_batch(path)
    _write_batch(path, 2, overrides={b"labels": [1, 12]})
    with pytest.raises(DatasetFileError, match="labels must be 0..9"):
        load_cifar_batch(path)
    path.write_bytes(pickle.dumps([1, 2, 3], protocol=2))
    with pytest.raises(DatasetFileError, match="not a dict"):
        load_cifar_batch(path)


@pytest.mark.parametrize("label,shown", [("3", "'3' \\(str\\)"), (2**70, f"{2**70} \\(int\\)"),
                                         (1.0, "1.0 \\(float\\)"), (-1, "-1 \\(int\\)")])
def test_labels_of_the_wrong_type_or_size_name_the_file(tmp_path, label, shown):
    path = tmp_path / "data_batch_1"
    _write_batch(path, 3, overrides={b"labels": [1, label, 2]})
    with pytest.raises(DatasetFileError, match=f"data_batch_1: labels must be 0..9, "
                       f"found {shown} at index 1"):
        load_cifar_batch(path)


class _RunsCode:
    def __reduce__(self):
        return (os.system, ("echo pwned > pwned.txt",))


def test_unpickler_refuses_code(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "data_batch_1"
    path.write_bytes(pickle.dumps({b"data": _RunsCode(), b"labels": []}, protocol=3))
    with pytest.raises(DatasetFileError, match=r"refusing to load global (posix|os|nt)\.system"):
        load_cifar_batch(path)
    assert not (tmp_path / "pwned.txt").exists()
    # Object arrays could carry arbitrary pickled objects: refused too.
    path.write_bytes(pickle.dumps({b"data": np.array([1, None], dtype=object)}, protocol=3))
    with pytest.raises(DatasetFileError, match="Python objects"):
        load_cifar_batch(path)
    with pytest.raises(pickle.UnpicklingError, match="builtins.eval"):
        SafeUnpickler(__import__("io").BytesIO(b"cbuiltins\neval\n.")).load()


def test_real_cifar10(cifar_dir):
    train = CIFAR10(cifar_dir, train=True)
    test = CIFAR10(cifar_dir, train=False)
    assert train.data.shape == (50000, 3, 32, 32) and test.data.shape == (10000, 3, 32, 32)
    assert train.targets[:5].tolist() == [6, 9, 9, 4, 1]
    assert test.targets[:4].tolist() == [3, 8, 8, 0]
    assert np.bincount(train.targets).tolist() == [5000] * 10
    assert np.bincount(train.targets[:10000]).tolist() == [1005, 974, 1032, 1016, 999, 937,
                                                          1030, 1001, 1025, 981]
    means = train.data.mean(axis=(0, 2, 3))
    np.testing.assert_allclose(means, [125.307, 122.950, 113.865], atol=1e-3)
    with open(cifar_dir / "test_batch", "rb") as f:
        reference = pickle.load(f, encoding="bytes")  # the trusted original, for comparison
    np.testing.assert_array_equal(test.data.reshape(10000, -1), reference[b"data"])
