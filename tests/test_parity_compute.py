"""helpers/parity/compute.py: the course's head ablation, patching and attributions against nnsight,
TransformerLens and Captum, on the real bundled model. The research libraries are the optional
[research] extra (``bash course.sh`` and CI install it); their tests skip without it."""

import pytest
import torch

from helpers.interventions.compute import SentenceHead
from helpers.model.trace import trace_text
from helpers.parity import compute as parity

ITEMS = ["I still have not received my new card.", "Where is my card?",
         ("Has my card arrived?", "No, it did not arrive yet.")]  # a packed pair: token types 0 and 1


@pytest.fixture(scope="module")
def head(model):
    torch.manual_seed(0)  # a readout for the attribution rows; the parity does not depend on its weights
    return SentenceHead(torch.nn.Linear(model.config.hidden_size, 5))


@pytest.fixture(scope="module")
def bank_pair(tokenizer, model):
    donor = trace_text(tokenizer, model, "We sat on the bank of the river and watched the water.")
    target = trace_text(tokenizer, model, "She opened a savings account at the bank last week.")
    return donor, target


def needs(library):
    return pytest.mark.skipif(parity.library_version(library) is None,
                              reason=f"{library} is not installed: {parity.RESEARCH_EXTRA}")


def test_batch_inputs_pack_pairs_with_their_token_types(tokenizer, model):
    inputs = parity.batch_inputs(tokenizer, model, ITEMS)
    assert inputs["input_ids"].shape == inputs["token_type_ids"].shape == inputs["attention_mask"].shape
    assert inputs["token_type_ids"][2].max() == 1 and inputs["token_type_ids"][:2].max() == 0
    assert inputs["attention_mask"][1].sum() < inputs["attention_mask"].shape[1]  # padded
    with pytest.raises(ValueError, match="non-empty list"):
        parity.batch_inputs(tokenizer, model, "one string")


def test_course_head_ablation_changes_the_output_and_token_types_matter(tokenizer, model):
    inputs = parity.batch_inputs(tokenizer, model, ITEMS)
    real = inputs["attention_mask"].bool()
    with torch.no_grad():
        plain = model(**inputs).last_hidden_state
        no_types = model(**{**inputs, "token_type_ids": torch.zeros_like(inputs["token_type_ids"])}).last_hidden_state
    ablated = parity.course_head_ablation(model, inputs, 1, 0)
    # the comparisons below could not pass by accident: removing the head moves the output, and so
    # would a library that dropped the token types of the packed pair
    assert (ablated[real] - plain[real]).abs().max() > 1e-3
    assert (no_types[2][real[2]] - plain[2][real[2]]).abs().max() > 1e-3


@needs("nnsight")
@pytest.mark.parametrize("layer, head", [(1, 0), (None, None)])  # None: the last layer, the last head
def test_nnsight_head_ablation_equals_the_course(tokenizer, model, layer, head):
    layer = layer or model.config.num_hidden_layers
    head = model.config.num_attention_heads - 1 if head is None else head
    inputs = parity.batch_inputs(tokenizer, model, ITEMS)
    real = inputs["attention_mask"].bool()
    wrapped = parity.nnsight_model(model)
    ours = parity.course_head_ablation(model, inputs, layer, head)
    theirs = parity.nnsight_head_ablation(wrapped, inputs, layer, head)
    assert torch.allclose(theirs[real], ours[real], atol=parity.HIDDEN_ATOL, rtol=parity.HIDDEN_RTOL)


@needs("TransformerLens")
def test_transformer_lens_head_ablation_equals_the_course(tokenizer, model):
    inputs = parity.batch_inputs(tokenizer, model, ITEMS)
    real = inputs["attention_mask"].bool()
    bridge = parity.transformer_lens_bridge(model, tokenizer)
    layer, head = model.config.num_hidden_layers // 2, 3 % model.config.num_attention_heads
    ours = parity.course_head_ablation(model, inputs, layer, head)
    theirs = parity.transformer_lens_head_ablation(bridge, inputs, layer, head)
    assert torch.allclose(theirs[real], ours[real], atol=parity.HIDDEN_ATOL, rtol=parity.HIDDEN_RTOL)
    plain = parity._bridge_run(bridge, inputs, [])  # nothing removed: the bridge is the model itself
    with torch.no_grad():
        assert torch.allclose(plain[real], model(**inputs).last_hidden_state[real], atol=parity.HIDDEN_ATOL)


@pytest.mark.parametrize("library", [pytest.param("nnsight", marks=needs("nnsight")),
                                     pytest.param("TransformerLens", marks=needs("TransformerLens"))])
@pytest.mark.parametrize("where", ["embeddings", "middle"])
def test_patching_equals_the_course(tokenizer, model, bank_pair, library, where):
    donor, target = bank_pair
    layer = 0 if where == "embeddings" else model.config.num_hidden_layers // 2
    d_pos, t_pos = donor.find_word("bank").positions, target.find_word("bank").positions
    ours = parity.course_patch(model, donor, target, layer, d_pos, t_pos)
    assert (ours - target.hidden(model.config.num_hidden_layers)).abs().max() > 1e-4  # the patch changed something
    d_in, t_in = parity.trace_inputs(donor), parity.trace_inputs(target)
    if library == "nnsight":
        theirs = parity.nnsight_patch(parity.nnsight_model(model), d_in, t_in, layer, d_pos, t_pos)
    else:
        theirs = parity.transformer_lens_patch(parity.transformer_lens_bridge(model, tokenizer), d_in, t_in, layer,
                                              d_pos, t_pos)
    assert torch.allclose(theirs, ours, atol=parity.HIDDEN_ATOL, rtol=parity.HIDDEN_RTOL)


def test_parity_table_every_row_that_runs_is_equal_and_the_model_is_untouched(tokenizer, model, head, bank_pair):
    donor, target = bank_pair
    short = trace_text(tokenizer, model, "Where is my card?")
    layer_class, forward = type(model.encoder.layer[0]), model.encoder.layer[0].forward
    inputs = parity.batch_inputs(tokenizer, model, ITEMS)
    with torch.no_grad():
        before = model(**inputs).last_hidden_state
    report = parity.parity_checks(tokenizer, model, head, ablation_items=ITEMS, layer=1, head=0, donor=donor,
                                 target=target, word="bank", patch_layer=2, attribution=short)
    assert len(report.checks) == 6 and report.all_equal()
    for check in report.checks:
        installed = parity.library_version(check.library) is not None
        assert check.status == ("equal" if installed else "not installed"), (check.library, check.status, check.note)
        if installed:
            assert check.max_difference <= check.atol and check.version in check.row()["the library that does it"]
    assert {c.library for c in report.checks} == {"nnsight", "TransformerLens", "Captum"}
    # both libraries worked on copies: the course's model is as it was
    assert type(model.encoder.layer[0]) is layer_class and model.encoder.layer[0].forward == forward
    with torch.no_grad():
        assert torch.equal(model(**inputs).last_hidden_state, before)
    if parity.library_version("TransformerLens"):
        assert any("'BertModel' object has no attribute 'bert'" in g for g in report.gaps)
        assert any("supports_fold_ln = False" in g for g in report.gaps)


def test_missing_or_failing_libraries_say_so_in_one_line(tokenizer, model, head, monkeypatch):
    real_version = parity.library_version
    monkeypatch.setattr(parity, "library_version", lambda name: None if name == "nnsight" else real_version(name))

    def broken(*args, **kwargs):
        raise RuntimeError("the bridge refused\nsecond line of the traceback")

    monkeypatch.setattr(parity, "transformer_lens_bridge", broken)
    short = trace_text(tokenizer, model, "Where is my card?")
    report = parity.parity_checks(tokenizer, model, head, ablation_items=ITEMS[:2], layer=1, head=0, donor=None,
                                 target=None, word=None, patch_layer=1, attribution=short)
    rows = {c.library: c for c in report.checks}
    assert len(report.checks) == 4  # no patching rows without a donor
    assert rows["nnsight"].status == "not installed" and parity.RESEARCH_EXTRA in rows["nnsight"].row()[
        "checked equal (tolerance)"]
    if real_version("TransformerLens"):
        assert rows["TransformerLens"].status == "could not run"
        assert rows["TransformerLens"].note == "RuntimeError: the bridge refused"
    assert rows["Captum"].equal and parity.missing_research_libraries() == (
        ["nnsight"] + ([] if real_version("TransformerLens") else ["TransformerLens"]))


def test_compare_and_one_line():
    a = torch.zeros(3)
    assert parity.compare(a, a + 1e-7, 1e-5, 0) == (True, pytest.approx(1e-7))
    assert parity.compare(a, a + 1e-3, 1e-5, 0)[0] is False
    assert parity.compare(a, torch.zeros(4), 1, 1) == (False, float("inf"))
    assert parity.one_line(ValueError("first\nsecond")) == "ValueError: first"
    with pytest.raises(ValueError, match="not one the table names"):
        parity.library_version("pyvene")


def test_parity_lines_count_the_rows_that_ran():
    from types import SimpleNamespace

    checks = [SimpleNamespace(status="equal", equal=True), SimpleNamespace(status="NOT equal", equal=False),
              SimpleNamespace(status="not installed", equal=False)]
    lines = parity.parity_lines(SimpleNamespace(checks=checks, gaps=["nnsight: x", "TransformerLens: y"]))
    assert lines[0] == "1 of the 2 rows that ran are equal at their tolerance; 1 did not run"
    # the gaps read as known limits, worked around -- not as errors of this run
    assert lines[1] == "known limits of the libraries with BERT (worked around; nothing failed):"
    assert lines[2:4] == ["  - nnsight: x", "  - TransformerLens: y"]
    installed = [n for n in ("nnsight", "TransformerLens", "Captum") if parity.library_version(n)]
    assert lines[4] == "installed: " + ", ".join(f"{n} {parity.library_version(n)}" for n in installed)
    missing = parity.missing_research_libraries()
    assert len(lines) == 5 + bool(missing)
    if missing:
        assert "not installed here (optional)" in lines[5] and parity.RESEARCH_EXTRA in lines[5]
    assert all("Error" not in line for line in lines)
