"""helpers/common/budget.py: the BUDGET knob of lessons 10-14."""

import pytest
import torch
from transformers import BertConfig

from helpers.common.budget import BUDGETS, LARGE_ON_CPU, choose_budget, compute_ratio


class _Sized:
    """A model's config and device without its weights (a bert-base-sized model is 440 MB)."""

    def __init__(self, config, device="cpu"):
        self.config, self._p = config, torch.zeros(1, device=device)

    def parameters(self):
        return iter([self._p])


def test_the_bundled_model_is_the_reference(model):
    assert compute_ratio(model.config) == pytest.approx(1.0)
    assert choose_budget(None, model, verbose=False).name == "full"


def test_bert_base_on_a_cpu_gets_the_quick_budget_and_is_told_why(capsys):
    ratio = compute_ratio(BertConfig())  # bert-base: 12 x 768, FFN 3072
    assert ratio > LARGE_ON_CPU
    chosen = choose_budget(None, _Sized(BertConfig()))
    printed = capsys.readouterr().out
    assert chosen.quick and chosen.pick("a", "b") == "b"
    assert 'BUDGET = "full"' in printed and f"{ratio:.1f}x" in printed


def test_an_explicit_budget_wins(model):
    assert choose_budget("quick", model, verbose=False).quick
    big = choose_budget("full", _Sized(BertConfig()), verbose=False)
    assert big.name == "full" and "note:" in big.reason


@pytest.mark.parametrize("bad", ["fast", "", 1, "Quick"])
def test_a_bad_budget_says_what_is_valid(bad, model):
    with pytest.raises(ValueError, match="not valid") as err:
        choose_budget(bad, model, verbose=False)
    assert all(repr(b) in str(err.value) for b in BUDGETS)


def test_lessons_that_train_or_ablate_have_the_knob():
    from pathlib import Path

    import jupytext

    from lesson_params import defines

    lessons = Path(__file__).resolve().parent.parent / "lessons"
    for stem in ("10", "11", "12", "13", "14"):
        (source,) = lessons.glob(f"{stem}_*.py")
        nb = jupytext.read(source)
        assert defines(nb, "BUDGET"), f"{source.name}: no BUDGET in its parameters cell"
        assert "choose_budget(BUDGET" in "".join(c.source for c in nb.cells), f"{source.name} never reads BUDGET"
