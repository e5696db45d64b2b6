"""helpers.practice.compute on the real bundled model."""

import copy
import pytest
import torch

from helpers.classify.compute import encode_batch
from helpers.finetuning.compute import SentenceClassifier
from helpers.classify.compute import extract_features
from helpers.common.stats import sign_test_p
from helpers.practice.compute import (FeatureCache, checkpointing_is_on, compare_times, describe_selection, enable_checkpointing,
                                      peak_step_memory,
                                      feature_change_per_layer, keep_hidden_states, random_partners, median_range, model_key, quantize_int8,
                                      relative_change, saved_for_backward, saved_for_backward_bytes, state_dict_bytes,
                                      time_interleaved, training_state_bytes, try_from_pretrained, what_comes_back)


def test_keep_hidden_states_equals_full_output(tokenizer, model):
    enc = encode_batch(tokenizer, ["set a timer for ten minutes"])
    L = model.config.num_hidden_layers
    with keep_hidden_states(model, [0, L]) as kept, torch.no_grad():
        full = model(**enc, output_hidden_states=True).hidden_states
    assert set(kept) == {0, L}
    assert torch.allclose(kept[0], full[0], atol=1e-5) and torch.allclose(kept[L], full[L], atol=1e-5)
    ours = [f for f in model.encoder.layer[L - 1]._forward_hooks.values() if "keep_hidden_states" in f.__qualname__]
    assert not ours, "our hooks must be removed (transformers keeps its own)"
    with pytest.raises(ValueError, match="valid"):
        with keep_hidden_states(model, [L + 1]):
            pass


def test_checkpointing_saves_fewer_bytes_and_recomputes_every_layer(tokenizer, model):
    batch = tokenizer(["play some jazz"] * 4, padding="max_length", max_length=32, return_tensors="pt")
    y = torch.zeros(4, dtype=torch.long)
    L = model.config.num_hidden_layers
    clf = SentenceClassifier(copy.deepcopy(model), 3)
    plain = saved_for_backward(clf, batch, y)
    assert saved_for_backward_bytes(clf, batch, y) == plain.activation_bytes
    enable_checkpointing(clf.bert)
    ckpt = saved_for_backward(clf, batch, y)
    assert ckpt.activation_bytes < plain.activation_bytes / 2
    assert (plain.layer_calls_forward, plain.layer_calls_backward) == (L, 0)
    assert (ckpt.layer_calls_forward, ckpt.layer_calls_backward) == (L, L), "each layer runs forward again in backward"
    # autograd saves references to weights; they are the model's own storages, counted apart
    param_bytes = sum(p.numel() * p.element_size() for p in clf.parameters())
    assert 0 < plain.parameter_bytes <= param_bytes and plain.parameter_tensors > 0
    assert checkpointing_is_on(clf.bert) and not checkpointing_is_on(model), "only the copy"


def test_training_state_is_sixteen_bytes_per_parameter_with_adamw(tokenizer, model):
    clf = SentenceClassifier(copy.deepcopy(model), 3)
    opt = torch.optim.AdamW(clf.parameters(), lr=1e-5)
    enc = tokenizer(["play some jazz", "set an alarm"], padding=True, return_tensors="pt")
    torch.nn.functional.cross_entropy(clf(enc["input_ids"], enc["attention_mask"]), torch.tensor([0, 1])).backward()
    opt.step()
    state = training_state_bytes(clf, opt)
    n = sum(p.numel() for p in clf.parameters())
    used = sum(p.numel() for p in clf.parameters() if p.grad is not None)  # the unused pooler gets no gradient
    assert n - used == sum(p.numel() for p in clf.bert.pooler.parameters())
    assert state == {"weights": 4 * n, "gradients": 4 * used, "optimizer state": 8 * used}


def test_interleaved_timing_and_the_sentences_it_allows():
    calls = []
    times = time_interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, repeats=3, warmup=2)
    assert calls == ["a", "a", "b", "b"] + ["a", "b"] * 3, "warm-up first, then in turns"
    assert [len(v) for v in times.values()] == [3, 3]
    r = median_range([3.0, 1.0, 2.0, 10.0])
    assert (r.estimate, r.low, r.high) == (2.5, 1.0, 10.0)
    # too few turns: even a steady 2x cannot be called with 3 turns
    assert "inconclusive" in compare_times("a", [1.0, 1.1, 1.2], "b", [2.0, 2.2, 2.4])  # too few turns
    # nine turns, 8 of 9 ratios below 1 (one slow outlier of b): the sign test's p = 0.039 calls it
    a, b = [0.08] * 9, [0.04] * 8 + [0.085]
    text = compare_times("a", a, "b", b)
    assert "1 of 9 ratios above 1, 8 below" in text and "p = 0.039" in text and "b is faster" in text
    # 7 of 9: p = 0.18, inconclusive -- and never called "equally fast"
    b = [0.04] * 7 + [0.085] * 2
    text = compare_times("a", a, "b", b)
    assert "inconclusive" in text and "not evidence of equal speed" in text and "faster" not in text
    b = [0.04] * 9
    assert "b is faster" in compare_times("a", a, "b", b) and "0.50x" in compare_times("a", a, "b", b)
    assert sign_test_p(9, 9) == pytest.approx(2 / 2 ** 9) and sign_test_p(3, 6) == 1.0
    with pytest.raises(ValueError, match="same"):
        compare_times("a", [1.0], "b", [1.0, 2.0])
    with pytest.raises(ValueError, match="repeats"):
        time_interleaved({"a": lambda: None}, repeats=0)


def test_describe_selection_tells_honoured_all_and_shifted_apart():
    full = [torch.full((1, 2), float(i)) for i in range(4)]
    assert describe_selection([1, 3], [None, full[1], None, full[3]], full)[0] == "honoured"
    assert describe_selection([1, 3], full, full)[0] == "all"
    verdict, text = describe_selection([1, 3], [None, full[2], None, None], full)
    assert verdict == "mis-selected" and "entry 1 holds hidden state 2" in text
    assert describe_selection([1], None, full)[0] == "none"
    assert what_comes_back(lambda: 1 / 0, [1], full) == ("error", "ZeroDivisionError: division by zero")


def test_hidden_state_lists_and_checkpointing_keywords_on_the_installed_version(tokenizer, model, loaded):
    enc = encode_batch(tokenizer, ["set a timer for ten minutes"])
    L = model.config.num_hidden_layers
    with torch.no_grad():
        full = model(**enc, output_hidden_states=True).hidden_states
    by_argument = what_comes_back(lambda: model(**enc, output_hidden_states=[1, L]), [1, L], full)
    assert by_argument[0] in {"honoured", "all", "mis-selected"}
    listed, error = try_from_pretrained(loaded.choice.path, output_hidden_states=[1, L])
    assert (listed is None) == (error is not None)
    _, error = try_from_pretrained(loaded.choice.path, use_gradient_checkpointing=True)
    if error is not None:
        assert "use_gradient_checkpointing" in error


def test_int8_leaves_the_embeddings_and_moves_the_layers(tokenizer, model):
    q = quantize_int8(model)
    texts = ["what's the weather like today", "play some jazz", "book a table for two"]
    f32, f8 = extract_features(tokenizer, model, texts, progress=False), extract_features(tokenizer, q, texts, progress=False)
    change, between = feature_change_per_layer(f32, f8, "mean")
    L = model.config.num_hidden_layers
    assert change.shape == between.shape == (L + 1, 3)
    assert torch.all(change[0] == 0), "the embeddings are not nn.Linear: int8 leaves them alone"
    assert torch.all(change[1:] > 0)
    partner = int(random_partners(3)[0])
    assert partner != 0
    assert torch.allclose(between[L, 0], (f32.mean[L, partner] - f32.mean[L, 0]).norm() / f32.mean[L, 0].norm())
    with pytest.raises(ValueError, match="shapes differ"):
        relative_change(torch.zeros(2, 3), torch.zeros(3, 3))


def test_quantized_copy_is_smaller_and_close(tokenizer, model):
    q = quantize_int8(model)
    assert state_dict_bytes(q) < state_dict_bytes(model)
    assert type(model.encoder.layer[0].output.dense) is torch.nn.Linear  # original untouched
    enc = encode_batch(tokenizer, ["what's the weather like today"])
    with torch.no_grad():
        a, b = model(**enc).last_hidden_state, q(**enc).last_hidden_state
    cos = torch.nn.functional.cosine_similarity(a[0, 0], b[0, 0], dim=0)
    assert cos > 0.8


def test_feature_cache_hits_and_keys(tokenizer, model):
    cache = FeatureCache(tokenizer, model)
    L = model.config.num_hidden_layers
    calls = []
    h = model.register_forward_hook(lambda *a: calls.append(1))
    try:
        a = cache.get(["book a table", "play jazz"], L)
        b = cache.get(["play jazz", "book a table"], L - 1, "cls")
    finally:
        h.remove()
    assert len(calls) == 1 and cache.misses == 2 and cache.hits == 2
    assert a.shape == (2, model.config.hidden_size) and b.shape == a.shape
    other = copy.deepcopy(model)
    with torch.no_grad():
        other.encoder.layer[-1].output.dense.weight[0] += 1
    assert model_key(other) != model_key(model)
    assert model_key(copy.deepcopy(model)) == model_key(model), "an identical copy may share the entries"
    with pytest.raises(ValueError, match="out of range"):
        cache.get(["x"], L + 1)


def test_a_fine_tuned_copy_never_reads_the_originals_features(tokenizer, model, intent_splits):
    from helpers.common.data import load_intents
    from helpers.finetuning.compute import FREEZE, FinetuneConfig, finetune_run

    cache = FeatureCache(tokenizer, model)
    texts = intent_splits[1].texts[:6]
    original = cache.get(texts, model.config.num_hidden_layers)
    train, dev = load_intents("train").subset(4).split_off(1, seed=0)
    tuned = finetune_run(tokenizer, model, train, dev, intent_splits[1], FREEZE, keep_model=True,
                         config=FinetuneConfig(lrs=(1e-4,), max_steps=3, batch_size=10, max_length=24)).model.bert
    shared = FeatureCache(tokenizer, tuned, store=cache.store)
    got = shared.get(texts, model.config.num_hidden_layers)
    assert shared.hits == 0 and shared.misses == len(texts)
    assert not torch.allclose(got, original)
    assert torch.allclose(got, extract_features(tokenizer, tuned, texts, progress=False).mean[-1], atol=1e-6)


@pytest.mark.slow  # one of the heaviest fast tests; the --all tier (CI) runs it
def test_peak_step_memory_is_the_allocators_peak(tokenizer, model, intent_splits):
    """The peak of one step is at least the gradients it creates, the same on a second call, larger for
    longer inputs, and with checkpointing it falls where the activations dominate."""
    import copy

    from helpers.finetuning.compute import SentenceClassifier

    texts, labels = intent_splits[0].texts[:4], torch.tensor(intent_splits[0].labels[:4])
    plain, ckpt = (SentenceClassifier(copy.deepcopy(model), 10) for _ in range(2))
    enable_checkpointing(ckpt.bert)

    def batch(length):
        enc = tokenizer(texts, padding="max_length", truncation=True, max_length=length, return_tensors="pt")
        return {k: enc[k] for k in ("input_ids", "attention_mask")}

    short, long = batch(16), batch(256)
    torch.nn.functional.cross_entropy(plain(**short), labels).backward()  # the gradients one step creates
    grads = sum(p.grad.numel() * p.grad.element_size() for p in plain.parameters() if p.grad is not None)
    first = peak_step_memory(plain, short, labels)
    assert first >= grads and peak_step_memory(plain, short, labels) == first
    assert peak_step_memory(plain, long, labels) > first
    assert peak_step_memory(ckpt, long, labels) < peak_step_memory(plain, long, labels)


def test_random_partners_pair_across_a_sorted_set():
    partners = random_partners(100, seed=0)
    assert torch.equal(partners, random_partners(100, seed=0)), "seeded"
    assert not torch.equal(partners, random_partners(100, seed=1))
    assert (partners != torch.arange(100)).all(), "nobody is their own partner"
    assert sorted(partners.tolist()) == list(range(100)), "every item is someone's partner once"
    labels = torch.arange(100) // 10  # sorted by class, like data/intents/test.csv
    next_same = (labels == labels.roll(-1)).float().mean().item()
    random_same = (labels == labels[partners]).float().mean().item()
    assert next_same == pytest.approx(0.9) and random_same < 0.3
    with pytest.raises(ValueError, match="at least 2"):
        random_partners(1)


def test_quantize_with_warnings_hands_them_back():
    from helpers.practice.compute import quantize_int8_with_warnings

    q, messages = quantize_int8_with_warnings(torch.nn.Sequential(torch.nn.Linear(4, 3)))
    assert all(isinstance(m, str) for m in messages)
    x = torch.randn(2, 4)
    assert q(x).shape == (2, 3)


# --- lesson 11's tables and printouts -----------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_study(tokenizer, model, intent_splits):
    """A real, tiny study: the probe, full fine-tuning and gradual unfreezing on two seeds (no disk cache)."""
    from helpers.common.data import load_intents
    from helpers.finetuning.compute import FROZEN, FULL, GRADUAL, FewShotTask, FinetuneConfig, finetune_study

    train, dev = load_intents("train").subset(4).split_off(1, seed=0)
    tasks = {s: FewShotTask(train, dev, intent_splits[1], tuple(train.names), 3, s) for s in (0, 1)}
    config = FinetuneConfig(lrs=(1e-4,), max_steps=6, warmup=0.2, patience=1, batch_size=10, max_length=24,
                            unfreeze_epochs=2)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COURSE_CACHE", "off")
        return finetune_study(tokenizer, model, tasks, (FROZEN, FULL, GRADUAL), config=config, progress=False)


@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_training_rows_and_status_finding_read_every_run(tiny_study):
    import numpy as np

    from helpers.finetuning.compute import FROZEN, FULL, GRADUAL
    from helpers.practice.findings import status_finding, training_details, training_rows

    study = tiny_study
    rows = {r["strategy"]: r for r in training_rows(study)}
    assert list(rows) == [FROZEN, FULL, GRADUAL]
    assert list(rows[FULL]) == ["strategy", "chosen on the dev split", "status",
                                "dev loss, step 0 \u2192 kept (median)"]
    runs = study.runs[FULL]
    # dev loss at step 0 and at the kept evaluation, read off each run's own dev curve
    step0 = [r.dev_curve[0][1] for r in runs]
    kept = [next(loss for st, loss, _ in r.dev_curve if st == r.best_step) for r in runs]
    assert rows[FULL]["dev loss, step 0 \u2192 kept (median)"] == f"{np.median(step0):.3f} \u2192 {np.median(kept):.3f}"
    # the rate the dev split chose (tune="each seed": both draws chose it here)
    lrs = [r.lr for r in runs]
    assert rows[FULL]["chosen on the dev split"] == (f"lr {lrs[0]:g}" if lrs[0] == lrs[1] else
                                                    f"lr {min(lrs):g} (1 of 2 draws)")
    converged = sum(r.status == "converged" for s in (FULL, GRADUAL) for r in study.runs[s])
    full_converged = sum(r.status == "converged" for r in runs)
    full_moved = sum(r.best_step > 0 for r in runs)
    status = rows[FULL]["status"]
    assert status.startswith("moved;" if full_moved == 2 else "stayed at its start;" if full_moved == 0
                             else f"moved in {full_moved} of 2 (")
    assert status.endswith("; converged") == (full_converged == 2)
    if full_converged < 2:
        assert f"{full_converged} converged" in status
    # the probe's own status; a strategy whose head starts from the probe stays "at the probe"
    assert rows[FROZEN]["status"] == ("converged" if all(r.status == "converged" for r in study.records(FROZEN))
                                      else rows[FROZEN]["status"])
    gradual_moved = sum(r.best_step > 0 for r in study.runs[GRADUAL])
    assert ("stayed at the probe" in rows[GRADUAL]["status"]) == (gradual_moved < 2)
    # the fold: one line per strategy, with the steps and the choice's details
    details = training_details(study)
    steps = [r.steps for r in runs]
    assert len(details) == 3 and details[1].startswith(f"{FULL}: lr per draw: ")
    assert f"{min(steps)}-{max(steps)} optimiser steps" in details[1] or f"; {steps[0]} optimiser steps" in details[1]

    sentence, details = status_finding(study)
    exhausted = sum(r.status == "budget exhausted" for s in (FULL, GRADUAL) for r in study.runs[s])
    moved = sum(r.best_step > 0 for s in (FULL, GRADUAL) for r in study.runs[s])
    assert sentence.startswith(f"Of the 4 fine-tuning runs, {moved} kept weights past their starting point and "
                               f"{4 - moved} kept the start itself (not fine-tuned); {converged} converged, "
                               f"{4 - converged - exhausted} stopped")
    assert sentence.endswith(f"and {exhausted} ran out of steps.")
    assert details[0] == f"criterion: {study.config.criterion()}"
    assert "stay out of the strategy verdicts" in details[1]
    opened = [r.opened_at for r in study.runs[GRADUAL]]
    at = "" if None in opened else f"{min(opened)}" if min(opened) == max(opened) else f"{min(opened)}-{max(opened)}"
    assert details[-1] == (f"gradual unfreezing opened every layer at step {at}"
                           if None not in opened else "gradual unfreezing did not open every layer in some runs")


@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_strategy_rows_are_the_runs_accuracies_and_costs(tiny_study):
    import statistics

    from helpers.finetuning.compute import FULL
    from helpers.practice.findings import strategy_rows

    rows = {r["strategy"]: r for r in strategy_rows(tiny_study)}
    runs = tiny_study.runs[FULL]
    per_seed = [100 * r.correct.float().mean().item() for r in runs]
    row = rows[FULL]
    assert row["test accuracy"] == f"{statistics.mean(per_seed):.1f} %"  # as many items per seed
    assert row["seed SD"] == f"{statistics.stdev(per_seed):.1f}pt"
    assert row["seed range"] == f"{min(per_seed):.1f}-{max(per_seed):.1f}%"
    from helpers.finetuning.compute import FROZEN

    trainable = {s: int(r["trainable"].replace(",", "")) for s, r in rows.items()}
    assert trainable[FULL] == runs[0].trainable_params > trainable[FROZEN], "fine-tuning trains more than a head"
    secs = sorted(r.seconds for r in runs)
    assert row["s/run: median [range]"].startswith(f"{statistics.median(secs):.1f}")


def test_power_finding_says_what_the_design_can_detect():
    from helpers.practice.findings import power_finding

    sentence, details = power_finding(0.05, 30, 3, 400, 5)
    assert "With 3 draws of 400 test utterances" in sentence and "about 5.0 points or more" in sentence
    assert sentence.endswith("are not detectable here -- a 1-point difference would need about 30 draws of this size.")
    assert power_finding(0.05, None, 3, 400, 5)[0].endswith("are not detectable here.")
    assert power_finding(0.008, 2, 3, 400, 5)[0].endswith("are detectable here.")
    assert "Bonferroni over the 5 comparisons" in details[1] and "Student t with 2 degrees" in details[1]
    # two draws (lesson 11's quick Chinese run): the formula asks for more than an accuracy can differ by
    few, few_details = power_finding(2.694, 405, 2, 30, 5, items="headlines")
    assert "detects (4 times in 5) no difference at all (the formula asks for 269 points" in few
    assert "points or more" not in few and "Student t with 1 degree of freedom" in few_details[1]


def test_training_memory_text_counts_parameters_and_shrinkage():
    from helpers.practice.compute import SavedForBackward
    from helpers.practice.findings import training_memory_text

    clf = torch.nn.ModuleDict({"used": torch.nn.Linear(4, 3), "unused": torch.nn.Linear(3, 2)})
    opt = torch.optim.AdamW(clf.parameters(), lr=1e-3)
    clf["used"](torch.randn(2, 4)).sum().backward()
    opt.step()
    state = training_state_bytes(clf, opt)
    # 23 parameters, 15 of them used: weights 92 + gradients 60 + AdamW 120 = 272 bytes, 11.8 per parameter
    assert state == {"weights": 92, "gradients": 60, "optimizer state": 120}
    memory = {"plain": SavedForBackward(816, 100, 4, 2, 6, 0), "checkpointed": SavedForBackward(272, 100, 2, 2, 6, 6)}
    text = training_memory_text(clf, state, memory, "gradient_checkpointing_enable")
    assert text.startswith("23 parameters; measured 11.8 bytes per parameter")
    assert "8 parameters got no gradient" in text
    assert "checkpointed: activations 0.0 MiB in 2 tensors; layer forwards 6 + 6 recomputed in backward" in text
    # activations 816 / 272 = 3.0x; the whole step (272 + 816) / (272 + 272) = 2.00x; 816 / 1088 = 75 %
    assert "the activations shrink 3.0x, the whole step's memory 2.00x" in text
    assert "the activations are 75% of the step's memory" in text


def test_peak_memory_text_compares_the_shortest_and_longest_inputs():
    from helpers.practice.findings import peak_memory_text

    mib = 2 ** 20
    peaks = {32: {"plain": 90 * mib, "checkpointed": 90 * mib}, 128: {"plain": 300 * mib, "checkpointed": 100 * mib}}
    text = " ".join(peak_memory_text(peaks, 8, 86 * mib).split())
    assert ("8 utterances x 128 tokens: peak memory of one step, plain 300.0 MiB, checkpointed 100.0 MiB (3.00x);"
            " the gradients alone are 86.0 MiB") in text
    assert "lowered the peak 1.00x at 32 tokens and 3.00x at 128:" in text


def test_quantization_note_quotes_a_deprecation():
    from helpers.practice.findings import quantization_note

    said = quantization_note("2.9", ["torch.ao.quantization is deprecated", "other"])
    assert said == "torch 2.9: quantize_dynamic warned that it is deprecated: torch.ao.quantization is deprecated"
    assert quantization_note("2.9", ["other"]).endswith("raised no deprecation warning (1 other warning(s))")
    assert quantization_note("2.9", []).endswith("raised no deprecation warning")
