#!/usr/bin/env bash
# A second environment with the versions Colab ships, then every lesson headless in it.
#   ipywidgets 7.7.1 (Colab's front end), transformers 5.15.*, torch 2.13.0 CPU.
# Python: Colab runs 3.13 (COLAB_PYTHON may point at a 3.13 interpreter), but no CPU build of
# torch for cp313 is reachable here (PyPI's cp313 wheel is the CUDA build: it fails to import
# without ~3 GB of nvidia-* wheels; download.pytorch.org is not reachable). So the default is
# Python 3.11 with the local torch==2.13.0+cpu wheel -- the one documented difference from Colab.
# Exit status: non-zero when any lesson fails. Prints one PASS/FAIL line per lesson.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${COLAB_VENV:-.venv-colab}
PY=${COLAB_PYTHON:-/root/.pyenv/versions/3.11.7/bin/python}
[ -x "$PY" ] || PY=python3.11
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg PIP_DISABLE_PIP_VERSION_CHECK=1

t0=$(date +%s)
if [ ! -x "$VENV/bin/python" ]; then "$PY" -m venv "$VENV"; fi
CONSTRAINTS=$(mktemp)
trap 'rm -f "$CONSTRAINTS"' EXIT
cat > "$CONSTRAINTS" <<'PINS'
ipywidgets==7.7.1
transformers==5.15.*
torch==2.13.0
PINS
"$VENV/bin/python" -m pip install -q "torch==2.13.0" -c "$CONSTRAINTS"
"$VENV/bin/python" -m pip install -q -e . nbclient nbformat ipykernel jupytext -c "$CONSTRAINTS"
"$VENV/bin/python" -m ipykernel install --sys-prefix --name python3 >/dev/null
t1=$(date +%s)
"$VENV/bin/python" - <<'PY'
import ipywidgets, platform, torch, transformers
print(f"colab-like env: Python {platform.python_version()}, torch {torch.__version__}, "
      f"transformers {transformers.__version__}, ipywidgets {ipywidgets.__version__}")
assert ipywidgets.__version__ == "7.7.1", ipywidgets.__version__
assert transformers.__version__.startswith("5.15."), transformers.__version__
PY

status=0
"$VENV/bin/python" - <<'PY' || status=$?
import sys, time
from pathlib import Path
import nbformat
from nbclient import NotebookClient

failed = 0
for path in sorted(Path("lessons").glob("[0-9]*.ipynb")):
    nb = nbformat.read(path, as_version=4)
    t = time.perf_counter()
    try:
        NotebookClient(nb, timeout=900, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        print(f"PASS {path.name} ({time.perf_counter() - t:.1f} s)", flush=True)
    except Exception as err:  # noqa: BLE001 - one line per lesson, then the next
        failed += 1
        last = (str(err).strip().splitlines() or [type(err).__name__])[-1][:300]
        print(f"FAIL {path.name} ({time.perf_counter() - t:.1f} s): {type(err).__name__}: {last}", flush=True)
sys.exit(1 if failed else 0)
PY
t2=$(date +%s)
echo "colab-like: install $((t1 - t0)) s, lessons $((t2 - t1)) s"
exit $status
