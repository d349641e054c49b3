"""Benchmarks: runnerkit measured against raw Triton and BentoML's Triton runner (see compare.py)."""
