"""`digits_pair` names the size it refuses (it used to say "n_train + n_test must be at most
357" for n_train = 0, which is at most 357), and splits the bundled digits as asked."""

import numpy as np
import pytest

from experiments import digits_pair


@pytest.mark.parametrize(
    "n_train, n_test, message",
    [
        (0, 0, "n_train must be an integer >= 2, got 0"),
        (1.5, 0, "n_train must be an integer >= 2, got 1.5"),
        (10, -1, "n_test must be an integer >= 0, got -1"),
        (300, 100, "n_train + n_test must be at most 357 for digits 3 and 8 (n_train >= 2), "),
    ],
)
def test_bad_sizes_are_refused_naming_them(n_train, n_test, message):
    with pytest.raises(ValueError) as info:
        digits_pair(n_train=n_train, n_test=n_test)
    assert str(info.value).startswith(message)


def test_the_split_has_the_sizes_asked_and_labels_pm1():
    X, y, X_test, y_test = digits_pair(n_train=np.int64(20), n_test=7)
    assert X.shape == (20, 64) and X_test.shape == (7, 64) and y_test.shape == (7,)
    assert set(np.unique(y)) <= {-1.0, 1.0}
