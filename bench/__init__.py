"""Benchmarks and evaluations: run each with `.venv/bin/python -m bench.<name>`."""
