"""Lesson 12 exercises: the worked solutions pass, typical mistakes get the right hint, a prediction
is never graded."""

import numpy as np
import pytest
import torch

from helpers.classify.compute import train_head
from helpers.common.data import load_banking77, load_polysemy
from helpers.common.stats import bootstrap_ci
from helpers.exercises import lesson12 as ex
from helpers.interventions import compute as C
from helpers.model.trace import trace_text
from lessons.solutions import solutions_12 as sol


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
    out.skip_logits, out.y, out.run = skips, torch.tensor(y, device=skips.device), run
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


@pytest.fixture(scope="module")
def mean_setup(model, measured):
    """Lesson 12's mean ablation on the fixture's utterances: every head filled with its mean context
    (means from the same run), zero ablation beside it, and the head where zeroing hurts most beyond
    the mean (``gap``, ``(layer - 1, head)``)."""
    ablation, _, _, classifier = measured
    means = C.mean_head_contexts(model, measured.run)
    mean_ablation = C.ablate_every_head(model, classifier, measured.run, measured.y, fill=means, progress=False)
    gap = divmod(int((ablation.loss_increase_items().mean(0) - mean_ablation.loss_increase_items().mean(0))
                     .argmax()), model.config.num_attention_heads)
    return mean_ablation, ablation, means, gap


def test_no_answer(model, measured, mean_setup, patch):
    mean_ablation, zero, _, gap = mean_setup
    assert "no answer" in ex.check_exercise_1(None, mean_ablation, zero, gap).message
    assert "no answer" in ex.check_exercise_3(None, patch).message
    assert "no answer" in ex.check_exercise_4(1, None, measured.skip_logits, measured.y).message


def test_exercise_1_own_hook_equals_the_lessons_mean_ablation(model, measured, mean_setup):
    mean_ablation, zero, means, gap = mean_setup
    classifier = measured[3]
    answer = sol.solution_1(model, classifier, measured.run, measured.y, means, gap)
    assert answer == pytest.approx(ex.mean_ablation_drop(mean_ablation, gap), abs=1e-4)
    fb = ex.check_exercise_1(answer, mean_ablation, zero, gap)
    assert fb.ok, fb.message
    assert ex.check_exercise_1(torch.tensor(answer), mean_ablation, zero, gap).ok
    zeroed = ex.mean_ablation_drop(zero, gap)
    if abs(zeroed - answer) > 1e-2:
        fb = ex.check_exercise_1(zeroed, mean_ablation, zero, gap)
        assert not fb.ok and "zero" in fb.message
    if abs(answer) > 1e-2:
        assert "sign" in ex.check_exercise_1(-answer, mean_ablation, zero, gap).message
    fb = ex.check_exercise_1(answer + 5, mean_ablation, zero, gap)
    assert not fb.ok and f"{answer:+.3f}" not in str(fb)  # the answer is not given away
    assert "a str" in ex.check_exercise_1("0.1", mean_ablation, zero, gap).message


def test_exercise_2_grades_the_reversed_order_and_comments_on_the_prediction(model, measured):
    ablation, grads, _, classifier = measured
    run, y = measured.run, measured.y
    heads = ablation.heads()
    by_importance = sorted(heads, key=lambda k: float(grads.abs().mean(0)[k[0] - 1, k[1]]))
    random_correct = C.pruning_outcomes(model, classifier, run, y, C.random_orders(model, 4), (0.5,),
                                        progress=False)
    forward, _ = C.pruning_curve(model, classifier, run, y, by_importance, (0.5,))
    comparison = C.pruning_comparison(forward, random_correct)
    args = (model, classifier, run, y.tolist(), by_importance, 0.5, comparison)
    answer = sol.solution_2(model, classifier, run, y.tolist(), by_importance, 0.5)
    # independent of the solution: the reversed order's first half gated to zero by hand
    L, A = model.config.num_hidden_layers, model.config.num_attention_heads
    gates = {l: torch.ones(A) for l in range(1, L + 1)}
    for l, h in by_importance[::-1][:round(0.5 * L * A)]:
        gates[l][h] = 0.0
    with torch.no_grad():
        last = C.continue_from(model, run.hidden(0), run.attention_mask, 0, gates)
    by_hand = float((classifier(last, run.attention_mask).argmax(-1) == y).float().mean())
    assert answer == pytest.approx(by_hand)
    for prediction in ("below", "inside", "above", None, "lower"):
        assert ex.check_exercise_2(prediction, answer, *args).ok, prediction
    low, high = comparison.random_scores.min(), comparison.random_scores.max()
    where = "below" if answer < low else "above" if answer > high else "inside"
    assert "agrees" in ex.check_exercise_2(where, answer, *args).message
    assert "no answer" in ex.check_exercise_2("below", None, *args).message
    if abs(comparison.score - answer) > 1e-6:
        assert "least important first" in ex.check_exercise_2(None, comparison.score, *args).message
    fb = ex.check_exercise_2(None, answer + 0.3, *args)
    assert not fb.ok and f"{answer:.1%}" not in str(fb)


def test_exercise_3(patch):
    pooled, _, _ = C.word_cluster_shares(patch, "follows")
    ratio = sol.solution_3(patch, pooled)
    pairs = bootstrap_ci(torch.cat([p["follows"][:, 1] for p in patch.values()]).numpy())
    assert ratio == pytest.approx((pairs.high - pairs.low) / (pooled[1].high - pooled[1].low))
    fb = ex.check_exercise_3(ratio, patch)
    assert fb.ok, fb.message
    assert ex.check_exercise_3(ratio * 1.02, patch).ok  # a different bootstrap draw is close enough
    assert ratio < 0.9, "resampling words gives the wider interval"
    fb = ex.check_exercise_3(1 / ratio, patch)
    assert not fb.ok and "inverse" in fb.message
    assert not ex.check_exercise_3(ratio * 2 + 1, patch).ok
    assert "a str" in ex.check_exercise_3("0.5", patch).message
    assert ex.check_exercise_3(torch.tensor(ratio), patch).ok
    fb = ex.check_exercise_3(ratio * 2 + 1, patch)
    assert f"{ratio:.2f}" not in str(fb)  # the ratio is not given away
    assert not ex.check_exercise_3(ratio, {"bank": patch["bank"]}).ok  # one word: no word resampling


def test_exercise_4_grades_the_measurement_and_only_comments_on_the_prediction(measured):
    skips, y = measured.skip_logits, measured.y
    answer = sol.solution_4(skips, y)
    drops = ex.skip_logit_drops(skips, y)
    # independent of the solution: a loop over the items
    by_loop = [sum(float(skips[0, i, y[i]] - skips[l, i, y[i]]) for i in range(len(y))) / len(y)
               for l in range(1, skips.shape[0])]
    assert torch.allclose(drops.double().cpu(), torch.tensor(by_loop, dtype=torch.double), atol=1e-4)
    assert answer == int(np.argmax(by_loop)) + 1
    other = 1 if answer != 1 else 2
    for prediction in (answer, other, None, "the last"):
        assert ex.check_exercise_4(prediction, answer, skips, y).ok, prediction
    assert "agrees" in ex.check_exercise_4(answer, answer, skips, y).message
    assert "says layer" in ex.check_exercise_4(np.int64(other), answer, skips, y).message
    assert ex.check_exercise_4(None, torch.tensor(answer), skips, y).ok
    assert "no answer" in ex.check_exercise_4(1, None, skips, y).message


def test_exercise_4_slips(measured):
    skips, y = measured.skip_logits, measured.y
    answer = sol.solution_4(skips, y)
    drops = ex.skip_logit_drops(skips, y)
    n_layers = len(drops)
    if answer > 1:
        fb = ex.check_exercise_4(None, answer - 1, skips, y)  # the row of skip_logits[1:]
        assert not fb.ok and "off by one" in fb.message
    least = int(drops.argmin()) + 1
    if least not in (answer, answer - 1):
        fb = ex.check_exercise_4(None, least, skips, y)
        assert not fb.ok and "least" in fb.message
    assert "from 1 to" in ex.check_exercise_4(None, n_layers + 1, skips, y).message
    assert "an int" in ex.check_exercise_4(None, 2.0, skips, y).message
    for layer in range(1, n_layers + 1):
        if layer != answer:
            assert f"{float(drops[answer - 1]):.2f}" not in str(ex.check_exercise_4(None, layer, skips, y))


def test_exercise_4_names_the_accuracy_slip():
    """Three layers on four items, two classes: skipping layer 1 flips one answer but moves the
    true-class logit little; skipping layer 3 lowers it a lot without flipping anything."""
    y = torch.tensor([0, 0, 0, 0])
    base = torch.tensor([[2.0, 0.0]] * 4)
    skip1 = base.clone()
    skip1[0] = torch.tensor([0.0, 0.1])  # one answer flips: logit 2 -> 0
    skip2 = base.clone()
    skip2[:, 0] = 0.5  # every logit 2 -> 0.5, still above 0
    skips = torch.stack([base, skip1, base.clone(), skip2])
    assert sol.solution_4(skips, y) == 3
    fb = ex.check_exercise_4(None, 1, skips, y)
    assert not fb.ok and "accuracy" in fb.message
