"""Solver internals: the diffrax solvers gradflows adds, the registry of names, the
stiffness tests of "auto"."""
