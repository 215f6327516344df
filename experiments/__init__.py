"""Which claim from which paper: one package per seed figure or theorem, and the `gradflows` CLI.

- `experiments.lazy`: `gradflows run lazy` (Chizat, Oyallon & Bach 2019);
- `experiments.balance`: `gradflows run balance` (Du, Hu & Lee 2018; Soudry et al. 2018);
- `experiments.eos`: `gradflows run eos` (Cohen et al. 2021, 2025; Lewkowycz et al. 2020);
- `experiments.portraits`: `gradflows run portrait` and the two-weight portrait library.

Importing this package (or an experiment's package) is cheap: JAX, diffrax and matplotlib are
imported only when an experiment runs or a portrait is drawn.
"""

from ._deferred import deferred_exports

# Public data helpers, imported on first use (PEP 562): `gradflows list` imports this package.
_PUBLIC = {
    "digits_pair": "._data",
    "teacher": "._data",
    "constant_columns": "._data",
    "table": "._tables",
    "Table": "._tables",
    "versions": "._files",
    "write_json": "._files",
    "write_npz": "._files",
}

__getattr__, __dir__ = deferred_exports(__name__, _PUBLIC, globals())
