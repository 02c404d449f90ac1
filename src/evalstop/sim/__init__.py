"""Synthetic worlds and how they are measured: curves, workloads, running them, metrics.

The only layer that may read a job's hidden truth (in :mod:`~evalstop.sim.metrics` and
:mod:`~evalstop.sim.detection`); imports the core and the engine.
"""
