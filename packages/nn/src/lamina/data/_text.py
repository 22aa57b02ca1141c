"""Text to token ids and back: a vocabulary and word/character tokenizers.

The language-model recipes share this: PTB is split into words (each line
ends with ``<eos>``), Tiny Shakespeare into characters. A vocabulary maps
tokens to dense ids in first-seen order, so the same text always gives the
same ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["CharTokenizer", "Vocabulary", "WordTokenizer"]


class Vocabulary:
    """A bijection between tokens and ids ``0 .. len(self) - 1``.

    Args:
        tokens: initial tokens, given ids in order (duplicates ignored).
        unk: the token that unknown tokens encode to, once it is in the
            vocabulary; ``None`` (the default) makes unknown tokens a KeyError.
    """

    def __init__(self, tokens: Iterable[str] = (), unk: str | None = None) -> None:
        self.itos: list[str] = []
        self.stoi: dict[str, int] = {}
        self.unk = unk
        for token in tokens:
            self.add(token)

    def add(self, token: str) -> int:
        """The id of ``token``, giving it the next id if it is new."""
        index = self.stoi.get(token)
        if index is None:
            index = self.stoi[token] = len(self.itos)
            self.itos.append(token)
        return index

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: object) -> bool:
        return token in self.stoi

    def encode(self, tokens: Iterable[str]) -> np.ndarray:
        """Token ids, int64 (n,). Unknown tokens get the id of ``unk`` when it is in
        the vocabulary, else raise KeyError naming them."""
        unk_id = self.stoi.get(self.unk) if self.unk is not None else None
        if unk_id is not None:
            return np.fromiter((self.stoi.get(t, unk_id) for t in tokens), dtype=np.int64)
        try:
            return np.fromiter((self.stoi[t] for t in tokens), dtype=np.int64)
        except KeyError as err:
            raise KeyError(f"Vocabulary.encode: token {err.args[0]!r} is not in the "
                           f"vocabulary of {len(self)} tokens") from None

    def decode(self, ids: Sequence[int] | np.ndarray) -> list[str]:
        """Tokens for ``ids``. Ids outside ``[0, len)`` raise IndexError naming them."""
        out = []
        for i in np.asarray(ids, dtype=np.int64).reshape(-1).tolist():
            if not 0 <= i < len(self.itos):
                raise IndexError(f"Vocabulary.decode: token id {i} is outside the "
                                 f"vocabulary of size {len(self.itos)}")
            out.append(self.itos[i])
        return out


class WordTokenizer:
    """Whitespace words, with ``eos`` appended to every line (PTB's convention).

    Args:
        eos: the end-of-line token, or None to add none.
    """

    def __init__(self, eos: str | None = "<eos>") -> None:
        self.eos = eos
        self.vocab = Vocabulary()

    def split(self, text: str) -> list[str]:
        """The token strings of ``text``: words of each line, then ``eos``."""
        tokens: list[str] = []
        for line in text.splitlines():
            tokens.extend(line.split())
            if self.eos is not None:
                tokens.append(self.eos)
        return tokens

    def fit(self, text: str) -> WordTokenizer:
        """Add every token of ``text`` to the vocabulary; returns self."""
        for token in self.split(text):
            self.vocab.add(token)
        return self

    def encode(self, text: str) -> np.ndarray:
        """int64 ids (n,) of ``text``'s tokens; unknown words raise KeyError."""
        return self.vocab.encode(self.split(text))

    def decode(self, ids: Sequence[int] | np.ndarray) -> str:
        """Words joined by spaces, ``eos`` turned back into a newline."""
        lines: list[str] = []
        line: list[str] = []
        for word in self.vocab.decode(ids):
            if word == self.eos:
                lines.append(" ".join(line) + "\n")
                line = []
            else:
                line.append(word)
        return "".join(lines) + " ".join(line)


class CharTokenizer:
    """One token per character; the vocabulary is the sorted set of characters.

    Args:
        text: the text whose characters make the vocabulary.
    """

    def __init__(self, text: str) -> None:
        self.vocab = Vocabulary(sorted(set(text)))

    def encode(self, text: str) -> np.ndarray:
        """int64 ids (len(text),); characters not in the vocabulary raise KeyError."""
        return self.vocab.encode(text)

    def decode(self, ids: Sequence[int] | np.ndarray) -> str:
        """The string of ``ids``."""
        return "".join(self.vocab.decode(ids))
