"""Public names imported on first use (PEP 562), so that importing a package stays cheap:
`gradflows list` imports every experiment's package, but JAX, diffrax and matplotlib only
when a name that needs them is used."""

import importlib


def deferred_exports(package: str, table: dict, namespace: dict):
    """`(__getattr__, __dir__)` for the package `package` (its `__name__`): each name in
    `table` is imported from the module `table[name]` (relative to `package`) when first
    asked for; `__dir__` lists them with the package's own `namespace` (its `globals()`)."""

    def __getattr__(name: str):
        if name in table:
            return getattr(importlib.import_module(table[name], package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted([*namespace, *table])

    return __getattr__, __dir__
