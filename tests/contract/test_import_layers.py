"""The import rule of DESIGN.md: imports only point up the pipeline, and heavy or optional
libraries stay in the one package allowed to use them."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "workbench"

# The pipeline, top to bottom; a package may import packages on its own row or above it.
LAYERS = [
    {"errors", "_files", "_format", "_warn", "ir", "hw", "models", "options"},
    {"evidence"},  # measured runs in: input like models/, but it may import only ONLY_IMPORTS
    {"lowering"},
    {"scheduling"},
    {"cost"},
    {"mapper", "__init__"},  # the package's public face re-exports up to the mapper
    {"execution"},
    {"tuning"},
    {"serving", "platform", "fidelity"},
    {"review"},
    {"report", "exercises"},
    {"ui"},
    {"cli", "_cli", "__main__"},
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}
# Packages that may import only these workbench packages (DESIGN.md: evidence/ sits low).
ONLY_IMPORTS = {"evidence": {"evidence", "errors", "_warn", "ir", "hw"}}
# Third-party modules allowed only in some packages.
RESTRICTED = {
    "ipywidgets": {"ui"},
    "IPython": {"ui"},
    "altair": {"report", "ui"},
    "vl_convert": {"report"},
    "cupy": {"execution"},
    "dask": {"platform"},
    "distributed": {"platform"},
}


def _package(path: Path) -> str:
    rel = path.relative_to(ROOT)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module


MODULES = sorted(p for p in ROOT.rglob("*.py"))


def test_every_package_has_a_layer():
    missing = {_package(p) for p in MODULES} - set(RANK)
    assert not missing, f"add {missing} to LAYERS in this test (and to DESIGN.md's pipeline)"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_up_the_pipeline(path):
    pkg = _package(path)
    for lineno, name in _imports(path):
        top = name.split(".")[0]
        if top == "workbench":
            parts = name.split(".")
            if len(parts) == 1:
                continue
            target = parts[1]
            assert target in ONLY_IMPORTS.get(pkg, {target}), (
                f"{path.relative_to(ROOT)}:{lineno} imports {name}: {pkg} may import only "
                f"{sorted(ONLY_IMPORTS[pkg])}"
            )
            assert RANK.get(target, 0) <= RANK[pkg], (
                f"{path.relative_to(ROOT)}:{lineno} imports {name}: {pkg} may not import "
                f"{target} (it sits below it in the pipeline)"
            )
        elif top in RESTRICTED:
            assert pkg in RESTRICTED[top], (
                f"{path.relative_to(ROOT)}:{lineno} imports {top}, allowed only in "
                f"{sorted(RESTRICTED[top])}"
            )
