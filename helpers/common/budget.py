"""How much work a lesson does: the ``BUDGET`` knob of a lesson's ``parameters`` cell.

Lessons that train, ablate or run many sentences (07-14) size their work with one knob:

* ``"full"`` -- the lesson as written: every test item and seed it names (the website's run);
* ``"quick"`` -- fewer test items, seeds and data sentences: the same cells and code paths in a
  fraction of the time (the test suite runs every lesson this way; a learner with a large model
  and only a CPU may want it too). Numbers from a quick run have wider intervals;
* ``None`` -- ``"full"``, unless the model needs much more compute than the bundled one and runs
  on a CPU: then ``"quick"``, and the printed line says so and how to ask for ``"full"``.

:func:`choose_budget` prints one line naming the budget and why; each lesson then prints what
that budget means for it (how many items, seeds, steps).
"""

from __future__ import annotations

from dataclasses import dataclass

BUDGETS = ("full", "quick")
# The bundled all-MiniLM-L6-v2 (6 layers, hidden 384, FFN 1536): the full budgets were sized on it
# (benchmarks/results.md times every lesson with it and with a bert-base-sized model).
REFERENCE = {"name": "the bundled all-MiniLM-L6-v2", "layers": 6, "hidden": 384, "intermediate": 1536}
LARGE_ON_CPU = 3.0  # x the reference's compute per token: above this, BUDGET=None picks "quick" on a CPU


def compute_ratio(config) -> float:
    """Multiply-adds per token of the encoder's matrix products (Q, K, V, output, FFN), relative to the
    bundled model: ``L (4 H^2 + 2 H I)`` over the same for 6 x 384 x 1536. bert-base: about 8x."""
    def per_token(layers, hidden, intermediate):
        return layers * (4 * hidden * hidden + 2 * hidden * intermediate)

    return per_token(config.num_hidden_layers, config.hidden_size, config.intermediate_size) / per_token(
        REFERENCE["layers"], REFERENCE["hidden"], REFERENCE["intermediate"])


@dataclass(frozen=True)
class Budget:
    """The budget a lesson runs with (``"full"`` or ``"quick"``) and why it was chosen."""

    name: str
    reason: str

    @property
    def quick(self) -> bool:
        return self.name == "quick"

    def pick(self, full, quick):
        """``full`` under the full budget, ``quick`` under the quick one."""
        return quick if self.quick else full

    def __str__(self) -> str:
        # quick runs rest on fewer utterances and seeds: say so where the learner reads the numbers
        note = " (fewer intents, seeds and epochs: wider intervals)" if self.quick else ""
        return f"Budget: {self.name}{note} -- {self.reason}"


def _device_of(model) -> str:
    try:
        return next(model.parameters()).device.type
    except (StopIteration, AttributeError):
        return "cpu"


def choose_budget(budget: str | None = None, model=None, *, verbose: bool = True) -> Budget:
    """Resolve a lesson's ``BUDGET`` (see the module docstring) and print one line saying which and why."""
    if budget is not None and budget not in BUDGETS:
        raise ValueError(f"BUDGET = {budget!r} is not valid: use None (the course chooses), "
                         + " or ".join(repr(b) for b in BUDGETS) + ".")
    ratio = compute_ratio(model.config) if model is not None else 1.0
    device = _device_of(model) if model is not None else "cpu"
    large_on_cpu = device == "cpu" and ratio > LARGE_ON_CPU
    expect = (f"this model needs {ratio:.1f}x the compute per token of {REFERENCE['name']} and runs on the CPU, "
              f"so the full budget takes roughly {ratio:.0f}x that model's time (benchmarks/results.md lists both)")
    if budget is None:
        name = "quick" if large_on_cpu else "full"
        reason = (f"BUDGET = None: {expect}; set BUDGET = \"full\" in the parameters cell to run everything"
                  if large_on_cpu else "BUDGET = None: the lesson as written")
    else:
        name = budget
        reason = f"BUDGET = {budget!r} in the parameters cell" + (f"; note: {expect}" if large_on_cpu and budget == "full"
                                                                  else "")
    chosen = Budget(name, reason)
    if verbose:
        print(chosen)
    return chosen
