"""Lesson 06 explorer: a token's cosine with every token of its sentence, per layer."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_rgba

from helpers.common.data import load_sentences
from helpers.common.explorer import HIGHLIGHT, NORMAL, Explorer, int_slider, token_dropdown
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
    """Lesson 06: cosine between one token and every token of its sentence at one layer
    (left: all tokens, in order; right: the ``k`` nearest, named)."""

    def __init__(self, trace, token: int = 0, layer: int = 0, k: int = 5):
        self.trace = check_trace(trace)
        self.k = max(1, min(int(k), trace.seq_len - 1)) if trace.seq_len > 1 else 0
        stack = F.normalize(torch.stack(trace.hidden_states), dim=-1)
        self._cos = (stack @ stack.transpose(1, 2)).numpy()  # [L+1, seq, seq]
        controls = {
            "token": token_dropdown(trace, token),
            "layer": int_slider(0, trace.num_layers, layer, "layer"),
        }
        super().__init__(controls)

    def _build_figure(self, token, layer):
        tokens, n = self.trace.tokens, self.trace.seq_len
        fig, (ax, ax_near) = plt.subplots(1, 2, figsize=(10, 3.4), gridspec_kw={"width_ratios": [3, 1.2]})
        self._colors = np.tile(np.array(to_rgba(NORMAL)), (n, 1))
        self.profile = PolyCollection(_bar_verts(self._cos[layer, token]), facecolors=self._colors, edgecolors="none")
        ax.add_collection(self.profile)
        ax.set_xlim(-0.6, n - 0.4)
        low = min(0.0, float(self._cos.min())) - 0.05
        ax.set_ylim(low, 1.05)
        if n <= MAX_LABELLED:
            ax.set_xticks(range(n), tokens, rotation=70)
            ax.set_xlabel("token of the sentence (orange: the chosen one)")
        else:
            ax.set_xlabel(f"position in the sentence: all {n} tokens, too many to name (the nearest are named right)")
        ax.set_ylabel("cosine")
        self.title = ax.set_title(" ")
        y = np.arange(self.k)[::-1]
        self.near_bars = ax_near.barh(y, np.zeros(self.k), color=NORMAL, height=0.7)
        self.near_labels = [ax_near.text(-0.03, yy, "", transform=ax_near.get_yaxis_transform(), ha="right",
                                         va="center", fontsize=8) for yy in y]
        ax_near.set_xlim(min(0.0, low), 1.05)
        ax_near.set_ylim(-0.6, max(self.k, 1) - 0.4)
        ax_near.set_yticks([])
        ax_near.set_xlabel("cosine")
        ax_near.set_title(f"the {self.k} nearest tokens")
        fig.tight_layout(w_pad=6)
        self._update_artists(token, layer)
        return fig

    def dynamic_artists(self) -> list:
        return [self.profile, self.title, *self.near_bars, *self.near_labels]

    def _update_artists(self, token, layer):
        row = self._cos[layer, token]
        self.profile.set_verts(_bar_verts(row))
        colors = self._colors.copy()
        colors[token] = to_rgba(HIGHLIGHT)
        self.profile.set_facecolor(colors)
        others = np.delete(np.arange(len(row)), token)
        if self.k:
            near = others[np.argsort(-row[others], kind="stable")[: self.k]]
            for bar, text, pos in zip(self.near_bars, self.near_labels, near):
                bar.set_width(row[pos])
                text.set_text(f"{pos}: {self.trace.tokens[pos]}")
        label = "the embeddings" if layer == 0 else f"layer {layer}"
        self.title.set_text(f"cosine of {self.trace.tokens[token]!r} (position {token}) with every token, {label}")

    @classmethod
    def for_benchmark(cls, tokenizer, model, text=None):
        trace = trace_text(tokenizer, model, load_sentences()[0] if text is None else text)
        values = [{"token": 1 + i % (trace.seq_len - 1), "layer": i % (trace.num_layers + 1)} for i in range(6)]
        return cls(trace), values
