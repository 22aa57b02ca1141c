"""Vocabulary and tokenizers: round trips, ids in first-seen order, clear errors."""

import numpy as np
import pytest
from lamina.data import CharTokenizer, Vocabulary, WordTokenizer


def test_vocabulary_ids_in_first_seen_order():
    vocab = Vocabulary(["b", "a", "b", "c"])
    assert vocab.itos == ["b", "a", "c"] and len(vocab) == 3 and "a" in vocab
    np.testing.assert_array_equal(vocab.encode(["c", "b"]), [2, 0])


def test_word_tokenizer_round_trip_with_eos():
    text = "the cat sat\n on the mat \n"
    tok = WordTokenizer().fit(text)
    ids = tok.encode(text)
    assert tok.vocab.itos == ["the", "cat", "sat", "<eos>", "on", "mat"]
    assert ids.dtype == np.int64 and ids.tolist() == [0, 1, 2, 3, 4, 0, 5, 3]
    assert tok.decode(ids) == "the cat sat\non the mat\n"


def test_char_tokenizer_round_trip():
    tok = CharTokenizer("hello world")
    assert tok.vocab.itos == sorted(set("hello world"))
    assert tok.decode(tok.encode("low hold")) == "low hold"


def test_unknown_token_and_out_of_range_id_name_the_value():
    tok = WordTokenizer().fit("a b")
    with pytest.raises(KeyError, match="'zebra' is not in the vocabulary of 3"):
        tok.encode("a zebra")
    with pytest.raises(IndexError, match="token id 7 is outside the vocabulary of size 3"):
        tok.decode([0, 7])
