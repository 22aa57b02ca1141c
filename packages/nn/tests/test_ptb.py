"""PTB / TextCorpus readers, batchify and truncated-BPTT batches."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import shared_data_dir
from lamina.data import PTB, BPTTBatches, TextCorpus, batchify


def test_word_corpus_on_a_small_text(tmp_path):
    (tmp_path / "train.txt").write_text("the cat sat\nthe dog\n")
    (tmp_path / "valid.txt").write_text("the dog sat\n")
    (tmp_path / "test.txt").write_text("cat\n")
    corpus = TextCorpus.from_files(tmp_path / "train.txt", tmp_path / "valid.txt",
                                   tmp_path / "test.txt")
    assert corpus.vocab.itos == ["the", "cat", "sat", "<eos>", "dog"]
    assert corpus.train.tolist() == [0, 1, 2, 3, 0, 4, 3]
    assert corpus.valid.tolist() == [0, 4, 2, 3] and corpus.test.tolist() == [1, 3]
    assert corpus.train.dtype == np.int64
    assert corpus.tokenizer.decode(corpus.valid) == "the dog sat\n"


def test_char_corpus_and_unknown_tokens(tmp_path):
    corpus = TextCorpus("abca", "cab", "b", level="char")
    assert corpus.vocab.itos == ["a", "b", "c"] and corpus.train.tolist() == [0, 1, 2, 0]
    with pytest.raises(KeyError, match="'z'"):
        TextCorpus("abc", "z", "a", level="char", unk=None)
    with pytest.raises(KeyError, match="'unseen'"):
        TextCorpus("a b\n", "unseen\n", "a\n", unk=None)
    with pytest.raises(ValueError, match="level"):
        TextCorpus("a", "a", "a", level="byte")
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        TextCorpus.from_files(tmp_path / "nope.txt", tmp_path / "a", tmp_path / "b")


def test_unseen_tokens_map_to_unk(tmp_path):
    # the train text has <unk> (as PTB does): it keeps its id, the vocabulary does not grow
    corpus = TextCorpus("a <unk> b\n", "a zebra\n", "quagga b\n")
    assert corpus.vocab.itos == ["a", "<unk>", "b", "<eos>"]
    assert corpus.valid.tolist() == [0, 1, 3] and corpus.test.tolist() == [1, 2, 3]
    # without <unk> in train, it is added last, only when a token needs it
    seen = TextCorpus("a b\n", "b a\n", "a\n")
    assert "<unk>" not in seen.vocab and len(seen.vocab) == 3
    grown = TextCorpus("a b\n", "b a\n", "a c\n")
    assert grown.vocab.itos == ["a", "b", "<eos>", "<unk>"] and grown.test.tolist() == [0, 3, 2]
    assert grown.tokenizer.encode("d a\n").tolist() == [3, 0, 2]  # later text too
    assert grown.tokenizer.decode(grown.test) == "a <unk>\n"
    # a token of one's own choosing, at the character level too
    chars = TextCorpus("abca", "cab", "bz", level="char", unk="?")
    assert chars.vocab.itos == ["a", "b", "c", "?"] and chars.test.tolist() == [1, 3]
    (tmp_path / "tr.txt").write_text("x y\n")
    (tmp_path / "va.txt").write_text("x w\n")
    from_files = TextCorpus.from_files(tmp_path / "tr.txt", tmp_path / "va.txt",
                                       tmp_path / "va.txt", unk="<oov>")
    assert from_files.valid.tolist() == [0, 3, 2] and from_files.vocab.itos[3] == "<oov>"


def test_ptb_reader_on_written_files(tmp_path):
    for split, text in (("train", " a b <unk>\n b a\n"), ("valid", " b\n"), ("test", " a\n")):
        (tmp_path / f"ptb.{split}.txt").write_text(text)
    corpus = PTB(tmp_path)
    assert corpus.vocab.itos == ["a", "b", "<unk>", "<eos>"]
    assert corpus.train.tolist() == [0, 1, 2, 3, 1, 0, 3]
    (tmp_path / "ptb.test.txt").unlink()
    with pytest.raises(FileNotFoundError, match="ptb.test.txt"):
        PTB(tmp_path)


def test_ptb_real_files():
    root = shared_data_dir() / "ptb"
    if not (root / "ptb.train.txt").is_file():
        pytest.skip(f"PTB not found at {root} (set LAMINA_DATA to the shared data folder)")
    corpus = PTB(root)
    assert len(corpus.vocab) == 10000
    assert (len(corpus.train), len(corpus.valid), len(corpus.test)) == (929589, 73760, 82430)
    assert "<eos>" in corpus.vocab and "<unk>" in corpus.vocab
    assert corpus.tokenizer.decode(corpus.train[:4]).split()[:3] == ["aer", "banknote",
                                                                     "berlitz"]


def test_batchify_columns_are_contiguous():
    data = batchify(np.arange(11), 3)
    assert data.shape == (3, 3) and data.dtype == np.int64
    assert data[:, 1].tolist() == [3, 4, 5]
    with pytest.raises(ValueError, match="fewer than batch_size"):
        batchify(np.arange(2), 3)
    with pytest.raises(ValueError, match="batch_size"):
        batchify(np.arange(5), 0)


def test_bptt_batches_shift_targets_and_continue():
    data = batchify(np.arange(20), 2)  # columns 0..9 and 10..19
    batches = BPTTBatches(data, bptt=4)
    pairs = [(x.numpy(), y.numpy()) for x, y in batches]
    assert len(batches) == len(pairs) == 3
    assert [x.shape[0] for x, _ in pairs] == [4, 4, 1]
    np.testing.assert_array_equal(np.concatenate([x for x, _ in pairs]), data[:-1])
    np.testing.assert_array_equal(np.concatenate([y for _, y in pairs]), data[1:])
    with pytest.raises(ValueError, match="bptt"):
        BPTTBatches(data, 0)
    with pytest.raises(ValueError, match=r"\(T, N\)"):
        BPTTBatches(np.arange(5), 2)


def test_invalid_utf8_is_a_dataset_file_error_naming_the_file(tmp_path):
    from lamina.data import DatasetFileError, Shakespeare

    for split in ("train", "valid", "test"):
        (tmp_path / f"ptb.{split}.txt").write_text(" a b\n")
    (tmp_path / "ptb.valid.txt").write_bytes(b" a \xff b\n")
    with pytest.raises(DatasetFileError, match=r"PTB: .*ptb.valid.txt is not valid UTF-8 text: "
                       r"byte 0xff at offset 3"):
        PTB(tmp_path)
    with pytest.raises(DatasetFileError, match="TextCorpus: .*ptb.valid.txt is not valid"):
        TextCorpus.from_files(*(tmp_path / f"ptb.{s}.txt" for s in ("train", "valid", "test")))
    (tmp_path / "input.txt").write_bytes(b"hello \xc3(")
    with pytest.raises(DatasetFileError, match="Shakespeare: .*input.txt is not valid UTF-8"):
        Shakespeare(tmp_path / "input.txt")
