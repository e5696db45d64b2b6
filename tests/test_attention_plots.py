"""helpers.attention.plots: what each function drew."""

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from helpers.attention.compute import (
    attention_entropy,
    attention_shares,
    attention_shares_per_sentence,
    cls_attention,
    offset_head_scores,
    uniform_shares,
)
from helpers.attention.plots import (
    FIGURE_MAX_WIDTH,
    MAX_TOKEN_LABELS,
    attention_heatmap,
    attention_model_view,
    attention_steps_figure,
    mask_heatmap,
    plot_attention_shares,
    plot_class_shares,
    plot_head_lines,
    plot_layer_head_table,
    plot_layer_head_tables,
    plot_layer_lines,
    plot_token_heatmap,
    token_window,
)
from helpers.attention.rebuild import attention_scores, extended_attention_mask, project_qkv, softmax_by_hand, split_heads
from helpers.common.style import SEQUENTIAL, figure_description, small_text


def label_texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def overlapping(texts) -> list[str]:
    """Neighbouring labels whose drawn boxes overlap (the figure must be drawn first)."""
    boxes = [(t.get_text(), t.get_window_extent()) for t in texts if t.get_visible() and t.get_text()]
    return [f"{a!r}/{b!r}" for (a, box_a), (b, box_b) in zip(boxes, boxes[1:]) if box_a.overlaps(box_b)]


def test_attention_heatmap(sample_trace):
    fig, ax, im = attention_heatmap(sample_trace.attention(1, 0), sample_trace.tokens, title="t")
    n = sample_trace.seq_len
    assert im.get_array().shape == (n, n)
    assert np.allclose(im.get_array(), sample_trace.attention(1, 0).numpy())
    assert label_texts(ax) == sample_trace.tokens * 2  # keys along x, then queries along y
    assert ax.get_title() == "t"
    assert not small_text(fig)
    assert any("attention probability" in a.get_ylabel() for a in fig.axes if a is not ax)
    plt.close(fig)


def test_attention_heatmap_by_word(tokenizer, model):
    from helpers.attention.compute import attention_by_word, word_groups
    from helpers.model.trace import trace_text

    trace = trace_text(tokenizer, model, "The river bank was unbelievably quiet this morning.")
    groups = word_groups(trace)
    fig, ax, im = attention_heatmap(trace.attention(2, 1), trace, title="t", by_word=True)
    assert im.get_array().shape == (len(groups), len(groups)) < (trace.seq_len, trace.seq_len)
    assert np.allclose(im.get_array(), attention_by_word(trace.attention(2, 1), groups).numpy(), atol=1e-6)
    assert np.allclose(np.asarray(im.get_array()).sum(1), 1.0, atol=1e-5)
    assert label_texts(ax) == list(groups.labels) * 2
    assert ax.get_title().startswith("t\nby word")
    assert not small_text(fig)
    plt.close(fig)
    with pytest.raises(ValueError, match="pass the Trace"):
        attention_heatmap(trace.attention(2, 1), trace.tokens, by_word=True)


def test_attention_heatmap_of_a_long_input_shows_a_window_and_says_so():
    n = 3 * MAX_TOKEN_LABELS
    probs = np.random.default_rng(0).dirichlet(np.ones(n), size=n)
    tokens = [f"t{i}" for i in range(n)]
    fig, ax, im = attention_heatmap(probs, tokens, title="head", start=10)
    k = MAX_TOKEN_LABELS
    assert im.get_array().shape == (k, k)
    assert fig.get_size_inches()[0] <= FIGURE_MAX_WIDTH  # wider pictures get shrunk, and their text with them
    fig.canvas.draw()
    assert not overlapping(ax.texts[:k]) and not overlapping(ax.texts[k:])  # k labels per axis still fit
    assert np.allclose(im.get_array(), probs[10:10 + k, 10:10 + k])
    assert label_texts(ax)[:k] == tokens[10:10 + k]
    assert f"tokens 10\u2013{10 + k - 1} of {n}" in ax.get_title()
    with pytest.raises(ValueError, match="valid starts"):
        token_window(n, n - 5)
    assert token_window(12) == (0, 12)
    plt.close(fig)


def test_attention_steps_figure_shows_the_model_computation(model, tokenizer):
    batch = tokenizer(["The bank was quiet.", "It rained."], padding="max_length", max_length=10, return_tensors="pt")
    with torch.no_grad():
        x = model.embeddings(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"])
        q, k, v = (split_heads(t, model.config.num_attention_heads) for t in project_qkv(model.encoder.layer[0].attention.self, x))
        scores = attention_scores(q, k)
        masked = scores + extended_attention_mask(batch["attention_mask"])
        probs = softmax_by_hand(masked)
        out = model(**batch, output_attentions=True)
    assert torch.allclose(probs, out.attentions[0], atol=1e-5)
    tokens = tokenizer.convert_ids_to_tokens(batch["input_ids"][1].tolist())
    fig, axes = attention_steps_figure(scores[1, 0], masked[1, 0], probs[1, 0], probs[1, 0] @ v[1, 0], tokens, title="t")
    assert len(axes) == 4 and not small_text(fig)
    assert fig.get_size_inches()[0] <= FIGURE_MAX_WIDTH
    assert axes[0].images[0].get_clim() == axes[1].images[0].get_clim()  # the two score panels share a scale
    shown = axes[1].images[0].get_array()
    pads = batch["attention_mask"][1] == 0
    assert shown.mask[:, pads.numpy()].all() and not shown.mask[:, ~pads.numpy()].any()
    assert np.allclose(axes[2].images[0].get_array(), probs[1, 0].numpy())
    labels = [a.get_ylabel() for a in fig.axes]
    assert {"score (both panels)", "attention probability", "context value"} <= set(labels)
    with pytest.raises(ValueError, match="tokens"):
        attention_steps_figure(scores[1, 0], masked[1, 0], probs[1, 0], v[1, 0], tokens[:-1])
    plt.close(fig)
    # Cut to fewer tokens than the input has, the padded keys still show (the mask is the point).
    real = int(batch["attention_mask"][1].sum())
    fig, axes = attention_steps_figure(scores[1, 0], masked[1, 0], probs[1, 0], probs[1, 0] @ v[1, 0], tokens,
                                       max_tokens=real)
    shown = axes[1].images[0].get_array()
    assert shown.shape == (real, real) and shown.mask[:, -2:].all() and not shown.mask[:, :-2].any()
    assert [t.get_text() for t in axes[0].get_xticklabels()][-2:] == ["[PAD]", "[PAD]"]
    assert f"first {real - 2} of 10 tokens, then 2 padded" in fig._suptitle.get_text()
    plt.close(fig)


def test_shown_positions_keep_the_first_tokens_and_some_padding():
    from helpers.attention.plots import shown_positions

    assert shown_positions([False] * 5, 8) == [0, 1, 2, 3, 4]
    assert shown_positions([False] * 10 + [True] * 3, 8) == [0, 1, 2, 3, 4, 5, 10, 11]
    assert shown_positions([False] * 4 + [True] * 9, 8) == list(range(8)), "padding already in view"
    assert shown_positions([False] * 20, 8) == list(range(8))


def test_attention_steps_figure_fits_its_most_tokens_at_8pt():
    import inspect

    k = inspect.signature(attention_steps_figure).parameters["max_tokens"].default  # the most it shows
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(k, k))
    probs = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    tokens = [f"tok{i:02d}" for i in range(k)]
    fig, axes = attention_steps_figure(scores, scores, probs, rng.normal(size=(k, 8)), tokens)
    assert fig.get_size_inches()[0] <= FIGURE_MAX_WIDTH and not small_text(fig)
    fig.canvas.draw()
    for ax in axes[:3]:
        assert not overlapping(ax.get_xticklabels())
    assert not overlapping(axes[0].get_yticklabels()) and not overlapping(axes[2].get_yticklabels())
    plt.close(fig)


def test_mask_heatmap(tokenizer):
    batch = tokenizer(["The bank was quiet.", "It rained."], padding=True, return_tensors="pt")
    tokens = [tokenizer.convert_ids_to_tokens(r) for r in batch["input_ids"].tolist()]
    ax = mask_heatmap(batch["attention_mask"], tokens)
    assert np.array_equal(ax.images[0].get_array(), batch["attention_mask"].numpy())
    assert [t.get_text() for t in ax.texts] == [t for row in tokens for t in row]
    assert not small_text(ax.figure) and ax.figure.get_size_inches()[0] <= FIGURE_MAX_WIDTH
    with pytest.raises(ValueError, match="one per mask row"):
        mask_heatmap(batch["attention_mask"], tokens[:1])


def test_attention_heatmap_mismatch(sample_trace):
    with pytest.raises(ValueError, match="tokens"):
        attention_heatmap(sample_trace.attention(1, 0), sample_trace.tokens[:-1])
    with pytest.raises(ValueError, match="2-D"):
        attention_heatmap(sample_trace.attention(1), sample_trace.tokens)


def test_token_heatmap(sample_trace):
    cls = cls_attention(sample_trace).mean(1)
    ax = plot_token_heatmap(cls, sample_trace.tokens)
    assert ax.images[0].get_array().shape == (sample_trace.num_layers, sample_trace.seq_len)
    assert [t.get_text() for t in ax.get_xticklabels()] == sample_trace.tokens
    assert ax.figure.axes[-1].get_ylabel() == "attention probability"
    assert not small_text(ax.figure)
    with pytest.raises(ValueError, match="tokens"):
        plot_token_heatmap(cls, sample_trace.tokens[:-1])


def test_token_heatmap_keeps_the_heaviest_columns_of_a_long_input():
    tokens = [f"t{i}" for i in range(300)]
    matrix = np.full((3, 300), 0.001)
    matrix[1, [5, 250]] = 0.5
    ax = plot_token_heatmap(matrix, tokens, max_tokens=20)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert len(labels) == 20 and "5:t5" in labels and "250:t250" in labels
    assert "20 of 300" in ax.get_xlabel()


def test_attention_shares_stacked(sample_trace):
    shares = attention_shares(sample_trace)
    ax = plot_attention_shares(shares)
    assert len(ax.patches) == sample_trace.num_layers * 4
    tops = np.zeros(sample_trace.num_layers)
    for k in range(4):
        tops += [p.get_height() for p in ax.patches[k * sample_trace.num_layers:(k + 1) * sample_trace.num_layers]]
    assert np.allclose(tops, 1, atol=1e-5)


def test_layer_head_table(sample_trace):
    ent = attention_entropy(sample_trace)
    ax = plot_layer_head_table(ent, title="entropy")
    assert ax.images[0].get_array().shape == tuple(ent.shape)
    assert len(ax.texts) == ent.numel()
    assert not small_text(ax.figure)  # the numbers in the cells are readable (>= 8 pt)
    # light cells get dark text: on "Blues" the smallest value is near white
    ax = plot_layer_head_table(ent, cmap="Blues")
    low = np.unravel_index(int(ent.argmin()), tuple(ent.shape))
    text_at = {(round(t.get_position()[1]), round(t.get_position()[0])): t for t in ax.texts}
    assert matplotlib.colors.to_hex(text_at[low].get_color()) == "#000000"


def test_head_lines(sample_trace):
    att = sample_trace.attention(1, 0)
    assert not small_text(plot_head_lines(att, sample_trace.tokens).figure)
    ax = plot_head_lines(att, sample_trace.tokens)
    n = sample_trace.seq_len
    lines = ax.collections[0]
    assert len(lines.get_segments()) == n * n
    assert np.allclose(lines.get_colors()[:, 3], att.reshape(-1).numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="weights"):
        plot_head_lines(att[:-1], sample_trace.tokens)


# -- lesson 08 --------------------------------------------------------------------------------

def test_layer_head_tables_share_one_scale(sample_trace):
    prev, nxt = offset_head_scores(sample_trace, -1), offset_head_scores(sample_trace, 1)
    axes = plot_layer_head_tables({"previous": prev, "next": nxt}, cbar_label="mean attention on the neighbour")
    assert axes[0].images[0].get_clim() == axes[1].images[0].get_clim() == (0, 1)  # attention: the 0-1 scale
    assert {ax.images[0].get_cmap().name for ax in axes} == {SEQUENTIAL}
    assert axes[0].figure.axes[-1].get_ylabel() == "mean attention on the neighbour"
    assert not small_text(axes[0].figure)
    zoomed = plot_layer_head_tables({"previous": prev, "next": nxt}, cbar_label="mean attention", vmax=None)
    top = float(max(prev.max(), nxt.max()))
    assert zoomed[0].images[0].get_clim() == (0, top) and "zoomed" in zoomed[0].get_title()  # the range is said


def test_layer_lines_and_class_shares(sample_trace, data_traces):
    per_input = attention_shares_per_sentence(data_traces)
    ax = plot_layer_lines({"data": per_input[:, :, 0], "one": attention_shares(sample_trace)[:, 0]},
                          reference=0.1, title="share on [CLS]", ylabel="share")
    assert np.allclose(ax.lines[0].get_ydata(), per_input[:, :, 0].mean(0).numpy(), atol=1e-6)
    assert len(ax.collections) == 1  # the interval band of the data
    axes = plot_class_shares({"data": per_input, "SENTENCE": attention_shares(sample_trace)},
                             uniform={"data": uniform_shares(data_traces[0])})
    assert len(axes) == 4 and len({ax.get_ylim() for ax in axes}) == 1
    top = float(per_input.mean(0).max())
    assert axes[0].get_ylim()[1] >= top  # nothing clipped
    assert not small_text(axes[0].figure)


def test_lesson05_figures_fit_the_notebook_width(sample_trace, data_traces):
    """Front ends shrink wider images, and their 8 pt text with them: at most about 9 in."""
    prev, nxt = offset_head_scores(sample_trace, -1), offset_head_scores(sample_trace, 1)
    figures = [
        plot_layer_head_tables({"previous": prev, "next": nxt}, cbar_label="mean attention")[0].figure,
        plot_layer_head_table(prev, cbar_label="score").figure,
        plot_class_shares({"data": attention_shares_per_sentence(data_traces)})[0].figure,
        plot_token_heatmap(torch.rand(3, 60), [f"t{i}" for i in range(60)]).figure,
        plot_layer_lines({"data": attention_shares_per_sentence(data_traces)[:, :, 0]}).figure,
    ]
    assert all(fig.get_figwidth() <= 9 for fig in figures)


def test_head_strip_one_dot_per_head():
    from helpers.attention.plots import plot_head_strip
    from helpers.attention.plots import plot_head_strip
    from helpers.common.stats import Interval

    cis = [[Interval(float(h + 1), float(h), float(h + 2)) for h in range(5)] for _ in range(3)]
    ax = plot_head_strip(cis, reference=10.0, reference_label="10x", log=True, ylabel="ratio", title="t")
    dots = [line for line in ax.lines if line.get_marker() == "o"]
    assert sum(len(line.get_xdata()) for line in dots) == 15
    assert ax.get_yscale() == "log" and not small_text(ax.figure)
    assert ax.figure.get_size_inches()[0] <= FIGURE_MAX_WIDTH


def test_attention_is_drawn_in_one_style_on_the_full_scale_unless_a_panel_says_it_zooms(sample_trace):
    from helpers.attention.plots import plot_token_heatmap

    cls_rows = torch.stack(sample_trace.attentions)[:, :, 0].mean(1)  # [L, seq]: [CLS]'s row, heads averaged
    ax = plot_token_heatmap(cls_rows, sample_trace.tokens, title="[CLS]'s attention probability")
    assert ax.images[0].get_clim() == (0, 1) and ax.images[0].get_cmap().name == SEQUENTIAL
    assert "zoomed" not in ax.get_title()
    zoomed = plot_token_heatmap(cls_rows, sample_trace.tokens, title="[CLS]", vmax=None)
    top = float(cls_rows.max())
    assert zoomed.images[0].get_clim() == (0, pytest.approx(top)) and f"{top:.2g}" in zoomed.get_title()
    fig, ax, image = attention_heatmap(sample_trace.attention(1, 0), sample_trace.tokens)
    assert image.get_clim() == (0, 1) and image.get_cmap().name == SEQUENTIAL


def test_a_log_axis_says_so_and_has_ticks_between_the_powers_of_ten():
    from helpers.attention.plots import plot_head_strip
    from helpers.common.stats import Interval

    intervals = [[Interval(v, 0.8 * v, 1.2 * v) for v in (1.5, 3.0, 7.0, 20.0)] for _ in range(3)]
    ax = plot_head_strip(intervals, ylabel="ratio to uniform", log=True, title="heads")
    ax.figure.canvas.draw()
    assert "log scale" in ax.get_ylabel()
    shown = [t.get_text() for t in ax.get_yticklabels() if t.get_text() and
             ax.get_ylim()[0] <= t.get_position()[1] <= ax.get_ylim()[1]]
    assert len(shown) >= 4 and "2" in shown and "5" in shown  # not just 10^0 and 10^1


def test_toy_attention_figure_and_head_pair_figure(sample_trace):
    import math

    from helpers.attention.plots import head_pair_figure, toy_attention_figure

    q = torch.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0]])
    k = torch.tensor([[0.0, 1.0], [2.0, 0.0], [1.0, 1.0]])
    v = torch.tensor([[0.0, 0.5], [1.0, 0.0], [0.0, 1.0]])
    scores = q @ k.T / math.sqrt(2)
    weights = scores.softmax(-1)
    fig, axes = toy_attention_figure(scores, weights, v, weights @ v, ["the", "river", "bank"])
    assert len(axes) == 3 and not small_text(fig)
    written = [t.get_text() for t in axes[1].texts]
    assert f"{weights[2, 1].item():.2f}" in written  # the weights are written in their cells
    with pytest.raises(ValueError, match="2-d"):
        toy_attention_figure(scores, weights, torch.zeros(3, 3), weights @ v, ["a", "b", "c"])
    n = sample_trace.seq_len
    fig, axes = head_pair_figure(sample_trace.attention(1, 0), sample_trace.attention(1, 1),
                                 sample_trace.tokens, ("left", "right"), max_tokens=n - 2)
    assert not small_text(fig) and f"first {n - 2} of {n}" in axes[0].get_title()
    assert fig.axes[-1].get_ylabel() == "attention probability"  # the colourbar names its measure
    assert [t.get_text() for t in axes[0].get_yticklabels()] == sample_trace.tokens[:n - 2]
    assert not any(t.get_text() for t in axes[1].get_yticklabels()), "only the left panel names the rows"
    fig.canvas.draw()
    left_panel = axes[0].get_window_extent()
    right_labels = axes[1].get_tightbbox()
    assert right_labels.x0 >= left_panel.x1, "nothing of the right panel reaches into the left one"
    with pytest.raises(ValueError):
        head_pair_figure(sample_trace.attention(1, 0), sample_trace.attention(1, 0)[:2, :2],
                         sample_trace.tokens, ("a", "b"))


def colourbars(fig) -> list:
    return [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]


@pytest.mark.parametrize("layers", [6, 12])
def test_attention_model_view_fits_the_page_with_one_scale(sample_trace, layers):
    heads, n = sample_trace.num_heads, sample_trace.seq_len
    maps = torch.stack(sample_trace.attentions)  # [L, A, n, n] of the real model
    maps = maps.repeat(layers // maps.shape[0] + 1, 1, 1, 1)[:layers] if layers != maps.shape[0] else maps
    fig, axes = attention_model_view(maps, sample_trace.tokens)
    assert axes.shape == (layers, heads)
    assert fig.get_size_inches()[0] <= 6.9 and not small_text(fig), small_text(fig)
    images = [ax.images[0] for ax in axes.flat]
    assert all(im.get_cmap().name == "viridis" and im.get_clim() == (0.0, 1.0) for im in images)
    np.testing.assert_allclose(axes[1, 3].images[0].get_array(), maps[1, 3].numpy(), atol=1e-7)
    bars = colourbars(fig)
    assert len(bars) == 1 and bars[0].get_xlabel() == "attention probability"
    rows = [t for t in fig.texts if t.get_gid() == "layer label"]
    columns = [t for t in fig.texts if t.get_gid() == "head label"]
    assert [t.get_text() for t in rows] == [f"layer {l}" for l in range(1, layers + 1)]
    assert [t.get_text() for t in columns] == [f"head {h}" for h in range(heads)]
    assert all(not ax.get_xticks().size and not ax.get_yticks().size for ax in axes.flat)  # no tick labels
    fig.canvas.draw()
    assert not overlapping(columns), overlapping(columns)
    assert all(t.get_window_extent().x1 < axes[0, 0].get_window_extent().x0 for t in rows)
    assert figure_description(fig).startswith("Figure: attention probability of every head")
    for text in fig.texts:  # headings stay inside the figure
        box = text.get_window_extent()
        assert box.x0 >= 0 and box.x1 <= fig.bbox.width, text.get_text()
    rows = [axes[l, 0].get_position() for l in range(layers)]
    assert all(a.y0 > b.y1 for a, b in zip(rows, rows[1:]))  # layer 1 on top, no overlap
    assert f"({n} tokens)" in fig.get_suptitle()
    plt.close(fig)


def test_attention_model_view_of_a_trace_highlights_a_head(sample_trace):
    layer, head, _ = __import__("helpers.attention.compute", fromlist=["best_head"]).best_head(
        offset_head_scores(sample_trace, -1))
    fig, axes = attention_model_view(sample_trace, highlight=[(layer, head)], highlight_label="best previous-token head")
    framed = [(l + 1, h) for (l, h), ax in np.ndenumerate(axes) if ax.spines["top"].get_linewidth() > 1]
    assert framed == [(layer, head)]
    assert any("best previous-token head" in t.get_text() for t in fig.texts)
    np.testing.assert_allclose(axes[layer - 1, head].images[0].get_array(),
                               sample_trace.attention(layer, head).numpy(), atol=1e-7)
    plt.close(fig)


def test_attention_model_view_of_a_long_input_keeps_its_peaks(tokenizer, model):
    from helpers.model.trace import trace_text

    long = trace_text(tokenizer, model, " ".join(["The bank by the river was quiet."] * 30))
    fig, axes = attention_model_view(long)
    shown = axes[0, 0].images[0].get_array()
    assert shown.shape[0] < long.seq_len  # blocks of token pairs, one pixel each
    block = int(np.ceil(long.seq_len / shown.shape[0]))
    full = long.attention(1, 0).numpy()
    assert np.isclose(shown[0, 0], full[:block, :block].max())  # the largest value of its block
    assert np.isclose(shown.max(), full.max())  # peaks are not averaged away
    assert any(f"{block} \u00d7 {block}" in t.get_text() for t in fig.texts)
    assert fig.get_size_inches()[0] <= 6.9 and not small_text(fig)
    plt.close(fig)


def test_attention_model_view_rejects_bad_input(sample_trace):
    maps = torch.stack(sample_trace.attentions)
    with pytest.raises(ValueError, match="must match"):
        attention_model_view(maps, sample_trace.tokens[:-1])
    with pytest.raises(ValueError, match="0 to 1"):
        attention_model_view(maps * 3, sample_trace.tokens)
    with pytest.raises(ValueError, match=r"\[L, A, n, n\]"):
        attention_model_view(maps[0], sample_trace.tokens)
    with pytest.raises(ValueError, match="tokens are needed"):
        attention_model_view(maps)
    with pytest.raises(ValueError, match="out of range"):
        attention_model_view(sample_trace, highlight=[(0, 0)])
