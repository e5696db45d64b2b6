"""Lesson 12 explorer: remove a head or skip a layer and see one sentence's logits change.

Every ablation and every skip was run once beforehand
(:func:`helpers.interventions.compute.sentence_interventions`, with a progress bar); a control
move only changes the bars' heights and colours, the frame around the chosen cell of the map
and the title, and redraws just those. The model never runs on a control move.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from helpers.common.explorer import HIGHLIGHT, NORMAL, Explorer, int_slider
from helpers.common.style import DIVERGING, FIG_WIDTH_IN, colorbar
from helpers.interventions.compute import SentenceInterventions

SKIP = -1  # the "head" value that means: skip the whole layer
MAX_BARS = 12  # bars shown at most, besides every class that some change makes the prediction


def shown_classes(effects: SentenceInterventions, max_bars: int = MAX_BARS) -> list[int]:
    """The classes the bars show, by their unchanged logit (highest first): every class that is
    the prediction with nothing changed, with some head removed or with some layer skipped, then
    the highest unchanged logits up to ``max_bars`` bars. With 77 intents a bar per class would be
    unreadable; this way the bar of whatever a change makes the prediction is always there."""
    if isinstance(max_bars, bool) or not isinstance(max_bars, int) or max_bars < 1:
        raise ValueError(f"max_bars must be a positive int, got {max_bars!r}.")
    base = effects.base.cpu().numpy()
    predicted = {int(base.argmax())} | set(effects.heads.argmax(-1).flatten().tolist()) \
        | set(effects.skips.argmax(-1).tolist())
    shown = set(predicted)
    for c in np.argsort(-base):
        if len(shown) >= max_bars:
            break
        shown.add(int(c))
    return sorted(shown, key=lambda c: -base[c])


class InterventionExplorer(Explorer):
    """Bars: the sentence's logits with the chosen head removed (or layer skipped), the
    unchanged logits as black ticks, for the classes of :func:`shown_classes` (``.shown``). Map:
    how much every intervention moves the logit of the class predicted without intervention; the
    chosen cell is framed."""

    def __init__(self, effects: SentenceInterventions, names, layer: int = 1, head: int = 0,
                 max_bars: int = MAX_BARS):
        import ipywidgets as widgets

        if not isinstance(effects, SentenceInterventions):
            raise TypeError("effects must come from helpers.interventions.compute.sentence_interventions.")
        self.effects, self.names = effects, list(names)
        if len(self.names) != effects.base.shape[-1]:
            raise ValueError(f"need one name per class: {len(self.names)} names for {effects.base.shape[-1]} logits.")
        self._check(layer, head)
        L, A = effects.num_layers, effects.num_heads
        options = [("skip the whole layer", SKIP)] + [(f"remove head {h}", h) for h in range(A)]
        controls = {
            "layer": int_slider(1, L, layer, "layer"),
            "head": widgets.Dropdown(options=options, value=head, description="change"),
        }
        self.pred0 = int(effects.base.argmax())
        self.shown = shown_classes(effects, max_bars)
        table = np.concatenate([effects.heads[..., self.pred0].cpu().numpy(),
                                effects.skips[:, self.pred0, None].cpu().numpy()], 1)
        self._shift = table - float(effects.base[self.pred0])  # [L, A + 1]
        # One y-scale for every choice, fitted to the head removals: skipping a layer can move the
        # logits far more (the last layer's skip hands the head vectors it never saw), and a scale
        # fitted to that would flatten every head's bars. A bar beyond the scale is cut at the edge
        # and its value written on it.
        usual = np.concatenate([effects.base[None].cpu().numpy(),
                                effects.heads.reshape(-1, len(self.names)).cpu().numpy()])[:, self.shown]
        lo, hi = min(0.0, float(usual.min())), max(0.0, float(usual.max()))
        pad = 0.15 * (hi - lo) + 1e-6
        self._ylim = (lo - pad, hi + pad)
        super().__init__(controls)

    @property
    def input_tokens(self) -> int:
        """How many tokens the sentence had after truncation (for the benchmark)."""
        return len(self.effects.tokens)

    def _check(self, layer, head) -> None:
        L, A = self.effects.num_layers, self.effects.num_heads
        if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 1 <= layer <= L:
            raise ValueError(f"layer {layer!r} is out of range: this model has {L} encoder layers, "
                             f"valid layers are 1 to {L}.")
        if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not SKIP <= head < A:
            raise ValueError(f"head {head!r} is out of range: valid heads are 0 to {A - 1}, "
                             f"or {SKIP} to skip the whole layer.")

    def _build_figure(self, layer, head):
        L, A = self.effects.num_layers, self.effects.num_heads
        C = len(self.shown)
        longest = max(len(self.names[c]) for c in self.shown)  # rotated labels need room below the bars
        bars_h, map_h = 2.4 + 0.07 * min(longest, 40), 0.28 * L + 1.3
        # Two rows within the page's column (style.FIG_WIDTH_IN): the logits, then the layer x head map.
        fig, (ax_bars, ax_map) = plt.subplots(2, 1, figsize=(FIG_WIDTH_IN, bars_h + map_h),
                                              gridspec_kw={"height_ratios": [bars_h, map_h]})
        self.ax_bars, self.ax_map = ax_bars, ax_map
        x = np.arange(C)
        base = self.effects.base.cpu().numpy()[self.shown]
        self.bars = ax_bars.bar(x, base, color=NORMAL)
        self.cut_labels = [ax_bars.text(i, 0, "", ha="center", fontsize=8, color="white", fontweight="bold",
                                        visible=False) for i in x]
        (self.ticks,) = ax_bars.plot(x, base, "_", color="black", ms=16, mew=2)
        self.zero_line = ax_bars.axhline(0, color="black", lw=0.5)
        ax_bars.set_xticks(x, [self.names[c] for c in self.shown], rotation=60, ha="right", fontsize=8,
                           rotation_mode="anchor")
        ax_bars.set_ylim(*self._ylim)
        ax_bars.set_ylabel("logit (black ticks: nothing changed)")
        if C < len(self.names):
            ax_bars.set_xlabel(f"{C} of {len(self.names)} classes: every prediction a change makes, then the "
                               "highest logits", fontsize=8)
        # colours span the head removals; the skip column, which may lie far outside, has its values written in
        bound = max(float(np.abs(self._shift[:, :A]).max()), 1e-6)
        image = ax_map.imshow(self._shift, aspect="auto", cmap=DIVERGING, vmin=-bound, vmax=bound)
        for row, value in enumerate(self._shift[:, A]):
            r, g, b, _ = image.cmap(image.norm(value))
            dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
            text = f"{value:.0f}" if abs(value) >= 9.95 else f"{value:.1f}"
            ax_map.text(A, row, "0.0" if text == "-0.0" else text, ha="center", va="center", fontsize=8,
                        color="white" if dark else "black")
        step = max(1, A // 12)
        ax_map.set_xticks(list(range(0, A, step)) + [A], [str(h) for h in range(0, A, step)] + ["skip"])
        ax_map.set_yticks(range(L), [str(i) for i in range(1, L + 1)])
        ax_map.set_xlabel("head removed (last column: layer skipped)")
        ax_map.set_ylabel("layer")
        ax_map.set_title(f"change of the {self.names[self.pred0]!r} logit", fontsize=9)
        clipped = bool(np.abs(self._shift[:, A]).max() > bound)
        # the colours span the head removals only; a skip beyond them is clipped, its value written in
        colorbar(image, ax_map, f"logit change (clipped at ±{bound:.2g})" if clipped else "logit change",
                 extend="both" if clipped else "neither")
        # a black frame with a white one inside: visible on dark and on pale cells
        self.frame = Rectangle((-0.5, -0.5), 1, 1, fill=False, edgecolor="black", lw=3.5)
        self.inner = Rectangle((-0.5, -0.5), 1, 1, fill=False, edgecolor="white", lw=1.2)
        ax_map.add_patch(self.frame)
        ax_map.add_patch(self.inner)
        self.title = ax_bars.set_title("", fontsize=9)
        self._update_artists(layer, head)
        fig.tight_layout()
        return fig

    def dynamic_artists(self) -> list:
        # the two lines are drawn above the bars in a full draw, so they are redrawn with them
        return [*self.bars, *self.cut_labels, self.ticks, self.zero_line, self.frame, self.inner, self.title]

    def _update_artists(self, layer, head):
        self._check(layer, head)
        A = self.effects.num_heads
        logits = self.effects.logits(layer, None if head == SKIP else head).cpu().numpy()
        pred = int(logits.argmax())
        lo, hi = self._ylim
        for c, bar, label, value in zip(self.shown, self.bars, self.cut_labels, logits[self.shown]):
            shown = min(max(value, lo), hi)
            bar.set_height(shown)
            bar.set_color(HIGHLIGHT if c == pred else NORMAL)
            label.set_visible(bool(shown != value))
            if shown != value:  # cut at the edge of the scale: write the true value on the bar
                label.set_text(f"{value:.0f}")
                label.set_y(shown - 0.02 * (hi - lo) if value > hi else shown + 0.02 * (hi - lo))
                label.set_va("top" if value > hi else "bottom")
        for frame in (self.frame, self.inner):
            frame.set_xy(((A if head == SKIP else head) - 0.5, layer - 1 - 0.5))
        what = f"layer {layer} skipped" if head == SKIP else f"layer {layer}, head {head} removed"
        verdict = "unchanged" if pred == self.pred0 else f"was {self.names[self.pred0]!r}"
        self.title.set_text(f"{what}: predicts {self.names[pred]!r} ({verdict})")
        self.prediction = pred

    def update(self, **values) -> None:
        """Check the values (layer 1..L, head 0..A-1 or -1 = skip the layer), then redraw in place."""
        merged = {**self.values, **values}
        self._check(merged["layer"], merged["head"])
        super().update(**values)

    @classmethod
    def for_benchmark(cls, tokenizer, model, text: str | None = None):
        import torch

        from helpers.classify.compute import LinearHead
        from helpers.interventions.compute import SentenceHead, sentence_interventions

        torch.manual_seed(0)
        names = [f"class {i}" for i in range(5)]
        head = LinearHead(model.config.hidden_size, len(names)).eval()
        text = text or "I still have not received my new card, what should I do?"
        effects = sentence_interventions(tokenizer, model, SentenceHead(head, "mean"), text, progress=False)
        L, A = effects.num_layers, effects.num_heads
        values = [{"layer": 1 + i % L, "head": SKIP if i % 4 == 3 else i % A} for i in range(8)]
        return cls(effects, names), values
