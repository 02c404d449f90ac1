"""One gym run: fit the proxy, train the policy against it, evaluate at each checkpoint.

At each checkpoint the run records what a platform observes (:class:`Checkpoint`: the mean
gold over ``eval_samples`` fresh responses, the proxy reward, the sampled KL and the loss on
the same responses, the policy's entropy) and, apart, the hidden truth (:class:`Truth`: the
exact expected gold and the exact KL). Randomness: ``SeedSequence(config.seed)``'s children 1
to 4 (task, proxy data, training, evaluation; child 0 drew the config), so a run depends on
its config alone (spec ``GYM-1``). Pure: numpy only, no I/O.
"""

from __future__ import annotations

import attrs
import numpy as np

from evalstop.gym.config import RunConfig
from evalstop.gym.policy import Optimiser, train_step
from evalstop.gym.proxy import fit_proxy
from evalstop.gym.task import entropy, exact_gold, gold_of, kl_to, make_task, probabilities
from evalstop.gym.task import sample as draw

__all__ = ["Checkpoint", "RunResult", "Truth", "simulate_run"]


@attrs.frozen(slots=True)
class Checkpoint:
    """What a platform observes at one checkpoint (one line of ``metrics.jsonl``).

    Attributes:
        step: optimisation steps taken.
        eval_score: mean gold reward of ``eval_samples`` fresh responses.
        proxy_reward: mean proxy reward of the same responses.
        kl: mean log-ratio of the same responses to the initial policy (sampled KL).
        loss: the policy-gradient loss on the same responses.
        entropy: the policy's entropy, nats.
    """

    step: int
    eval_score: float
    proxy_reward: float
    kl: float
    loss: float
    entropy: float


@attrs.frozen(slots=True)
class Truth:
    """The hidden truth of a run, checkpoint by checkpoint.

    Attributes:
        quality: the policy's exact expected gold reward.
        kl: the exact KL from the policy to the initial policy.
    """

    quality: tuple[float, ...]
    kl: tuple[float, ...]


@attrs.frozen(slots=True)
class RunResult:
    """A finished run.

    Attributes:
        config: its parameters.
        checkpoints: what a platform observed.
        truth: its hidden truth.
    """

    config: RunConfig
    checkpoints: tuple[Checkpoint, ...]
    truth: Truth


def simulate_run(config: RunConfig) -> RunResult:
    """Run ``config`` from start to end (deterministic in ``config``)."""
    children = np.random.SeedSequence(config.seed).spawn(5)
    task_rng, proxy_rng, train_rng, eval_rng = (np.random.default_rng(c) for c in children[1:])
    task = make_task(task_rng)
    init_probs = probabilities(task.init_logits)
    proxy = fit_proxy(task, init_probs, config.proxy_samples, config.capacity, proxy_rng)
    opt = Optimiser.start(task.init_logits)
    positions = np.arange(init_probs.shape[0])
    observed: list[Checkpoint] = []
    quality: list[float] = []
    kls: list[float] = []
    done = 0
    for at in config.checkpoints():
        while done < at:
            train_step(opt, proxy, config.kl_coef, config.lr, train_rng)
            done += 1
        probs = probabilities(opt.logits)
        tokens = draw(probs, config.eval_samples, eval_rng)
        log_probs = np.log(np.maximum(probs, 1e-300))[positions, tokens]
        log_ratio = (log_probs - opt.init_log_probs[positions, tokens]).sum(axis=1)
        proxy_reward = proxy(tokens)
        reward = proxy_reward - config.kl_coef * log_ratio
        loss = -float(((reward - reward.mean()) * log_probs.sum(axis=1)).mean())
        observed.append(
            Checkpoint(
                step=at,
                eval_score=float(gold_of(task, tokens).mean()),
                proxy_reward=float(proxy_reward.mean()),
                kl=float(log_ratio.mean()),
                loss=loss,
                entropy=entropy(probs),
            )
        )
        quality.append(exact_gold(task, probs))
        kls.append(kl_to(probs, init_probs))
    return RunResult(config, tuple(observed), Truth(tuple(quality), tuple(kls)))
