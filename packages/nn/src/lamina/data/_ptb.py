"""Language-model corpora and truncated-BPTT batches.

A corpus is three token-id streams (train, valid, test) over one vocabulary
built from the training text. ``batchify`` cuts a stream into ``N`` parallel
columns and ``BPTTBatches`` walks down them ``bptt`` steps at a time, so
that batch ``k + 1`` continues where batch ``k`` stopped in every column:
the hidden state carried between batches stays meaningful.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from lamina import autograd

from ._mnist import DatasetFileError
from ._text import CharTokenizer, Vocabulary, WordTokenizer

__all__ = ["PTB", "BPTTBatches", "TextCorpus", "batchify"]

_SPLITS = ("train", "valid", "test")


def read_utf8(path: Path, owner: str) -> str:
    """The text of ``path``; DatasetFileError naming the file and the byte offset
    when it is not valid UTF-8."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetFileError(f"{owner}: {path} is not valid UTF-8 text: byte "
                               f"0x{exc.object[exc.start]:02x} at offset {exc.start} "
                               f"({exc.reason})") from None


class TextCorpus:
    """Train/valid/test token ids of a text corpus, with the vocabulary of the train text.

    Args:
        train: training text.
        valid: validation text.
        test: test text.
        level: ``"word"`` (whitespace words, ``<eos>`` after every line) or
            ``"char"`` (one token per character).
        unk: the token that words (or characters) of valid/test unseen in
            train map to. It keeps its id when the train text has it (PTB's
            ``<unk>``), else it is added to the end of the vocabulary, only
            when some token needs it. ``None`` raises ``KeyError`` instead.

    Attributes:
        train, valid, test: int64 token ids (n,).
        vocab: the :class:`Vocabulary`, in first-seen order of the train text.
        tokenizer: the fitted tokenizer (``encode``/``decode`` text).

    Example:
        >>> corpus = TextCorpus("a b\\nb c\\n", "c a\\n", "b d\\n")
        >>> corpus.train.tolist(), corpus.test.tolist(), corpus.vocab.itos
        ([0, 1, 2, 1, 3, 2], [1, 4, 2], ['a', 'b', '<eos>', 'c', '<unk>'])
    """

    def __init__(self, train: str, valid: str, test: str, level: str = "word",
                 unk: str | None = "<unk>") -> None:
        if level == "word":
            self.tokenizer: WordTokenizer | CharTokenizer = WordTokenizer().fit(train)
        elif level == "char":
            self.tokenizer = CharTokenizer(train)
        else:
            raise ValueError(f"TextCorpus: level must be 'word' or 'char', got {level!r}")
        self.level = level
        self.vocab: Vocabulary = self.tokenizer.vocab
        self.vocab.unk = unk
        self.train = self.tokenizer.encode(train)
        self.valid = self._encode_unseen(valid)
        self.test = self._encode_unseen(test)

    def _encode_unseen(self, text: str) -> np.ndarray:
        """``text``'s ids, giving ``unk`` an id the first time a token needs it."""
        try:
            return self.tokenizer.encode(text)
        except KeyError:
            if self.vocab.unk is None or self.vocab.unk in self.vocab:
                raise
            self.vocab.add(self.vocab.unk)
            return self.tokenizer.encode(text)

    @classmethod
    def from_files(cls, train: str | Path, valid: str | Path, test: str | Path,
                   level: str = "word", unk: str | None = "<unk>") -> TextCorpus:
        """Reads three UTF-8 text files; a missing one raises FileNotFoundError naming it,
        one that is not UTF-8 DatasetFileError."""
        texts = []
        for path in (Path(train), Path(valid), Path(test)):
            if not path.is_file():
                raise FileNotFoundError(f"TextCorpus: no such file {path}")
            texts.append(read_utf8(path, "TextCorpus"))
        return cls(texts[0], texts[1], texts[2], level=level, unk=unk)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(vocab={len(self.vocab)}, train={len(self.train)}, "
                f"valid={len(self.valid)}, test={len(self.test)} tokens)")


class PTB(TextCorpus):
    """The Penn Treebank language-modelling corpus (Mikolov's version).

    Reads ``ptb.train.txt``, ``ptb.valid.txt`` and ``ptb.test.txt`` from
    ``root`` (e.g. ``../shared/data/ptb``): 929k/73k/82k words over a
    10,000-word vocabulary that includes ``<unk>`` and the ``<eos>`` added at
    the end of every line.

    Args:
        root: the folder with the three files.
    """

    def __init__(self, root: str | Path) -> None:
        root = Path(root)
        texts = []
        for split in _SPLITS:
            path = root / f"ptb.{split}.txt"
            if not path.is_file():
                raise FileNotFoundError(f"PTB: {path.name} not found in {root}")
            texts.append(read_utf8(path, "PTB"))
        super().__init__(texts[0], texts[1], texts[2], level="word")


def batchify(ids: Any, batch_size: int) -> np.ndarray:
    """Cuts a token stream into ``batch_size`` contiguous columns.

    Args:
        ids: int64 token ids (n,).
        batch_size: N, the number of columns.

    Returns:
        int64 (n // N, N): column j is ``ids[j*T:(j+1)*T]``; the last
        ``n % N`` tokens are dropped.

    Example:
        >>> batchify(np.arange(7), 2).tolist()
        [[0, 3], [1, 4], [2, 5]]
    """
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    if batch_size < 1:
        raise ValueError(f"batchify: batch_size must be >= 1, got {batch_size}")
    steps = len(ids) // batch_size
    if steps == 0:
        raise ValueError(f"batchify: {len(ids)} tokens are fewer than batch_size {batch_size}")
    return np.ascontiguousarray(ids[:steps * batch_size].reshape(batch_size, steps).T)


class BPTTBatches:
    """Truncated-BPTT batches over a batchified stream: (input, target) pairs.

    Args:
        data: int64 (T, N) from :func:`batchify`.
        bptt: steps per batch; the last batch may be shorter.
        device: where the Tensors go (default device when None).

    Yields:
        ``(x, y)``, int64 Tensors (L, N) with L <= bptt, ``y`` being ``x``
        shifted one step ahead (the next token in each column).

    Example:
        >>> batches = BPTTBatches(batchify(np.arange(10), 2), bptt=2)
        >>> [(x.tolist(), y.tolist()) for x, y in batches][0]
        ([[0, 5], [1, 6]], [[1, 6], [2, 7]])
        >>> len(batches)
        2
    """

    def __init__(self, data: np.ndarray, bptt: int, device: Any = None) -> None:
        data = np.asarray(data, dtype=np.int64)
        if data.ndim != 2 or data.shape[0] < 2:
            raise ValueError(f"BPTTBatches: expected batchified data (T, N) with T >= 2, "
                             f"got shape {data.shape}")
        if bptt < 1:
            raise ValueError(f"BPTTBatches: bptt must be >= 1, got {bptt}")
        self.data, self.bptt, self.device = data, bptt, device

    def __len__(self) -> int:
        return -(-(len(self.data) - 1) // self.bptt)

    def __iter__(self) -> Iterator[tuple[autograd.Tensor, autograd.Tensor]]:
        for start in range(0, len(self.data) - 1, self.bptt):
            stop = min(start + self.bptt, len(self.data) - 1)
            x = self.data[start:stop]
            y = self.data[start + 1:stop + 1]
            yield (autograd.tensor(x, device=self.device),
                   autograd.tensor(y, device=self.device))
