"""One traced forward pass: run a sentence (or a pair) once, keep everything.

Layer numbering used throughout the course:

* layer ``0`` is the embedding output (``hidden_states[0]``);
* layers ``1 .. L`` are the encoder layers, so ``hidden(l)`` is
  ``hidden_states[l]`` and ``attention(l)`` is ``attentions[l - 1]``.

Every accessor validates its arguments and says what the valid range is.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class WordSpan:
    """A word of the input and the WordPiece tokens it was split into."""

    word: str
    positions: list[int]
    pieces: list[str]

    @property
    def first(self) -> int:
        return self.positions[0]

    def __str__(self) -> str:
        return f"{self.word!r} -> tokens {self.positions} {self.pieces}"


@dataclass
class Trace:
    """Everything one forward pass produced, batch dimension removed."""

    text: str
    text_pair: str | None
    tokens: list[str]
    input_ids: torch.Tensor  # [seq]
    token_type_ids: torch.Tensor  # [seq]
    word_ids: list[int | None]
    sequence_ids: list[int | None]
    hidden_states: tuple[torch.Tensor, ...]  # L+1 tensors [seq, hidden]
    attentions: tuple[torch.Tensor, ...]  # L tensors [heads, seq, seq]
    pooler_output: torch.Tensor | None  # [hidden]
    config: object
    n_truncated: int = 0
    _char_spans: list[tuple[int, int] | None] = field(default_factory=list, repr=False)

    # -- sizes, all read from the config --------------------------------
    @property
    def num_layers(self) -> int:
        return self.config.num_hidden_layers

    @property
    def num_heads(self) -> int:
        return self.config.num_attention_heads

    @property
    def hidden_size(self) -> int:
        return self.config.hidden_size

    @property
    def seq_len(self) -> int:
        return len(self.tokens)

    @property
    def last_hidden_state(self) -> torch.Tensor:
        return self.hidden_states[-1]

    @property
    def device(self) -> torch.device:
        """Where the traced tensors live: the model's device."""
        return self.hidden_states[0].device

    # -- validation -----------------------------------------------------
    def check_layer(self, layer: int, *, allow_embeddings: bool = True) -> int:
        low = 0 if allow_embeddings else 1
        if isinstance(layer, bool) or not isinstance(layer, int) or not low <= layer <= self.num_layers:
            what = "0 (embeddings) to" if allow_embeddings else "1 to"
            raise ValueError(
                f"layer {layer!r} is out of range: this model has {self.num_layers} encoder layers, "
                f"valid layers are {what} {self.num_layers}."
            )
        return layer

    def check_head(self, head: int) -> int:
        if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < self.num_heads:
            raise ValueError(
                f"head {head!r} is out of range: this model has {self.num_heads} heads per layer, "
                f"valid heads are 0 to {self.num_heads - 1}."
            )
        return head

    def check_token(self, token: int) -> int:
        if isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < self.seq_len:
            listing = ", ".join(f"{i}:{t}" for i, t in enumerate(self.tokens))
            raise ValueError(
                f"token position {token!r} is out of range: valid positions are 0 to {self.seq_len - 1} "
                f"({listing})."
            )
        return token

    # -- accessors ------------------------------------------------------
    def hidden(self, layer: int) -> torch.Tensor:
        """Hidden states after ``layer`` (0 = embeddings): ``[seq, hidden]``."""
        return self.hidden_states[self.check_layer(layer)]

    def vector(self, layer: int, token: int) -> torch.Tensor:
        """The ``[hidden]`` vector of one token after ``layer``."""
        return self.hidden(layer)[self.check_token(token)]

    def attention(self, layer: int, head: int | None = None) -> torch.Tensor:
        """Attention probabilities of encoder layer ``layer`` (1..L).

        ``[heads, seq, seq]``, or ``[seq, seq]`` for one ``head``; rows are queries.
        """
        probs = self.attentions[self.check_layer(layer, allow_embeddings=False) - 1]
        return probs if head is None else probs[self.check_head(head)]

    def char_span(self, token: int) -> tuple[int, int] | None:
        """``(start, end)``: where token ``token`` sits in its own text (``text``, or
        ``text_pair`` where ``sequence_ids`` says 1); ``None`` for a special token."""
        spans = self._char_spans
        return spans[self.check_token(token)] if spans else None

    def words(self) -> list[str]:
        """The words of the input as the tokenizer's pre-tokenizer split them."""
        return [span.word for span in self._word_spans()]

    def find_word(self, word: str, occurrence: int = 0) -> WordSpan:
        """Locate ``word`` (case-insensitive) and report all its WordPiece tokens. A word that the
        tokenizer cuts into one-character words -- a Chinese word such as 意思, whose every
        character is a word and a token to BERT -- is found as the run of those characters that
        spells it (a character span, :meth:`_run_spans`)."""
        if not isinstance(word, str) or not word.strip():
            raise ValueError(f"word must be a non-empty string, got {word!r}.")
        matches = [s for s in self._word_spans() if s.word.lower() == word.strip().lower()]
        if not matches:
            matches = self._run_spans(word.strip())
        if not matches:
            raise ValueError(
                f"word {word!r} is not in the input. Its words are: {self.words()}; "
                f"its tokens are: {self.tokens}."
            )
        if not 0 <= occurrence < len(matches):
            raise ValueError(
                f"word {word!r} occurs {len(matches)} time(s); occurrence must be 0 to {len(matches) - 1}."
            )
        return matches[occurrence]

    def _run_spans(self, word: str) -> list[WordSpan]:
        """Every place where ``word`` (no whitespace) is spelled by two or more consecutive words of
        one character each (BERT cuts out every CJK character as a word), in text order."""
        if any(ch.isspace() for ch in word):
            return []
        spans = [s for s in self._word_spans() if len(s.word) == 1]
        found = []
        for seq, source in ((0, self.text), (1, self.text_pair)):
            if not source:
                continue
            words = [s for s in spans if self.sequence_ids[s.first] == seq]
            starts = {self._char_spans[s.first][0]: i for i, s in enumerate(words)}
            lowered, at = source.lower(), source.lower().find(word.lower())
            while at >= 0:
                i, end, run = starts.get(at), at + len(word), []
                while i is not None and i < len(words) and self._char_spans[words[i].positions[-1]][1] <= end:
                    run.append(words[i])
                    i += 1
                if len(run) > 1 and self._char_spans[run[-1].positions[-1]][1] == end:
                    positions = [p for s in run for p in s.positions]
                    found.append(WordSpan(source[at:end], positions, [self.tokens[p] for p in positions]))
                at = lowered.find(word.lower(), at + 1)
        return found

    def _word_spans(self) -> list[WordSpan]:
        spans: dict[tuple[int, int], list[int]] = {}
        for pos, (seq, wid) in enumerate(zip(self.sequence_ids, self.word_ids)):
            if wid is not None:
                spans.setdefault((seq, wid), []).append(pos)
        result = []
        for (seq, _), positions in spans.items():
            source = self.text if seq == 0 else self.text_pair
            first, last = self._char_spans[positions[0]], self._char_spans[positions[-1]]
            word = source[first[0] : last[1]]
            result.append(WordSpan(word, positions, [self.tokens[p] for p in positions]))
        return result


def check_trace(trace) -> Trace:
    """``trace`` itself when it is a :class:`Trace`; a clear error otherwise."""
    if not isinstance(trace, Trace):
        raise TypeError(f"expected a Trace from helpers.model.trace.trace_text, got {type(trace).__name__}.")
    return trace


def check_traces(traces) -> list[Trace]:
    """A non-empty list of traces of one model (a single Trace is wrapped in a list)."""
    traces = list(traces) if not isinstance(traces, Trace) else [traces]
    if not traces:
        raise ValueError("need at least one Trace; got an empty list.")
    for t in traces:
        check_trace(t)
    layers = {t.num_layers for t in traces}
    if len(layers) != 1:
        raise ValueError(f"all traces must come from the same model; got layer counts {sorted(layers)}.")
    return traces


def _check_text(value, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}: {value!r}.")
    if not value.strip():
        raise ValueError(f"{name} is empty: give a sentence with at least one word, e.g. 'The bank by the river.'")
    return value


def model_device(model) -> torch.device:
    """The device ``model``'s weights are on (where its inputs must go)."""
    return next(model.parameters()).device


def synchronize() -> None:
    """Wait until a GPU has finished the work queued so far (CUDA and MPS run asynchronously), so
    that a wall-clock timing covers it. Nothing to wait for on the CPU."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    if torch.backends.mps.is_available():
        torch.mps.synchronize()


def device_of(*values, default=None):
    """The device of the first tensor among ``values``; ``default`` (``None``: the CPU, torch's
    default) when none is a tensor. For results that follow the tensors they were made from."""
    return next((v.device for v in values if isinstance(v, torch.Tensor)), default)


def max_input_tokens(tokenizer, model) -> int:
    """The longest input (special tokens included) this model accepts."""
    limit = model.config.max_position_embeddings
    tok_limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_limit, int) and 0 < tok_limit < limit:
        limit = tok_limit
    return limit


def encode(tokenizer, model, text: str, text_pair: str | None = None):
    """Tokenize with truncation to the model's maximum, warning when tokens are dropped.

    Returns ``(encoding, n_dropped)``, its tensors on the model's device.
    """
    _check_text(text, "text")
    if text_pair is not None:
        _check_text(text_pair, "text_pair")
    limit = max_input_tokens(tokenizer, model)
    full = tokenizer(text, text_pair, add_special_tokens=True, truncation=False, verbose=False)
    n_dropped = max(0, len(full["input_ids"]) - limit)
    if n_dropped:
        warnings.warn(
            f"The input has {len(full['input_ids'])} tokens but this model accepts at most {limit}: "
            f"truncated, {n_dropped} token(s) dropped from the end.",
            UserWarning,
            stacklevel=3,
        )
    enc = tokenizer(
        text,
        text_pair,
        truncation=True,
        max_length=limit,
        return_tensors="pt",
        return_offsets_mapping=True,
    ).to(model_device(model))
    return enc, n_dropped


def trace_text(tokenizer, model, text: str, text_pair: str | None = None) -> Trace:
    """Run ``text`` (and optionally ``text_pair``) through ``model`` once and keep everything."""
    enc, n_dropped = encode(tokenizer, model, text, text_pair)
    offsets = enc.pop("offset_mapping")[0].tolist()
    with torch.no_grad():
        outputs = model(**enc, output_hidden_states=True, output_attentions=True, return_dict=True)
    if not outputs.attentions:
        raise RuntimeError(
            "The model returned no attention weights: load it with attn_implementation='eager' "
            "(helpers.model.loading.load_model does)."
        )
    ids = enc["input_ids"][0]
    token_type = enc.get("token_type_ids", torch.zeros_like(enc["input_ids"]))[0]
    spans = [None if s == e == 0 else (s, e) for s, e in offsets]
    pooled = outputs.pooler_output
    return Trace(
        text=text,
        text_pair=text_pair,
        tokens=tokenizer.convert_ids_to_tokens(ids.tolist()),
        input_ids=ids,
        token_type_ids=token_type,
        word_ids=enc.word_ids(0),
        sequence_ids=enc.sequence_ids(0),
        hidden_states=tuple(h[0] for h in outputs.hidden_states),
        attentions=tuple(a[0] for a in outputs.attentions),
        pooler_output=None if pooled is None else pooled[0],
        config=model.config,
        n_truncated=n_dropped,
        _char_spans=spans,
    )
