"""The linters and the type checker STYLE.md names, run as tests so CI cannot skip them."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PATHS = ["workbench", "tests", "benchmarks", "scripts"]


def _run(*argv):
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)


@pytest.mark.skipif(
    shutil.which("ruff") is None and not (Path(sys.executable).parent / "ruff").exists(),
    reason="ruff is not installed",
)
def test_ruff_check_and_format():
    ruff = (
        str(Path(sys.executable).parent / "ruff")
        if (Path(sys.executable).parent / "ruff").exists()
        else "ruff"
    )
    lint = _run(ruff, "check", *PATHS)
    assert lint.returncode == 0, lint.stdout[-3000:]
    fmt = _run(ruff, "format", "--check", *PATHS)
    assert fmt.returncode == 0, fmt.stdout[-3000:]


def test_mypy():
    pytest.importorskip("mypy")
    result = _run(sys.executable, "-m", "mypy", "workbench")
    assert result.returncode == 0, result.stdout[-3000:]


def test_pre_commit_is_installed_by_the_test_extra_and_its_config_is_valid():
    import tomllib

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(dep.startswith("pre-commit") for dep in extra["test"])
    pytest.importorskip("pre_commit")
    result = _run(sys.executable, "-m", "pre_commit", "validate-config", ".pre-commit-config.yaml")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
