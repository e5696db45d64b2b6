"""Interactive explorers that feel instant.

An :class:`Explorer` owns one matplotlib figure, drawn once. A control change calls
:meth:`Explorer.update`, which only changes existing artists (``set_data``,
``set_height``, tick labels) from cached results -- the model never runs again -- and
re-encodes the figure into an ``ipywidgets.Image``. That works the same on ipywidgets 7.7
(Colab) and 8, needs no ipympl, and costs tens of milliseconds instead of the hundreds a
fresh seaborn figure costs. :meth:`Explorer.redraw_naive` builds the figure from scratch
and exists only so the benchmark can show the difference.

Subclasses implement ``_build_figure(**values)`` (create fig and artists; return fig),
``_update_artists(**values)``, optionally ``redraw_naive(**values)`` (e.g. a fresh seaborn
heatmap), and the classmethod ``for_benchmark(tokenizer, model)`` returning
``(explorer, [values, ...])``: a built explorer on a sentence of its choosing and a list of
control-value dicts to cycle through. ``benchmarks/`` finds every subclass through it.
"""

from __future__ import annotations

import io

import matplotlib.pyplot as plt

DPI = 80

def figure_png(fig) -> bytes:
    """Encode a figure as PNG bytes (what the Image widget shows)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()

class Explorer:
    """Base class: controls + one figure updated in place. See the module docstring."""

    def __init__(self, controls: dict, **initial):
        import ipywidgets as widgets

        self.controls = controls
        self.values = {name: ctl.value for name, ctl in controls.items()}
        self.values.update(initial)
        with plt.ioff():
            self.fig = self._build_figure(**self.values)
        plt.close(self.fig)  # we show it through the Image widget, not the inline backend
        self.image = widgets.Image(value=figure_png(self.fig), format="png")
        for name, ctl in controls.items():
            ctl.observe(self._on_change(name), names="value")
        self.widget = widgets.VBox([widgets.HBox(list(controls.values())), self.image])

    def _on_change(self, name):
        def handler(change):
            self.update(**{name: change["new"]})

        return handler

    def update(self, **values) -> None:
        """Apply new control values to the existing artists and refresh the image."""
        self.values.update(values)
        self._update_artists(**self.values)
        self.image.value = figure_png(self.fig)

    def redraw_naive(self, **values) -> bytes:
        """The slow way, for the benchmark: a brand-new figure, encoded, then closed."""
        merged = {**self.values, **values}
        with plt.ioff():
            fig = self._build_figure(**merged)
        png = figure_png(fig)
        plt.close(fig)
        return png

    @classmethod
    def for_benchmark(cls, tokenizer, model):
        raise NotImplementedError(f"{cls.__name__} does not define for_benchmark")

    def _build_figure(self, **values):
        raise NotImplementedError

    def _update_artists(self, **values) -> None:
        raise NotImplementedError

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
