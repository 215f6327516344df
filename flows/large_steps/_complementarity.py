"""The semidefinite complementarity problem of the central flow with k eigenvalues at the
edge, as a small convex QP over the cone of positive semidefinite k×k matrices, solved by
Clarabel (an interior-point conic solver).

With J_ij = ∇³L[u_i, u_j] (the gradient of the entry u_iᵀHu_j of the tracked block of H) and
g = ∇L, the central flow moves by w' = −[g + ½ Σ_ij X_ij J_ij] with X ⪰ 0 solving

    X ⪰ 0,  Z = A + B[X] ⪰ 0,  ⟨X, Z⟩ = 0,   A_ij = ⟨J_ij, g⟩,  B[X]_ij = ½ Σ_kl ⟨J_ij, J_kl⟩ X_kl,

(Z is minus the rate of the tracked block along w'). B is a Gram operator (⪰ 0), so these are
the optimality conditions of the convex QP min_{X ⪰ 0} ⟨A, X⟩ + ½⟨X, B[X]⟩, equivalently of
min_{X ⪰ 0} ‖g + ½ Σ X_ij J_ij‖²: w' is the shortest velocity that keeps the block ⪯ 2/η.
For k = 1 it is X = max(0, −A/B).

Matrices are held as svec vectors: the upper triangle column by column, (0,0), (0,1), (1,1),
(0,2), …, off-diagonal entries times √2, so that ⟨X, Y⟩ = svec(X)·svec(Y) (Clarabel's
`PSDTriangleConeT` order); the leading m×m block is then the first m(m+1)/2 entries.
"""

import numpy as np

#: Largest complementarity residual accepted (relative; see `residual`).
RESIDUAL_TOL = 1e-6


class ComplementarityError(FloatingPointError):
    """The complementarity problem of the central flow was not solved to `RESIDUAL_TOL`.

    **Attributes:** `t` the flow time, `residual` the relative residual reached (inf when the
    solver returned no solution)."""

    def __init__(self, message: str, t: float, residual: float):
        super().__init__(message)
        self.t, self.residual = t, residual


def pairs(k: int) -> list[tuple[int, int]]:
    """The (i, j), i ≤ j, of a k×k symmetric matrix in svec order."""
    return [(i, j) for j in range(k) for i in range(j + 1)]


def svec_scale(k: int) -> np.ndarray:
    """(k(k+1)/2,): 1 on the diagonal, √2 off it."""
    return np.array([1.0 if i == j else np.sqrt(2.0) for i, j in pairs(k)])


def smat(x) -> np.ndarray:
    """The symmetric k×k matrix of the svec vector `x` (k(k+1)/2,)."""
    x = np.asarray(x, dtype=np.float64)
    k = int(round((np.sqrt(8 * len(x) + 1) - 1) / 2))
    X = np.zeros((k, k))
    for (i, j), v, s in zip(pairs(k), x, svec_scale(k)):
        X[i, j] = X[j, i] = v / s
    return X


def residual(P, q, x, g_norm: float) -> float:
    """The relative residual of x as a solution: the largest of λ_min(X)⁻ / c,
    λ_min(Z)⁻ / s and |⟨X, Z⟩| / (c s), with Z = smat(Px + q) and the scales of X,
    c = max(‖X‖, ‖g‖/√(2‖P‖)) (the X that moves w' by ‖g‖), and of Z, s = ‖q‖ + ‖P‖c."""
    P, q, x = (np.asarray(a, dtype=np.float64) for a in (P, q, x))
    X, Z = smat(x), smat(P @ x + q)
    norm_p = max(np.linalg.norm(P, 2), 1e-300)
    c = max(np.linalg.norm(X), g_norm / np.sqrt(2 * norm_p), 1e-300)
    s = max(np.linalg.norm(q) + norm_p * c, 1e-300)
    return float(
        max(
            max(0.0, -np.linalg.eigvalsh(X)[0]) / c,
            max(0.0, -np.linalg.eigvalsh(Z)[0]) / s,
            abs(np.sum(X * Z)) / (c * s),
        )
    )


def solve_qp(P, q, g_norm: float) -> tuple[np.ndarray, float]:
    """`(x, residual)`: svec(X) minimising ½xᵀPx + qᵀx over X ⪰ 0 (P ⪰ 0 of size
    m(m+1)/2, q = svec(A)), by Clarabel, and its residual (see `residual`; `g_norm` = ‖∇L‖
    sets the scale of X). Solved for y = x/c, c = ‖g‖/√(2‖P‖) (the X that moves w' by ‖g‖),
    with P and q scaled so that both terms are of order 1."""
    import clarabel
    import scipy.sparse as sp

    P, q = np.asarray(P, dtype=np.float64), np.asarray(q, dtype=np.float64)
    n = len(q)
    k = int(round((np.sqrt(8 * n + 1) - 1) / 2))
    norm_p = max(np.linalg.norm(P, 2), 1e-300)
    c = max(g_norm / np.sqrt(2 * norm_p), 1e-300)
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = 1e-12
    settings.tol_feas = settings.tol_ktratio = 1e-12
    solver = clarabel.DefaultSolver(
        sp.csc_matrix(np.triu((P + P.T) / (2 * norm_p))),
        q / (c * norm_p),
        sp.csc_matrix(-np.eye(n)),
        np.zeros(n),
        [clarabel.PSDTriangleConeT(k)],
        settings,
    )
    sol = solver.solve()
    x = c * np.asarray(sol.x, dtype=np.float64)
    if not np.all(np.isfinite(x)) or len(x) != n:
        return np.zeros(n), float("inf")
    best = (residual(P, q, x, g_norm), x)
    for face in faces(P, q, x):
        best = min(best, (residual(P, q, face, g_norm), face), key=lambda b: b[0])
    return best[1], best[0]


def faces(P, q, x) -> list[np.ndarray]:
    """The minimisers on the faces of the PSD cone that the interior-point solution x points
    to: for r = 0, …, k, X = V Y Vᵀ over the eigenvectors V of smat(x) with the r largest
    eigenvalues, Y symmetric free (a least-squares solve). Exact where the face is the
    whole cone (r = k, X = −P⁺q) or {0}. An interior-point solution is accurate to about
    the square root of its tolerance where X or Z is nearly rank-deficient, too coarse for
    the adaptive solver around the field; `solve_qp` keeps the candidate of least residual."""
    X = smat(x)
    k = len(X)
    _, V = np.linalg.eigh(X)
    scale = svec_scale(k)
    out = [np.zeros_like(x)]
    for r in range(1, k + 1):
        Vr = V[:, k - r :]
        # columns: svec(Vr E Vrᵀ) for the svec basis E of r×r symmetric matrices
        M = np.stack([_svec(Vr @ smat(e) @ Vr.T, scale) for e in np.eye(r * (r + 1) // 2)], 1)
        y = np.linalg.lstsq(M.T @ P @ M, -(M.T @ q), rcond=None)[0]
        out.append(M @ y)
    return out


def _svec(X, scale) -> np.ndarray:
    return np.array([X[i, j] for i, j in pairs(len(X))]) * scale
