"""What `gradflows run transport` measures (plain Python: the options are checked without JAX)."""

DIVERGENCES = (
    "kl",
    "reverse_kl",
    "chi2",
    "reverse_chi2",
    "hellinger2",
    "js",
    "jeffreys",
    "triangular",
)
PLANS = ("kl", "chi2", "jeffreys")  # three contrasting f drawn (each converges at 0.01)
FLOWS = ("kl", "chi2")  # the particle flows


def key(*parts) -> str:
    """The name of an array in arrays.npz: `plan__chi2`."""
    return "__".join(str(p) for p in parts)


def tasks(eps_grid) -> list[dict]:
    """One task per (f, ε) cell, the smallest ε first (the longest), then one per flow."""
    cells = [
        {"measure": "cell", "divergence": f, "eps": e}
        for e in sorted(eps_grid)
        for f in DIVERGENCES
    ]
    return cells + [{"measure": "flow", "divergence": f} for f in FLOWS]
