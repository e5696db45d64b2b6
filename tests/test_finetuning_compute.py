"""helpers.finetuning.compute on the real bundled model."""

import copy
import pytest
import torch

from helpers.finetuning.compute import SentenceClassifier, compare_finetuning, finetune, llrd_param_groups


def test_finetune_strategies_leave_the_loaded_model_untouched(tokenizer, model, intent_splits):
    train, test = intent_splits
    before = {k: v.clone() for k, v in model.state_dict().items()}
    L = model.config.num_hidden_layers
    res = {s: finetune(tokenizer, model, train, test, s, epochs=2, progress=False) for s in
           ("full", "freeze lower half")}
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert res["freeze lower half"].trainable_params < res["full"].trainable_params
    frozen = res["freeze lower half"].model.bert
    assert not any(p.requires_grad for p in frozen.encoder.layer[0].parameters())
    assert all(p.requires_grad for p in frozen.encoder.layer[L - 1].parameters())
    # the trained copy really changed
    assert not torch.equal(res["full"].model.bert.encoder.layer[L - 1].output.dense.weight,
                           model.encoder.layer[L - 1].output.dense.weight)
    with pytest.raises(ValueError, match="choose one of"):
        finetune(tokenizer, model, train, test, "magic")


def test_llrd_rates_decay_with_depth(model):
    clf = SentenceClassifier(copy.deepcopy(model), 4)
    groups = llrd_param_groups(clf, 1.0, 0.5)
    L = model.config.num_hidden_layers
    assert [g["lr"] for g in groups] == [1.0] + [0.5 ** (L + 1 - d) for d in range(L + 1)]
    with pytest.raises(ValueError, match="decay"):
        llrd_param_groups(clf, 1.0, 1.5)


def test_gradual_unfreezing_ends_fully_unfrozen(tokenizer, model, intent_splits):
    r = finetune(tokenizer, model, *intent_splits, "gradual unfreezing", epochs=2, progress=False)
    assert all(p.requires_grad for p in r.model.bert.encoder.layer.parameters())


def test_finetune_is_seeded_and_deterministic(tokenizer, model, intent_splits):
    a = finetune(tokenizer, model, *intent_splits, "full", epochs=1, seed=3, progress=False)
    b = finetune(tokenizer, model, *intent_splits, "full", epochs=1, seed=3, progress=False)
    assert torch.equal(a.correct, b.correct)
    assert all(torch.equal(p, q) for p, q in zip(a.model.parameters(), b.model.parameters()))
    c = finetune(tokenizer, model, *intent_splits, "full", epochs=1, seed=4, progress=False)
    assert not torch.equal(a.model.classifier.weight, c.model.classifier.weight)


def test_compare_finetuning_keeps_every_run(tokenizer, model, intent_splits):
    train, test = intent_splits
    before = {k: v.clone() for k, v in model.state_dict().items()}
    res = compare_finetuning(tokenizer, model, train, test, ("full", "freeze lower half"), seeds=(0, 1),
                             epochs=1, progress=False)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert set(res.accuracy) == {"full", "freeze lower half"} == set(res.models)
    assert res.accuracy["full"].correct.shape == (2, len(test))
    assert all(len(v) == 2 and min(v) > 0 for v in res.seconds.values())
    # the seed-0 run inside the comparison is the same run as finetune(seed=0) on its own
    alone = finetune(tokenizer, model, train, test, "full", epochs=1, seed=0, progress=False)
    assert torch.equal(res.accuracy["full"].correct[0], alone.correct)
    # its outcomes are what the returned model predicts
    enc = tokenizer(test.texts, padding=True, truncation=True, max_length=16, return_tensors="pt")
    with torch.no_grad():
        pred = res.models["full"](enc["input_ids"], enc["attention_mask"]).argmax(-1)
    assert torch.equal(pred == torch.tensor(test.labels), res.accuracy["full"].correct[0])
    with pytest.raises(ValueError, match="at least one"):
        compare_finetuning(tokenizer, model, train, test, (), progress=False)


# --- lesson 10: what fine-tuning changes per layer (linear CKA, relative weight change) -------------

from helpers.finetuning.compute import (  # noqa: E402
    cka_jackknife, compare_finetuned, jackknife_interval, layer_cka, layer_weight_norms, linear_cka,
    relative_weight_change, token_owners, token_vectors, weighted_cka,
)


def _cka_hsic(X, Y):
    """CKA from the HSIC of the two n x n Gram matrices (Kornblith et al. 2019, eq. 3 and 4):
    an independent computation of the same number."""
    X, Y = X.double(), Y.double()
    n = X.shape[0]
    H = torch.eye(n, dtype=torch.float64) - torch.full((n, n), 1.0 / n, dtype=torch.float64)
    hsic = lambda K, L: torch.trace(K @ H @ L @ H) / (n - 1) ** 2  # noqa: E731
    K, L = X @ X.T, Y @ Y.T
    return float(hsic(K, L) / torch.sqrt(hsic(K, K) * hsic(L, L)))


@pytest.fixture(scope="module")
def test_token_vectors(tokenizer, model):
    from helpers.common.data import load_intents

    return token_vectors(tokenizer, model, load_intents("test").texts[:30], max_length=16)


def test_linear_cka_equals_the_hsic_formula(test_token_vectors):
    g = torch.Generator().manual_seed(0)
    X, Y = torch.randn(50, 20, generator=g), torch.randn(50, 30, generator=g)
    assert linear_cka(X, Y) == pytest.approx(_cka_hsic(X, Y), abs=1e-10)
    V = test_token_vectors
    L = V.shape[0] - 1
    assert linear_cka(V[1], V[L]) == pytest.approx(_cka_hsic(V[1], V[L]), abs=1e-8)
    assert linear_cka(V[2], V[2]) == pytest.approx(1.0)


def test_linear_cka_invariances(test_token_vectors):
    X, Y = test_token_vectors[1].double(), test_token_vectors[3].double()
    base = linear_cka(X, Y)
    Q, _ = torch.linalg.qr(torch.randn(X.shape[1], X.shape[1], generator=torch.Generator().manual_seed(1), dtype=torch.float64))
    assert linear_cka(X @ Q, Y) == pytest.approx(base, abs=1e-9)  # orthogonal transform
    assert linear_cka(7.5 * X, Y) == pytest.approx(base, abs=1e-9)  # isotropic scaling
    assert linear_cka(X + 3.0, Y) == pytest.approx(base, abs=1e-9)  # a shift (columns are centred)
    stretch = torch.ones(X.shape[1], dtype=torch.float64)
    stretch[: X.shape[1] // 2] = 20.0
    assert abs(linear_cka(X * stretch, Y) - base) > 1e-3  # not invariant to anisotropic scaling
    with pytest.raises(ValueError, match="same items"):
        linear_cka(X, Y[:-1])
    with pytest.raises(ValueError, match="constant"):
        linear_cka(torch.ones(5, 3), Y[:5])


def test_token_vectors_keep_only_real_tokens(tokenizer, model, test_token_vectors):
    from helpers.common.data import load_intents

    texts = load_intents("test").texts[:30]
    n_real = sum(len(tokenizer(t, truncation=True, max_length=16)["input_ids"]) - 2 for t in texts)
    L = model.config.num_hidden_layers
    assert test_token_vectors.shape == (L + 1, n_real, model.config.hidden_size)
    enc = tokenizer(texts[0], return_tensors="pt", truncation=True, max_length=16)
    with torch.no_grad():
        hs = model(**enc, output_hidden_states=True).hidden_states
    k = enc["input_ids"].shape[1] - 2
    assert torch.allclose(test_token_vectors[L, :k], hs[L][0, 1:-1], atol=1e-4)
    assert layer_cka(test_token_vectors, test_token_vectors) == pytest.approx([1.0] * (L + 1))


def test_relative_weight_change_per_layer(model):
    L = model.config.num_hidden_layers
    copy_ = copy.deepcopy(model)
    assert relative_weight_change(model, copy_) == [0.0] * (L + 1)
    layer = copy_.encoder.layer[L - 1]
    with torch.no_grad():
        layer.output.dense.weight.mul_(1.1)  # this one matrix grows by 10 %
        copy_.embeddings.word_embeddings.weight.add_(1.0)  # left out: finetune freezes it
    change = relative_weight_change(model, copy_)
    W = model.encoder.layer[L - 1].output.dense.weight.detach().double()
    total = sum(float(p.detach().double().pow(2).sum()) for p in model.encoder.layer[L - 1].parameters())
    assert change[:L] == [0.0] * L
    assert change[L] == pytest.approx(0.1 * float(W.norm()) / total ** 0.5, rel=1e-6)
    sizes, moves = layer_weight_norms(model, copy_)
    assert sizes[L] == pytest.approx(total ** 0.5) and moves[L] == pytest.approx(0.1 * float(W.norm()), rel=1e-6)
    assert [m / s for m, s in zip(moves, sizes)] == change


def test_token_owners_name_the_text_of_every_token_row(tokenizer):
    from helpers.common.data import load_intents

    texts = load_intents("test").texts[:30]
    owners = token_owners(tokenizer, texts, max_length=16, batch_size=7)  # batches must not matter
    lengths = [len(tokenizer(t, truncation=True, max_length=16)["input_ids"]) - 2 for t in texts]
    assert owners.tolist() == [i for i, n in enumerate(lengths) for _ in range(n)]


def test_weighted_cka_equals_cka_on_repeated_rows(tokenizer, test_token_vectors):
    from helpers.common.data import load_intents

    owners = token_owners(tokenizer, load_intents("test").texts[:30], max_length=16)
    X = test_token_vectors[2].double()
    Y = X @ torch.randn(X.shape[1], X.shape[1], generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    counts = torch.tensor([[1.0] * 30, [2.0, 0.0, 3.0] + [1.0] * 27])
    got = weighted_cka(X, Y, owners, counts)
    rows = torch.cat([torch.nonzero(owners == u).flatten().repeat(int(c)) for u, c in enumerate(counts[1])])
    assert got[0].item() == pytest.approx(linear_cka(X, Y), abs=1e-9)
    assert got[1].item() == pytest.approx(linear_cka(X[rows], Y[rows]), abs=1e-9)  # repeating rows for real
    with pytest.raises(ValueError, match="one weight per text"):
        weighted_cka(X, Y, owners, torch.ones(29))


def test_cka_jackknife_leaves_each_text_out(tokenizer, test_token_vectors):
    from helpers.common.data import load_intents

    owners = token_owners(tokenizer, load_intents("test").texts[:30], max_length=16)
    before = test_token_vectors[:3]
    g = torch.Generator().manual_seed(3)
    afters = [before + 0.3 * torch.randn(before.shape, generator=g) for _ in range(2)]
    loo = cka_jackknife(before, afters, owners)
    assert loo.shape == (30, 3)
    for u, l in [(0, 1), (17, 2)]:
        keep = owners != u
        by_hand = sum(linear_cka(before[l][keep], a[l][keep]) for a in afters) / 2
        assert loo[u, l].item() == pytest.approx(by_hand, abs=1e-9)
    # the jackknife standard error of a mean is the usual standard error s / sqrt(n)
    x = torch.randn(40, generator=g, dtype=torch.float64)
    means = torch.stack([torch.cat([x[:i], x[i + 1:]]).mean() for i in range(40)])
    iv = jackknife_interval(float(x.mean()), means)
    assert (iv.high - iv.low) / 2 == pytest.approx(1.959964 * float(x.std() / 40 ** 0.5), rel=1e-4)
    with pytest.raises(ValueError, match="one text index per token"):
        cka_jackknife(before, afters, owners[:-1])


def test_compare_finetuned_leaves_the_model_untouched(tokenizer, model, intent_splits):
    train, test = intent_splits
    before = {k: v.clone() for k, v in model.state_dict().items()}
    change = compare_finetuned(tokenizer, model, train, test, seeds=(0, 1), epochs=1, lr=2e-4, batch_size=16,
                               progress=False)
    L = model.config.num_hidden_layers
    assert change.cka.shape == change.weight_change.shape == (2, L + 1)
    assert torch.all((change.cka > 0) & (change.cka <= 1 + 1e-9))
    assert torch.all(change.weight_change[:, 1:] > 0), "every encoder layer trains in full fine-tuning"
    assert not torch.equal(change.cka[0], change.cka[1]), "the two seeds are two different runs"
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert torch.allclose(change.weight_change, change.delta_norm / change.weight_norm)
    assert change.owners.shape == (change.before.shape[1],)
    loo = change.cka_jackknife()
    assert loo.shape == (len(test.texts), L + 1)
    assert torch.allclose(loo.mean(0), change.cka.double().mean(0), atol=0.05)  # leaving one text out moves little
    with pytest.raises(ValueError, match="seed"):
        compare_finetuned(tokenizer, model, train, test, seeds=())


def test_frozen_head_only_baseline_moves_no_bert_weight(tokenizer, model, intent_splits):
    from helpers.classify.compute import encode_batch, mean_pool, train_head
    from helpers.finetuning.compute import FROZEN

    train, test = intent_splits
    r = finetune(tokenizer, model, train, test, FROZEN, head_steps=50, progress=False)
    assert all(torch.equal(p, q) for p, q in zip(r.model.bert.parameters(), model.parameters()))
    assert r.trainable_params == sum(p.numel() for p in r.model.classifier.parameters())
    # the folded classifier gives the logits of lesson 07's standardized head, computed independently
    enc = encode_batch(tokenizer, test.texts, 16)
    with torch.no_grad():
        X = mean_pool(model(**enc).last_hidden_state, enc["attention_mask"])
        Xtr_enc = encode_batch(tokenizer, train.texts, 16)
        Xtr = mean_pool(model(**Xtr_enc).last_hidden_state, Xtr_enc["attention_mask"])
    head = train_head(Xtr, train.labels, train.num_classes, epochs=50, seed=0, progress=False)
    with torch.no_grad():
        assert torch.allclose(r.model(enc["input_ids"], enc["attention_mask"]), head(X), atol=1e-4)


def test_baseline_verdict_names_who_beats_it():
    from helpers.classify.compute import SeededAccuracy
    from helpers.finetuning.compute import FROZEN, baseline_verdict

    n = 60
    base = SeededAccuracy(torch.tensor([[True] * 30 + [False] * 30]), (0,))
    better = SeededAccuracy(torch.tensor([[True] * 58 + [False] * 2]), (0,))
    same = SeededAccuracy(torch.tensor([[True] * 31 + [False] * (n - 31)]), (0,))
    text = baseline_verdict({"full": better, "other": same, FROZEN: base})
    assert "above the baseline (the interval excludes 0): full." in text and "verdict: full beats" in text
    text = baseline_verdict({"other": same, FROZEN: base})
    assert "verdict: no fine-tuning strategy beats" in text
    with pytest.raises(ValueError, match="at least one other"):
        baseline_verdict({FROZEN: base})
