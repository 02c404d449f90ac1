"""The paper's experiments, run on our simulator: ``evalstop reproduce`` (spec ``REP``).

- :mod:`~evalstop.experiments.paper.figures`: the figures the paper reports;
- :mod:`~evalstop.experiments.paper.plan`: which simulations each experiment needs;
- :mod:`~evalstop.experiments.paper.runner`: runs them, in a process pool, deterministically
  (or on Ray, :mod:`~evalstop.experiments.paper.ray_backend`);
- :mod:`~evalstop.experiments.paper.results`: seeds aggregated into means and 95% intervals
  (:mod:`~evalstop.experiments.paper.stats`);
- :mod:`~evalstop.experiments.paper.report` and :mod:`~evalstop.experiments.paper.plots`:
  output.
"""
