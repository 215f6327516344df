"""Which claim from which paper: one package per seed figure or theorem, and the `gradflows` CLI.

- `experiments.lazy`: `gradflows run lazy` (Chizat, Oyallon & Bach 2019);
- `experiments.balance`: `gradflows run balance` (Du, Hu & Lee 2018; Soudry et al. 2018);
- `experiments.portraits`: `gradflows run portrait` and the two-weight portrait library.

Importing this package (or an experiment's package) is cheap: JAX, diffrax and matplotlib are
imported only when an experiment runs or a portrait is drawn.
"""
