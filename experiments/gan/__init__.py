"""GAN training as a game whose flow and spectra are solved exactly (issue 39).

`gradflows run gan` computes, each as a task of the sweep layer (`experiments._sweep`:
`--workers N`, `--scheduler ADDRESS`, `--workers 0` in-process) kept as its part as soon as it
is computed (`--resume DIR` computes only what is missing):

- one Dirac-GAN variant per task (Mescheder, Geiger & Nowozin, ICML 2018): the exact GDA
  orbit from (1, 1) over the vector field, SimGD and AltGD from the same start, and the
  eigenvalues at (0, 0) against their closed forms;
- the R1 root locus against γ;
- one 2-D mixture variant per task (8 Gaussians on a ring, small MLP players, full batch):
  the GDA flow against SimGD, AltGD and the ODE-GAN splitting at matched flow time, with the
  loss, the modes covered, the game Jacobian's leading eigenvalues and ‖discrete − flow‖.

Figures (drawn from the `.npz` files of the run folder): `portraits`, `eigenvalues`,
`r1_locus`, `mixture_samples`, `mixture_eigenvalues`, `mixture_gaps`.
"""

from ._cli import add_arguments as add_arguments

DESCRIPTION = "GAN training as a game: Dirac-GAN orbits and spectra, 2-D mixture flow vs GDA"


def plot(folder: str, fmt: str = "png") -> list[str]:
    """Redraw the figures of a run folder from its `.npz` files; returns the paths written."""
    from ._plots import plot as _plot

    return _plot(folder, fmt)


def run(args) -> int:
    """Compute and draw for parsed `args`."""
    from ._run import run as _run

    return _run(args)
