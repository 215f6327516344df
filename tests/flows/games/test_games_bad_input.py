"""Bad input to flows.games: one clear error naming the argument (issue 39's list)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import models
from flows import games


def _dirac():
    return games.dirac_gan("gan", theta=0.5, psi=0.5)


def test_params0_not_a_pair():
    loss, pair = _dirac()
    for bad in (pair[0], (pair[0],), (pair[0], pair[1], pair[1])):
        with pytest.raises(ValueError, match="params0 must be a pair"):
            games.gda_flow(loss, bad, 1.0)
    with pytest.raises(ValueError, match="params0 must be a pair"):
        games.gradient_descent_ascent(loss, pair[0], 1.0, eta=0.1)


def test_loss_not_scalar():
    _, pair = _dirac()
    with pytest.raises(TypeError, match="^loss: loss must return one float scalar"):
        games.gda_flow(lambda g, d: g.theta * d.psi, pair, 1.0)
    with pytest.raises(TypeError, match=r"^loss\[1\]: loss must return"):
        games.jacobian_eigenvalues((lambda g, d: jnp.sum(g.theta), lambda g, d: d.psi), pair)
    with pytest.raises(TypeError, match="loss must be a function L"):
        games.gda_flow("gan", pair, 1.0)


@pytest.mark.parametrize("eta", [0.0, -0.1])
def test_eta_not_positive(eta):
    loss, pair = _dirac()
    with pytest.raises(ValueError, match="^eta must be finite and > 0"):
        games.gradient_descent_ascent(loss, pair, 1.0, eta=eta)
    with pytest.raises(ValueError, match="^eta must be finite and > 0"):
        games.step_eigenvalues(loss, pair, eta=eta)


def test_unknown_divergence_or_penalty():
    real, latent = games.dirac_data()
    with pytest.raises(ValueError, match="^objective must be one of"):
        games.gan_loss(real, latent, "kullback")
    with pytest.raises(ValueError, match="^penalty must be a flows.games penalty"):
        games.gan_loss(real, latent, "gan", penalty="r1")
    with pytest.raises(ValueError, match="^objective='tv' with tight=True"):
        games.gan_loss(real, latent, "tv", tight=True)


def test_negative_gamma():
    for make in (games.R1, games.R2, games.GradientPenalty):
        with pytest.raises(ValueError, match="^gamma must be >= 0"):
            make(-0.1)
    loss, pair = _dirac()
    with pytest.raises(ValueError, match="^consensus must be >= 0"):
        games.gda_flow(loss, pair, 1.0, consensus=-1.0)
    # its argument is gamma (the message named consensus, gda_flow's argument)
    with pytest.raises(ValueError, match="^gamma must be >= 0"):
        games.consensus_optimization(loss, pair, 1.0, eta=0.1, gamma=-1.0)
    with pytest.raises(ValueError, match="^sigma must be >= 0"):
        games.InstanceNoise(-1.0)


def test_float32_refused():
    loss, _ = _dirac()
    pair = (models.DiracGenerator(jnp.ones(1, jnp.float32)), models.LinearCritic(jnp.ones(1)))
    with pytest.raises(ValueError, match=r"^params0\[0\] \(the generator\) holds float32"):
        games.gda_flow(loss, pair, 1.0)
    with pytest.raises(ValueError, match="^real holds float32 samples"):
        games.gan_loss(np.zeros((1, 1), np.float32), np.zeros((1, 1)))


def test_divergent_simgd_reports_the_step_and_keeps_the_finite_part():
    """WGAN SimGD at η = 10 multiplies r² by 101 per step: it overflows near step 150."""
    loss, pair = games.dirac_gan("wgan", theta=1.0, psi=0.5)
    # the loss ψθ changes sign as the iterates rotate (84° a step): no rise that stays up,
    # so no DivergenceWarning (the rule of flows._divergence); the overflow is the error
    with pytest.raises(FloatingPointError, match=r"^SimGD became non-finite .*step \d+") as e:
        games.gradient_descent_ascent(loss, pair, 5000.0, eta=10.0, ts=np.arange(0, 5001, 10.0))
    partial = e.value.partial
    assert partial is not None and np.all(np.isfinite(partial.params[0].theta))
    assert len(partial.ts) >= 10


def test_divergent_map_warns_naming_the_map_and_its_limit_and_no_edge_warning():
    """L = g² − d² (zero-sum) at η = 1.5: SimGD multiplies g and d by 1 − 2η = −2, so L by 4
    per step: it passes 1e3·L(0) at step 5 (4⁵ − 1 = 1023) and stays, a DivergenceWarning
    at step 105 naming SimGD and the map's limit (the loop of gradient_descent, with the
    map's words); the edge warning at S(0) > 2/η is gradient descent's alone."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        games.gradient_descent_ascent(
            lambda g, d: jnp.sum(g**2) - jnp.sum(d**2), (jnp.ones(1), jnp.full(1, 0.5)),
            150 * 1.5, eta=1.5, ts=1.5 * np.arange(151),
        )  # fmt: skip
    said = [(w.category.__name__, str(w.message)) for w in caught]
    assert [kind for kind, _ in said] == ["DivergenceWarning"]
    assert caught[0].filename == __file__  # the user's call, not flows/games/_maps.py
    message = said[0][1]
    assert message.startswith("SimGD diverges: the loss rose from 0.75 to 768 by step 5 (t=7.5)")
    assert "eta=1.5 is above the stability limit of this map at the current point" in message


def test_gda_flow_warnings_point_at_the_users_call():
    # ZeroGradientWarning and UndefinedObservableWarning pointed into flows/games/_flow.py
    import warnings

    flat = lambda g, d: jnp.sum(g * 0.0) + jnp.sum(d * 0.0)  # noqa: E731
    undefined = {"log": lambda pair: jnp.log(-1.0 - pair[0][0] ** 2)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        games.gda_flow(flat, (jnp.ones(1), jnp.ones(1)), 1.0, observables=undefined)
    names = sorted(w.category.__name__ for w in caught)
    assert names == ["UndefinedObservableWarning", "ZeroGradientWarning"], names
    assert {w.filename for w in caught} == {__file__}


@pytest.mark.parametrize(
    "kwargs, says",
    [({"theta": "a"}, "^theta must be a number or a 1-D array of numbers, got 'a'"),
     ({"psi": None}, "^psi must be a number or a 1-D array of numbers, got None"),
     ({"theta": np.nan}, "^theta must be finite, got nan")],
)  # fmt: skip
def test_the_dirac_gan_start_is_refused_naming_theta_or_psi(kwargs, says):
    # "could not convert string to float: 'a'", "None is not a valid value for jnp.array"
    with pytest.raises(ValueError, match=says):
        games.dirac_gan("gan", **kwargs)


def test_spectra_at_a_non_finite_point_or_of_a_non_finite_loss_raise():
    # jacobian_eigenvalues returned [nan+nanj, nan+nanj]; step_eigenvalues failed in numpy
    # ("Array must not contain infs or NaNs")
    loss, (gen, disc) = _dirac()
    nan_gen = eqx.tree_at(lambda g: g.theta, gen, jnp.array([jnp.nan]))
    with pytest.raises(ValueError, match=r"^params: non-finite values"):
        games.jacobian_eigenvalues(loss, (nan_gen, disc))
    with pytest.raises(ValueError, match=r"^params: non-finite values"):
        games.step_eigenvalues(loss, (nan_gen, disc), eta=0.1)
    nan_loss = lambda g, d: loss(g, d) * jnp.nan  # noqa: E731
    with pytest.raises(FloatingPointError, match=r"^the Jacobian of the game's field at params"):
        games.jacobian_eigenvalues(nan_loss, (gen, disc))
    with pytest.raises(FloatingPointError, match=r"^the Jacobian of the game's field at params"):
        games.step_eigenvalues(nan_loss, (gen, disc), eta=0.1)
    # traced (an observable along a flow), the value is returned, as before
    assert jax.jit(lambda g: games.jacobian_eigenvalues(loss, (g, disc)))(gen).shape == (2,)


def test_players_whose_shapes_do_not_fit_the_data_are_named():
    # were "Incompatible shapes for broadcasting: shapes=[(16,), (16, 2)]" and "dot_general
    # requires contracting dimensions to have the same shape"
    rng = np.random.default_rng(0)
    loss = games.gan_loss(rng.normal(size=(16, 2)), rng.normal(size=(16, 1)), "gan")
    key = jax.random.PRNGKey(0)
    gen = eqx.nn.MLP(1, 2, 4, 1, key=key)
    cases = [
        ((gen, eqx.nn.MLP(2, 2, 4, 1, key=key)), r"the discriminator must return one number"),
        ((eqx.nn.MLP(1, 3, 4, 1, key=key), eqx.nn.MLP(3, "scalar", 4, 1, key=key)),
         r"the generator returns samples of shape \(3,\), the real samples are \(2,\)"),
        ((eqx.nn.MLP(2, 2, 4, 1, key=key), eqx.nn.MLP(2, "scalar", 4, 1, key=key)),
         r"the generator fails on latent samples of shape \(1,\)"),
    ]  # fmt: skip
    for pair, says in cases:
        with pytest.raises(TypeError, match=r"^loss: " + says):
            games.gda_flow(loss, pair, 1.0)
