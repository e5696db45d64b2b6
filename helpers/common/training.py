"""The course's one training contract: every head, probe and fine-tuning run follows it.

A verdict about a trained thing (this layer reads the intent better, that fine-tuning strategy
wins) is only as good as the training behind it. So every run the lessons make -- lessons 04 and 10's
heads, lesson 14's probes, lessons 11 and 14's fine-tuning -- keeps four promises:

* **Choices are made on a dev split carved from the training data, never on the test set**: the
  L2 strength of a linear head (:func:`fit_linear`, a small grid, :data:`L2_GRID`), the learning
  rate of a fine-tuning run and the step it stops at (``helpers.finetuning.compute``). The test
  items are scored once, with what the dev split chose.
* **It is scored at step 0**, before any update, so that "training helped" is a measurement (and
  early stopping can keep the starting point).
* **A convergence criterion is stated before training and recorded per run**
  (:class:`TrainingRecord`), with one of three outcomes (:data:`STATUSES`):

  - a linear head or probe is a convex problem, fitted to convergence: full-batch L-BFGS until the
    largest entry of the gradient of its objective (mean cross-entropy plus the L2 penalty) is below
    :data:`GRADIENT_TOLERANCE` -- *converged* -- or until :data:`MAX_ITERATIONS` -- *budget
    exhausted*;
  - a fine-tuning run stops when its dev loss has not improved for a patience of evaluations after
    the warm-up -- *converged* when its best evaluation came after the first one, *stopped at first
    evaluation* when nothing after the first evaluation beat it (training made the dev loss worse),
    *budget exhausted* when the step budget ran out first.

* **No text says "converged" unless the criterion held**: lessons print :func:`status_summary`
  and a table with the status column (:func:`records_table`).

The linear fits are batched: many independent problems (every layer, every L2 strength, every
label set) in one set of matrix products; the objective is their sum, which L-BFGS minimises
jointly -- since the problems share no parameter, each reaches its own optimum, and each one's
convergence is checked on its own gradient.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

CONVERGED = "converged"
FIRST_EVALUATION = "stopped at first evaluation"
BUDGET_EXHAUSTED = "budget exhausted"
STATUSES = (CONVERGED, FIRST_EVALUATION, BUDGET_EXHAUSTED)

# Linear heads and probes: the L2 strengths the dev split chooses from (lambda in
# mean cross-entropy + lambda / 2 * ||W||^2, on standardized features), the gradient tolerance that
# defines "converged" and the iteration budget of full-batch L-BFGS.
L2_GRID = (1e-3, 1e-2, 1e-1)
GRADIENT_TOLERANCE = 1e-4
MAX_ITERATIONS = 1000


RELATIVE_TOLERANCE = 0.1  # and below a tenth of the L2 strength: a weak penalty's optimum is told apart


def strength_tolerance(tol: float, l2: float) -> float:
    """The gradient tolerance for one L2 strength: ``tol``, or a tenth of the strength if that is
    smaller. An absolute tolerance alone cannot tell weak penalties apart: started from a stronger
    penalty's solution (the continuation path of :func:`fit_linear`), a fit at a much weaker one
    already meets it after 0 iterations, because the two objectives' gradients differ by only
    ``(l2_strong - l2_weak) * W``."""
    return min(float(tol), RELATIVE_TOLERANCE * float(l2))


def linear_criterion(tol: float = GRADIENT_TOLERANCE, max_iter: int = MAX_ITERATIONS) -> str:
    """The stated convergence criterion of a linear head, in words."""
    return (f"full-batch L-BFGS until every entry of the objective's gradient is below {tol:g} and below "
            f"a tenth of the L2 strength (at most {max_iter:,} iterations)")


@dataclass
class TrainingRecord:
    """How one trained thing was trained, by the contract above.

    ``status`` is one of :data:`STATUSES`; ``criterion`` states the convergence rule in words;
    ``choice`` what the dev split chose (``"L2 0.01"``, ``"lr 3e-05"``) and ``grid`` from what;
    ``step0`` and ``kept`` are ``(dev loss, dev accuracy)`` at step 0 and at the weights kept;
    ``train_accuracy`` the kept weights' accuracy on their own training data; ``steps`` the
    iterations or optimiser steps run; ``curve`` ``[(step, dev loss, dev accuracy)]``, step 0 first."""

    run: str
    status: str
    criterion: str
    choice: str
    steps: int
    step0: tuple
    kept: tuple
    train_accuracy: float | None = None
    grid: str = ""
    curve: list = field(default_factory=list)
    gradient: float | None = None  # linear fits: the largest gradient entry at the end

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}.")

    @property
    def converged(self) -> bool:
        return self.status == CONVERGED

    def describe(self) -> str:
        """One line: what the dev split chose, how long it trained, the status, dev loss at step 0
        and at the kept weights, and the training accuracy."""
        unit = "L-BFGS iterations" if self.gradient is not None else "steps"
        grad = "" if self.gradient is None else f", largest gradient entry {self.gradient:.1e}"
        train = "" if self.train_accuracy is None else f"; training accuracy {self.train_accuracy:.1%}"
        return (f"{self.run}: {self.choice} chosen on the dev split (from {self.grid}); {self.status} after "
                f"{self.steps:,} {unit}{grad}; dev loss {self.step0[0]:.3f} at step 0 -> {self.kept[0]:.3f} kept"
                f"{train}")

    def row(self) -> dict:
        """One row of :func:`records_table`."""
        return {"run": self.run, "dev-split choice": self.choice,
                "dev loss, step 0 -> kept": f"{self.step0[0]:.3f} -> {self.kept[0]:.3f}",
                "dev accuracy, step 0 -> kept": f"{self.step0[1]:.1%} -> {self.kept[1]:.1%}",
                "training accuracy": "-" if self.train_accuracy is None else f"{self.train_accuracy:.1%}",
                "steps": f"{self.steps:,}", "status": self.status}


def status_counts(records) -> dict:
    """``{status: how many records have it}`` over :data:`STATUSES`, in that order."""
    records = list(records)
    return {s: sum(r.status == s for r in records) for s in STATUSES}


def status_summary(records) -> str:
    """``"all 35 runs converged"`` or ``"30 of 35 runs converged; 5 budget exhausted"``: the
    status column in one line (never "converged" for a run that did not meet its criterion)."""
    records = list(records)
    if not records:
        raise ValueError("give at least one TrainingRecord.")
    counts = status_counts(records)
    n = len(records)
    if counts[CONVERGED] == n:
        return f"all {n} runs converged" if n > 1 else "the run converged"
    parts = [f"{counts[CONVERGED]} of {n} runs converged"]
    parts += [f"{k} {s}" for s, k in counts.items() if s != CONVERGED and k]
    return "; ".join(parts)


def records_table(records, title: str | None = None):
    """A :class:`~helpers.common.tables.TitledTable` with one row per record: the dev-split
    choice, dev loss and accuracy at step 0 and at the kept weights, training accuracy, steps and
    the status column."""
    from helpers.common.tables import TitledTable, results_table

    return TitledTable(results_table([r.row() for r in records], index="run"), title)


# ----------------------------------------------------------------------------- dev splits
def stratified_dev_split(labels, per_class: int | None = None, fraction: float | None = None,
                         seed: int = 0) -> tuple[list[int], list[int]]:
    """``(fit_rows, dev_rows)``: a seeded dev split carved out of training data, stratified by
    label -- ``per_class`` rows of every label, or ``fraction`` of them (at least one per label
    with two or more rows; a label with one row stays in the fit part)."""
    import random

    labels = [int(y) for y in labels]
    if (per_class is None) == (fraction is None):
        raise ValueError("give exactly one of per_class (rows per label) or fraction (share of each label).")
    by_label: dict[int, list[int]] = {}
    for i, y in enumerate(labels):
        by_label.setdefault(y, []).append(i)
    rng, dev = random.Random(seed), []
    for y in sorted(by_label):
        rows = by_label[y]
        k = per_class if per_class is not None else max(1, round(fraction * len(rows))) if len(rows) > 1 else 0
        if per_class is not None and k >= len(rows):
            raise ValueError(f"label {y} has {len(rows)} row(s): a dev split of {per_class} per label would leave "
                             "none to train on.")
        dev += rng.sample(rows, k)
    dev_set = set(dev)
    return [i for i in range(len(labels)) if i not in dev_set], sorted(dev)


# ----------------------------------------------------------------------------- linear fits
def standardize(X: torch.Tensor, dim: int = -2) -> tuple[torch.Tensor, torch.Tensor]:
    """``(mu, sigma)`` of features over the items axis ``dim`` (sigma floored at 1e-6)."""
    return X.mean(dim, keepdim=True), X.std(dim, keepdim=True).clamp(min=1e-6)


@dataclass
class LinearFit:
    """``G x P x S`` softmax-regression problems fitted by :func:`fit_linear`: ``G`` L2 strengths,
    ``P`` feature sets (e.g. layers), ``S`` label sets. ``W`` is ``[G, P, D, S, C]``, ``b``
    ``[G, P, S, C]``; ``gradient`` ``[G, P, S]`` the largest gradient entry at the end, ``converged``
    whether it is below the tolerance; ``iterations`` the L-BFGS iterations run for each L2 strength
    (its ``P x S`` problems together)."""

    W: torch.Tensor
    b: torch.Tensor
    l2: torch.Tensor
    gradient: torch.Tensor
    converged: torch.Tensor
    iterations: list
    tolerance: float
    max_iter: int

    def logits(self, Z: torch.Tensor) -> torch.Tensor:
        """``[G, P, N, S, C]`` logits of standardized features ``Z [P, N, D]``."""
        G, P, D, S, C = self.W.shape
        out = Z.to(self.W.dtype)[None] @ self.W.reshape(G, P, D, S * C)  # [G, P, N, S*C]
        return out.unflatten(-1, (S, C)) + self.b[:, :, None]

    def losses(self, Z: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        """``[G, P, S]`` mean cross-entropy of label sets ``Y [S, N]`` (no penalty)."""
        return _mean_ce(self.logits(Z), _labels_sets(Y, Z.shape[1], Z.device))

    def accuracies(self, Z: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        """``[G, P, S]`` accuracy of label sets ``Y [S, N]``."""
        pred = self.logits(Z).argmax(-1)  # [G, P, N, S]
        return (pred == _labels_sets(Y, Z.shape[1], Z.device).t()).double().mean(2)

    def select(self, g) -> "LinearFit":
        """The fit with one L2 strength per ``(P, S)`` problem: ``g`` is ``[P, S]`` indices into ``G``."""
        g = torch.as_tensor(g, dtype=torch.long, device=self.W.device)
        P, S = g.shape
        p = torch.arange(P, device=g.device)[:, None].expand(P, S)
        s = torch.arange(S, device=g.device)[None].expand(P, S)
        W = self.W.permute(1, 3, 0, 2, 4)[p, s, g].permute(0, 2, 1, 3)[None]  # [1, P, D, S, C]
        b = self.b.permute(1, 2, 0, 3)[p, s, g][None]  # [1, P, S, C]
        return LinearFit(W, b, self.l2[g][None], self.gradient[g, p, s][None], self.converged[g, p, s][None],
                         self.iterations, self.tolerance, self.max_iter)


def _labels_sets(Y, n: int, device) -> torch.Tensor:
    Y = torch.as_tensor(Y, dtype=torch.long, device=device)
    Y = Y[None] if Y.ndim == 1 else Y
    if Y.ndim != 2 or Y.shape[1] != n:
        raise ValueError(f"labels must be [N] or [S, N] with N = {n} items, got shape {tuple(Y.shape)}.")
    return Y


def _mean_ce(logits: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """``[..., S]`` mean cross-entropy over the items of logits ``[..., N, S, C]``, labels ``[S, N]``."""
    logp = logits.log_softmax(-1)
    target = Y.t().reshape((1,) * (logits.ndim - 3) + (Y.shape[1], Y.shape[0], 1)).expand(*logits.shape[:-1], 1)
    return -logp.gather(-1, target).squeeze(-1).mean(-2)


def fit_linear(Z: torch.Tensor, Y, num_classes: int, l2=L2_GRID, *, tol: float = GRADIENT_TOLERANCE,
               max_iter: int = MAX_ITERATIONS, dtype=torch.float64) -> LinearFit:
    """Softmax regression fitted to convergence, batched: features ``Z [P, N, D]`` (``P`` feature
    sets of the same ``N`` items, already standardized), labels ``Y [S, N]`` (or ``[N]``), one
    problem per L2 strength ``g`` in ``l2``, feature set ``p`` and label set ``s``, each minimising

    ``mean_n CE(z_pn W_gps + b_gps, y_sn) + l2_g / 2 * ||W_gps||^2``  (the bias is not penalised).

    Full-batch L-BFGS (strong Wolfe line search) from ``W = 0, b = 0`` -- so the fit is the same
    for every seed -- on the sum of all objectives, until every problem's largest gradient entry
    is below ``tol`` or ``max_iter`` iterations have run (:func:`linear_criterion`)."""
    if not isinstance(Z, torch.Tensor) or Z.ndim != 3:
        raise ValueError(f"Z must be a [P, N, D] tensor of standardized features, got {getattr(Z, 'shape', type(Z))}.")
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
        raise ValueError(f"num_classes must be an int >= 2, got {num_classes!r}.")
    Y = _labels_sets(Y, Z.shape[1], Z.device)
    if int(Y.min()) < 0 or int(Y.max()) >= num_classes:
        raise ValueError(f"labels must lie in 0..{num_classes - 1}.")
    lam = torch.as_tensor(l2, dtype=dtype, device=Z.device).reshape(-1)
    if not len(lam) or not bool((lam > 0).all()):
        raise ValueError(f"l2 must hold positive L2 strengths, got {l2!r}.")
    if not tol > 0 or isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"tol must be > 0 and max_iter a positive int, got {tol!r} and {max_iter!r}.")
    G, (P, N, D), S, C = len(lam), Z.shape, Y.shape[0], num_classes
    target = Y.t()[None, :, :, None].expand(P, N, S, 1)
    Ws, bs, grads, iters = [None] * G, [None] * G, [None] * G, [0] * G
    W0 = torch.zeros(P, D, S * C, dtype=dtype, device=Z.device)
    b0 = torch.zeros(P, 1, S * C, dtype=dtype, device=Z.device)
    # single precision first, where it is twice as fast; double precision then finishes from there
    # (single precision alone can stall above the tolerance: its line search cannot resolve the
    # last changes of the objective)
    stages = [torch.float32, dtype] if dtype != torch.float32 else [dtype]
    Zs = {t: Z.detach().to(t) for t in stages}
    # the strongest penalty first, each next one started from the last solution (a continuation path:
    # the same optima, fewer iterations than every strength from zero)
    for g in sorted(range(G), key=lambda k: -float(lam[k])):
        tol_g = strength_tolerance(tol, float(lam[g]))
        for stage in stages:
            W = W0.to(stage).clone().requires_grad_(True)
            b = b0.to(stage).clone().requires_grad_(True)
            Zd, strength = Zs[stage], lam[g].to(stage)

            def objective():
                logp = (Zd @ W + b).unflatten(-1, (S, C)).log_softmax(-1)  # [P, N, S, C]
                ce = -logp.gather(-1, target).squeeze(-1).mean(1)  # [P, S]
                return (ce + 0.5 * strength * W.unflatten(-1, (S, C)).pow(2).sum((1, 3))).sum()

            def largest_gradient():
                gW = W.grad.unflatten(-1, (S, C)).abs().amax((1, 3))  # [P, S]
                gb = b.grad.unflatten(-1, (S, C)).abs().amax((1, 3))
                return torch.maximum(gW, gb)

            iters[g] += minimize_lbfgs([W, b], objective, largest_gradient, tol=tol_g, max_iter=max_iter - iters[g],
                                       restarts=0 if stage != stages[-1] else None)
            W0, b0 = W.detach(), b.detach()
        grads[g] = largest_gradient().detach().to(dtype)
        Ws[g], bs[g] = W0.to(dtype), b0.to(dtype)
    grad = torch.stack(grads)
    tols = torch.tensor([strength_tolerance(tol, float(v)) for v in lam], dtype=grad.dtype, device=grad.device)
    return LinearFit(torch.stack(Ws).unflatten(-1, (S, C)), torch.stack(bs).squeeze(2).unflatten(-1, (S, C)), lam,
                     grad, grad <= tols.reshape(-1, *([1] * (grad.ndim - 1))), iters, tol, max_iter)


def minimize_lbfgs(params, objective, largest_gradient, *, tol: float = GRADIENT_TOLERANCE,
                   max_iter: int = MAX_ITERATIONS, restarts: int | None = None) -> int:
    """Minimise ``objective()`` (a scalar: the sum of independent problems' objectives) over
    ``params`` by full-batch L-BFGS with a strong Wolfe line search, until ``largest_gradient()`` --
    each problem's largest gradient entry, read after a backward pass -- is below ``tol`` for every
    problem, or ``max_iter`` iterations have run. L-BFGS can stop on its own (a tiny change of the
    objective) before that; it then restarts from where it stopped with a fresh curvature history
    (at most ``restarts`` times; ``None``: until the budget is spent). Leaves the gradients of the
    final point in ``.grad``; returns the iterations run."""

    def closure():
        for p in params:
            p.grad = None
        loss = objective()
        loss.backward()
        return loss

    iterations, rounds = 0, 0
    while iterations < max_iter and (restarts is None or rounds <= restarts):
        rounds += 1
        opt = torch.optim.LBFGS(params, lr=1, max_iter=max_iter - iterations, history_size=20,
                                line_search_fn="strong_wolfe", tolerance_grad=tol, tolerance_change=1e-14)
        opt.step(closure)
        ran = int(opt.state[params[0]]["n_iter"])
        iterations += ran
        closure()
        if bool((largest_gradient() <= tol).all()) or ran == 0:
            break
    closure()
    return iterations
