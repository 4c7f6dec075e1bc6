"""The README's Python examples run (tinygrad-style: documentation that cannot rot)."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_python_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python example"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


def test_quickstart_test_command_is_what_ci_runs():
    ci = (README.parent / ".ci" / "run").read_text()
    command = next(
        line for line in ci.splitlines() if line.startswith("lint-imports && python -m pytest")
    )
    assert command in README.read_text()


def test_quickstart_main_job_is_what_ci_runs():
    ci = (README.parent / ".ci" / "run").read_text().splitlines()
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S)
    main_job = next(b.strip() for b in blocks if b.startswith("workbench "))
    assert main_job in ci


def test_quickstart_uses_python3_for_the_system_python():
    # NOTE: stock Debian and Ubuntu have python3 but no python; .ci/run makes its venv the same way.
    text = README.read_text()
    assert "python3 -m venv .venv" in text
    assert "python -m venv" not in text
    assert "python3 -m venv" in (README.parent / ".ci" / "run").read_text()
