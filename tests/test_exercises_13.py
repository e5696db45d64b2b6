"""Lesson 13 exercises: the worked solutions pass, typical mistakes get the right hint, a prediction
is never graded."""

import pytest
import torch

from helpers.attribution import compute as A
from helpers.classify.compute import train_head
from helpers.common.data import load_banking77
from helpers.exercises import lesson13 as ex
from helpers.interventions import compute as C
from lessons.solutions import solutions_13 as sol


@pytest.fixture(scope="module")
def classifier(tokenizer, model):
    """A head on a small BANKING77 cut (six intents, 6 training utterances each, seeded)."""
    train = load_banking77("train")
    train = train.only(train.names[:6]).sample(6, seed=0)
    head = train_head(C.pooled_features(tokenizer, model, train.texts, max_length=64, progress=False), train.labels,
                      train.num_classes, progress=False)
    return C.SentenceHead(head, "mean")


def test_exercise_1(sample_trace):
    assert ex.check_exercise_1(sol.my_rollout, sample_trace).ok

    def no_residual(attentions):
        r = torch.eye(attentions[0].shape[-1])
        for a in attentions:
            r = a.mean(0) @ r
        return r

    fb = ex.check_exercise_1(no_residual, sample_trace)
    assert not fb.ok and "residual" in fb.message

    def wrong_order(attentions):
        eye = torch.eye(attentions[0].shape[-1])
        r = eye
        for a in attentions:
            m = 0.5 * a.mean(0) + 0.5 * eye
            r = r @ (m / m.sum(-1, keepdim=True))
        return r

    fb = ex.check_exercise_1(wrong_order, sample_trace)
    assert not fb.ok and "order" in fb.message
    assert "shape" in ex.check_exercise_1(lambda att: att[0], sample_trace).message
    assert "raised" in ex.check_exercise_1(lambda att: 1 / 0, sample_trace).message


def test_exercise_2(tokenizer, model, classifier, sample_trace):
    scores = A.gradient_x_input(model, classifier, sample_trace, 1)
    args = (tokenizer, model, classifier, sample_trace, scores, 1)
    assert "no answer" in ex.check_exercise_2(None, *args).message
    answer = sol.solution_2(*args)
    fb = ex.check_exercise_2(answer, *args)
    assert fb.ok, fb.message
    assert "sign" in ex.check_exercise_2(-answer, *args).message or abs(answer) < 1e-3
    masked = ex._comprehensiveness(*args[:5], 1, 0.2, how="mask")
    if abs(masked - answer) > 1e-2:
        assert "[MASK]" in ex.check_exercise_2(masked, *args).message
    fb = ex.check_exercise_2(answer + 0.5, *args)
    assert not fb.ok and f"{answer:+.4f}" not in str(fb)
    assert ex.check_exercise_2(torch.tensor(answer), *args).ok
    assert not ex.check_exercise_2("0.1", *args).ok



@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_exercise_3_grades_the_position_and_comments_on_the_prediction(tokenizer, model, classifier, sample_trace):
    target = 1
    pad = A.integrated_gradients(tokenizer, model, classifier, sample_trace, target, steps=A.IG_STEPS)
    args = (tokenizer, model, classifier, sample_trace, target, pad.scores)
    answer = sol.solution_3(tokenizer, model, classifier, sample_trace, target)
    masked = A.integrated_gradients(tokenizer, model, classifier, sample_trace, target, baseline="mask",
                                    steps=A.IG_STEPS)
    words = list(range(1, sample_trace.seq_len - 1))
    assert answer == max(words, key=lambda i: float(masked.scores[i]))  # by hand: the highest signed word score
    for prediction in ("same", "different", None, "maybe"):
        assert ex.check_exercise_3(prediction, answer, *args).ok, prediction
    outcome = "same" if answer == ex.top_word(pad.scores, sample_trace) else "different"
    assert "agrees" in ex.check_exercise_3(outcome, answer, *args).message
    assert ex.check_exercise_3(None, torch.tensor(answer), *args).ok
    assert "no answer" in ex.check_exercise_3("same", None, *args).message
    if outcome == "different":
        fb = ex.check_exercise_3(None, ex.top_word(pad.scores, sample_trace), *args)
        assert not fb.ok and "[PAD] baseline" in fb.message
    assert "[CLS] and [SEP]" in ex.check_exercise_3(None, 0, *args).message
    assert "an int" in ex.check_exercise_3(None, 1.0, *args).message
    other = next(i for i in words if i not in (answer, ex.top_word(pad.scores, sample_trace)))
    fb = ex.check_exercise_3(None, other, *args)
    assert not fb.ok and f"position {answer}" not in str(fb)
