"""Benchmarks: ``python -m bench.run`` (``make bench``) writes docs/benchmarks.md."""
