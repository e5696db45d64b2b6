"""Lesson 15 numbers: a Chinese BERT layer by layer, its 17-intent head, and where characters
become words.

* :func:`load_intents_zh` reads ``data/intents_zh/`` (17 intents) as an
  :class:`~helpers.common.data.IntentSplit`, so lesson 10's heads and intervals apply unchanged;
* :func:`is_cjk_char` is the test BERT's basic tokenizer applies before WordPiece (every character
  in the CJK blocks is cut out as a word of its own), written out from the Unicode blocks;
  :func:`split_cjk` is that pre-tokenisation step by hand;
* :func:`cls_walk` gathers, over many traced sentences, the [CLS] vector's norm per layer, the
  cosine between consecutive layers and the share of [CLS]'s attention on each token class;
* :func:`load_zh_words` reads ``data/zh_words/words.jsonl`` (jieba's words); :func:`boundary_features`
  keeps every CJK character's vector at every layer with its label (does it start a word?), in
  the :class:`~helpers.probes.compute.WordFeatures` form, so lesson 14's probes, control tasks
  (:func:`~helpers.probes.compute.control_labels`: one random label per *character* type) and
  sentence-bootstrap intervals apply unchanged (:func:`boundary_report`);
  :func:`character_lookup_correct` is the non-contextual baseline: each character's most frequent
  label in training.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from helpers.common.data import (CJK_BLOCKS, INTENTS_ZH, INTENTS_ZH_DIR, SPLITS, IntentSplit,  # noqa: F401 - lesson 15's names
                                 is_cjk_char, load_intents_zh, read_intent_csv)
from helpers.common.progress import progress as progress_bar
from helpers.model.paths import DATA_DIR
from helpers.model.trace import check_traces, max_input_tokens, model_device
from helpers.probes.compute import ProbeReport, WordFeatures, control_labels, probe_task, sentence_bootstrap

WORDS_ZH_FILE = DATA_DIR / "zh_words" / "words.jsonl"
BOUNDARY_CLASSES = ("inside a word", "starts a word")

def split_cjk(text: str) -> list[str]:
    """BERT's pre-tokenisation of CJK text by hand: every CJK character becomes a chunk of its own,
    the rest is split on whitespace (punctuation splitting and WordPiece come afterwards)."""
    spaced = "".join(f" {ch} " if is_cjk_char(ch) else ch for ch in text)
    return spaced.split()


# -- [CLS] across layers, over many sentences ---------------------------------------------------

@dataclass
class ClsWalk:
    """Per sentence and layer: ``norms`` ``[N, L+1]`` (‖[CLS]‖), ``cosines`` ``[N, L]`` (cosine of
    [CLS] after layer ``l`` and ``l+1``), ``attention`` ``[N, L, 4]`` (share of [CLS]'s attention,
    mean over heads, on each class of :data:`helpers.attention.compute.TOKEN_CLASSES`) and
    ``uniform`` ``[N, 4]`` (those shares if [CLS] attended evenly)."""

    norms: torch.Tensor
    cosines: torch.Tensor
    attention: torch.Tensor
    uniform: torch.Tensor


def cls_walk(traces) -> ClsWalk:
    """:class:`ClsWalk` of every trace (position 0 is [CLS] in every BERT input)."""
    from helpers.attention.compute import attention_shares, uniform_shares

    traces = check_traces(traces)
    stacks = [torch.stack(t.hidden_states)[:, 0] for t in traces]  # [L+1, H] each
    norms = torch.stack([s.norm(dim=-1) for s in stacks])
    cosines = torch.stack([torch.nn.functional.cosine_similarity(s[:-1], s[1:], dim=-1) for s in stacks])
    attention = torch.stack([attention_shares(t, queries=[0]) for t in traces])
    uniform = torch.stack([uniform_shares(t) for t in traces])
    return ClsWalk(norms, cosines, attention, uniform)


# -- word boundaries --------------------------------------------------------------------------

@dataclass(frozen=True)
class SegmentedSentence:
    """One line of ``data/zh_words/words.jsonl``: a sentence and a segmenter's words."""

    text: str
    words: tuple[str, ...]
    source: str
    segmenter: str

    def word_starts(self) -> set[int]:
        """Character offsets in ``text`` where a word begins."""
        starts, offset = set(), 0
        for word in self.words:
            starts.add(offset)
            offset += len(word)
        return starts

    def __len__(self) -> int:
        return len(self.words)


def load_zh_words(path: Path | str = WORDS_ZH_FILE) -> list[SegmentedSentence]:
    """Every sentence of ``data/zh_words/words.jsonl``, checked (the words must join to the text)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: the segmented sentences live in data/zh_words/.")
    out = []
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            if "".join(row["words"]) != row["text"] or not row["words"]:
                raise ValueError(f"{path.name} line {line_no}: the words do not join to the text.")
            out.append(SegmentedSentence(row["text"], tuple(row["words"]), row["source"], row["segmenter"]))
    if not out:
        raise ValueError(f"{path} holds no sentences.")
    return out


@torch.no_grad()
def boundary_features(tokenizer, model, sentences, *, batch_size: int = 64,
                      progress: bool = True) -> tuple[WordFeatures, torch.Tensor]:
    """``(features, labels)``: the vector at every layer of every token that is exactly one CJK
    character (``features.vectors`` ``[L+1, N, H]``, ``features.words`` the characters,
    ``features.position`` their offset in the sentence) and its label, 1 when a word starts there.

    Tokens that are not one CJK character (punctuation, Latin words, digits, [UNK]) carry no label
    and are left out; so are characters past the model's maximum input length."""
    sentences = list(sentences)
    if not sentences or not all(isinstance(s, SegmentedSentence) for s in sentences):
        raise ValueError("sentences must be a non-empty list of SegmentedSentence (from load_zh_words).")
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("boundary_features needs a fast tokenizer (it reads each token's character offsets).")
    limit = max_input_tokens(tokenizer, model)
    chunks, sent_ids, positions, chars, labels = [], [], [], [], []
    for start in progress_bar(range(0, len(sentences), batch_size), desc="character features", disable=not progress):
        batch = sentences[start:start + batch_size]
        enc = tokenizer([s.text for s in batch], padding=True, truncation=True, max_length=limit,
                        return_offsets_mapping=True, return_tensors="pt")  # cpu: moved with .to below
        offsets = enc.pop("offset_mapping").tolist()
        ids = enc["input_ids"].tolist()
        hidden = torch.stack(model(**enc.to(model_device(model)), output_hidden_states=True,
                                   return_dict=True).hidden_states)  # [L+1, B, T, H]
        rows, cols = [], []
        for b, sentence in enumerate(batch):
            starts = sentence.word_starts()
            for pos, (a, z) in enumerate(offsets[b]):
                if z - a != 1 or ids[b][pos] == tokenizer.unk_token_id or not is_cjk_char(sentence.text[a]):
                    continue
                rows.append(b); cols.append(pos)
                sent_ids.append(start + b); positions.append(a); chars.append(sentence.text[a])
                labels.append(int(a in starts))
        chunks.append(hidden[:, rows, cols])
    vectors = torch.cat(chunks, 1).float()
    device = vectors.device
    features = WordFeatures(vectors, torch.tensor(sent_ids, device=device), torch.tensor(positions, device=device),
                            chars)
    return features, torch.tensor(labels, dtype=torch.long, device=device)


def boundary_report(features: WordFeatures, labels, train_ids, test_ids, *, seeds=(0, 1, 2),
                    progress: bool = True, **train_kw) -> ProbeReport:
    """Lesson 14's probe per layer (:func:`~helpers.probes.compute.probe_task`) for "does this
    character start a word?", with Hewitt & Liang's control task (every character *type* gets one
    random label from the label distribution), split by sentence."""
    labels = torch.as_tensor(labels, device=features.vectors.device)
    if labels.ndim != 1 or len(labels) != len(features):
        raise ValueError(f"labels must be one 0/1 label per character ({len(features)}), got {tuple(labels.shape)}.")
    train = features.of_sentences(train_ids)
    test = features.of_sentences(test_ids)
    if not len(train) or not len(test):
        raise ValueError("train_ids and test_ids must each hold sentences with at least one CJK character.")
    in_train = torch.isin(features.sentence, torch.as_tensor(list(train_ids), device=features.sentence.device))
    in_test = torch.isin(features.sentence, torch.as_tensor(list(test_ids), device=features.sentence.device))
    y_train, y_test = labels[in_train], labels[in_test]
    seeds = list(seeds)
    controls = [control_labels(features.words, labels, len(BOUNDARY_CLASSES), seed=s) for s in seeds]
    report = probe_task(train, y_train, test, y_test, BOUNDARY_CLASSES, seeds=seeds,
                        control_train=torch.stack([c[in_train] for c in controls]),
                        control_test=torch.stack([c[in_test] for c in controls]),
                        progress=progress, desc="boundary probes", **train_kw)
    report.task = "word start"
    return report


def character_lookup_correct(train: WordFeatures, y_train, test: WordFeatures, y_test) -> torch.Tensor:
    """``[n_test]`` 0/1: is the test character's label the one it has most often in training?
    (A character never seen in training gets the most frequent label overall.) The baseline that
    knows each character but no context."""
    y_train = torch.as_tensor(y_train).tolist()  # cpu: labels as a list
    y_test = torch.as_tensor(y_test).tolist()  # cpu: labels as a list
    if len(y_train) != len(train) or len(y_test) != len(test):
        raise ValueError("give one label per training and per test character.")
    counts: dict[str, list[int]] = {}
    for ch, y in zip(train.words, y_train):
        counts.setdefault(ch, [0, 0])[y] += 1
    overall = int(sum(y_train) * 2 > len(y_train))
    guess = [max((0, 1), key=lambda k: (counts[ch][k], k == overall)) if ch in counts else overall
             for ch in test.words]
    return torch.tensor([float(g == y) for g, y in zip(guess, y_test)], dtype=torch.float64)  # cpu: outcomes


def lookup_interval(correct, test: WordFeatures):
    """The lookup baseline's accuracy with the same sentence-bootstrap interval as the probes."""
    correct = torch.as_tensor(correct, dtype=torch.float64).cpu()  # cpu: statistics on results
    return sentence_bootstrap(correct[None, None], test.sentence.cpu())[0]


# -- [CLS] against another sentence's [CLS] -----------------------------------------------------

def cls_cross_sentence(traces) -> dict:
    """The control that matches "[CLS] keeps its direction from layer ``l`` to ``l + 1``": the same
    cosine between sentence ``i``'s [CLS] at layer ``l`` and **another** sentence ``j``'s [CLS] at
    layer ``l + 1``, over every ordered pair ``i != j`` (``"other_next"`` ``[P, L]``), beside
    ``"own"`` (``[P, L]``: sentence ``i``'s own cosine, repeated per pair), ``"other_same"``
    (``[P, L + 1]``: the two sentences' [CLS] at the same layer: how alike [CLS] is across
    sentences at all) and ``"first"``, ``"second"`` (the two sentences of each pair, for
    :func:`~helpers.common.stats.pair_replicates`)."""
    traces = check_traces(traces)
    if len(traces) < 2:
        raise ValueError("the control pairs different sentences: give at least 2 traces.")
    cls = torch.stack([torch.stack(t.hidden_states)[:, 0] for t in traces])  # [N, L+1, H]
    unit = torch.nn.functional.normalize(cls, dim=-1)
    n = len(traces)
    idx = torch.arange(n)  # cpu: pair indices for the bootstrap, moved below where used on vectors
    first, second = [a.ravel() for a in torch.meshgrid(idx, idx, indexing="ij")]
    keep = first != second
    first, second = first[keep], second[keep]
    own = (unit[:, :-1] * unit[:, 1:]).sum(-1)  # [N, L]
    f, s = first.to(unit.device), second.to(unit.device)
    # a layer where [CLS] is one and the same vector in every sentence (the embeddings: same token,
    # position and segment): there "own" and "another's" are the same comparison, summed over all pairs
    same = ((cls - cls[:1]).abs().amax(dim=(0, 2)) < 1e-6).tolist()  # [L+1]
    return {"own": own[f], "other_next": (unit[f, :-1] * unit[s, 1:]).sum(-1),
            "other_same": (unit[f] * unit[s]).sum(-1), "first": first.cpu().numpy(), "second": second.cpu().numpy(),
            "same_vector": same}


def cls_control_verdicts(cross: dict, alpha: float = 0.05) -> list:
    """Per transition ``l -> l + 1``: [CLS]'s own cosine minus another sentence's [CLS] one layer
    later (:func:`cls_cross_sentence`), as a :class:`~helpers.common.stats.Verdict` read off the
    pigeonhole-bootstrap interval over the sentences (every pair weighed by how often both its
    sentences were drawn), Bonferroni over the transitions tested. A transition that starts where
    [CLS] is one and the same vector in every sentence (the embeddings: the same token, position and
    segment) has nothing to test -- summed over every pair, own and another's are the same numbers --
    so it gets ``None``."""
    from helpers.common.stats import bootstrap_size, pair_replicates, replicate_verdicts

    diff = (cross["own"] - cross["other_next"]).double().cpu().numpy()  # cpu: float64 statistics on results
    L = diff.shape[1]
    tested = [l for l in range(L) if not cross["same_vector"][l]]
    out = [None] * L
    if not tested:
        return out
    reps = pair_replicates(diff[:, tested], cross["first"], cross["second"],
                           n_boot=bootstrap_size(len(tested), alpha))
    names = [f"[CLS], {'emb' if l == 0 else l}→{l + 1}" for l in tested]
    for l, v in zip(tested, replicate_verdicts(reps, names, b="another sentence's [CLS]", alpha=alpha)):
        out[l] = v
    return out


# -- word boundaries: stronger baselines ----------------------------------------------------------

def previous_characters(features: WordFeatures, sentences) -> list[str]:
    """For every character of ``features`` (:func:`boundary_features` on ``sentences``), the character
    just before it in its sentence (``"^"`` at the start): the context a bigram lookup reads."""
    sentences = list(sentences)
    return [sentences[int(s)].text[int(p) - 1] if int(p) > 0 else "^"
            for s, p in zip(features.sentence.tolist(), features.position.tolist())]


def words_of_characters(features: WordFeatures, sentences) -> list[str]:
    """For every character of ``features``, the segmenter's word that holds it."""
    sentences = list(sentences)
    spans = []
    for s in sentences:
        out, offset = {}, 0
        for w in s.words:
            for k in range(len(w)):
                out[offset + k] = w
            offset += len(w)
        spans.append(out)
    return [spans[int(s)][int(p)] for s, p in zip(features.sentence.tolist(), features.position.tolist())]


def _majority_lookup(keys_train, y_train, keys_test, fallback) -> list:
    counts: dict = {}
    for k, y in zip(keys_train, y_train):
        counts.setdefault(k, [0, 0])[int(y)] += 1
    return [max((0, 1), key=lambda c: (counts[k][c], c == f)) if k in counts else f
            for k, f in zip(keys_test, fallback)]


def bigram_lookup_correct(train: WordFeatures, train_prev, y_train, test: WordFeatures, test_prev, y_test) -> torch.Tensor:
    """``[n_test]`` 0/1: the label a **(previous character, character)** lookup gives each test
    character -- its most frequent label after that same previous character in training; a pair never
    seen falls back to the character's own most frequent label (:func:`character_lookup_correct`), then
    to the overall majority. It knows one character of context, with no model at all."""
    y_train = torch.as_tensor(y_train).tolist()  # cpu: labels as a list
    y_test = torch.as_tensor(y_test).tolist()  # cpu: labels as a list
    if len(train_prev) != len(train) or len(test_prev) != len(test):
        raise ValueError("give one previous character per training and per test character.")
    overall = int(sum(y_train) * 2 > len(y_train))
    by_char = _majority_lookup(train.words, y_train, test.words, [overall] * len(test))
    guess = _majority_lookup(list(zip(train_prev, train.words)), y_train, list(zip(test_prev, test.words)), by_char)
    return torch.tensor([float(g == y) for g, y in zip(guess, y_test)], dtype=torch.float64)  # cpu: outcomes


def wordpiece_alone(tokenizer, chunk: str) -> list[str]:
    """The tokens of ``chunk`` from WordPiece **alone**: the tokenizer's own normalizer with its
    CJK splitting switched off, BERT's split on spaces and punctuation, then the WordPiece model.
    Run on the chunks of :func:`split_cjk`, it must give the tokenizer's tokens -- and it cannot
    unless the chunks already hold one CJK character each ("今天" comes out as 今, ##天)."""
    import re

    from tokenizers.normalizers import BertNormalizer

    backend = tokenizer.backend_tokenizer
    n = backend.normalizer
    if not isinstance(n, BertNormalizer):
        raise ValueError(f"wordpiece_alone needs a BERT tokenizer (a BertNormalizer), got {type(n).__name__}.")
    plain = BertNormalizer(clean_text=n.clean_text, handle_chinese_chars=False, strip_accents=n.strip_accents,
                           lowercase=n.lowercase)
    return [t.value for w in re.findall(r"\w+|[^\w\s]", plain.normalize_str(chunk)) for t in backend.model.tokenize(w)]


WINDOW = 2  # characters on each side that the window baseline reads
WINDOW_C = (0.01, 0.1, 1.0, 10.0)  # inverse L2 strengths of its logistic regression, chosen on a dev split


def character_windows(features: WordFeatures, sentences, width: int = WINDOW) -> list[dict]:
    """For every character of ``features``, its window of ``width`` characters on each side as
    one-hot features ``{"-2=今": 1, ..., "0=天": 1, ...}`` (``^``/``$`` past the sentence's ends)."""
    sentences = list(sentences)
    out = []
    for s, p in zip(features.sentence.tolist(), features.position.tolist()):
        text = sentences[int(s)].text
        out.append({f"{d}={text[p + d] if 0 <= p + d < len(text) else ('^' if p + d < 0 else '$')}": 1
                    for d in range(-width, width + 1)})
    return out


def window_baseline_correct(train_windows, y_train, train_sentence, test_windows, y_test, *, Cs=WINDOW_C,
                            dev_share: float = 0.2, seed: int = 0) -> tuple[torch.Tensor, dict]:
    """``([n_test] 0/1, record)``: the strongest simple baseline a Chinese NLP researcher would try
    first -- a **character window** (:func:`character_windows`: the character and ``WINDOW`` on each
    side, one-hot) read by a logistic regression, no BERT at all. Its L2 strength is chosen from
    ``Cs`` by accuracy on a dev split of whole training sentences (``dev_share`` of them, drawn with
    ``seed``), then it is refitted on every training character; ``record`` says what was chosen."""
    import numpy as np
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    y_train = np.asarray(torch.as_tensor(y_train).cpu())  # cpu: labels for scikit-learn
    y_test = np.asarray(torch.as_tensor(y_test).cpu())  # cpu: labels for scikit-learn
    groups = np.asarray(torch.as_tensor(train_sentence).cpu())  # cpu: sentence ids
    if len(train_windows) != len(y_train) or len(test_windows) != len(y_test) or len(groups) != len(y_train):
        raise ValueError("give one window, label and sentence per training character, one window and label per test "
                         "character.")
    ids = np.unique(groups)
    dev_ids = np.random.default_rng(seed).choice(ids, size=max(1, int(round(dev_share * ids.size))), replace=False)
    is_dev = np.isin(groups, dev_ids)
    vec = DictVectorizer()
    X, X_test = vec.fit_transform(train_windows), vec.transform(test_windows)

    def fit(C, rows):
        return LogisticRegression(C=C, max_iter=2000).fit(X[rows], y_train[rows])

    dev_acc = {C: float((fit(C, ~is_dev).predict(X[is_dev]) == y_train[is_dev]).mean()) for C in Cs}
    chosen = max(Cs, key=lambda C: (dev_acc[C], -C))  # ties: the stronger penalty
    model = fit(chosen, np.ones(len(y_train), dtype=bool))
    correct = torch.tensor(model.predict(X_test) == y_test, dtype=torch.float64)  # cpu: outcomes
    edge = chosen in (min(Cs), max(Cs))
    return correct, {"C": chosen, "dev accuracy": dev_acc, "dev sentences": int(dev_ids.size),
                     "at the grid's edge": edge}


def unseen_word_mask(test_words, train_sentences) -> torch.Tensor:
    """``[n_test]`` bool: does the test character sit in a word that never occurs in the training
    sentences? Those characters test segmentation, not memorised words."""
    seen = {w for s in train_sentences for w in s.words}
    return torch.tensor([w not in seen for w in test_words], dtype=torch.bool)  # cpu: a selection of results


def probe_vs_lookup(report: ProbeReport, lookup_correct, name: str, mask=None, alpha: float = 0.05) -> list:
    """Per layer, the probe's accuracy (mean of its seeds, per test character) minus a lookup's on the
    **same** characters (``mask``: only some of them), as :class:`~helpers.common.stats.Verdict` s read
    off intervals that resample test sentences, Bonferroni over the ``L + 1`` layers."""
    from helpers.common.stats import bootstrap_size, replicate_verdicts
    from helpers.probes.compute import sentence_replicates

    probe = report.task_correct.double().mean(0).cpu()  # [L+1, N]: cpu: statistics on results
    lookup = torch.as_tensor(lookup_correct, dtype=torch.float64).cpu()  # cpu: statistics on results
    sentence = report.test_sentence.cpu()  # cpu: cluster labels
    if lookup.shape != (probe.shape[1],):
        raise ValueError(f"give one lookup outcome per test character ({probe.shape[1]}), got {tuple(lookup.shape)}.")
    if mask is not None:
        mask = torch.as_tensor(mask, dtype=torch.bool).cpu()  # cpu: a selection of results
        probe, lookup, sentence = probe[:, mask], lookup[mask], sentence[mask]
    k = probe.shape[0]
    reps = sentence_replicates((probe - lookup)[None], sentence, n_boot=bootstrap_size(k, alpha))
    names = [f"probe at {'emb' if l == 0 else f'layer {l}'}" for l in range(k)]
    return replicate_verdicts(reps, names, b=name, alpha=alpha, percent=True)


def segmentation_string(text: str, starts) -> str:
    """``text`` with a ``|`` before every character offset in ``starts`` (except 0): "今天|天气|怎么样"."""
    starts = set(int(s) for s in starts)
    return "".join(("|" if i and i in starts else "") + ch for i, ch in enumerate(text))


def closest_sentence(text: str, sentences, ids) -> int:
    """Of the sentences ``ids``, the one sharing the most adjacent-character pairs with ``text``, then
    the most distinct characters (ties: the shorter, then the first): an example drawn from the data,
    not typed."""
    def pairs(t):
        return {t[i:i + 2] for i in range(len(t) - 1)}

    chars, bigrams = set(text), pairs(text)
    ids = list(ids)
    if not ids:
        raise ValueError("give at least one sentence id.")
    return min(ids, key=lambda i: (-len(bigrams & pairs(sentences[i].text)), -len(chars & set(sentences[i].text)),
                                   len(sentences[i].text), i))


# -- the 17-intent head against a bag of characters ----------------------------------------------

def bag_of_characters_predict(train_texts, train_labels, test_texts, num_classes: int,
                              smoothing: float = 1.0) -> torch.Tensor:
    """Multinomial naive Bayes over **characters** (a bag of characters, order ignored), Laplace
    ``smoothing``, fitted on the training utterances: ``[n_test]`` predicted labels. The baseline
    that asks how much of an intent the characters alone give away."""
    labels = torch.as_tensor(train_labels).tolist()  # cpu: labels as a list
    if len(labels) != len(train_texts):
        raise ValueError("give one label per training text.")
    vocab = sorted({ch for t in train_texts for ch in t})
    index = {ch: i for i, ch in enumerate(vocab)}
    counts = torch.full((num_classes, len(vocab)), float(smoothing), dtype=torch.float64)  # cpu: counting text
    prior = torch.zeros(num_classes, dtype=torch.float64)  # cpu: counting text
    for text, y in zip(train_texts, labels):
        prior[y] += 1
        for ch in text:
            counts[y, index[ch]] += 1
    log_p = (counts / counts.sum(1, keepdim=True)).log()
    log_prior = (prior.clamp_min(1e-12) / prior.sum()).log()
    preds = []
    for text in test_texts:
        score = log_prior.clone()
        for ch in text:
            if ch in index:  # a character never seen in training says nothing
                score += log_p[:, index[ch]]
        preds.append(int(score.argmax()))
    return torch.tensor(preds)  # cpu: predicted labels of a model-free baseline


def near_duplicates(test_texts, train_texts, threshold: float = 0.5) -> list[tuple[int, int, float]]:
    """Test utterances that share at least ``threshold`` of their character pairs (Jaccard index of
    the sets of adjacent-character pairs) with one training utterance: ``[(test index, train index,
    jaccard), ...]``, most similar first -- items a model can get right by near-copying training."""
    def pairs(t):
        return {t[i:i + 2] for i in range(len(t) - 1)}

    train = [pairs(t) for t in train_texts]
    out = []
    for i, t in enumerate(test_texts):
        p = pairs(t)
        if not p:
            continue
        scores = [len(p & q) / len(p | q) for q in train]
        j = max(range(len(train)), key=scores.__getitem__)
        if scores[j] >= threshold:
            out.append((i, j, scores[j]))
    return sorted(out, key=lambda x: -x[2])
