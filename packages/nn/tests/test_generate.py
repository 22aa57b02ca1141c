"""Generation: the key/value cache gives the same logits and the same greedy tokens as
re-running the whole context, sampling options, and errors."""

from __future__ import annotations

import numpy as np
import pytest
from lamina import autograd as ag
from lamina import nn
from lamina.models import GPT, GPTConfig, generate
from lamina.models._generate import sample_next

CFG = GPTConfig(vocab_size=13, block_size=24, n_layer=2, n_head=2, n_embd=16)


def _model(seed=0):
    """A model with large weights, so that greedy decoding does not repeat one token."""
    ag.manual_seed(seed)
    model = GPT(CFG)
    for p in model.parameters():
        if p.ndim == 2:
            nn.init.normal_(p, 0.0, 0.5)
    return model.eval()


def test_cached_logits_match_full_forward():
    model = _model()
    idx = np.random.default_rng(0).integers(0, 13, (2, 20))
    with ag.no_grad():
        full = model(ag.tensor(idx)).numpy()
        cache = model.new_cache()
        parts = [model(ag.tensor(idx[:, :7]), cache=cache).numpy()]
        parts += [model(ag.tensor(idx[:, t:t + 1]), cache=cache).numpy() for t in range(7, 13)]
        parts.append(model(ag.tensor(idx[:, 13:]), cache=cache).numpy())  # several at once
    np.testing.assert_allclose(np.concatenate(parts, axis=1), full, rtol=1e-4, atol=1e-5)
    assert cache.length == 20


def test_cached_generation_matches_uncached_greedy():
    model = _model()
    prompt = np.random.default_rng(1).integers(0, 13, (2, 4))
    cached = generate(model, prompt, CFG.block_size - 4, temperature=0, use_cache=True)
    uncached = generate(model, prompt, CFG.block_size - 4, temperature=0, use_cache=False)
    np.testing.assert_array_equal(cached, uncached)
    assert len(set(cached[0, 4:].tolist())) > 2  # a meaningful comparison: tokens vary
    assert cached.shape == (2, CFG.block_size)


def test_generation_past_the_context_and_streaming():
    model = _model()
    seen = []
    out = generate(model, [[1, 2, 3]], 60, temperature=0.9, top_k=4, seed=0,
                   on_token=seen.append)
    assert out.shape == (1, 63) and len(seen) == 60
    np.testing.assert_array_equal(np.concatenate(seen), out[0, 3:])
    again = generate(model, [[1, 2, 3]], 60, temperature=0.9, top_k=4, seed=0)
    np.testing.assert_array_equal(out, again)  # seeded sampling is reproducible
    long_prompt = np.arange(40)[None] % 13  # longer than the context: cropped
    assert generate(model, long_prompt, 3, temperature=0).shape == (1, 43)


def test_static_cache_logits_match_the_full_forward():
    """Keys and values written in place at tensor positions, later slots masked: the
    same logits as the whole sequence at once, also over slots a longer run wrote."""
    model = _model()
    idx = np.random.default_rng(0).integers(0, 13, (2, 20))
    cache = model.new_static_cache(2)
    with ag.no_grad():
        model(ag.tensor(idx[:, ::-1].copy()), cache=cache, position=ag.arange(20))  # stale
        full = model(ag.tensor(idx)).numpy()
        parts = []
        for lo, hi in ((0, 7), *((t, t + 1) for t in range(7, 13)), (13, 20)):
            parts.append(model(ag.tensor(idx[:, lo:hi]), cache=cache,
                               position=ag.arange(lo, hi)).numpy())
    np.testing.assert_allclose(np.concatenate(parts, axis=1), full, rtol=1e-4, atol=1e-5)


def test_compiled_generation_replays_and_picks_the_eager_tokens():
    model = _model()
    prompt = np.random.default_rng(1).integers(0, 13, (2, 4))
    for kwargs in ({"temperature": 0}, {"temperature": 0.9, "top_k": 4, "seed": 3}):
        eager = generate(model, prompt, 50, **kwargs)  # past the context: re-encodes
        np.testing.assert_array_equal(generate(model, prompt, 50, compile=True, **kwargs),
                                      eager)
    assert len(set(eager[0, 4:].tolist())) > 2  # a meaningful comparison: tokens vary
    (compiled, _), = model._compiled_decoders.values()  # one batch size, one decoder
    assert not compiled.graph_breaks
    assert compiled.stats["replays"] > 80 and compiled.stats["captures"] <= 3


@pytest.mark.parametrize("call, message", [
    (lambda m, c: m(ag.tensor([[1, 2]]), cache=c), r"needs position.*\(2,\)"),
    (lambda m, c: m(ag.tensor([[1, 2]]), cache=c, position=ag.arange(3)), r"got \(3,\)"),
    (lambda m, c: m(ag.tensor([[1, 2]]), position=ag.arange(2)), "StaticKVCache only"),
    (lambda m, c: generate(m, [[1]], 2, use_cache=False, compile=True), "decodes with a cache"),
])
def test_static_cache_errors(call, message):
    model = _model()
    with ag.no_grad(), pytest.raises(ValueError, match=message):
        call(model, model.new_static_cache(1))


def test_sample_next_temperature_and_top_k():
    logits = np.array([[0.0, 3.0, 1.0, 2.0]])
    rng = np.random.default_rng(0)
    assert sample_next(logits, 0, None, rng).tolist() == [1]
    assert {int(sample_next(logits, 1.0, 1, rng)[0]) for _ in range(20)} == {1}
    picks = {int(sample_next(logits, 5.0, 2, rng)[0]) for _ in range(200)}
    assert picks == {1, 3}


@pytest.mark.parametrize("kwargs, message", [
    ({"prompt": [[1, 13]]}, r"prompt ids must be in \[0, 13\)"),
    ({"prompt": [1, 2]}, r"shape \(N, T\)"),
    ({"top_k": 0}, "top_k must be >= 1"),
    ({"temperature": -1.0}, "must be >= 0"),
])
def test_generate_errors(kwargs, message):
    args = {"prompt": [[1, 2]], "max_new_tokens": 2, **kwargs}
    with pytest.raises(ValueError, match=message):
        generate(_model(), **args)


def test_cache_overflow_is_an_error():
    model = _model()
    cache = model.new_cache()
    with ag.no_grad():
        model(ag.tensor(np.zeros((1, 20), np.int64)), cache=cache)
        with pytest.raises(ValueError, match=r"length 25 \(cached 20 \+ new 5\)"):
            model(ag.tensor(np.zeros((1, 5), np.int64)), cache=cache)


def test_inference_sees_new_weights_after_a_load():
    model, other = _model(0), _model(1)
    idx = ag.tensor(np.arange(6)[None] % 13)
    with ag.no_grad():
        model(idx)  # keeps transposed weights for inference
        model.load_state_dict({k: v.numpy() for k, v in other.state_dict().items()})
        np.testing.assert_allclose(model(idx).numpy(), other(idx).numpy(), rtol=1e-5, atol=1e-6)
