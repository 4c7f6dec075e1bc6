"""The import rule of DESIGN.md is enforced by import-linter (``lint-imports`` in the README's
test command, contracts in pyproject.toml). These tests keep the contracts whole: every package
has a layer, and what import-linter cannot see (CuPy is not installed here) is checked by AST."""

import ast
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "workbench"
CONTRACTS = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"][
    "contracts"
]


def _layered(contract: dict) -> set[str]:
    return {m.strip() for layer in contract["layers"] for m in layer.replace("|", ":").split(":")}


def _packages(root: Path, prefix: str) -> set[str]:
    return {
        f"{prefix}.{p.name.removesuffix('.py')}"
        for p in root.iterdir()
        if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").exists()
    }


def test_every_package_has_a_layer_in_the_pipeline_contract():
    pipeline = next(c for c in CONTRACTS if c["name"].startswith("The pipeline"))
    missing = _packages(ROOT, "workbench") - _layered(pipeline)
    assert not missing, f"add {sorted(missing)} to the pipeline contract (and DESIGN.md)"


def test_every_review_stage_has_a_layer():
    stages = next(c for c in CONTRACTS if c["name"].startswith("The review stages"))
    missing = _packages(ROOT / "review", "workbench.review") - _layered(stages)
    assert not missing, f"review/ holds {sorted(missing)} outside its stages"


def test_the_readme_test_command_runs_lint_imports():
    assert "lint-imports &&" in (REPO / "README.md").read_text()


@pytest.mark.parametrize("path", sorted(ROOT.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_only_execution_imports_cupy(path):
    if path.relative_to(ROOT).parts[0] == "execution":
        return
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
        assert not any(n.split(".")[0] == "cupy" for n in names), f"{path}:{node.lineno}"
