"""Every docstring example in the library runs (the STYLE.md doctest rule)."""

import doctest
import importlib
import pkgutil

import pytest

import workbench

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(workbench.__path__, "workbench.")
    if not m.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
