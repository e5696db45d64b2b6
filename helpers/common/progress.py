"""Progress bars that leave nothing behind in saved notebooks.

``tqdm.auto`` shows an ipywidgets bar whose saved fallback text ("0%| | 0/150") stays in the
notebook file and in every static export (nbconvert HTML, GitHub, the course website). In a
notebook, :func:`progress` instead shows a plain HTML bar through one display handle, updates
it in place, and replaces it with nothing when the loop ends, so the saved output holds no
residue. Outside a notebook (scripts, tests) it falls back to ``tqdm`` on stderr with
``leave=False``.
"""

from __future__ import annotations

import html
import time
from collections.abc import Iterable, Iterator

UPDATE_EVERY_S = 0.2  # fewer messages to the front end; the last step is always shown


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")


def _bar(desc: str, done: int, total: int | None) -> dict:
    if total:
        text = f"{desc}: {done}/{total}"
        bar = f'<progress value="{done}" max="{total}" style="width: 16em"></progress>'
    else:
        text, bar = f"{desc}: {done}", ""
    return {"text/plain": text, "text/html": f"{bar} <code>{html.escape(text)}</code>"}


def progress(iterable: Iterable, desc: str = "", total: int | None = None, disable: bool = False) -> Iterator:
    """Yield from ``iterable`` with a progress bar labelled ``desc``; nothing stays behind."""
    if total is None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    if disable:
        yield from iterable
        return
    if not _in_notebook():
        from tqdm import tqdm

        yield from tqdm(iterable, desc=desc, total=total, leave=False)
        return
    from IPython.display import display

    handle = display(_bar(desc, 0, total), raw=True, display_id=True)
    last, done = time.monotonic(), 0
    try:
        for done, item in enumerate(iterable, start=1):
            yield item
            if time.monotonic() - last > UPDATE_EVERY_S:
                handle.update(_bar(desc, done, total), raw=True)
                last = time.monotonic()
    finally:
        handle.update({"text/plain": ""}, raw=True)  # the saved output is an empty display


class ProgressBar:
    """A manually advanced bar (``update()`` per step, ``close()`` at the end) with the same
    no-residue behaviour, for loops that are not a single iterable (epochs x batches)."""

    def __init__(self, total: int, desc: str = "", disable: bool = False):
        self.total, self.desc, self.done = total, desc, 0
        self._handle = self._tqdm = None
        self._last = time.monotonic()
        if disable:
            return
        if _in_notebook():
            from IPython.display import display

            self._handle = display(_bar(desc, 0, total), raw=True, display_id=True)
        else:
            from tqdm import tqdm

            self._tqdm = tqdm(total=total, desc=desc, leave=False)

    def update(self, n: int = 1) -> None:
        self.done += n
        if self._tqdm is not None:
            self._tqdm.update(n)
        elif self._handle is not None and time.monotonic() - self._last > UPDATE_EVERY_S:
            self._handle.update(_bar(self.desc, self.done, self.total), raw=True)
            self._last = time.monotonic()

    def close(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()
        if self._handle is not None:
            self._handle.update({"text/plain": ""}, raw=True)
            self._handle = None
