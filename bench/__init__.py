"""Benchmarks: each prints absolute figures and a ratio against a baseline measured in the same run."""
