"""Lessons 04 and 10 (:mod:`helpers.classify`): probes of every layer and layer strategies over seeded few-shot draws.

* :func:`probe_layers` -> :class:`ProbeSet` -- a linear probe per layer, trained by the training
  contract (:func:`~helpers.classify.compute.fit_head`);
* :func:`probe_draws` -> :class:`DrawResults` and :func:`head_predictions` -- each seed its own
  draw, every probe on the same test items;
* :data:`STRATEGIES` -- last layer, the mean of the last ``k`` (:func:`last_k_layers`), a learnt mix
  of every layer (:func:`strategy_features`); :func:`strategy_draws` ->
  :class:`StrategyComparison`; :func:`layer_weights_summary`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from helpers.classify.comparisons import SeededAccuracy, join_names
from helpers.classify.compute import (POOLINGS, Draw, LayerFeatures, _chosen_by_dev, _labels, _record, _step0, accuracy,
                                      correct_per_item, fit_head, predict)
from helpers.common.progress import progress as progress_bar
from helpers.common.stats import rank_layers, verdict
from helpers.common.training import L2_GRID, fit_linear


@dataclass
class ProbeSet:
    """Per layer 0..L, the linear probe the dev split chose (``weight [L+1, H, C]``, ``bias
    [L+1, C]``, on features standardized with ``mu``/``sigma`` ``[L+1, 1, H]``) and its record."""

    mu: torch.Tensor
    sigma: torch.Tensor
    weight: torch.Tensor
    bias: torch.Tensor
    records: list

    @torch.no_grad()
    def predict(self, X: torch.Tensor) -> torch.Tensor:
        """``[L+1, N, H]`` features -> ``[L+1, N]`` predicted class ids."""
        Z = (X.float() - self.mu) / self.sigma
        return (torch.baddbmm(self.bias[:, None], Z, self.weight)).argmax(-1)


def probe_layers(draw: Draw, num_classes: int, pooling: str = "cls", *, l2=L2_GRID, run: str = "probe") -> ProbeSet:
    """One linear probe per layer 0..L on one pooling (``"cls"`` or ``"mean"``), all fitted at once
    by the training contract (:func:`~helpers.common.training.fit_linear`: every layer and L2
    strength one problem of one batched L-BFGS), each layer's L2 strength chosen on its dev loss."""
    if pooling not in POOLINGS:
        raise ValueError(f"pooling {pooling!r} is not valid: choose one of {POOLINGS}.")
    X, Xd = getattr(draw.train, pooling).float(), getattr(draw.dev, pooling).float()  # [L+1, N, H]
    y = _labels(draw.y_train, X.shape[1], X.device)
    y_dev = _labels(draw.y_dev, Xd.shape[1], X.device)
    mu, sigma = X.mean(1, keepdim=True), X.std(1, keepdim=True).clamp(min=1e-6)
    Z, Zd = (X - mu) / sigma, (Xd.to(X.device) - mu) / sigma
    fit = fit_linear(Z, y, num_classes, l2)
    g, dev_loss, dev_acc = _chosen_by_dev(fit, Zd, y_dev)
    chosen = fit.select(g)
    train_acc = chosen.accuracies(Z, y)[0]
    step0 = _step0(draw.y_dev, num_classes)
    records = [_record(f"{run}, layer {l}", fit, int(g[l, 0]), l, 0, dev_loss[l, 0], dev_acc[l, 0], train_acc[l, 0],
                       step0) for l in range(X.shape[0])]
    return ProbeSet(mu, sigma, chosen.W[0, :, :, 0, :].float(), chosen.b[0, :, 0, :].float(), records)


def _check_draws(draws) -> dict:
    if not isinstance(draws, dict) or not draws or not all(isinstance(d, Draw) for d in draws.values()):
        raise ValueError("draws must map each seed to a Draw: the features and labels of the training set drawn "
                         "with that seed and of its dev split.")
    return draws


@dataclass
class DrawResults:
    """Outcomes over draws: ``runs`` (one :class:`SeededAccuracy` per layer or per strategy),
    ``predictions`` (predicted ids, ``[..., n_draws, N_test]``) and every fit's record."""

    runs: list
    predictions: torch.Tensor
    records: list


def probe_draws(draws: dict, test: LayerFeatures, y_test, num_classes: int, pooling: str = "cls", *,
                progress: bool = True, l2=L2_GRID) -> DrawResults:
    """One :class:`SeededAccuracy` per layer 0..L, one run per **few-shot draw** (``draws`` maps a seed
    to its :class:`Draw`): :func:`probe_layers` on each draw. The spread over seeds is then the spread
    over training sets, the variance that matters for a frozen probe. ``predictions`` is
    ``[L+1, n_draws, N_test]`` (for confusions)."""
    draws = _check_draws(draws)
    seeds = tuple(draws)
    yt = _labels(y_test, len(test), test.cls.device)
    preds, records = [], []
    for s in progress_bar(seeds, desc=f"probes ({pooling}), one set per draw", disable=not progress):
        probes = probe_layers(draws[s], num_classes, pooling, l2=l2, run=f"{pooling} probe, draw {s}")
        preds.append(probes.predict(getattr(test, pooling)))
        records += probes.records
    preds = torch.stack(preds, 1)  # [L+1, n_draws, N_test]
    return DrawResults([SeededAccuracy(p == yt, seeds) for p in preds], preds, records)


def head_predictions(draws: dict, test: LayerFeatures, layer: int, pooling: str, num_classes: int, y_test=None, *,
                     progress: bool = True, l2=L2_GRID) -> DrawResults:
    """One :func:`fit_head` per draw on one layer and pooling: ``predictions`` ``[n_draws, N_test]``,
    ``runs`` one :class:`SeededAccuracy` when the test labels ``y_test`` are given (else empty)."""
    draws = _check_draws(draws)
    X_test = test.layer(layer, pooling)
    preds, records = [], []
    for s, d in progress_bar(list(draws.items()), desc="heads, one per draw", disable=not progress):
        head, record = fit_head(d.train.layer(layer, pooling), d.y_train, num_classes, d.dev.layer(layer, pooling),
                                d.y_dev, l2=l2, run=f"{pooling} layer {layer} head, draw {s}")
        preds.append(predict(head, X_test))
        records.append(record)
    preds = torch.stack(preds)
    runs = [] if y_test is None else [SeededAccuracy(preds == _labels(y_test, len(test), preds.device), tuple(draws))]
    return DrawResults(runs, preds, records)


def last_k_layers(num_layers: int, k: int = 4) -> tuple[list[int], str]:
    """Encoder layers for "the last k": all available (and a note) when the model has fewer."""
    if num_layers >= k:
        return list(range(num_layers - k + 1, num_layers + 1)), f"layers {num_layers - k + 1}..{num_layers}"
    return list(range(1, num_layers + 1)), f"this model has only {num_layers} layers: using all of them"


def strategy_features(feats: LayerFeatures, strategy: str) -> torch.Tensor:
    """Features for one named strategy (see :data:`STRATEGIES`)."""
    L = feats.num_layers
    if strategy == "last layer [CLS]":
        return feats.cls[L]
    if strategy == "second-to-last [CLS]":
        return feats.cls[max(L - 1, 0)]
    if strategy == "concat last four [CLS]":
        layers, _ = last_k_layers(L)
        return torch.cat([feats.cls[i] for i in layers], -1)
    if strategy == "weighted sum, all layers [CLS]":
        return feats.cls.transpose(0, 1)  # [N, L+1, H]
    if strategy == "mean pooling, last layer":
        return feats.mean[L]
    raise ValueError(f"unknown strategy {strategy!r}; valid: {STRATEGIES}.")


STRATEGIES = ("last layer [CLS]", "second-to-last [CLS]", "concat last four [CLS]",
              "weighted sum, all layers [CLS]", "mean pooling, last layer")


@dataclass
class StrategyComparison:
    """Every strategy's :class:`SeededAccuracy`, the weighted head's learned layer weights
    ``[n_draws, L+1]`` and every head's :class:`~helpers.common.training.TrainingRecord` (by strategy)."""

    accuracy: dict
    layer_weights: torch.Tensor | None
    records: dict = field(default_factory=dict)


def strategy_draws(draws: dict, test: LayerFeatures, y_test, num_classes: int, strategies=STRATEGIES, *,
                   progress: bool = True, l2=L2_GRID) -> StrategyComparison:
    """Each strategy's head once per draw (``draws`` maps a seed to its :class:`Draw`), fitted by the
    training contract (:func:`fit_head`); every test item's outcome is kept. ``layer_weights`` is
    ``None`` unless the weighted strategy is among them."""
    draws = _check_draws(draws)
    unknown = [name for name in strategies if name not in STRATEGIES]
    if unknown or not strategies:
        raise ValueError(f"unknown strategies {unknown}; valid: {STRATEGIES}.")
    seeds = tuple(draws)
    correct = {name: [] for name in strategies}
    records = {name: [] for name in strategies}
    weights = []
    steps = [(s, name) for s in seeds for name in strategies]
    for seed, name in progress_bar(steps, desc="strategies x draws", disable=not progress):
        weighted = name.startswith("weighted")
        d = draws[seed]
        head, record = fit_head(strategy_features(d.train, name), d.y_train, num_classes,
                                strategy_features(d.dev, name), d.y_dev, weighted=weighted, l2=l2,
                                run=f"{name}, draw {seed}")
        correct[name].append(correct_per_item(head, strategy_features(test, name), y_test))
        records[name].append(record)
        if weighted:
            weights.append(head.layer_weights().detach())
    return StrategyComparison({n: SeededAccuracy(torch.stack(c), seeds) for n, c in correct.items()},
                              torch.stack(weights) if weights else None, records)


def layer_weights_summary(weights) -> str:
    """The learned scalar-mix weights ``[n_seeds, L+1]`` as a small table (per layer: mean and
    min-max over seeds), then the layer with the largest mean and the layers whose weight a paired
    comparison over the seeds does not show lower (:func:`~helpers.common.stats.rank_layers`)."""
    weights = torch.as_tensor(weights, dtype=torch.float64, device="cpu")  # cpu: a float64 table of results
    if weights.ndim != 2 or weights.shape[1] < 2:
        raise ValueError(f"weights must be [n_seeds, L+1] with L >= 1, got shape {tuple(weights.shape)}.")
    mean, low, high = weights.mean(0), weights.min(0).values, weights.max(0).values
    top = int(mean.argmax())
    n_seeds = weights.shape[0]
    lines = [f"learned layer weights over {n_seeds} seed(s) (uniform would be {1 / len(mean):.2f}):",
             f"{'layer':<8}" + "".join(f"{l:>11}" for l in range(len(mean))),
             f"{'mean':<8}" + "".join(f"{m:>11.2f}" for m in mean.tolist()),
             f"{'min-max':<8}" + "".join(f"{f'{lo:.2f}-{hi:.2f}':>11}" for lo, hi in zip(low.tolist(), high.tolist()))]
    verdict = f"largest mean on layer {top} ({mean[top]:.2f})"
    if n_seeds == 1:
        verdict += "; one seed, so nothing to compare it with"
    else:  # paired over the seeds; the top layer is picked by the data, so every pair of layers counts
        ranking = rank_layers(weights.cpu().numpy(), lowest=False, unit="seeds")
        tied = [str(l) for l in ranking.tied if l != top]
        verdict += ("; no other layer's weight is shown different from it" if len(tied) == len(mean) - 1 else
                    f"; not shown lower than it (paired over the {n_seeds} seeds, Bonferroni over the "
                    f"{ranking.family} pairs of layers): " + (join_names(tied) if tied else "no other layer"))
    return "\n".join(lines + [verdict])
