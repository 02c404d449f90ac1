"""Integration tests against a real Slurm cluster (``nox -s slurm``, spec ``SLM-9``)."""
