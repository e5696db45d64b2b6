#!/usr/bin/env bash
# One entry point for a fresh machine:
#   bash course.sh lab    set up, then open JupyterLab on lessons/
#   bash course.sh test   set up, then run the whole test suite (what CI runs)
#   bash course.sh sync   regenerate every lessons/*.ipynb from its py:percent source
set -euo pipefail
cd "$(dirname "$0")"
VENV=${COURSE_VENV:-.venv}
PY=${COURSE_PYTHON:-python3}

setup() {
    if [ ! -x "$VENV/bin/python" ]; then
        "$PY" -m venv "$VENV"
    fi
    "$VENV/bin/python" -m pip install -q --upgrade pip
    # The CPU build of torch; an unpinned torch would pull a multi-GB CUDA build.
    "$VENV/bin/python" -m pip install -q "torch==${COURSE_TORCH:-2.13.0}"
    "$VENV/bin/python" -m pip install -q -e ".[dev]"
}

case "${1:-}" in
lab)
    setup
    exec "$VENV/bin/jupyter" lab lessons/
    ;;
test)
    setup
    export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
    "$VENV/bin/python" -m ipykernel install --sys-prefix --name python3 >/dev/null
    "$VENV/bin/python" tests/nbval_prepare.py build/nbval
    shift
    exec "$VENV/bin/python" -m pytest tests build/nbval \
        --nbval-lax --nbval-current-env --nbval-sanitize-with tests/sanitize.cfg "$@"
    ;;
sync)
    [ -x "$VENV/bin/jupytext" ] || setup
    "$VENV/bin/jupytext" --to ipynb lessons/[0-9]*.py
    ;;
*)
    echo "usage: bash course.sh {lab|test|sync}" >&2
    exit 2
    ;;
esac
