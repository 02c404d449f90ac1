"""Benchmarks that print figures (never timed unit tests): ``python -m evalstop.bench``."""
