"""The ``evalstop watch`` sidecar: following live runs and stopping the ones that decline.

A wing above ``live`` (the pure :class:`~evalstop.live.monitor.Monitor`, which embedders use
directly) and ``traces`` (the log formats), spec ``WCH``:

- :mod:`evalstop.watch.source`: the interfaces: a :class:`~evalstop.watch.source.Source` of
  points, a :class:`~evalstop.watch.source.Run`, a :class:`~evalstop.watch.source.RunSource`
  of runs (discover them, act on their stops);
- :mod:`evalstop.watch.watcher`: the :class:`~evalstop.watch.watcher.Watcher` and its loop;
- :mod:`evalstop.watch.store`: its SQLite state file; :mod:`evalstop.watch.migrate`: the
  upgrade of a state file of schema 1;
- :mod:`evalstop.watch.files`, :mod:`evalstop.watch.follow` and :mod:`evalstop.watch.folders`:
  bounded reading of growing log files, and run folders; :mod:`evalstop.watch.mlflow`: MLflow
  runs; :mod:`evalstop.watch.slurm` and :mod:`evalstop.watch.slurm_jobs`: Slurm jobs (spec
  ``SLM``);
- :mod:`evalstop.watch.actions`: ``--on-stop`` commands, without a shell, off the loop;
  :mod:`evalstop.watch.bounded`: a source's listing of runs, waited for at most a bound.
"""
