"""Every public name of `flows`, its subpackages and `models` is in `__all__`, which is what the
API reference (mkdocstrings) documents, and every name in `__all__` exists."""

import ast
import importlib
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = [
    "flows",
    "flows.divergences",
    "flows.large_steps",
    "flows.lazy",
    "flows.nonsmooth",
    "flows.ntk",
    "flows.observables",
    "models",
]


def _reexported(package: str) -> list[str]:
    """Names the package's `__init__.py` re-exports as `from .x import name as name`."""
    tree = ast.parse((ROOT / package.replace(".", "/") / "__init__.py").read_text())
    return [
        a.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.level
        for a in node.names
        if a.asname == a.name
    ]


@pytest.mark.parametrize("package", PACKAGES)
def test_all_lists_exactly_the_reexported_names(package):
    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(_reexported(package))
    assert [n for n in module.__all__ if not hasattr(module, n)] == []
