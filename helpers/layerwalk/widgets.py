"""Lesson 07 explorer: one token at one layer (see :class:`helpers.common.explorer.Explorer`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch

from helpers.common.data import load_sentences
from helpers.common.explorer import HIGHLIGHT, NORMAL, Explorer, int_slider, token_dropdown
from helpers.common.style import FIG_WIDTH_IN, layer_labels
from helpers.layerwalk.compute import interlayer_similarity_all_tokens
from helpers.model.trace import check_trace, trace_text


class LayerWalkExplorer(Explorer):
    """Lesson 07: one token at one layer -- its norm per layer, its similarity to itself at
    every other layer, and its first few dimensions."""

    def __init__(self, trace, token: int = 0, layer: int = 0, n_dims: int = 16):
        self.trace = check_trace(trace)
        self.n_dims = max(1, min(int(n_dims), trace.hidden_size))
        # Cache everything the controls can ask for, in batched products (a 512-token input
        # builds in well under a second): per-token norms and layer-to-layer cosines.
        stack = torch.stack(trace.hidden_states)  # [L+1, seq, hidden]
        self._norms = stack.norm(dim=-1).T.cpu().numpy()  # [seq, L+1]
        self._sims = interlayer_similarity_all_tokens(trace).cpu().numpy()  # [seq, L+1, L+1]
        self._dims = stack[:, :, : self.n_dims].cpu().numpy()  # [L+1, seq, d]
        controls = {
            "token": token_dropdown(trace, token),
            "layer": int_slider(0, trace.num_layers, layer, "layer"),
        }
        super().__init__(controls)

    def _build_figure(self, token, layer):
        n = self.trace.num_layers + 1
        fig, axes = plt.subplot_mosaic([["norm", "sim"], ["dim", "dim"]], figsize=(FIG_WIDTH_IN, 5.0))
        ax_norm, ax_sim, ax_dim = axes["norm"], axes["sim"], axes["dim"]  # two rows: fits the page
        self.norm_bars = ax_norm.bar(range(n), self._norms[token], color=NORMAL)
        ax_norm.set_xticks(range(n), layer_labels(n))
        ax_norm.set_ylim(0, self._norms.max() * 1.1)
        ax_norm.set_xlabel("layer")
        ax_norm.set_ylabel("L2 norm")
        ax_norm.set_title("L2 norm (orange: shown layer)")
        (self.sim_line,) = ax_sim.plot(range(n), self._sims[token, layer], "o-")
        (self.sim_marker,) = ax_sim.plot([layer], [1.0], "o", color=HIGHLIGHT, ms=10)
        ax_sim.set_xticks(range(n), layer_labels(n))
        ax_sim.set_ylim(min(0.0, float(self._sims.min())) - 0.05, 1.05)
        ax_sim.set_xlabel("layer")
        ax_sim.set_ylabel("cosine")
        ax_sim.set_title("cosine with the shown layer")
        self.dim_bars = ax_dim.bar(range(self.n_dims), self._dims[layer, token], color=NORMAL)
        lim = float(np.abs(self._dims).max()) * 1.1
        ax_dim.set_ylim(-lim, lim)
        ax_dim.set_title(f"first {self.n_dims} dimensions")
        ax_dim.set_xlabel("dimension")
        ax_dim.set_ylabel("value")
        self.suptitle = fig.suptitle("")
        fig.tight_layout(rect=(0, 0, 1, 0.94))  # leave room for the suptitle
        self._update_artists(token, layer)
        return fig

    def dynamic_artists(self) -> list:
        return [*self.norm_bars, self.sim_line, self.sim_marker, *self.dim_bars, self.suptitle]

    def _update_artists(self, token, layer):
        for i, bar in enumerate(self.norm_bars):
            bar.set_height(self._norms[token, i])
            bar.set_color(HIGHLIGHT if i == layer else NORMAL)
        self.sim_line.set_ydata(self._sims[token, layer])
        self.sim_marker.set_data([layer], [self._sims[token, layer, layer]])
        for bar, h in zip(self.dim_bars, self._dims[layer, token]):
            bar.set_height(h)
        label = "embeddings" if layer == 0 else f"layer {layer}"
        self.suptitle.set_text(f"token {token} {self.trace.tokens[token]!r} at {label}")

    @classmethod
    def for_benchmark(cls, tokenizer, model, text=None):
        trace = trace_text(tokenizer, model, load_sentences()[0] if text is None else text)
        values = [{"token": t % trace.seq_len, "layer": l % (trace.num_layers + 1)} for t, l in zip(range(1, 6), range(5))]
        return cls(trace), values
