"""Explorer widgets for lessons 01-03 (see :class:`helpers.widgets.Explorer`)."""

from __future__ import annotations

from helpers.plots import attention_heatmap
from helpers.widgets import Explorer


class AttentionHeadExplorer(Explorer):
    """Layer and head sliders over one cached :class:`~helpers.trace.Trace`.

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
        from helpers.trace import trace_text

        trace = trace_text(tokenizer, model, "The bank by the river was unbelievably quiet this morning.")
        explorer = cls(trace)
        values = [{"layer": l, "head": h} for l in range(1, trace.num_layers + 1) for h in range(min(2, trace.num_heads))]
        return explorer, values
