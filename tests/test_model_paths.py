"""helpers.model.paths: the repository's folders, found from the package, and a clear error for missing data."""

import pytest

from helpers.model.paths import DATA_DIR, LESSONS_DIR, REPO_ROOT, data_file


def test_folders_are_the_repository_s():
    assert (REPO_ROOT / "course.sh").exists() and (REPO_ROOT / "helpers" / "README.md").exists()
    assert DATA_DIR == REPO_ROOT / "data" and any(LESSONS_DIR.glob("00_*.py"))


def test_data_file_names_what_exists():
    assert data_file("polysemy.json").is_file()
    with pytest.raises(FileNotFoundError, match="polysemy.json"):
        data_file("no_such_file.txt")
