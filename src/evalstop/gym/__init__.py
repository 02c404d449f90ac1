"""The gym: real policy-gradient runs against a fitted proxy, with their exact gold truth.

Layout (``GYM`` in ``spec/gym.md``): the pure core (numpy only, one seed per run through
``SeedSequence``, no I/O) is ``task`` (the token task and its exact gold), ``proxy`` (the
proxy reward model), ``policy`` (REINFORCE with a KL penalty), ``run`` (one run), ``config``
(the distribution and the knobs), ``labels`` (the label rule) and ``splits`` (the dev and test
seed ranges); ``generate`` runs many (process pool or a backend such as Ray); ``writer`` and
``corpora`` are the edge that writes folders.
"""

from evalstop.gym.config import ConfigError as ConfigError
from evalstop.gym.config import RunConfig as RunConfig
from evalstop.gym.config import draw_config as draw_config
from evalstop.gym.corpora import GymError as GymError
from evalstop.gym.corpora import generate_split as generate_split
from evalstop.gym.corpora import write_runs as write_runs
from evalstop.gym.corpora import write_split as write_split
from evalstop.gym.generate import LabelledRun as LabelledRun
from evalstop.gym.generate import generate_runs as generate_runs
from evalstop.gym.labels import label_of as label_of
from evalstop.gym.run import Checkpoint as Checkpoint
from evalstop.gym.run import RunResult as RunResult
from evalstop.gym.run import Truth as Truth
from evalstop.gym.run import simulate_run as simulate_run
from evalstop.gym.splits import SPLITS as SPLITS

__all__ = [
    "SPLITS",
    "Checkpoint",
    "ConfigError",
    "GymError",
    "LabelledRun",
    "RunConfig",
    "RunResult",
    "Truth",
    "draw_config",
    "generate_runs",
    "generate_split",
    "label_of",
    "simulate_run",
    "write_runs",
    "write_split",
]
