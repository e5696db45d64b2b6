"""helpers.finetuning.plots: the CKA / weight-change figure of lesson 14."""

import pytest

from helpers.common.stats import Interval
from helpers.common.style import small_text, too_wide
from helpers.finetuning.plots import plot_layer_change


def test_layer_change_figure():
    cka = [Interval(1.0, 1.0, 1.0, 1.0), Interval(0.9, 0.85, 0.95, 1.0), Interval(0.6, 0.5, 0.7, 1.0)]
    moved = [Interval(0.004, 0.003, 0.005, 1.0), Interval(0.012, 0.011, 0.013, 1.0), Interval(0.02, 0.018, 0.022, 1.0)]
    axes = plot_layer_change(cka, moved, whiskers=("95% jackknife interval", "range over 3 seeds"))
    assert "CKA" in axes[0].get_title() and "weight change" in axes[1].get_title()
    assert "whiskers: 95% jackknife interval" in axes[0].get_title()  # the title says what the bars span
    assert "whiskers: range over 3 seeds" in axes[1].get_title()
    assert axes[0].figure.get_figwidth() <= 9.0
    assert "range over the seeds" in plot_layer_change(cka, moved)[0].get_title()  # the default
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["emb", "1", "2"]
    assert axes[0].get_ylim()[1] >= 1.0
    assert not small_text(axes[0].figure)
    with pytest.raises(ValueError, match="one value per layer"):
        plot_layer_change(cka, moved[:2])
    with pytest.raises(ValueError, match="Interval"):
        plot_layer_change([0.5, 0.6], moved[:2])
    with pytest.raises(ValueError, match="whiskers"):
        plot_layer_change(cka, moved, whiskers=("only one",))


@pytest.mark.slow  # several seconds: runs in the --all tier (CI)
def test_dev_panels_and_swap_in_figures(tokenizer, model, intent_splits):
    from helpers.common.data import load_intents
    from helpers.finetuning.compute import FROZEN, FULL, FewShotTask, FinetuneConfig, finetune_study
    from helpers.finetuning.plots import plot_dev_panels, plot_swap_in

    train, dev = load_intents("train").subset(4).split_off(1, seed=0)
    tasks = {s: FewShotTask(train, dev, intent_splits[1], tuple(train.names), 3, s) for s in (0, 1)}
    study = finetune_study(tokenizer, model, tasks, (FROZEN, FULL), progress=False,
                           config=FinetuneConfig(lrs=(1e-4,), max_steps=6, patience=2, batch_size=10, max_length=24))
    fig = plot_dev_panels(study)
    assert "dev accuracy" in fig._suptitle.get_text() and "2 draws" in fig._suptitle.get_text()
    (ax,) = [a for a in fig.axes if a.get_visible()]  # one fine-tuning strategy: one panel
    assert ax.get_title() == FULL
    solid = [l for l in ax.get_lines() if l.get_linestyle() == "-"]
    assert list(solid[0].get_xdata()) == [pt[0] for pt in study.runs[FULL][0].dev_curve]
    assert any(l.get_linestyle() == "--" for l in ax.get_lines()), "the frozen probe is the dashed line"
    assert "dev loss" in plot_dev_panels(study, measure="loss").axes[0].get_ylabel()
    assert not small_text(fig)
    with pytest.raises(ValueError, match="measure"):
        plot_dev_panels(study, measure="f1")
    drops = [Interval(0.0, -0.01, 0.01), Interval(-0.05, -0.08, -0.02), Interval(-0.01, -0.03, 0.01)]
    ax = plot_swap_in(drops)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["emb", "1", "2"] and "swap-in" in ax.get_title()
    assert [round(b.get_height(), 6) for b in ax.patches] == [0.0, -5.0, -1.0]
    assert not small_text(ax.figure)


def test_dev_panels_of_the_stored_sweep_give_each_strategy_its_own_panel():
    """Lesson 11's figure from the stored sweep: one readable panel per fine-tuning strategy, each
    with every draw's curve, all on one scale, within the page."""
    from helpers.finetuning.compute import FROZEN
    from helpers.finetuning.history import stored_study
    from helpers.finetuning.plots import plot_dev_panels

    study = stored_study()
    fig = plot_dev_panels(study)
    shown = [a for a in fig.axes if a.get_visible()]
    assert [a.get_title() for a in shown] == [s for s in study.runs if s != FROZEN]
    for ax in shown:
        draws = [l for l in ax.get_lines() if l.get_linestyle() == "-"]
        assert len(draws) == len(study.seeds)
    assert len({a.get_ylim() for a in shown}) == 1, "one scale for every panel"
    assert not small_text(fig) and not too_wide(fig)
