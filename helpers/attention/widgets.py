"""Attention explorers (lessons 02 and 05), built on :class:`helpers.common.explorer.Explorer`:
a control move only changes existing artists from the cached trace."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch

from helpers.attention.plots import attention_heatmap, head_line_colors, plot_head_lines
from helpers.common.data import load_sentences
from helpers.common.explorer import Explorer, int_slider
from helpers.model.trace import check_trace, trace_text


class AttentionHeadExplorer(Explorer):
    """Layer and head sliders over one cached :class:`~helpers.model.trace.Trace`.

    Moving a slider swaps the heatmap's data (``im.set_data``) and its title; the tokens,
    and so the tick labels, stay the same. The model never runs again.
    """

    def __init__(self, trace, layer: int = 1, head: int = 0):
        import ipywidgets as widgets

        self.trace = trace
        trace.check_layer(layer, allow_embeddings=False)
        trace.check_head(head)
        controls = {
            "layer": widgets.IntSlider(value=layer, min=1, max=trace.num_layers, description="layer"),
            "head": widgets.IntSlider(value=head, min=0, max=trace.num_heads - 1, description="head"),
        }
        super().__init__(controls)

    def _title(self, layer: int, head: int) -> str:
        return f"layer {layer} of {self.trace.num_layers}, head {head} of 0..{self.trace.num_heads - 1}"

    def _build_figure(self, layer: int, head: int):
        fig, self.ax, self.im = attention_heatmap(
            self.trace.attention(layer, head), self.trace.tokens, title=self._title(layer, head), vmax=1.0
        )
        return fig

    def dynamic_artists(self) -> list:
        return [self.im, self.ax.title]

    def _update_artists(self, layer: int, head: int) -> None:
        self.im.set_data(self.trace.attention(layer, head).numpy())
        self.ax.set_title(self._title(layer, head))

    def update(self, **values) -> None:
        """Validate the slider values (the same messages as the trace) and redraw in place."""
        merged = {**self.values, **values}
        self.trace.check_layer(merged["layer"], allow_embeddings=False)
        self.trace.check_head(merged["head"])
        super().update(**values)

    @classmethod
    def for_benchmark(cls, tokenizer, model):
        trace = trace_text(tokenizer, model, "The bank by the river was unbelievably quiet this morning.")
        explorer = cls(trace)
        values = [{"layer": l, "head": h} for l in range(1, trace.num_layers + 1) for h in range(min(2, trace.num_heads))]
        return explorer, values


def _benchmark_trace(tokenizer, model):
    return trace_text(tokenizer, model, load_sentences()[0])


class HeadGridExplorer(Explorer):
    """Lesson 05: all heads of one layer as a grid of attention maps; layer on a slider."""

    def __init__(self, trace, layer: int = 1):
        self.trace = check_trace(trace)
        self._att = torch.stack(trace.attentions).numpy()  # [L, heads, q, k]
        super().__init__({"layer": int_slider(1, trace.num_layers, layer, "layer")})

    def _build_figure(self, layer):
        heads = self.trace.num_heads
        cols = math.ceil(math.sqrt(heads))
        rows = math.ceil(heads / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(2.1 * cols, 2.1 * rows + 0.4), squeeze=False)
        self.images = []
        for h, ax in enumerate(axes.flat):
            ax.set_xticks([])
            ax.set_yticks([])
            if h >= heads:
                ax.axis("off")
                continue
            self.images.append(ax.imshow(self._att[layer - 1, h], vmin=0, vmax=1, cmap="viridis"))
            ax.set_title(f"head {h}", fontsize=8)
        self.suptitle = fig.suptitle("")
        fig.tight_layout(rect=(0, 0, 1, 0.94))  # leave room for the suptitle
        self._update_artists(layer)
        return fig

    def dynamic_artists(self) -> list:
        return [*self.images, self.suptitle]

    def _update_artists(self, layer):
        for h, im in enumerate(self.images):
            im.set_data(self._att[layer - 1, h])
        self.suptitle.set_text(f"layer {layer}: rows = queries, columns = keys ({self.trace.seq_len} tokens)")

    @classmethod
    def for_benchmark(cls, tokenizer, model):
        trace = _benchmark_trace(tokenizer, model)
        return cls(trace), [{"layer": l} for l in range(1, trace.num_layers + 1)]


class HeadLinesExplorer(Explorer):
    """Lesson 05: one head as lines from query tokens (left) to key tokens (right),
    opacity proportional to the attention weight."""

    def __init__(self, trace, layer: int = 1, head: int = 0):
        self.trace = check_trace(trace)
        self._att = torch.stack(trace.attentions).numpy()
        controls = {
            "layer": int_slider(1, trace.num_layers, layer, "layer"),
            "head": int_slider(0, trace.num_heads - 1, head, "head"),
        }
        super().__init__(controls)

    def _build_figure(self, layer, head):
        n = self.trace.seq_len
        fig, ax = plt.subplots(figsize=(4.5, 0.28 * n + 1.5))
        plot_head_lines(self._att[layer - 1, head], self.trace.tokens, ax=ax)
        self.lines = ax.collections[0]
        self.title = ax.title
        self._update_artists(layer, head)
        return fig

    def dynamic_artists(self) -> list:
        return [self.lines, self.title]

    def _update_artists(self, layer, head):
        self.lines.set_color(head_line_colors(self._att[layer - 1, head]))
        self.title.set_text(f"layer {layer}, head {head}")  # short: the title is redrawn on every move

    @classmethod
    def for_benchmark(cls, tokenizer, model):
        trace = _benchmark_trace(tokenizer, model)
        values = [{"layer": 1 + i % trace.num_layers, "head": i % trace.num_heads} for i in range(6)]
        return cls(trace), values
