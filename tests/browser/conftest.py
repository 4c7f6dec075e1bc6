"""JupyterLab in headless Debian Chromium, driven by Playwright's Python API (no browser download).

Fixtures start one JupyterLab server per session on 127.0.0.1 (a free port, a token chosen here,
temporary config/runtime/settings/workspace directories, news and update checks silenced) and
give each test a fresh context (its own cookies, storage and cache: a new profile) in one
headless Chromium launched once per session. Everything skips with a reason when
``/usr/bin/chromium`` or the ``playwright`` package is missing.
"""

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = REPO / "test-artifacts"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(url: str, proc: subprocess.Popen, log: Path, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"JupyterLab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.25)
    pytest.fail(f"JupyterLab not ready after {timeout_s} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="session")
def playwright_api():
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not found (apt-get install -y chromium fonts-liberation)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def jupyterlab(playwright_api, tmp_path_factory):
    """A JupyterLab server rooted at the repository; yields ``(base_url, token)``."""
    tmp = tmp_path_factory.mktemp("jupyterlab")
    settings = tmp / "app-settings"
    settings.mkdir()
    (settings / "overrides.json").write_text(
        json.dumps(
            {
                "@jupyterlab/apputils-extension:notification": {
                    "fetchNews": "false",
                    "checkForUpdates": False,
                },
                # NOTE: never write the executed lesson (with its outputs) back into the repo.
                "@jupyterlab/docmanager-extension:plugin": {"autosave": False},
            }
        )
    )
    token = secrets.token_hex(16)
    port = _free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "IPYTHONDIR": str(tmp / "ipython"),
        "TQDM_DISABLE": "1",
    }
    log = tmp / "jupyterlab.log"
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--allow-root",
        "--ServerApp.open_browser=False",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={REPO}",
        f"--LabApp.app_settings_dir={settings}",
        f"--LabApp.user_settings_dir={tmp / 'user-settings'}",
        f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
    ]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(f"{base}/api/status?token={token}", proc, log)
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(tmp / "runtime", ignore_errors=True)


def _shut_down_kernels(base: str, token: str) -> None:
    """End every session and kernel of the server (a test's lesson kernel stays up otherwise)."""
    headers = {"Authorization": f"token {token}"}

    def call(path: str, method: str = "GET") -> object:
        req = urllib.request.Request(f"{base}{path}", method=method, headers=headers)
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read() or b"null")

    for session in call("/api/sessions"):  # type: ignore[union-attr]
        call(f"/api/sessions/{session['id']}", "DELETE")
    for kernel in call("/api/kernels"):  # type: ignore[union-attr]
        call(f"/api/kernels/{kernel['id']}", "DELETE")


@pytest.fixture(autouse=True)
def _lesson_kernels_shut_down(request):
    """After a test that used the server (its page closed first), its kernels are shut down:
    each lesson's kernel holds ~300 MB, and a session of browser tests would keep ~20."""
    yield
    if "jupyterlab" in request.fixturenames:
        _shut_down_kernels(*request.getfixturevalue("jupyterlab"))


@pytest.fixture(scope="session")
def chromium(playwright_api):
    """One headless Chromium for the session (each test still gets a fresh context)."""
    browser = playwright_api.chromium.launch(
        executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
    )
    try:
        yield browser
    finally:
        browser.close()


def _page(chromium, viewport):
    context = chromium.new_context(viewport=viewport)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.on(
        "console",
        lambda msg: (
            errors.append(f"console.{msg.type}: {msg.text}") if msg.type == "error" else None
        ),
    )
    return context, page, errors


@pytest.fixture
def browser_page(chromium):
    """A page in a fresh context of the session's Chromium; yields ``(page, errors)``.

    ``errors`` collects uncaught page exceptions and console errors as strings.
    """
    context, page, errors = _page(chromium, {"width": 1400, "height": 1000})
    try:
        yield page, errors
    finally:
        context.close()


@pytest.fixture
def laptop_page(chromium):
    """As :func:`browser_page`, at a 1,366 x 768 laptop viewport (the issue-12 width check)."""
    context, page, errors = _page(chromium, {"width": 1366, "height": 768})
    try:
        yield page, errors
    finally:
        context.close()
