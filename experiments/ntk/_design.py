"""What `gradflows run ntk` measures: activations, width schemes, data sets, the depth grid and
network sizes (plain Python: the options are checked without JAX)."""

# name -> (a, b) of φ(s) = a·s + b·|s|; "mixed" is set from --mixed.
ACTIVATIONS = {"relu": (0.5, 0.5), "abs": (0.0, 1.0)}
SCHEMES = ("constant", "quadratic")
DATASETS = ("digits", "gaussian")
DIM = 64  # digits are 8×8; Gaussian inputs get the same dimension


def hidden_widths(scheme: str, m: int, depth: int) -> tuple[int, ...]:
    """(m, …, m) or m_k = k²·m."""
    return tuple(m * (k * k if scheme == "quadratic" else 1) for k in range(1, depth + 1))


def parameters(widths: tuple[int, ...], d: int = DIM) -> int:
    """Weights of a bias-free MLP with input dimension d, these hidden widths and one output."""
    sizes = (d, *widths, 1)
    return sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))


def depth_grid(max_depth: int) -> list[int]:
    """1, 2, 3, 4, 6, 8, 12, … up to max_depth (included)."""
    grid, k = set(), 0
    while True:
        for c in (1, 1.5):
            value = int(round(c * 2**k))
            if value <= max_depth:
                grid.add(value)
        if 2**k > max_depth:
            break
        k += 1
    grid.add(max_depth)
    return sorted(grid)


def key(*parts: str) -> str:
    """The name of a unit's array in arrays.npz: `errors__digits__relu__constant`."""
    return "__".join(parts)


def tasks(activations, widths, depth: int) -> list[dict]:
    """The tasks of a run (`experiments._sweep`), the largest networks first (so that no big
    task starts last): one per data set, activation, width scheme and base width m (the
    errors of every seed at m), then one per data set and activation (cond(K∞) over depth)."""
    errors = [
        {"measure": "errors", "data": data, "activation": act, "scheme": scheme, "width": m}
        for data in DATASETS
        for act in activations
        for scheme in SCHEMES
        for m in widths
    ]
    errors.sort(key=lambda t: -parameters(hidden_widths(t["scheme"], t["width"], depth)))
    cond = [{"measure": "lambda", "data": data, "activation": act} for data in DATASETS
            for act in activations]  # fmt: skip
    return errors + cond
