"""Start JupyterLab on a free loopback port and drive it with headless Chromium (Playwright).

Used by tests/test_browser.py. Kept separate so it can be reused from a shell:

    .venv/bin/python -c "from tests.browser_support import *; ..."
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
SCREENSHOTS = Path(os.environ.get("COURSE_SCREENSHOTS", ROOT / "build" / "screenshots"))
# JupyterLab marks an error output with this mime type; stderr (warnings, tqdm) uses
# application/vnd.jupyter.stderr and is *not* an error.
ERROR_OUTPUT = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def jupyter_lab(root_dir: Path = ROOT, timeout: float = 90.0):
    """Yield ``(base_url, token)`` of a JupyterLab server; stop it afterwards."""
    jupyter = Path(sys.executable).with_name("jupyter")
    if not jupyter.exists():
        raise FileNotFoundError(f"{jupyter} not found: install the course with `pip install -e .[dev]`")
    port, token = free_port(), secrets.token_hex(16)
    state = tempfile.TemporaryDirectory(prefix="course-lab-")  # settings + workspaces of this run only
    settings = Path(state.name) / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # No "get notified about Jupyter news?" toast over the screenshots, no update check.
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    log = open(ROOT / "build" / "jupyterlab.log", "w") if (ROOT / "build").is_dir() else subprocess.DEVNULL
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    proc = subprocess.Popen(
        [str(jupyter), "lab", "--no-browser", f"--ServerApp.token={token}", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", "--allow-root", f"--ServerApp.root_dir={root_dir}", "--ServerApp.port_retries=0",
         f"--LabApp.user_settings_dir={Path(state.name) / 'settings'}",
         f"--LabApp.workspaces_dir={Path(state.name) / 'workspaces'}", *_quiet_lab_flags()],
        stdout=log, stderr=subprocess.STDOUT, env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with code {proc.returncode}; see build/jupyterlab.log")
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    json.load(r)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"JupyterLab did not answer /api/status within {timeout:.0f} s")
                time.sleep(0.5)
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        if log is not subprocess.DEVNULL:
            log.close()
        state.cleanup()


def _quiet_lab_flags() -> list[str]:
    """No news popup, no update check: JupyterLab 4 options (Lab 3, used to test the
    ipywidgets 7 front end, has neither and refuses to load with them)."""
    from importlib.metadata import version

    if int(version("jupyterlab").split(".")[0]) < 4:
        return []
    return ["--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]


def chromium_missing_reason() -> str | None:
    if not Path(CHROMIUM).exists() and shutil.which(CHROMIUM) is None:
        return f"{CHROMIUM} not found (Debian: apt-get install chromium; or set COURSE_CHROMIUM)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install playwright)"
    return None


def open_notebook(page, base: str, token: str, rel_path: str) -> None:
    # ?reset: a fresh workspace, so the tabs of earlier lessons do not pile up
    page.goto(f"{base}/lab/tree/{rel_path}?reset&token={token}", wait_until="domcontentloaded")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", state="attached", timeout=60_000)
    # The kernel must be connected before Run All, or the first cells are dropped.
    wait_kernel_idle(page, timeout_s=90)


def kernel_status(page) -> str:
    """'idle', 'busy', ... from the notebook toolbar / status bar."""
    return page.evaluate(
        """() => {
            const el = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator');
            if (el) return el.getAttribute('data-status') || '';
            return '';
        }"""
    )


def wait_kernel_idle(page, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    idle_since = None
    while time.monotonic() < deadline:
        status = kernel_status(page)
        if status == "idle":
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > 1.5:  # stay idle a moment: Run All queues cells
                return
        else:
            idle_since = None
        page.wait_for_timeout(250)
    raise TimeoutError(f"kernel not idle after {timeout_s:.0f} s (last status {kernel_status(page)!r})")


def run_all_cells(page, timeout_s: float) -> None:
    """Menu Run > Run All Cells (the command palette steals no focus this way)."""
    page.keyboard.press("Escape")
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    # Wait until every code cell has an execution count (no '[*]' or '[ ]' prompts left).
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pending = page.evaluate(
            """() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt')]
                  .filter(p => !/\\[\\d+\\]/.test(p.textContent)).length"""
        )
        if pending == 0:
            break
        page.wait_for_timeout(500)
    else:
        raise TimeoutError(f"cells still pending after {timeout_s:.0f} s")
    wait_kernel_idle(page, timeout_s=60)


def error_outputs(page) -> list[str]:
    """Texts of error outputs (a traceback), not of stderr streams."""
    return page.eval_on_selector_all(ERROR_OUTPUT, "els => els.map(e => e.innerText.slice(0, 2000))")


def widget_images_src(page) -> list[str]:
    return page.eval_on_selector_all(".jp-OutputArea-output .widget-image", "els => els.map(e => e.src)")


def wait_for_image_change(page, before: list[str], timeout_ms: int) -> None:
    """Wait until some widget Image shows another picture than in ``before``."""
    page.wait_for_function(
        """before => { const now = [...document.querySelectorAll('.jp-OutputArea-output .widget-image')].map(e => e.src);
                       return now.some((s, i) => s !== before[i]); }""",
        arg=before, timeout=timeout_ms,
    )


def move_first_slider(page) -> tuple[str, str]:
    """Type a new value into the first IntSlider's readout; return (old, new) value.

    The range comes from the slider handle's aria attributes where the front end sets them
    (ipywidgets 8); the ipywidgets 7 (jQuery UI) handle has none, so there one step up is
    tried, then one step down, and the readout tells which one the slider accepted.
    """
    readouts = page.locator(".widget-slider .widget-readout")
    # The first slider whose readout shows an integer (hidden or float sliders are skipped).
    readout = next((readouts.nth(i) for i in range(readouts.count())
                    if readouts.nth(i).text_content().strip().lstrip("-").isdigit()), None)
    if readout is None:
        raise AssertionError("no IntSlider with a visible integer readout")
    readout.scroll_into_view_if_needed()
    old = readout.text_content().strip()
    slider = readout.locator("xpath=ancestor::*[contains(@class,'widget-slider')][1]")
    bounds = slider.evaluate(
        """el => { const h = el.querySelector('[aria-valuemin]');
                   return h ? [h.getAttribute('aria-valuemin'), h.getAttribute('aria-valuemax')] : null; }"""
    )
    if bounds:
        lo, hi = (int(float(b)) for b in bounds)
        candidates = [str(lo if int(old) != lo else min(hi, lo + 1))]
    else:
        candidates = [str(int(old) + 1), str(int(old) - 1)]
    for new in candidates:
        readout.click()
        page.keyboard.press("Control+A")
        page.keyboard.type(new)
        page.keyboard.press("Enter")
        page.wait_for_timeout(300)
        if readout.text_content().strip() == new:  # accepted, not clamped back to the old value
            return old, new
    raise AssertionError(f"the slider at {old} accepted none of {candidates}")


def shutdown_sessions(base: str, token: str) -> None:
    """Stop every kernel the server started, so lessons do not pile up in memory."""
    req = urllib.request.Request(f"{base}/api/sessions?token={token}")
    with urllib.request.urlopen(req, timeout=10) as r:
        sessions = json.load(r)
    for s in sessions:
        urllib.request.urlopen(
            urllib.request.Request(f"{base}/api/sessions/{s['id']}?token={token}", method="DELETE"), timeout=30
        ).close()
