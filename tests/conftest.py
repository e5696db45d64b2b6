import os

# The test run never touches the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
# Fine-tuning runs are cached on disk (helpers.finetuning.compute.cache_dir); the tests and the
# lessons they execute start from an empty cache of their own, so every run is really made.
# With pytest-xdist (`bash course.sh test` runs two workers), each worker gets its own empty
# cache: two processes never write the same cached run at once.
if "COURSE_CACHE" not in os.environ or os.environ.get("COURSE_TEST_OWN_CACHE") == "1":
    import tempfile

    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    os.environ["COURSE_CACHE"] = tempfile.mkdtemp(prefix=f"course-cache-{worker}-")
    os.environ["COURSE_TEST_OWN_CACHE"] = "1"  # inherited by the workers: they make their own too

import pytest  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402

from helpers.classify.compute import extract_features  # noqa: E402
from helpers.common.data import load_intents, load_sentences  # noqa: E402
from helpers.model.loading import BUNDLED_MODEL, load_model  # noqa: E402
from helpers.model.trace import trace_text  # noqa: E402


@pytest.fixture(scope="session")
def loaded():
    """The real bundled checkpoint (all-MiniLM-L6-v2), loaded once per test session."""
    return load_model(BUNDLED_MODEL, verbose=False)


@pytest.fixture(scope="session")
def tokenizer(loaded):
    return loaded.tokenizer


@pytest.fixture(scope="session")
def model(loaded):
    return loaded.model


@pytest.fixture(scope="session")
def sample_trace(tokenizer, model):
    return trace_text(tokenizer, model, "The bank by the river was unbelievably quiet.")


@pytest.fixture(scope="session")
def other_bert_dir(tmp_path_factory, tokenizer):
    """A BERT of another depth, width and head count, saved as a local checkpoint folder.

    Its weights are randomly initialised (no other pretrained BERT is reachable here); it
    exists to prove that nothing in helpers/ or lessons/ assumes the bundled model's sizes.
    """
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=64,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=128,
    )
    folder = tmp_path_factory.mktemp("other_bert")
    BertModel(config).eval().save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def data_traces(tokenizer, model):
    """Four sentences of data/attention_sentences.txt, traced once."""
    return [trace_text(tokenizer, model, s) for s in load_sentences()[:4]]


@pytest.fixture(scope="session")
def intent_data(tokenizer, model):
    """A small intent train/test subset and its features of every layer: ``(train, test, f_train, f_test)``."""
    train, test = load_intents("train").subset(8), load_intents("test").subset(4)
    return train, test, extract_features(tokenizer, model, train.texts, progress=False), \
        extract_features(tokenizer, model, test.texts, progress=False)


@pytest.fixture(scope="session")
def intent_splits():
    """Tiny intent splits for fine-tuning tests: 3 train and 2 test utterances per intent."""
    return load_intents("train").subset(3), load_intents("test").subset(2)


@pytest.fixture
def no_model_calls(model, monkeypatch):
    """Any forward pass of the bundled model during the test fails it (explorer updates must not run it)."""
    def refuse(*args, **kwargs):
        raise AssertionError("the model ran during an explorer update")

    monkeypatch.setattr(model, "forward", refuse)
    yield


@pytest.fixture(autouse=True)
def _close_figures():
    """Every figure a test leaves open fits the website's text column (style.PAGE_WIDTH_IN) as
    the notebook shows it (its text is not scaled down); checked after each test, then the
    figures are closed. With ``COURSE_FIGURE_DIR`` set, each is first saved there as a PNG."""
    yield
    from helpers.common.style import too_wide

    problems, folder = [], os.environ.get("COURSE_FIGURE_DIR")  # set it to look at every figure the tests draw
    for k, num in enumerate(plt.get_fignums()):
        fig = plt.figure(num)
        if folder:
            os.makedirs(folder, exist_ok=True)
            name = os.environ.get("PYTEST_CURRENT_TEST", "figure").split(" ")[0].replace("/", "_").replace("::", "-")
            fig.savefig(os.path.join(folder, f"{name}-{k}.png"), dpi=100, bbox_inches="tight")
        title = fig._suptitle.get_text() if fig._suptitle else " / ".join(a.get_title() for a in fig.axes[:3])
        problems += [f"{title[:60]!r}: {line}" for line in too_wide(fig)]
    plt.close("all")
    assert not problems, "; ".join(problems)


# The test files that run whole lessons (minutes each): their lessons spread over the workers.
LESSON_RUNNERS = ("tests/test_lessons_chinese.py", "tests/test_lessons_other_models.py")


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` (``bash course.sh test``: a test file stays on one worker, so its module
    fixtures load once), except that in :data:`LESSON_RUNNERS` each lesson is a unit of its own
    (05, 11 and 14 one together: ``lesson_params.lesson_group``), so their lessons spread over both
    workers instead of queueing on one for many minutes. (pytest-xdist's own ``xdist_group`` marks
    do nothing under pytest 9.2, which renamed the attribute they set.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    from lesson_params import lesson_group

    class LessonsSpread(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::")[0]
            if path in LESSON_RUNNERS and nodeid.endswith("]"):
                return f"{path}::{lesson_group(nodeid.rsplit('[', 1)[1])}"
            return path

    return LessonsSpread(config, log)
