"""The detector scoreboard: ``evalstop detectors`` (spec ``SCB-1`` to ``SCB-5``).

- :mod:`~evalstop.experiments.scoreboard.board`: every registered detector's cells, simulated,
  real and on the gym's test split, and the noise-aware ``z`` trade-off;
- :mod:`~evalstop.experiments.scoreboard.gym`: how a gym run is folded and scored (``SCB-10``);
- :mod:`~evalstop.experiments.scoreboard.guard`: the real-curve guard of a candidate default
  (``SIG-11``);
- :mod:`~evalstop.experiments.scoreboard.plot`: its figure;
- :mod:`~evalstop.experiments.scoreboard.reproduce`: its simulated part as a step of
  ``evalstop reproduce``.
"""
