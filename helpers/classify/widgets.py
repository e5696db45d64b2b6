"""The "type a sentence, see the logits" box of lesson 04.

A Text box and a Button: clicking runs the model once on the NEW sentence (a new input,
not a slider move), then only changes the existing bars (``set_height``, colour) and the
title, and redraws just those. The y-scale is shared by every sentence and widens only
when a logit falls outside it. Results are cached per sentence, so re-showing a sentence
never re-runs the model. A sentence past the model's maximum input length is truncated to it,
and the box says how many tokens were dropped (the course's truncation warning).
"""

from __future__ import annotations

import torch

from helpers.classify.compute import extract_features
from helpers.classify.plots import plot_logits
from helpers.common.explorer import Explorer
from helpers.model.trace import max_input_tokens


class LogitsBox(Explorer):
    """Logits per class and the predicted id for a typed sentence, from a trained head."""

    def __init__(self, tokenizer, model, head, names, layer: int, pooling: str = "cls", sentence: str = "",
                 examples=()):
        import ipywidgets as widgets

        if not isinstance(sentence, str) or not sentence.strip():
            raise ValueError("sentence must be a non-empty string to start the box with.")
        examples = [examples] if isinstance(examples, str) else list(examples)
        if not all(isinstance(e, str) and e.strip() for e in examples):
            raise ValueError("examples must be non-empty sentences (strings), shown beside the box's own on the website.")
        self.examples = examples
        self.tokenizer, self.model, self.head, self.names = tokenizer, model, head, list(names)
        self.layer, self.pooling = layer, pooling
        self._cache: dict[str, torch.Tensor] = {}
        self._dropped: dict[str, int] = {}  # tokens cut from a sentence past the maximum length
        self.max_tokens = max_input_tokens(tokenizer, model)
        self.text = widgets.Text(value=sentence, description="sentence")
        self.button = widgets.Button(description="Classify")
        self.output = widgets.Output()
        # The Text is not observed (that would run the model on every keystroke): only the button.
        super().__init__({}, sentence=sentence)
        self.button.on_click(lambda _: self.update(sentence=self.text.value))
        self.widget = widgets.VBox([widgets.HBox([self.text, self.button]), self.image, self.output])

    def logits_for(self, sentence: str) -> torch.Tensor:
        """Logits of one sentence (cached per sentence)."""
        if not isinstance(sentence, str) or not sentence.strip():
            raise ValueError("Type a sentence with at least one word.")
        if sentence not in self._cache:
            n = len(self.tokenizer(sentence, truncation=False, verbose=False)["input_ids"])
            self._dropped[sentence] = max(0, n - self.max_tokens)
            feats = extract_features(self.tokenizer, self.model, [sentence], max_length=self.max_tokens,
                                     progress=False)
            with torch.no_grad():
                self._cache[sentence] = self.head(feats.layer(self.layer, self.pooling))[0]
        return self._cache[sentence]

    def _build_figure(self, sentence):
        logits = self.logits_for(sentence)
        self.ax, self.bars = plot_logits(logits.cpu().numpy(), self.names)
        self.zero_line = self.ax.lines[0]  # the axhline at 0, drawn over the bars
        self._ylim = None
        self._update_artists(sentence)
        self.ax.figure.tight_layout()  # leave room for the title set just above
        return self.ax.figure

    def dynamic_artists(self) -> list:
        return [*self.bars, self.zero_line, self.ax.title]

    def _update_artists(self, sentence):
        logits = self.logits_for(sentence)
        pred = int(logits.argmax())
        for i, (bar, value) in enumerate(zip(self.bars, logits.tolist())):
            bar.set_height(value)
            bar.set_color("tab:orange" if i == pred else "tab:blue")
        self._fit_ylim(float(logits.min()), float(logits.max()))
        cut = f" (first {self.max_tokens} tokens)" if self._dropped.get(sentence) else ""
        self.ax.set_title(f"{sentence[:50]!r}{cut} -> id {pred} ({self.names[pred]})", fontsize=9)
        self.prediction = pred

    def _fit_ylim(self, lo: float, hi: float) -> None:
        """One y-scale for every sentence, widened (with headroom) only when a logit falls
        outside it: bars stay comparable across sentences, and an unchanged axis lets an
        update redraw only the bars and the title."""
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        if self._ylim is not None and self._ylim[0] <= lo and hi <= self._ylim[1]:
            return
        if self._ylim is not None:
            lo, hi = min(lo, self._ylim[0]), max(hi, self._ylim[1])
        pad = 0.25 * (hi - lo) + 0.5
        self._ylim = (lo - pad, hi + pad)
        self.ax.set_ylim(*self._ylim)
        self._static_changed()

    def truncation_note(self, sentence: str) -> str:
        """The course's truncation warning for ``sentence``, or '' when it fits."""
        dropped = self._dropped.get(sentence, 0)
        if not dropped:
            return ""
        return (f"The input has {self.max_tokens + dropped} tokens but this model accepts at most "
                f"{self.max_tokens}: truncated, {dropped} token(s) dropped from the end.")

    @property
    def input_tokens(self) -> int:
        sentence = self.values["sentence"]
        n = len(self.tokenizer(sentence, truncation=False, verbose=False)["input_ids"])
        return min(n, self.max_tokens)

    def describe(self) -> str:
        return f"LogitsBox: {self.values['sentence'][:60]!r} -> {self.names[self.prediction]}"

    def update(self, **values) -> None:
        try:
            super().update(**values)
        except ValueError as err:
            self.output.clear_output()
            with self.output:
                print(err)
            return
        self.output.clear_output()
        with self.output:
            note = self.truncation_note(self.values["sentence"])
            if note:
                print(note)
            print(f"predicted id {self.prediction}: {self.names[self.prediction]}")

    def site_multiples(self):
        """For the website, which cannot run the model on a typed sentence: the box's sentence
        and its ``examples`` side by side (:func:`~helpers.classify.plots.plot_logits_examples`),
        each classified once here, and the caption sentence that says so. Returns
        ``(figure, note)``."""
        from helpers.classify.plots import plot_logits_examples

        sentences = list(dict.fromkeys([self.values["sentence"], *self.examples]))[:6]
        logits = torch.stack([self.logits_for(s) for s in sentences]).cpu().numpy()
        fig = plot_logits_examples(logits, sentences, self.names)
        shown = "its own sentence" if len(sentences) == 1 else f"{len(sentences)} sentences"
        note = (f"The picture shows the box's output for {shown}, computed when this site was built; in the "
                "notebook, type any sentence into the box and press Classify (on the website, where the browser "
                "can run the model, the box under the figure applies this head to your sentence).")
        return fig, note

    def site_browser(self) -> dict | None:
        """For the website's "try your own sentence" box (issue 50, ``book/browser_model.py``): the
        trained head as numbers, so the reader's browser applies it to the model's vector of the
        reader's sentence (``pooling`` "cls": the layer's [CLS]; "mean": the mean over its tokens).
        Float32 arrays in base64 (little-endian): ``weight`` ``[C, H]``, ``bias``, ``mu``, ``sigma``
        (the training statistics the head standardises with). None for a head or pooling the
        browser cannot compute (the pooler's output; a head other than :class:`LinearHead`)."""
        import base64

        import numpy as np
        from matplotlib.colors import to_hex

        from helpers.classify.compute import LinearHead
        from helpers.common.style import HIGHLIGHT, NORMAL

        if not isinstance(self.head, LinearHead) or self.pooling not in ("cls", "mean"):
            return None

        def packed(tensor):
            array = tensor.detach().cpu().numpy().astype("<f4")
            return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")

        sentences = list(dict.fromkeys([self.values["sentence"], *self.examples]))[:6]
        config = self.model.config
        return {"head": "LinearHead", "layer": int(self.layer), "pooling": self.pooling, "names": self.names,
                "classes": len(self.names), "hidden": int(config.hidden_size), "layers": int(config.num_hidden_layers),
                "max_length": int(self.max_tokens),
                "weight": packed(self.head.classifier.weight), "bias": packed(self.head.classifier.bias),
                "mu": packed(self.head.mu.reshape(-1)), "sigma": packed(self.head.sigma.reshape(-1)),
                "sentence": self.values["sentence"],
                # the site's picture, as numbers: the browser's check that it applies the same head
                "examples": {s: [float(v) for v in self.logits_for(s).tolist()] for s in sentences},
                "normal": to_hex(NORMAL), "highlight": to_hex(HIGHLIGHT)}

    @classmethod
    def for_benchmark(cls, tokenizer, model, text: str | None = None):
        from helpers.classify.compute import LinearHead

        torch.manual_seed(0)
        names = [f"class {i}" for i in range(5)]
        head = LinearHead(model.config.hidden_size, len(names)).eval()
        first = text or "wake me up at seven"
        box = cls(tokenizer, model, head, names, layer=model.config.num_hidden_layers, sentence=first)
        return box, [{"sentence": "play some jazz"}, {"sentence": first}]
