"""`gradflows run eos`: gradient descent at large steps against its flows.

Cohen, Kaur, Li, Kolter & Talwalkar 2021 ("Gradient descent on neural networks typically
occurs at the edge of stability"): under full-batch GD with step η the sharpness
S = λ_max(∇²L) rises (progressive sharpening) until it reaches 2/η, then hovers there while
the loss keeps falling, non-monotonically. For each η, GD on an MLP (by default a swish
MLP 8 → 16 → 16 → 1 on 128 random points, the example of Cohen et al. 2025's JAX code;
`--data digits`: scikit-learn's bundled digits, MSE on one-hot targets) is compared, on the flow
time axis t = kη, with the gradient flow, the modified flow of order 1 (Barrett & Dherin
2021) and the central flow (Cohen, Damian, Talwalkar, Kolter & Lee 2025) with its predicted
time-averaged loss; along GD, cos(Δw_t, w_t − w_0). A catapult panel runs GD on the uv model
over ηλ0 in (0, 4.5] (Lewkowycz, Bahri, Dyer, Sohl-Dickstein & Gur-Ari 2020).

Each η, and the catapult panel, is a task of the sweep layer (`experiments._sweep`), in this
process (`--workers 0`) or on Dask workers; the run folder holds `config.json`, one part per
finished task (`part-<key>.json`/`.npz`, written atomically: an interrupted run keeps them,
`--resume DIR` computes only the missing ones), then `results.json` and the figures
(`experiments.eos.plot`): `eta-<η>.png` per η, `update_cosine.png` and `catapult.png`.
"""

from ._cli import add_arguments as add_arguments

DESCRIPTION = (
    "GD at large steps vs gradient, modified and central flows: sharpness at 2/eta, "
    "catapult on the uv model (Cohen et al. 2021, 2025; Lewkowycz et al. 2020)"
)


def run(args) -> int:
    """Run the sweep for parsed `args` (JAX and matplotlib are imported only here)."""
    from ._run import run as _run

    return _run(args)


def compare(loss, params0, **kwargs):
    """One η of the run on your own loss and parameters: see `experiments.eos._compare.compare`."""
    from ._compare import compare as _compare

    return _compare(loss, params0, **kwargs)


def plot(folder: str) -> list[str]:
    """Redraw the figures from a run folder's files alone; returns the paths written."""
    from ._plots import plot as _plot

    return _plot(folder)
