"""The paper's experiments, run on our simulator: ``evalstop reproduce``.

- :mod:`~evalstop.experiments.paper`: the figures the paper reports;
- :mod:`~evalstop.experiments.plan`: which simulations each experiment needs;
- :mod:`~evalstop.experiments.runner`: runs them, in a process pool, deterministically;
- :mod:`~evalstop.experiments.results`: seeds aggregated into means and 95% intervals;
- :mod:`~evalstop.experiments.report` and :mod:`~evalstop.experiments.plots`: output.
"""
