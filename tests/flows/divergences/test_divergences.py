"""The f-divergence registry: normalisation, conjugates against a numerical sup, the
derivatives of f*, the Lambert W and Wright omega functions against SciPy, and Γ_w against a
scalar root-finder (Terjék & González-Sánchez, AISTATS 2022, arXiv 2105.14337)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize as so
import scipy.special as sp

import flows.divergences as D
from flows.divergences._generators import AbstractDivergence

LEGENDRE = [n for n in D.DIVERGENCES if n != "tv"]


def _interior(div, k=41):
    """Points of dom f* where (f*)′ is positive and finite: below f′(∞), above f′(0)."""
    top = min(div.f_prime_inf, 3.0) - 1e-3
    bottom = max(div.f_prime_0, -6.0) + 1e-3
    return np.linspace(bottom, top, k)


def test_registry_lists_nine_names_and_refuses_unknown():
    names = "kl reverse_kl chi2 reverse_chi2 hellinger2 js jeffreys triangular tv"
    assert D.DIVERGENCES == tuple(names.split())
    with pytest.raises(ValueError, match=r"divergence must be one of \('kl', 'reverse_kl'"):
        D.get("kullback")
    with pytest.raises(ValueError, match="divergence='tv' is not of Legendre type"):
        D.get("tv", legendre=True)
    assert D.get(D.get("js")) == D.get("js")


@pytest.mark.parametrize("name", D.DIVERGENCES)
def test_normalised_f1_and_fprime1_zero_and_conjugate_at_zero(name):
    div = D.get(name)
    assert float(div.f(1.0)) == 0.0
    assert float(div.f_conj(0.0)) == pytest.approx(0.0, abs=1e-15)
    if div.legendre:
        assert abs(float(jax.grad(div.f)(1.0))) < 1e-15
        assert float(div.f_conj_grad(0.0)) == pytest.approx(1.0, abs=1e-15)
    assert float(div.f(-0.5)) == np.inf


@pytest.mark.parametrize("name", D.DIVERGENCES)
def test_conjugate_equals_numerical_sup(name):
    """f*(s) = sup_{t ≥ 0} st − f(t), the sup found by a bounded scalar search on t."""
    div = D.get(name)
    fn = lambda t: float(div.f(t))  # noqa: E731
    for s in _interior(div, 13):
        # the maximiser is (f*)′(s) (a point of the subdifferential for tv): search around it
        t0 = float(div.f_conj_grad(s))
        top = 4.0 * t0 + 4.0
        found = so.minimize_scalar(
            lambda t, s=s: fn(t) - s * t,
            bounds=(0.0, top),
            method="bounded",
            options={"xatol": 1e-12},
        )
        sup = max(-found.fun, -fn(0.0), s * top - fn(top))
        assert float(div.f_conj(s)) >= sup - 1e-12 * max(1.0, abs(sup))  # Fenchel–Young
        assert float(div.f_conj(s)) == pytest.approx(sup, rel=1e-8, abs=1e-8), s
        # and Fenchel–Young with equality at the maximiser
        assert float(div.f_conj(s)) == pytest.approx(s * t0 - fn(t0), rel=1e-12, abs=1e-13)


@pytest.mark.parametrize("name", LEGENDRE)
def test_conjugate_derivatives_and_inverse_of_fprime(name):
    div = D.get(name)
    s = jnp.asarray(_interior(div))
    grad = jax.vmap(jax.grad(div.f_conj))(s)
    hess = jax.vmap(jax.grad(div.f_conj_grad))(s)
    np.testing.assert_allclose(div.f_conj_grad(s), grad, rtol=1e-12)
    np.testing.assert_allclose(div.f_conj_hess(s), hess, rtol=1e-11)
    t = div.f_conj_grad(s)
    np.testing.assert_allclose(jax.vmap(jax.grad(div.f))(t), s, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", D.DIVERGENCES)
def test_domain_ends_fprime0_and_fprime_inf(name):
    div = D.get(name)
    fprime = jax.grad(div.f)
    # f′(0⁺) and f′(∞) as limits
    if np.isfinite(div.f_prime_0):
        assert float(fprime(1e-9)) == pytest.approx(div.f_prime_0, abs=1e-7)
        assert float(div.f_conj_grad(div.f_prime_0 - 0.5)) == 0.0  # the hard zero
        assert div.sparse
    else:
        assert float(fprime(1e-12)) < -20 and not div.sparse
    if np.isfinite(div.f_prime_inf):
        assert float(fprime(1e9)) == pytest.approx(div.f_prime_inf, abs=1e-4)
        assert float(div.f_conj(div.f_prime_inf + 0.1)) == np.inf
        assert float(div.f_conj_grad(div.f_prime_inf + 0.1)) == np.inf
    else:
        assert float(fprime(1e9)) > 10


def test_lambertw_matches_scipy_to_1e_14():
    z = np.concatenate([np.linspace(-0.36, 5.0, 401), np.logspace(-300, 300, 601), [0.0]])
    w = np.asarray(D.lambertw(z))
    expected = sp.lambertw(z).real
    np.testing.assert_allclose(w, expected, rtol=1e-14, atol=0)
    # at the branch point W(−1/e) = −1, and below it no real value
    assert float(D.lambertw(-1.0 / np.e)) == -1.0


@pytest.mark.parametrize("z", [-1.0, -0.5, -np.inf, np.array([0.0, -1.0])])
def test_lambertw_refuses_concrete_z_below_the_branch_point_and_is_nan_there_when_traced(z):
    with pytest.raises(ValueError, match="z: W₀ is real only for z ≥ −1/e"):
        D.lambertw(z)
    assert np.isnan(np.asarray(jax.jit(D.lambertw)(z))).any()


@pytest.mark.parametrize("z", ["x", 1j, np.array([1 + 2j]), jnp.array([1 + 2j])])
def test_lambertw_and_wright_omega_refuse_what_is_not_real_numbers_naming_it(z):
    # was "could not convert string to float: 'x'" / "float() argument must be ... complex";
    # a complex array lost its imaginary part: lambertw([1 + 2j]) returned W(1) = [0.567]
    with pytest.raises(TypeError, match=r"^z must be real numbers, got"):
        D.lambertw(z)
    with pytest.raises(TypeError, match=r"^x must be real numbers, got"):
        D.wright_omega(z)


def test_gamma_refuses_float32_as_sinkhorn_does():
    # a float32 h was cast: Γ came back 1.8e-9 (relative) from the float64 value, silently
    h, w = jnp.array([0.1, -0.3, 0.5]), jnp.array([0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match=r"^h holds float32 arrays"):
        D.gamma(h.astype(jnp.float32), w)
    with pytest.raises(ValueError, match=r"^w holds float32 arrays"):
        D.gamma(h, w.astype(jnp.float32))


def test_wright_omega_matches_scipy_to_5e_14_without_overflow():
    # 3.3e-15 measured at most (SciPy's own error near x = −33; below): a 15× margin
    x = np.concatenate([np.linspace(-700.0, 740.0, 1441), np.linspace(-5.0, 5.0, 201)])
    np.testing.assert_allclose(D.wright_omega(x), sp.wrightomega(x).real, rtol=5e-14, atol=0)


def test_wright_omega_matches_scipy_to_5e_14_across_its_regions():
    # the start changes form at −9.25 (eˣ | polynomial), 8 (polynomial | asymptotic series) and
    # 1e18 (ω = x); one FSC step from each: 3.3e-15 measured, at x = −33.2, where it is SciPy's
    # error (below; the series test holds ours there to 4e-15); 1.6e-15 above −20: 5e-14 is a
    # 15× margin. Subnormal ω flushes to 0 (XLA), SciPy's does not
    edges = [-9.25, 8.0, 1e18]
    near = [b * (1.0 + np.linspace(-1e-3, 1e-3, 201)) for b in edges]
    near += [np.nextafter(b, -np.inf) for b in edges] + [np.nextafter(b, np.inf) for b in edges]
    x = np.concatenate(
        [np.linspace(-708.0, 740.0, 2001), np.linspace(-12.0, 40.0, 5201)]
        + [np.geomspace(1.0, 1e300, 601), np.hstack(near)]
    )
    np.testing.assert_allclose(D.wright_omega(x), sp.wrightomega(x).real, rtol=5e-14, atol=0)
    assert float(D.wright_omega(-746.0)) == 0.0 and np.isnan(float(D.wright_omega(np.nan)))


def test_wright_omega_is_its_series_in_e_to_the_x_for_small_omega():
    # ω = y − y² + 3y³/2 − … with y = eˣ: 2.2e-16 measured (the rounding of the reference); SciPy
    # and the three Halley steps before were up to 3.3e-15 off here (log w rounded, |log w| ~ 33)
    x = np.linspace(-700.0, -20.0, 681)
    y = np.exp(x)
    np.testing.assert_allclose(D.wright_omega(x), y * (1.0 - y + 1.5 * y * y), rtol=4e-15, atol=0)


def test_lambertw_and_wright_omega_are_infinite_at_infinity():
    # both were NaN at +∞ (their starts took inf − inf); W′ and ω′ vanish there
    assert float(D.lambertw(np.inf)) == np.inf
    assert float(D.wright_omega(np.inf)) == np.inf
    assert float(D.wright_omega(-np.inf)) == 0.0
    assert float(jax.grad(D.lambertw)(np.inf)) == 0.0


# f*(s) → −f(0) as s → −∞ (the sup of st − f(t) moves to t = 0)
F_AT_0 = {"kl": 1.0, "reverse_kl": np.inf, "chi2": 1.0, "reverse_chi2": np.inf}
F_AT_0 |= {"hellinger2": 1.0, "js": np.log(2.0), "jeffreys": np.inf, "triangular": 1.0}
F_AT_0 |= {"tv": 0.5}


@pytest.mark.parametrize("name", D.DIVERGENCES)
def test_generators_take_their_limits_at_infinity_not_nan(name):
    div = D.get(name)
    assert float(div.f(np.inf)) == np.inf  # NaN (∞ − ∞) for KL, reverse KL, Neyman, JS, ...
    assert float(div.f_conj(-np.inf)) == -F_AT_0[name]  # NaN for Hellinger and Jeffreys
    assert float(div.f_conj_grad(-np.inf)) == 0.0
    np.testing.assert_array_equal(div.f([0.5, 2.0]), div.f(jnp.array([0.5, 2.0])))  # a list


def _random_row(seed, n=40, scale=3.0):
    rng = np.random.default_rng(seed)
    w = rng.random(n)
    return rng.normal(size=n) * scale, w / w.sum()


@pytest.mark.parametrize("name", LEGENDRE)
@pytest.mark.parametrize("scale", [0.3, 3.0, 30.0])
def test_gamma_equals_scalar_root_finder(name, scale):
    div = D.get(name)
    h, w = _random_row(int(scale * 10), scale=scale)
    g = float(D.gamma(h, w, name))
    phi = lambda x: float(jnp.sum(w * div.f_conj_grad(h - x))) - 1.0  # noqa: E731
    lo = max(h.min(), h.max() - div.f_prime_inf)
    root = so.brentq(phi, lo, h.max(), xtol=1e-15, rtol=1e-15)
    assert abs(g - root) <= 1e-14 * max(1.0, abs(root)) * 10


@pytest.mark.parametrize("name", ["reverse_kl", "reverse_chi2", "js", "jeffreys"])
def test_gamma_from_a_warm_start_stops_without_a_confirming_pass(name):
    # from 1e-7 off the root, Newton's steps shrink quadratically: the step after the first
    # is predicted below the tolerance, so two passes over the row give Γ (three before), and
    # it is the root that brentq finds
    from flows.divergences._gamma import newton_gamma

    div = D.get(name)
    h, w = _random_row(300, scale=3.0)
    phi = lambda x: float(jnp.sum(w * div.f_conj_grad(h - x))) - 1.0  # noqa: E731
    lo = max(h.min(), h.max() - div.f_prime_inf)
    root = so.brentq(phi, lo, h.max(), xtol=1e-15, rtol=1e-15)
    gamma, steps = newton_gamma(div, jnp.asarray(h), jnp.asarray(w), jnp.asarray(root + 1e-7))
    assert int(steps) == 2
    assert abs(float(gamma) - root) <= 1e-15 * max(1.0, abs(root)) * 10


@pytest.mark.parametrize("name", LEGENDRE)
def test_gamma_translation_equivariant_and_batched(name):
    h, w = _random_row(1)
    shifts = jnp.asarray([-7.5, 0.0, 2.25, 40.0])
    rows = h[None, :] + shifts[:, None]
    values = D.gamma(rows, w, name)  # (4,): leading axes batched
    np.testing.assert_allclose(values - shifts, values[1], rtol=0, atol=1e-13)


def test_gamma_kl_is_logsumexp():
    h, w = _random_row(2, scale=30.0)
    assert float(D.gamma(h, w, "kl")) == pytest.approx(float(jax.nn.logsumexp(h, b=w)), abs=1e-13)


def test_gamma_chi2_sorted_solution_has_exact_zeros_and_unit_mass():
    h, w = _random_row(3, scale=3.0)
    g = float(D.gamma(h, w, "chi2"))
    mass = np.maximum((h - g) / 2 + 1, 0)
    assert abs(np.sum(w * mass) - 1.0) < 1e-15 * 10
    assert 0 < np.count_nonzero(mass) < len(h)  # sparse: some entries exactly zero


@pytest.mark.parametrize("name", LEGENDRE)
def test_gamma_implicit_derivative_matches_finite_differences(name):
    div = D.get(name)
    h, w = _random_row(4)
    dh, dw = np.random.default_rng(5).normal(size=(2, len(h)))
    dw -= dw.mean()
    g, tangent = jax.jvp(
        lambda a, b: D.gamma(a, b, name), (jnp.asarray(h), jnp.asarray(w)), (dh, dw)
    )
    step = 1e-6
    fd = (
        float(D.gamma(h + step * dh, w + step * dw, name))
        - float(D.gamma(h - step * dh, w - step * dw, name))
    ) / (2 * step)
    assert float(tangent) == pytest.approx(fd, rel=1e-7, abs=1e-8)
    # the formula: ∂Γ/∂h_j = w_j (f*)″(h_j − γ) / Σ_k w_k (f*)″(h_k − γ), summing to 1
    grad = jax.grad(lambda a: D.gamma(a, w, name))(jnp.asarray(h))
    weights = w * div.f_conj_hess(h - g)
    np.testing.assert_allclose(grad, weights / jnp.sum(weights), rtol=1e-12, atol=1e-16)
    assert float(jnp.sum(grad)) == pytest.approx(1.0, abs=1e-14)


def test_gamma_under_jit_and_vmap():
    h, w = _random_row(6)
    rows = jnp.stack([h, 2 * h, h - 1])
    jitted = jax.jit(jax.vmap(lambda r: D.gamma(r, w, "js")))(rows)
    np.testing.assert_allclose(
        jitted, [float(D.gamma(r, w, "js")) for r in rows], rtol=0, atol=1e-14
    )


def test_gamma_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="divergence='tv' is not of Legendre type"):
        D.gamma(jnp.zeros(3), jnp.ones(3) / 3, "tv")
    with pytest.raises(ValueError, match=r"h of shape \(3,\) and w of shape \(4,\)"):
        D.gamma(jnp.zeros(3), jnp.ones(4) / 4)


@pytest.mark.parametrize(
    "w, match",
    [
        ([0.4, 1.0, 0.6], "w must sum to 1"),  # KL gave Γ + log 2, a different number
        ([-0.2, 0.9, 0.3], "finite weights >= 0"),  # the negative entry was dropped
        ([np.nan, 0.5, 0.5], "finite weights >= 0"),  # the NaN entry was dropped
        ([0.0, 0.0, 0.0], "w must sum to 1"),  # -inf (KL, χ²) or NaN (the others)
    ],
)
def test_gamma_refuses_weights_that_are_not_a_probability_vector(w, match):
    h = jnp.array([0.3, -1.0, 2.0])
    for name in ("kl", "reverse_kl", "chi2"):
        with pytest.raises(ValueError, match=match):
            D.gamma(h, jnp.asarray(w), name)


def test_gamma_refuses_nan_h_and_accepts_weights_summing_to_1_within_round_off():
    for bad in (np.nan, np.inf, -np.inf):  # +∞ gave ∞ or NaN, −∞ gave −∞ for Jeffreys
        for name in ("kl", "jeffreys"):
            with pytest.raises(ValueError, match=r"h holds 1 non-finite entries \(NaN or inf\)"):
                D.gamma(jnp.array([bad, 0.0, 1.0]), jnp.ones(3) / 3, name)
    n = 1000
    h = jnp.linspace(-1.0, 1.0, n)
    w = np.full(n, 0.1 / n * 10)  # sums to 1 within round-off, not exactly
    assert abs(float(D.gamma(h, w)) - float(sp.logsumexp(np.asarray(h), b=w))) < 1e-14


@pytest.mark.parametrize("name", LEGENDRE)
def test_paired_methods_equal_the_single_ones(name):
    # f_conj_grad_hess and f_conj_value_grad share work (one ω for Jeffreys, one 1/√(1 − s)
    # for Neyman χ² and triangular): the same numbers as the single methods
    div = D.get(name)
    s = jnp.asarray(np.concatenate([_interior(div), [-np.inf, -40.0]]))
    grad, hess = div.f_conj_grad_hess(s)
    value, grad2 = div.f_conj_value_grad(s)
    np.testing.assert_allclose(grad, div.f_conj_grad(s), rtol=1e-15)
    np.testing.assert_allclose(grad2, div.f_conj_grad(s), rtol=1e-15)
    np.testing.assert_allclose(hess, div.f_conj_hess(s), rtol=1e-15)
    np.testing.assert_allclose(value, div.f_conj(s), rtol=1e-15)
    # and all three at once (the generalised Sinkhorn loop's pass), at the edges of the
    # domain too: f* is finite at s = f′(∞) where its derivatives are not
    edges = jnp.asarray([div.f_prime_inf, np.nextafter(div.f_prime_inf, -np.inf), 2.0, np.inf])
    t = jnp.concatenate([s, jnp.where(jnp.isfinite(edges), edges, 0.5)])
    for got, single in zip(
        div.f_conj_value_grad_hess(t), (div.f_conj(t), div.f_conj_grad(t), div.f_conj_hess(t))
    ):
        np.testing.assert_allclose(got, single, rtol=1e-15)


@pytest.mark.parametrize("name", LEGENDRE)
def test_primal_derivatives_match_autodiff_and_invert_the_conjugate(name):
    """f′ and f″ in closed form (`f_grad_hess`, the primal–dual Newton steps' linearisation)
    against jax.grad of f on t ∈ [1e-3, 1e3]: measured ≤ 5.6e-16 for f′ (relative to
    max(1, |f′|)) and ≤ 3.4e-10 for f″ (the autodiff of Neyman χ²'s (t − 1)²/t cancels at
    t = 1e3); (f*)′(f′(t)) = t within 1.4e-11 relative (f′(1e3) lies 1e-6 below the pole 1
    of Neyman χ²'s (f*)′: condition ~t²) and (f*)″(f′(t)) f″(t) = 1 within 4.3e-11. At
    t = 0, f′ is `f_prime_0`."""
    div = D.get(name)
    t = jnp.asarray(np.geomspace(1e-3, 1e3, 61))
    first, second = div.f_grad_hess(t)
    grad = jax.vmap(jax.grad(div.f))(t)
    np.testing.assert_array_less(np.abs(first - grad), 1e-14 * np.maximum(1.0, np.abs(grad)))
    np.testing.assert_allclose(second, jax.vmap(jax.grad(jax.grad(div.f)))(t), rtol=1e-8)
    np.testing.assert_allclose(div.f_conj_grad(first), t, rtol=1e-9)
    np.testing.assert_allclose(div.f_conj_hess(first) * second, 1.0, rtol=1e-9)
    assert float(div.f_grad_hess(jnp.asarray(0.0))[0]) == div.f_prime_0
    # the base class's default, by autodiff of f, for generators without a closed form
    default = AbstractDivergence.f_grad_hess(div, t)
    np.testing.assert_allclose(default[0], first, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(default[1], second, rtol=1e-8)


def test_kl_conjugate_differentiates_to_exp_below_minus_38():
    # jax.grad of jnp.expm1 is expm1 + 1: 1.7e-4 off at s = −30, 0 below −38 (the f-GAN KL
    # field and its Dirac-GAN period, which divides by it)
    kl = D.get("kl")
    for s in (-30.0, -40.0, -300.0):
        assert float(jax.grad(kl.f_conj)(s)) == float(np.exp(s))
    grad = jax.grad(lambda v: jnp.sum(D.get("js").f_conj(v)))(jnp.array([-50.0]))
    assert abs(float(grad[0]) / float(D.get("js").f_conj_grad(-50.0)) - 1) <= 2e-14  # 1.8e-15
