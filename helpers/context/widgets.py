"""Lesson 09 explorer: a token's cosine with every token of its sentence, per layer."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_rgba

from helpers.common.data import load_sentences
from helpers.common.explorer import HIGHLIGHT, NORMAL, Explorer, int_slider, token_dropdown
from helpers.common.style import FIG_WIDTH_IN
from helpers.model.trace import check_trace, trace_text

MAX_LABELLED = 40  # beyond this many tokens the x axis shows positions, not token strings


def _bar_verts(heights: np.ndarray, width: float = 0.8) -> np.ndarray:
    """Rectangles ``[n, 4, 2]`` of bars at x = 0..n-1 from 0 to ``heights``."""
    x = np.arange(len(heights), dtype=float)
    verts = np.empty((len(heights), 4, 2))
    verts[:, [0, 1], 0] = (x - width / 2)[:, None]
    verts[:, [2, 3], 0] = (x + width / 2)[:, None]
    verts[:, [0, 3], 1] = 0.0
    verts[:, [1, 2], 1] = heights[:, None]
    return verts


class NeighbourExplorer(Explorer):
    """Lesson 09: cosine between one token and every *other* token of its sentence at one layer
    (left: all tokens, in order, the chosen one left out and marked; right: the ``k`` nearest,
    named). ``baseline`` (``[L + 1]``, e.g. :func:`~helpers.layerwalk.compute.random_pair_baseline`)
    is drawn as a dashed line at each layer: a neighbour only counts above it."""

    def __init__(self, trace, token: int = 0, layer: int = 0, k: int = 5, baseline=None):
        self.trace = check_trace(trace)
        self.k = max(1, min(int(k), trace.seq_len - 1)) if trace.seq_len > 1 else 0
        stack = F.normalize(torch.stack(trace.hidden_states), dim=-1)
        self._cos = (stack @ stack.transpose(1, 2)).cpu().numpy()  # [L+1, seq, seq]
        if baseline is not None:
            baseline = np.asarray(torch.as_tensor(baseline, dtype=torch.float64, device="cpu"))  # cpu: drawn as a line
            if baseline.shape != (trace.num_layers + 1,):
                raise ValueError(f"baseline must hold one value per layer 0..{trace.num_layers}, "
                                 f"got shape {baseline.shape}.")
        self.baseline = baseline
        controls = {
            "token": token_dropdown(trace, token),
            "layer": int_slider(0, trace.num_layers, layer, "layer"),
        }
        super().__init__(controls)

    def _limits(self) -> tuple[float, float]:
        """One y range for every token and layer, from the cosines with *other* tokens (the
        token's own 1.0 would squash them), and the baseline."""
        n = self.trace.seq_len
        off = self._cos[:, ~np.eye(n, dtype=bool)] if n > 1 else np.zeros(1)
        values = [off.min(), off.max(), 0.0] + ([] if self.baseline is None else list(self.baseline))
        low, high = float(min(values)), float(max(values))
        pad = 0.05 * max(high - low, 0.1)
        return low - pad, min(1.05, high + pad)

    def _build_figure(self, token, layer):
        tokens, n = self.trace.tokens, self.trace.seq_len
        # Two rows, so the sentence's tokens get the page's whole width (style.FIG_WIDTH_IN).
        fig, (ax, ax_near) = plt.subplots(2, 1, figsize=(FIG_WIDTH_IN, 3.4 + 0.2 * self.k + 1.0),
                                          gridspec_kw={"height_ratios": [3, 0.25 * self.k + 0.6]})
        self._colors = np.tile(np.array(to_rgba(NORMAL)), (n, 1))
        self.profile = PolyCollection(_bar_verts(self._cos[layer, token]), facecolors=self._colors, edgecolors="none")
        ax.add_collection(self.profile)
        ax.set_xlim(-0.6, n - 0.4)
        low, high = self._limits()
        ax.set_ylim(low, high)
        (self.self_marker,) = ax.plot([token], [0.0], "^", color=HIGHLIGHT, ms=9, clip_on=False)
        (self.base_line,) = ax.plot([-0.6, n - 0.4], [0.0, 0.0], "--", color="black", lw=1)
        if n <= MAX_LABELLED:
            ax.set_xticks(range(n), tokens, rotation=90)
            ax.set_xlabel("token of the sentence (orange triangle: the chosen one, left out)")
        else:
            ax.set_xlabel(f"position: all {n} tokens, too many to name (orange triangle: the chosen one)")
        ax.set_ylabel("cosine")
        self.title = ax.set_title(" " if self.baseline is None else " \n ")  # room for the title's lines
        y = np.arange(self.k)[::-1]
        self.near_bars = ax_near.barh(y, np.zeros(self.k), color=NORMAL, height=0.7)
        self.near_labels = [ax_near.text(-0.03, yy, "", transform=ax_near.get_yaxis_transform(), ha="right",
                                         va="center", fontsize=8) for yy in y]
        (self.near_base,) = ax_near.plot([0.0, 0.0], [-0.6, max(self.k, 1) - 0.4], "--", color="black", lw=1)
        ax_near.set_xlim(min(0.0, low), high)
        ax_near.set_ylim(-0.6, max(self.k, 1) - 0.4)
        ax_near.set_yticks([])
        ax_near.set_xlabel("cosine" + ("" if self.baseline is None else " (dashed: random pairs)"))
        ax_near.set_title(f"the {self.k} nearest tokens")
        for line in (self.base_line, self.near_base):
            line.set_visible(self.baseline is not None)
        fig.tight_layout(h_pad=1.0)
        box = ax_near.get_position()  # room on the left for the "position: token" labels, written later
        left = max(box.x0, 1.4 / FIG_WIDTH_IN)
        ax_near.set_position([left, box.y0, box.x1 - left, box.height])
        self._update_artists(token, layer)
        return fig

    def dynamic_artists(self) -> list:
        return [self.profile, self.self_marker, self.base_line, self.title, *self.near_bars, *self.near_labels,
                self.near_base]

    def _update_artists(self, token, layer):
        row = self._cos[layer, token].copy()
        row[token] = 0.0  # its cosine with itself is 1 by definition: left out, marked by the triangle
        self.profile.set_verts(_bar_verts(row))
        colors = self._colors.copy()
        colors[token] = to_rgba(HIGHLIGHT)
        self.profile.set_facecolor(colors)
        self.self_marker.set_data([token], [0.0])
        others = np.delete(np.arange(len(row)), token)
        if self.k:
            near = others[np.argsort(-row[others], kind="stable")[: self.k]]
            for bar, text, pos in zip(self.near_bars, self.near_labels, near):
                bar.set_width(row[pos])
                text.set_text(f"{pos}: {self.trace.tokens[pos]}")
        label = "the embeddings" if layer == 0 else f"layer {layer}"
        title = f"cosine of {self.trace.tokens[token]!r} (position {token}) with the other tokens, {label}"
        if self.baseline is not None:
            b = float(self.baseline[layer])
            self.base_line.set_ydata([b, b])
            self.near_base.set_xdata([b, b])
            title += f"\n(dashed: random-pair baseline {b:.2f})"
        self.title.set_text(title)

    def site_browser(self) -> dict:
        """For the website's "try your own sentence" box (issue 50): what the reader's browser needs
        besides the model to draw this explorer for another sentence: the random-pair baseline
        per layer (the lesson's, from its data sentences; None if it has none), ``k``, and the
        drawing's constants."""
        from matplotlib.colors import to_hex

        return {"baseline": None if self.baseline is None else [float(b) for b in self.baseline],
                "k": self.k, "max_labelled": MAX_LABELLED, "normal": to_hex(NORMAL), "highlight": to_hex(HIGHLIGHT)}

    @classmethod
    def for_benchmark(cls, tokenizer, model, text=None):
        from helpers.layerwalk.compute import random_pair_baseline

        sentences = load_sentences()
        trace = trace_text(tokenizer, model, sentences[0] if text is None else text)
        baseline = random_pair_baseline([trace, trace_text(tokenizer, model, sentences[1])], n_pairs=200)
        values = [{"token": 1 + i % (trace.seq_len - 1), "layer": i % (trace.num_layers + 1)} for i in range(6)]
        return cls(trace, baseline=baseline), values
