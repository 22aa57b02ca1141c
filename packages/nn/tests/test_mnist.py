"""MNIST IDX reader: real files, the bundled subset, tiny written files, bad files."""

from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest
from lamina.data import MNIST, DatasetFileError, bundled_mnist_dir, download_mnist, read_idx
from lamina.data._mnist import FILES


def _write_idx(path, array: np.ndarray, code: int = 0x08, compress: bool = True) -> None:
    header = struct.pack(">HBB", 0, code, array.ndim) + struct.pack(f">{array.ndim}I",
                                                                     *array.shape)
    raw = header + array.astype(np.uint8).tobytes()
    if compress:
        with gzip.open(path, "wb") as f:
            f.write(raw)
    else:
        path.write_bytes(raw)


def _tiny_mnist(root, n: int = 3):
    images = np.arange(n * 28 * 28, dtype=np.int64).reshape(n, 28, 28) % 256
    labels = np.arange(n) % 10
    _write_idx(root / "train-images-idx3-ubyte.gz", images)
    _write_idx(root / "train-labels-idx1-ubyte.gz", labels)
    return images, labels


def test_tiny_written_file(tmp_path):
    images, labels = _tiny_mnist(tmp_path)
    ds = MNIST(tmp_path, train=True)
    assert len(ds) == 3
    np.testing.assert_array_equal(ds.data, images)
    image, label = ds[2]
    assert image.dtype == np.uint8 and image.shape == (28, 28) and int(label) == 2
    _write_idx(tmp_path / "plain-idx1-ubyte", labels, compress=False)
    np.testing.assert_array_equal(read_idx(tmp_path / "plain-idx1-ubyte"), labels)


def test_missing_file_is_named(tmp_path):
    _tiny_mnist(tmp_path)
    (tmp_path / "train-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(FileNotFoundError, match="train-labels-idx1-ubyte.gz"):
        MNIST(tmp_path)
    with pytest.raises(FileNotFoundError, match="t10k-images"):
        MNIST(tmp_path, train=False)


def test_truncated_and_corrupt_files(tmp_path):
    _tiny_mnist(tmp_path)
    path = tmp_path / "train-images-idx3-ubyte.gz"
    raw = gzip.decompress(path.read_bytes())
    with gzip.open(path, "wb") as f:
        f.write(raw[:-10])
    with pytest.raises(DatasetFileError, match="truncated"):
        MNIST(tmp_path)
    with gzip.open(path, "wb") as f:
        f.write(b"\x01\x02" + raw[2:])
    with pytest.raises(DatasetFileError, match="magic"):
        MNIST(tmp_path)
    good = gzip.compress(raw)
    path.write_bytes(good[: len(good) // 2])
    with pytest.raises(DatasetFileError, match="gzip"):
        MNIST(tmp_path)
    path.write_bytes(b"not gzip at all")
    with pytest.raises(DatasetFileError, match="gzip"):
        MNIST(tmp_path)


def test_mismatched_counts(tmp_path):
    _tiny_mnist(tmp_path, n=3)
    _write_idx(tmp_path / "train-labels-idx1-ubyte.gz", np.arange(2))
    with pytest.raises(DatasetFileError, match="expected"):
        MNIST(tmp_path)


def test_bundled_subset():
    train, test = MNIST(), MNIST(train=False)
    assert (len(train), len(test)) == (5000, 1000)
    assert train.data.shape == (5000, 28, 28) and train.targets[:5].tolist() == [5, 0, 4, 1, 9]
    assert (bundled_mnist_dir() / "README.md").is_file()


def test_real_mnist(mnist_dir):
    train, test = MNIST(mnist_dir), MNIST(mnist_dir, train=False)
    assert (len(train), len(test)) == (60000, 10000)
    assert np.bincount(train.targets).tolist() == [5923, 6742, 5958, 6131, 5842, 5421,
                                                   5918, 6265, 5851, 5949]
    assert np.bincount(test.targets).tolist() == [980, 1135, 1032, 1010, 982, 892, 958,
                                                  1028, 974, 1009]
    np.testing.assert_array_equal(MNIST().data, train.data[:5000])


def test_download_from_a_mirror_checks_md5(tmp_path, mnist_dir):
    mirror = mnist_dir.resolve().as_uri() + "/"
    target = tmp_path / "mnist"
    download_mnist(target, mirrors=[str(tmp_path.as_uri()) + "/nowhere/", mirror])
    assert sorted(p.name for p in target.iterdir()) == sorted(FILES)
    assert len(MNIST(target, train=False, download=True)) == 10000  # present: no re-fetch


def test_download_failure_names_the_file(tmp_path):
    (tmp_path / "mirror").mkdir()
    (tmp_path / "mirror" / "train-images-idx3-ubyte.gz").write_bytes(b"not mnist")
    with pytest.raises(RuntimeError, match="train-images-idx3-ubyte.gz.*MD5 mismatch"):
        download_mnist(tmp_path / "out", mirrors=[(tmp_path / "mirror").as_uri() + "/"])


def test_dims_whose_product_overflows_are_a_dataset_file_error(tmp_path):
    # Four dims of 2**16 multiply to 2**64: numpy's int64 product wraps to 0.
    path = tmp_path / "big-idx4-ubyte"
    path.write_bytes(struct.pack(">HBB", 0, 0x08, 4) + struct.pack(">4I", *[2**16] * 4))
    with pytest.raises(DatasetFileError, match=r"big-idx4-ubyte holds 20 bytes but its header "
                       r"\(65536, 65536, 65536, 65536\) needs 18446744073709551636"):
        read_idx(path)


@pytest.mark.parametrize("bad", [10, 255])
def test_labels_out_of_range_are_a_dataset_file_error(tmp_path, bad):
    _tiny_mnist(tmp_path)
    _write_idx(tmp_path / "train-labels-idx1-ubyte.gz", np.array([0, bad, 1]))
    with pytest.raises(DatasetFileError, match=rf"train-labels-idx1-ubyte.gz has label {bad} "
                       r"at index 1; labels must be in \[0, 10\)"):
        MNIST(tmp_path)
