"""Lesson 09 exercises: the worked solutions pass, typical mistakes get the right hint."""

import numpy as np
import pytest
import torch

from helpers.classify.compute import train_head
from helpers.common.data import load_banking77, load_polysemy
from helpers.common.stats import bootstrap_ci
from helpers.exercises import lesson09 as ex
from helpers.interventions import compute as C
from helpers.model.trace import trace_text
from lessons.solutions import solutions_09 as sol


class Measured(tuple):
    """(ablation, grads, skip_correct, classifier), with the skip logits and labels kept beside."""


@pytest.fixture(scope="module")
def measured(tokenizer, model):
    """A head on a small BANKING77 cut (six intents) and its ablation, gradients and skips on 12
    test utterances, as the lesson computes them."""
    train_all, test_all = load_banking77("train"), load_banking77("test")
    names = train_all.names[:6]
    train, test = train_all.only(names).sample(6, seed=0), test_all.only(names).sample(2, seed=0)
    head = train_head(C.pooled_features(tokenizer, model, train.texts, max_length=64, progress=False), train.labels,
                      train.num_classes, progress=False)
    classifier = C.SentenceHead(head, "mean")
    run = C.run_cached(tokenizer, model, test.texts, max_length=64)
    y = test.labels
    ablation = C.ablate_every_head(model, classifier, run, y, progress=False)
    skips = C.skip_every_layer(model, run, progress=False, readout=classifier)
    skip_correct = (skips.argmax(-1) == torch.tensor(y)).float()
    out = Measured((ablation, C.head_gate_gradients(model, classifier, run, y), skip_correct, classifier))
    out.skip_logits, out.y = skips, torch.tensor(y, device=skips.device)
    return out


@pytest.fixture(scope="module")
def patch(tokenizer, model):
    words = load_polysemy()
    out = {}
    for word in words:  # four words, three sentences of each sense
        traces = {s: [trace_text(tokenizer, model, x) for x in xs[:3]] for s, xs in words[word].items()}
        a, b = list(traces)
        out[word] = C.sense_patching(model, traces[a], traces[b], word)
    return out


def test_no_answer(measured, patch, sample_trace):
    ablation, grads, skip_correct, _ = measured
    assert "no answer" in ex.check_exercise_1(None, ablation).message
    assert "no answer" in ex.check_exercise_2(None, grads).message
    assert "no answer" in ex.check_exercise_3(None, sample_trace).message
    assert "no answer" in ex.check_exercise_4(None, patch).message
    assert "no answer" in ex.check_exercise_5(None, skip_correct).message


def test_exercise_1(measured):
    ablation, _, _, _ = measured
    layer, head = sol.solution_1(ablation)
    assert ex.check_exercise_1((layer, head), ablation).ok
    fb = ex.check_exercise_1((layer - 1, head), ablation)  # counted from 0
    assert not fb.ok and ("off by one" in fb.message or layer == 1)
    assert "not a head" in ex.check_exercise_1((0, head), ablation).message
    assert ex.check_exercise_1([layer, head], ablation).ok
    for form in ((np.int64(layer), np.int64(head)), (torch.tensor(layer), torch.tensor(head))):
        assert ex.check_exercise_1(form, ablation).ok
    assert "two ints" in ex.check_exercise_1((float(layer), head), ablation).message
    drops = ablation.logit_drop_items().mean(0)
    n_layers, n_heads = drops.shape
    weakest = divmod(int(drops.argmin()), drops.shape[1])
    fb = ex.check_exercise_1((weakest[0] + 1, weakest[1]), ablation)
    assert not fb.ok and f"{float(drops.max()):.3f}" not in str(fb)  # the best drop is not given away
    if head >= 1:
        fb = ex.check_exercise_1((layer, head + 1), ablation)
        assert not fb.ok and "head" in fb.message and "off by one" in fb.message
    if 1 <= head <= n_layers and layer < n_heads and head != layer:
        fb = ex.check_exercise_1((head, layer), ablation)  # the pair given the other way round
        assert not fb.ok and "swapped" in fb.message


def test_exercise_2(measured):
    _, grads, _, _ = measured
    assert ex.check_exercise_2(sol.solution_2(grads), grads).ok
    fb = ex.check_exercise_2(grads.mean(0).abs(), grads)
    assert not fb.ok and "absolute value of the mean" in fb.message
    fb = ex.check_exercise_2(grads.abs().sum(0), grads)
    assert not fb.ok and "summed" in fb.message
    fb = ex.check_exercise_2(grads.mean(0), grads)
    assert not fb.ok and "signed" in fb.message
    assert "a list" in ex.check_exercise_2([1.0], grads).message
    assert "shape" in ex.check_exercise_2(grads.abs().mean(1), grads).message


def test_exercise_3(sample_trace):
    assert ex.check_exercise_3(sol.my_rollout, sample_trace).ok

    def no_residual(attentions):
        r = torch.eye(attentions[0].shape[-1])
        for a in attentions:
            r = a.mean(0) @ r
        return r

    fb = ex.check_exercise_3(no_residual, sample_trace)
    assert not fb.ok and "residual" in fb.message

    def wrong_order(attentions):
        eye = torch.eye(attentions[0].shape[-1])
        r = eye
        for a in attentions:
            m = 0.5 * a.mean(0) + 0.5 * eye
            r = r @ (m / m.sum(-1, keepdim=True))
        return r

    fb = ex.check_exercise_3(wrong_order, sample_trace)
    assert not fb.ok and "order" in fb.message
    assert "shape" in ex.check_exercise_3(lambda att: att[0], sample_trace).message
    assert "raised" in ex.check_exercise_3(lambda att: 1 / 0, sample_trace).message


def test_exercise_4(patch):
    pooled, _, _ = C.word_cluster_shares(patch, "follows")
    ratio = sol.solution_4(patch, pooled)
    pairs = bootstrap_ci(torch.cat([p["follows"][:, 1] for p in patch.values()]).numpy())
    assert ratio == pytest.approx((pairs.high - pairs.low) / (pooled[1].high - pooled[1].low))
    fb = ex.check_exercise_4(ratio, patch)
    assert fb.ok, fb.message
    assert ex.check_exercise_4(ratio * 1.02, patch).ok  # a different bootstrap draw is close enough
    assert ratio < 0.9, "resampling words gives the wider interval"
    fb = ex.check_exercise_4(1 / ratio, patch)
    assert not fb.ok and "inverse" in fb.message
    assert not ex.check_exercise_4(ratio * 2 + 1, patch).ok
    assert "a str" in ex.check_exercise_4("0.5", patch).message
    assert ex.check_exercise_4(torch.tensor(ratio), patch).ok
    fb = ex.check_exercise_4(ratio * 2 + 1, patch)
    assert f"{ratio:.2f}" not in str(fb)  # the ratio is not given away
    assert not ex.check_exercise_4(ratio, {"bank": patch["bank"]}).ok  # one word: no word resampling


def test_exercise_5_on_the_model(measured):
    _, _, skip_correct, _ = measured
    answer = sol.solution_5(skip_correct)
    fb = ex.check_exercise_5(answer, skip_correct)
    assert fb.ok, fb.message
    n_layers = skip_correct.shape[0] - 1
    assert not ex.check_exercise_5([0], skip_correct).ok
    assert "counted from 1" in ex.check_exercise_5([n_layers + 1], skip_correct).message
    assert not ex.check_exercise_5([str(n_layers)], skip_correct).ok
    if answer:
        assert ex.check_exercise_5([np.int64(l) for l in answer], skip_correct).ok
        assert ex.check_exercise_5([torch.tensor(l) for l in answer], skip_correct).ok


def test_exercise_5_hints_follow_the_verdict_rules():
    """Synthetic outcomes on 100 items, four layers: layer 1 turns 12 right answers wrong (lower
    after Holm), layer 2 six (p = 0.03 unadjusted, not after Holm), layer 3 turns 12 wrong answers
    right (higher), layer 4 changes nothing."""
    base = torch.zeros(100)
    base[:70] = 1
    rows = [base.clone() for _ in range(5)]
    rows[1][:12] = 0
    rows[2][:6] = 0
    rows[3][70:82] = 1
    skip_correct = torch.stack(rows)
    assert sol.solution_5(skip_correct) == [1]
    assert ex.check_exercise_5([1], skip_correct).ok
    assert "unadjusted" in ex.check_exercise_5([1, 2], skip_correct).message
    assert "raises" in ex.check_exercise_5([1, 3], skip_correct).message
    assert "can go" in ex.check_exercise_5([2, 3, 4], skip_correct).message
    assert "once, sorted" in ex.check_exercise_5([1, 1], skip_correct).message
    fb = ex.check_exercise_5([4], skip_correct)
    assert not fb.ok and "[1]" not in str(fb) and "1" not in fb.message  # the right layers are not named
    fb = ex.check_exercise_5([0], skip_correct)  # layer 1 counted from 0
    assert not fb.ok and "counted from 0" in fb.message


def test_exercise_6(tokenizer, model, measured, sample_trace):
    classifier = measured[3]
    scores = C.gradient_x_input(model, classifier, sample_trace, 1)
    args = (tokenizer, model, classifier, sample_trace, scores, 1)
    assert "no answer" in ex.check_exercise_6(None, *args).message
    answer = sol.solution_6(*args)
    fb = ex.check_exercise_6(answer, *args)
    assert fb.ok, fb.message
    assert "sign" in ex.check_exercise_6(-answer, *args).message or abs(answer) < 1e-3
    masked = ex._comprehensiveness(*args[:5], 1, 0.2, how="mask")
    if abs(masked - answer) > 1e-2:
        assert "[MASK]" in ex.check_exercise_6(masked, *args).message
    fb = ex.check_exercise_6(answer + 0.5, *args)
    assert not fb.ok and f"{answer:+.4f}" not in str(fb)
    assert ex.check_exercise_6(torch.tensor(answer), *args).ok
    assert not ex.check_exercise_6("0.1", *args).ok


def test_exercise_7_grades_the_measurement_and_only_comments_on_the_prediction(measured):
    skips, y = measured.skip_logits, measured.y
    answer = sol.solution_7(skips, y)
    drops = ex.skip_logit_drops(skips, y)
    # independent of the solution: a loop over the items
    by_loop = [sum(float(skips[0, i, y[i]] - skips[l, i, y[i]]) for i in range(len(y))) / len(y)
               for l in range(1, skips.shape[0])]
    assert torch.allclose(drops.double().cpu(), torch.tensor(by_loop, dtype=torch.double), atol=1e-4)
    assert answer == int(np.argmax(by_loop)) + 1
    other = 1 if answer != 1 else 2
    for prediction in (answer, other, None, "the last"):
        assert ex.check_exercise_7(prediction, answer, skips, y).ok, prediction
    assert "agrees" in ex.check_exercise_7(answer, answer, skips, y).message
    assert "says layer" in ex.check_exercise_7(np.int64(other), answer, skips, y).message
    assert ex.check_exercise_7(None, torch.tensor(answer), skips, y).ok
    assert "no answer" in ex.check_exercise_7(1, None, skips, y).message


def test_exercise_7_slips(measured):
    skips, y = measured.skip_logits, measured.y
    answer = sol.solution_7(skips, y)
    drops = ex.skip_logit_drops(skips, y)
    n_layers = len(drops)
    if answer > 1:
        fb = ex.check_exercise_7(None, answer - 1, skips, y)  # the row of skip_logits[1:]
        assert not fb.ok and "off by one" in fb.message
    least = int(drops.argmin()) + 1
    if least not in (answer, answer - 1):
        fb = ex.check_exercise_7(None, least, skips, y)
        assert not fb.ok and "least" in fb.message
    assert "from 1 to" in ex.check_exercise_7(None, n_layers + 1, skips, y).message
    assert "an int" in ex.check_exercise_7(None, 2.0, skips, y).message
    for layer in range(1, n_layers + 1):
        if layer != answer:
            assert f"{float(drops[answer - 1]):.2f}" not in str(ex.check_exercise_7(None, layer, skips, y))


def test_exercise_7_names_the_accuracy_slip():
    """Three layers on four items, two classes: skipping layer 1 flips one answer but moves the
    true-class logit little; skipping layer 3 lowers it a lot without flipping anything."""
    y = torch.tensor([0, 0, 0, 0])
    base = torch.tensor([[2.0, 0.0]] * 4)
    skip1 = base.clone()
    skip1[0] = torch.tensor([0.0, 0.1])  # one answer flips: logit 2 -> 0
    skip2 = base.clone()
    skip2[:, 0] = 0.5  # every logit 2 -> 0.5, still above 0
    skips = torch.stack([base, skip1, base.clone(), skip2])
    assert sol.solution_7(skips, y) == 3
    fb = ex.check_exercise_7(None, 1, skips, y)
    assert not fb.ok and "accuracy" in fb.message
