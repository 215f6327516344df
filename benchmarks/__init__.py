"""Speed comparisons of gradflows with what users would otherwise use.

Run `python benchmarks/run.py` (or `python -m benchmarks.run`) from the repository root;
`--quick` for a small, fast pass; `python benchmarks/gpu.py` on a machine with a GPU.
Kept out of the test run (pytest's testpaths is `tests`).
"""
