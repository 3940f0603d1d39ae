"""Benchmarks of topos against hand-written numpy, jax and torch: ``python -m benchmarks``."""
