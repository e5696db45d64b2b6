"""Lesson 06 explorer: a token's cosine with every token of its sentence, per layer."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F

from helpers.common.data import load_sentences
from helpers.common.explorer import HIGHLIGHT, NORMAL, Explorer, int_slider, token_dropdown
from helpers.model.trace import check_trace, trace_text


class NeighbourExplorer(Explorer):
    """Lesson 06: cosine between one token and every token of its sentence at one layer."""

    def __init__(self, trace, token: int = 0, layer: int = 0):
        self.trace = check_trace(trace)
        stack = F.normalize(torch.stack(trace.hidden_states), dim=-1)
        self._cos = (stack @ stack.transpose(1, 2)).numpy()  # [L+1, seq, seq]
        controls = {
            "token": token_dropdown(trace, token),
            "layer": int_slider(0, trace.num_layers, layer, "layer"),
        }
        super().__init__(controls)

    def _build_figure(self, token, layer):
        tokens = self.trace.tokens
        fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(tokens)), 3.2))
        self.bars = ax.bar(range(len(tokens)), self._cos[layer, token], color=NORMAL)
        ax.set_xticks(range(len(tokens)), tokens, rotation=70, fontsize=8)
        ax.set_ylim(min(0.0, float(self._cos.min())) - 0.05, 1.05)
        ax.set_ylabel("cosine")
        self.title = ax.set_title("", fontsize=9)
        fig.tight_layout()
        self._update_artists(token, layer)
        return fig

    def dynamic_artists(self) -> list:
        return [*self.bars, self.title]

    def _update_artists(self, token, layer):
        row = self._cos[layer, token]
        for i, bar in enumerate(self.bars):
            bar.set_height(row[i])
            bar.set_color(HIGHLIGHT if i == token else NORMAL)
        others = np.delete(np.arange(len(row)), token)
        best = others[np.argmax(row[others])]
        label = "embeddings" if layer == 0 else f"layer {layer}"
        self.title.set_text(
            f"{self.trace.tokens[token]!r} at {label}: nearest is {self.trace.tokens[best]!r} ({row[best]:.2f})"
        )

    @classmethod
    def for_benchmark(cls, tokenizer, model):
        trace = trace_text(tokenizer, model, load_sentences()[0])
        values = [{"token": 1 + i % (trace.seq_len - 1), "layer": i % (trace.num_layers + 1)} for i in range(6)]
        return cls(trace), values
