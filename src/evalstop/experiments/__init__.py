"""Three studies run on the simulator and the real-curve corpus, each a subpackage.

- :mod:`~evalstop.experiments.paper`: the paper's experiments (``evalstop reproduce``, spec
  ``REP``);
- :mod:`~evalstop.experiments.scoreboard`: every registered detector, regret-first, simulated
  and real (``evalstop detectors``, ``SCB-1`` to ``SCB-5``);
- :mod:`~evalstop.experiments.tradeoff`: every detector's main knob at the goal cells, beside
  the keep floors (``SCB-6`` to ``SCB-8``).

What they share sits beside them: :mod:`~evalstop.experiments.grid` (the swept values, one
place), :mod:`~evalstop.experiments.tables` (text tables), :mod:`~evalstop.experiments.plotting`
(the optional matplotlib) and :mod:`~evalstop.experiments.leakage` (the audit of what a policy
could learn of the hidden label, ``LEAK``).
"""
