"""`checkpoint=` takes a path (str or os.PathLike) and says so naming `checkpoint`; a missing
folder is created, as documented in `gradient_flow`."""

import jax.numpy as jnp
import numpy as np
import pytest

import flows

HALF = lambda w: 0.5 * jnp.sum(w**2)  # noqa: E731  F = ½‖w‖², w(t) = e^{-t} w(0)


@pytest.mark.parametrize("value", [3, 2.5, b"ck.npz", ["ck.npz"]])
def test_a_checkpoint_that_is_not_a_path_is_a_type_error_naming_it(value):
    # 3 used to be taken by os.path.exists as file descriptor 3.
    with pytest.raises(TypeError, match=r"^checkpoint must be the path of an \.npz file \(a str "
                       rf"or os\.PathLike\), got {type(value).__name__} "):  # fmt: skip
        flows.gradient_flow(HALF, jnp.array([1.0, -2.0]), 1.0, checkpoint=value)


@pytest.mark.parametrize("value", ["", "some/folder/"])
def test_an_empty_or_folder_path_is_refused_naming_checkpoint(value):
    with pytest.raises(ValueError, match=r"^checkpoint must be the path of an \.npz file, got"):
        flows.gradient_flow(HALF, jnp.array([1.0, -2.0]), 1.0, checkpoint=value)


def test_a_missing_folder_is_created_and_a_pathlike_is_taken(tmp_path):
    path = tmp_path / "a" / "b" / "ck.npz"
    traj = flows.gradient_flow(HALF, jnp.array([1.0, -2.0]), 1.0, ts=[0.0, 1.0], checkpoint=path)
    assert path.is_file()
    # w(1) = e^{-1} w(0); rtol 1e-10 gives errors ~1e-11 (measured), asserted to 1e-8.
    np.testing.assert_allclose(traj.params[-1], np.exp(-1.0) * np.array([1.0, -2.0]), rtol=1e-8)
