"""`gradflows run balance`: balancedness of deep linear networks over long horizons.

Claims checked on two classes of scikit-learn's bundled digits:
- C_k = W_kW_kᵀ − W_{k+1}ᵀW_{k+1} is constant under the gradient flow (Du, Hu & Lee 2018,
  Thm 2.2): the drift stays at solver tolerance to t = 10⁶, at two tolerances;
- gradient descent with step η breaks it by η²(G_kG_kᵀ − G_{k+1}ᵀG_{k+1}) per step, a drift
  linear in η at a fixed horizon;
- with the logistic loss on separable data the layers align, the normalised layers approach
  rank one, the loss falls like 1/t (up to logarithms) and the end-to-end vector turns to the
  hard-margin SVM direction (Soudry et al. 2018; Ji & Telgarsky 2019);
- the squared-loss flow is stiff near its minimum and finishes with the implicit solver;
- the Gauss–Legendre solvers (implicit midpoint, gauss4) keep C_k to round-off at any
  tolerance, where Tsit5 and Kvaerno5 keep it to about rtol (part `conservation`);
- two-layer ReLU, leaky-ReLU and absolute-value nets conserve ‖b_j‖² − a_j² per neuron along
  their exact (Filippov) flows to t = 10⁴, where Tsit5 alone chatters at the kinks and a step
  budget stops it early.

Every flow is a task of `experiments._sweep` (in-process or on Dask), written as its own part.
"""

from ._cli import add_arguments as add_arguments

DESCRIPTION = (
    "deep linear nets on digits: balancedness to t=1e6 (per solver), layer alignment, "
    "max-margin direction, GD drift linear in eta, exact ReLU-net invariants"
)


def run(args) -> int:
    """Run the parts for parsed `args` (JAX and matplotlib are imported only here)."""
    from ._run import run as _run

    return _run(args)


def plot(folder: str) -> list[str]:
    """Redraw the figures of the parts found in a run folder, from its files alone; returns
    the paths written."""
    from ._plots import plot as _plot

    return _plot(folder)
