"""The trade-off sweep: every detector's main knob at the goal cells (spec ``SCB-6`` to
``SCB-8``).

- :mod:`~evalstop.experiments.tradeoff.sweep`: the operating points and the keep floors;
- :mod:`~evalstop.experiments.tradeoff.report`: why the default misses the real curves it
  misses, and the tables;
- :mod:`~evalstop.experiments.tradeoff.plot`: the figure.
"""
