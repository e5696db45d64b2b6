"""helpers/attribution/compute.py (and gradients.py, erasure.py, findings.py) on the real bundled model: every attribution is checked against an
independent computation (a finite difference, Captum, a sum written out, the layer run by hand), and
the faithfulness verdicts against simulated curves whose truth is known."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from helpers.attribution import compute as A
from helpers.attribution import erasure as AE
from helpers.attribution import findings as AF
from helpers.classify.compute import train_head
from helpers.common.claims import Claim
from helpers.common.data import load_banking77
from helpers.interventions import compute as C


@pytest.fixture(scope="module")
def setup(tokenizer, model):
    """A head trained on the mean-pooled last layer of a small BANKING77 cut (six intents, 8
    training utterances each, seeded), as in tests/test_interventions_compute.py."""
    train = load_banking77("train")
    train = train.only(train.names[:6]).sample(8, seed=0)
    head = train_head(C.pooled_features(tokenizer, model, train.texts, max_length=64, progress=False), train.labels,
                      train.num_classes, progress=False)
    return (C.SentenceHead(head, "mean"),)


def test_rollout_by_hand(sample_trace):
    T = sample_trace.seq_len
    eye = torch.eye(T)
    steps = []
    for layer in range(1, 4):
        mixed = 0.5 * sample_trace.attention(layer).mean(0) + 0.5 * eye
        steps.append(mixed / mixed.sum(-1, keepdim=True))
    rollout = A.attention_rollout(sample_trace.attentions[:3])
    assert torch.allclose(rollout, steps[2] @ steps[1] @ steps[0], atol=1e-6)
    assert torch.allclose(rollout.sum(-1), torch.ones(T), atol=1e-5)
    assert torch.allclose(A.rollout_scores(sample_trace, "cls"), A.attention_rollout(sample_trace.attentions)[0])
    last = sample_trace.attention(sample_trace.num_layers)
    assert torch.allclose(A.raw_attention_scores(sample_trace), last.mean(0).mean(0))
    with pytest.raises(ValueError, match="heads, T, T"):
        A.attention_rollout([torch.ones(3, 4)])


def test_gradient_x_input_matches_a_directional_finite_difference(model, setup, sample_trace):
    classifier = setup[0]
    scores = A.gradient_x_input(model, classifier, sample_trace, target=1)
    e = sample_trace.hidden(0)[None]
    ones = torch.ones(1, sample_trace.seq_len, dtype=torch.long)

    def logit(scale_token, t):
        x = e.clone()
        x[0, scale_token] *= 1 + t
        with torch.no_grad():
            return classifier(C.continue_from(model, x, ones, 0), ones)[0, 1].item()

    for j in (1, 4):
        fd = (logit(j, 1e-3) - logit(j, -1e-3)) / 2e-3
        assert abs(fd - scores[j].item()) < 1e-3 + 0.05 * abs(fd)


def test_occlusion_drops_the_token_and_reruns(tokenizer, model, setup, sample_trace):
    classifier = setup[0]
    scores = A.occlusion_scores(model, classifier, sample_trace, target=2)
    assert torch.isnan(scores[0]) and torch.isnan(scores[-1])  # [CLS] and [SEP] are never dropped
    ids = sample_trace.input_ids.tolist()
    with torch.no_grad():
        full = classifier(model(input_ids=torch.tensor([ids])).last_hidden_state, torch.ones(1, len(ids)))[0, 2]
        short = ids[:3] + ids[4:]
        hidden = model(input_ids=torch.tensor([short])).last_hidden_state
        without = classifier(hidden, torch.ones(1, len(short)))[0, 2]
    assert torch.isclose(scores[3], full - without, atol=1e-4)
    windows = A.occlusion_windows(list(range(1, 11)), max_passes=3)
    assert len(windows) <= 3 and sum(windows, []) == list(range(1, 11))
    coarse = A.occlusion_scores(model, classifier, sample_trace, target=2, max_passes=2)
    first = A.occlusion_windows(list(range(1, sample_trace.seq_len - 1)), 2)[0]
    assert len(set(coarse[first].tolist())) == 1
    with pytest.raises(ValueError, match="positive int"):
        A.occlusion_windows([1, 2], 0)
    with pytest.raises(ValueError, match="not a class of this head"):
        A.occlusion_scores(model, classifier, sample_trace, target=99)
    with pytest.raises(ValueError, match="not a class of this head"):
        A.gradient_x_input(model, classifier, sample_trace, target=-1)


def test_attribution_scores_has_every_method(model, setup, sample_trace):
    scores = A.attribution_scores(model, setup[0], sample_trace, target=0)
    assert tuple(scores) == A.ATTRIBUTION_METHODS
    assert all(s.shape == (sample_trace.seq_len,) for s in scores.values())


def _plain_logits(model, classifier, ids, mask=None):
    mask = torch.ones_like(ids) if mask is None else mask
    with torch.no_grad():
        return classifier(model(input_ids=ids, attention_mask=mask).last_hidden_state, mask)


def test_baseline_ids_keep_cls_and_sep(tokenizer, sample_trace):
    ids = sample_trace.input_ids[None]
    pad, mask = A.baseline_ids(tokenizer, ids, "pad"), A.baseline_ids(tokenizer, ids, "mask")
    assert pad[0, 0] == tokenizer.cls_token_id and pad[0, -1] == tokenizer.sep_token_id
    assert (pad[0, 1:-1] == tokenizer.pad_token_id).all() and (mask[0, 1:-1] == tokenizer.mask_token_id).all()
    with pytest.raises(ValueError, match="choose one of"):
        A.baseline_ids(tokenizer, ids, "zeros")


@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_integrated_gradients_match_a_riemann_sum_by_hand(tokenizer, model, setup, sample_trace):
    """Captum's IG against IG written out: interpolate the word embeddings (a forward hook on
    ``word_embeddings``), midpoint rule, gradients summed; and completeness (Captum's delta)."""
    classifier = setup[0]
    ig = A.integrated_gradients(tokenizer, model, classifier, sample_trace, 1, steps=(64,), tolerance=0.05)
    ids = sample_trace.input_ids[None]
    ref = A.baseline_ids(tokenizer, ids)
    full, base = _plain_logits(model, classifier, ids)[0, 1], _plain_logits(model, classifier, ref)[0, 1]
    assert abs(ig.f_input - full.item()) < 1e-4 and abs(ig.f_baseline - base.item()) < 1e-4
    assert abs(ig.scores.sum().item() - ig.gap - ig.delta) < 1e-4
    assert ig.converged and abs(ig.delta) < 0.05 * abs(ig.gap)
    table = model.embeddings.word_embeddings
    e1, e0 = table(ids).detach(), table(ref).detach()
    n, total = 100, torch.zeros_like(e1)
    for a in (torch.arange(n) + 0.5) / n:
        point = (e0 + a * (e1 - e0)).requires_grad_(True)
        handle = table.register_forward_hook(lambda m, i, o: point)
        try:
            logit = classifier(model(input_ids=ids).last_hidden_state, torch.ones_like(ids))[0, 1]
        finally:
            handle.remove()
        total += torch.autograd.grad(logit, point)[0] / n
    by_hand = ((e1 - e0) * total).sum(-1)[0]
    assert torch.allclose(ig.scores, by_hand, atol=0.02 * by_hand.abs().max().item())


def test_integrated_gradients_raise_the_steps_until_complete(tokenizer, model, setup, sample_trace):
    ig = A.integrated_gradients(tokenizer, model, setup[0], sample_trace, 0, steps=(2, 64), tolerance=1e-9)
    assert [n for n, _ in ig.history] == [2, 64] and ig.steps == 64 and not ig.converged
    with pytest.raises(ValueError, match="steps"):
        A.integrated_gradients(tokenizer, model, setup[0], sample_trace, 0, steps=())
    with pytest.raises(ValueError, match="valid classes"):
        A.integrated_gradients(tokenizer, model, setup[0], sample_trace, 99)


def test_integrated_gradients_by_embedding_parts(tokenizer, model, setup, sample_trace):
    parts = A.integrated_gradients_by_embedding(tokenizer, model, setup[0], sample_trace, 2, steps=32)
    total = sum(parts[k].sum().item() for k in ("word", "segment", "position"))
    assert abs(total - parts["gap"] - parts["delta"]) < 1e-4
    assert torch.equal(parts["segment"], torch.zeros_like(parts["segment"]))  # one sentence: segment = baseline
    positions = torch.zeros(1, sample_trace.seq_len, dtype=torch.long)
    ref = A.baseline_ids(tokenizer, sample_trace.input_ids[None])
    with torch.no_grad():
        f_ref = setup[0](model(input_ids=ref, position_ids=positions).last_hidden_state, torch.ones_like(ref))[0, 2]
    full = _plain_logits(model, setup[0], sample_trace.input_ids[None])[0, 2]
    assert abs(parts["gap"] - (full - f_ref).item()) < 1e-4


def test_gradient_x_input_equals_captum(model, setup, sample_trace):
    ours = A.gradient_x_input(model, setup[0], sample_trace, 3)
    assert torch.allclose(ours, A.gradient_x_input_captum(model, setup[0], sample_trace, 3), atol=1e-5)


def test_norm_attention_scores_are_lesson_08s(model, sample_trace):
    from helpers.attention.compute import norm_attention

    weighted = norm_attention(sample_trace, model)[-1].mean(0)
    assert torch.allclose(A.norm_attention_scores(sample_trace, model), weighted.mean(0))
    assert torch.allclose(A.norm_attention_scores(sample_trace, model, "cls"), weighted[0])


def test_top_tokens_rank_by_signed_score():
    scores = torch.tensor([9.0, -5.0, 2.0, 2.0, 0.5, 9.0])
    assert AE.top_tokens(scores, [1, 2, 3, 4], 0.5) == [2, 3]  # -5 is last: it argues against
    assert AE.top_tokens(scores, [1, 2, 3, 4], 0.1) == [2]  # at least one token
    with pytest.raises(ValueError, match="fraction"):
        AE.top_tokens(scores, [1, 2], 0.0)


def test_removal_probabilities_drop_mask_or_pad(tokenizer, model, setup, sample_trace):
    classifier = setup[0]
    ids = sample_trace.input_ids.tolist()
    probs = {how: AE.removal_probabilities(tokenizer, model, classifier, sample_trace, 2, [[], [2, 4]], how=how)
             for how in AE.REMOVALS}
    full = _plain_logits(model, classifier, torch.tensor([ids])).softmax(-1)[0, 2]
    dropped = _plain_logits(model, classifier, torch.tensor([ids[:2] + ids[3:4] + ids[5:]])).softmax(-1)[0, 2]
    masked = list(ids)
    masked[2] = masked[4] = tokenizer.mask_token_id
    mask_p = _plain_logits(model, classifier, torch.tensor([masked])).softmax(-1)[0, 2]
    for how in AE.REMOVALS:
        assert abs(probs[how][0] - full) < 1e-5
    assert abs(probs["drop"][1] - dropped) < 1e-5 and abs(probs["mask"][1] - mask_p) < 1e-5
    with pytest.raises(ValueError, match="choose one of"):
        AE.removal_probabilities(tokenizer, model, classifier, sample_trace, 2, [[1]], how="blank")


def test_erasure_curves_are_eraser_metrics(tokenizer, model, setup, sample_trace):
    classifier = setup[0]
    positions = list(range(1, sample_trace.seq_len - 1))
    scores = torch.arange(sample_trace.seq_len, dtype=torch.float)  # later tokens rank first
    curves = AE.erasure_curves(tokenizer, model, classifier, sample_trace, 1, {"later first": scores}, positions,
                              fractions=(0.25, 0.5))
    top = AE.top_tokens(scores, positions, 0.25)
    rest = [p for p in positions if p not in top]
    p = AE.removal_probabilities(tokenizer, model, classifier, sample_trace, 1, [[], top, rest])
    assert abs(curves["later first"]["comprehensiveness"][0] - (p[0] - p[1]).item()) < 1e-6
    assert abs(curves["later first"]["sufficiency"][0] - (p[0] - p[2]).item()) < 1e-6
    assert curves["later first"]["comprehensiveness"].shape == (2,)
    randoms = AE.random_rankings(positions, sample_trace.seq_len, 3, seed=1)
    assert len(randoms) == 3 and not torch.equal(randoms["random 0"], randoms["random 1"])


def test_value_zeroing_by_hand(model, sample_trace):
    """One column by hand: the layer run once with token j's value vector zeroed (a hook on the
    full attention module's value projection), cosine distance per output token, rows normalised."""
    layer, T = 2, sample_trace.seq_len
    scores = A.value_zeroing(model, sample_trace, layer)
    assert scores.shape == (T, T) and torch.allclose(scores.sum(-1), torch.ones(T), atol=1e-5)
    module = model.encoder.layer[layer - 1]
    distances = []
    for j in range(T + 1):  # the last run zeroes nothing: the reference
        def zero(mod, args, out, j=j):
            out = out.clone()
            out[:, j:j + 1] = 0.0  # j == T: an empty slice, nothing zeroed
            return out

        handle = module.attention.self.value.register_forward_hook(zero)
        try:
            with torch.no_grad():
                out = C.run_layer(module, sample_trace.hidden(layer - 1)[None],
                                    C.additive_mask(torch.ones(1, T, dtype=torch.long)))[0]
        finally:
            handle.remove()
        distances.append(out.double())
    assert torch.allclose(distances[T].float(), sample_trace.hidden(layer), atol=1e-4)
    by_hand = torch.stack([1 - F.cosine_similarity(d, distances[T], dim=-1) for d in distances[:T]], 1).clamp_min(0)
    total = by_hand.sum(-1, keepdim=True)
    clear = total[:, 0] > 1e-3  # rows whose distances stand well above float32 rounding
    assert clear.sum() >= T // 2
    assert torch.allclose(scores[clear], (by_hand / total)[clear].float(), atol=1e-3)
    two = [A.value_zeroing(model, sample_trace, l) for l in (1, 2)]
    assert torch.allclose(A.value_zeroing_rollout(two), two[1] @ two[0])
    with pytest.raises(ValueError, match="valid layers are 1 to"):
        A.value_zeroing(model, sample_trace, 0)


def test_integrated_gradients_by_hand_equals_captum(tokenizer, model):
    from helpers.attribution.compute import gauss_legendre_path, integrated_gradients, integrated_gradients_by_hand
    from helpers.interventions.compute import SentenceHead
    from helpers.model.trace import trace_text

    torch.manual_seed(0)
    head = SentenceHead(torch.nn.Linear(model.config.hidden_size, 4))
    trace = trace_text(tokenizer, model, "Where is my new card?")
    alphas, weights = gauss_legendre_path(16)
    assert float(weights.sum()) == pytest.approx(1.0) and 0 < float(alphas.min()) < float(alphas.max()) < 1
    ours = integrated_gradients_by_hand(tokenizer, model, head, trace, 2, steps=16)
    captum = integrated_gradients(tokenizer, model, head, trace, 2, steps=[16])
    assert torch.allclose(ours, captum.scores, atol=1e-5, rtol=1e-4)
    assert float(ours.sum()) == pytest.approx(captum.gap + captum.delta, abs=1e-4)  # completeness, as Captum's delta says
    with pytest.raises(ValueError, match="steps"):
        gauss_legendre_path(1)


# -- the lesson's six methods and the faithfulness study --------------------------------------------------


def test_six_attributions_are_the_methods_one_by_one(tokenizer, model, setup, sample_trace):
    scores, ig = A.six_attributions(tokenizer, model, setup[0], sample_trace, 1, ig_steps=(32,))
    assert tuple(scores) == A.METHODS
    assert torch.equal(scores["integrated gradients"], ig.scores)
    assert torch.allclose(scores["norm-based attention"], A.norm_attention_scores(sample_trace, model))
    assert torch.allclose(scores["gradient x input"], A.gradient_x_input(model, setup[0], sample_trace, 1))
    logits = A.sentence_logits(setup[0], sample_trace)
    full = _plain_logits(model, setup[0], sample_trace.input_ids[None])[0]
    assert torch.allclose(logits, full, atol=1e-4)


def test_faithfulness_study_is_erasure_curves_per_utterance(tokenizer, model, setup):
    texts = ["Where is my new card?", "I want to close my account."]
    faith = AE.faithfulness_study(tokenizer, model, setup[0], texts, ig_steps=(16,), n_random=2, removals=("drop",),
                                 progress=False)
    assert len(faith) == 2 and set(faith.curves) == {"drop"}
    K = len(AE.FAITHFULNESS_FRACTIONS)
    assert faith.curves["drop"]["occlusion"]["comprehensiveness"].shape == (2, K)
    from helpers.model.tokens import content_positions
    from helpers.model.trace import trace_text

    t = trace_text(tokenizer, model, texts[1])
    target = int(A.sentence_logits(setup[0], t).argmax())
    assert faith.targets[1] == target
    occ = A.occlusion_scores(model, setup[0], t, target)
    one = AE.erasure_curves(tokenizer, model, setup[0], t, target, {"occlusion": occ}, content_positions(t))
    assert np.allclose(faith.curves["drop"]["occlusion"]["sufficiency"][1], one["occlusion"]["sufficiency"], atol=1e-5)
    assert np.allclose(faith.aopc("occlusion", "sufficiency"), faith.curves["drop"]["occlusion"]["sufficiency"].mean(1))
    with pytest.raises(ValueError, match="no curve"):
        faith.aopc("occlusion", how="mask")
    with pytest.raises(ValueError, match="removals"):
        AE.faithfulness_study(tokenizer, model, setup[0], texts, removals=("blank",), progress=False)


def _simulated(shifts: dict, n: int = 40, seed: int = 0) -> "AE.Faithfulness":
    """Curves whose truth is known: each method's comprehensiveness is the random ranking's plus its
    ``shift`` plus noise, per utterance."""
    rng = np.random.default_rng(seed)
    K = len(AE.FAITHFULNESS_FRACTIONS)
    base = rng.uniform(0.2, 0.5, (n, 1)) + rng.normal(0, 0.05, (n, K))
    curves = {"random": {"comprehensiveness": base, "sufficiency": base}}
    for m, shift in shifts.items():
        noisy = base + shift + rng.normal(0, 0.05, (n, 1))
        curves[m] = {"comprehensiveness": noisy, "sufficiency": base - shift + rng.normal(0, 0.05, (n, 1))}
    return AE.Faithfulness([f"u{i}" for i in range(n)], [0] * n, {"drop": curves}, [0.0] * n, 5,
                          methods=tuple(shifts))


def test_versus_random_reads_one_bonferroni_family():
    """Three methods, read on two measures in one sentence: one family of 6 (issue 44)."""
    faith = _simulated({"good": 0.2, "bad": -0.2, "none": 0.0})
    comp = AE.versus_random(faith, "comprehensiveness")
    assert comp["good"].kind == "higher" and comp["bad"].kind == "lower"
    assert all(v.family == 6 for v in comp.values())
    assert abs(comp["good"].difference.level - (1 - 0.05 / 6)) < 1e-9
    assert all(v.family == 3 for v in AE.versus_random(faith, "comprehensiveness", metrics=1).values())
    diff = faith.aopc("good") - faith.aopc("random")
    assert comp["good"].difference.estimate == pytest.approx(diff.mean())
    suff = AE.versus_random(faith, "sufficiency")
    assert AF.faithful_word(suff["good"], "sufficiency") == "more sufficient"
    assert AF.faithful_word(comp["bad"], "comprehensiveness") == "LESS comprehensive"


def test_versus_random_false_positive_rate_at_no_difference():
    """A method that is truly a random ranking is called different from it in about alpha of the
    simulated studies or less (Bonferroni over three methods x two measures: each at most 0.05 / 6):
    200 studies, so a rate above 0.06 would be far outside the Monte Carlo error of a 0.008 rate."""
    calls = 0
    for seed in range(200):
        faith = _simulated({"a": 0.0, "b": 0.0, "c": 0.0}, n=24, seed=seed)
        calls += sum(v.differs for v in AE.versus_random(faith, seed=seed).values())
    assert calls / 600 <= 0.06


def test_findings_are_generated_from_the_numbers():
    faith = _simulated({"raw attention": 0.1, "attention rollout": 0.0, "occlusion": 0.3})
    comp, suff = AE.versus_random(faith, "comprehensiveness"), AE.versus_random(faith, "sufficiency")
    sentence, details = AF.faithfulness_finding(comp, suff, faith)
    assert "occlusion" in sentence and f"On {len(faith)} test utterances" in sentence
    assert not any(t.lower() in sentence.lower() for t in ("bonferroni", "p =", "interval"))
    assert any("Bonferroni over 6 comparisons (3 methods x the two measures" in d for d in details)
    rollout = AE.rollout_versus_raw(faith)
    assert rollout.kind == "lower"  # rollout was simulated 0.1 below raw attention
    text, _ = AF.rollout_finding(rollout, len(faith))
    assert text.startswith("Raw attention's top tokens matter more")
    rows = C.claim_rows({"faithfulness": Claim(sentence, details)}, AF.STORIES)
    assert len(rows) == 1 and rows[0][1] == sentence and "DeYoung" in rows[0][2]


def test_findings_name_the_benchmarks_items_and_classes():
    """A Chinese run classifies THUCNews headlines into topics: its sentences say so, not
    "utterances" and "intent" (issue 48)."""
    faith = _simulated({"raw attention": 0.0, "attention rollout": 0.3})
    comp, suff = AE.versus_random(faith, "comprehensiveness"), AE.versus_random(faith, "sufficiency")
    sentence, details = AF.faithfulness_finding(comp, suff, faith, items="headlines")
    text, _ = AF.rollout_finding(AE.rollout_versus_raw(faith), len(faith), items="headlines", cls="topic")
    assert text.startswith("Rollout's top tokens matter more") and "predicted topic's probability" in text
    said = " ".join([sentence, text, *details])
    assert f"On {len(faith)} test headlines" in sentence and "utterance" not in said and "intent" not in said


def test_right_and_wrong_picks_what_the_head_really_does(tokenizer, model):
    """Lesson 13's two test items beside its sentence: each re-read through a traced forward pass
    (not the batched, padded features that picked it), its class as the head says."""
    from helpers.common.budget import choose_budget
    from helpers.model.trace import trace_text

    task = C.banking_setup(tokenizer, model, choose_budget("quick", model), progress=False)
    found = A.right_and_wrong(tokenizer, model, task)

    def predicted(text):
        return int(A.sentence_logits(task.classifier, trace_text(tokenizer, model, text)).argmax())

    draw = [predicted(t) == y for t, y in zip(task.test.texts, task.test.labels)]
    assert found.correct == sum(draw) and found.n_draw == len(task.test)
    assert found.right is not None and found.right[0] == task.test.texts[draw.index(True)]
    text, true, guess = found.right
    assert true == guess == predicted(text)
    assert found.wrong is not None, "the head is not perfect on the whole test split"
    text, true, guess = found.wrong
    assert guess == predicted(text) != true
    assert (found.extra > 0) == all(draw), "reads past the draw only when the draw has no wrong item"
    if not all(draw):
        assert text == task.test.texts[draw.index(False)]
