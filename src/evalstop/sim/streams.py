"""Each job's curve stream of a generated workload, seeded as numpy seeds it (spec ``WRK-1``).

Job ``i``'s curves come from ``Generator(PCG64(SeedSequence(entropy, spawn_key=(*key, i))))``
(:func:`curve_stream`). Building that costs about 65 us a job, most of
it ``SeedSequence`` mixing the same entropy and spawn key over and over. :class:`CurveStreams`
mixes the part shared by every job of a workload once and, per job, only the words of its
index, then derives the PCG64 state as ``PCG64(seed_seq)`` does (``SeedSequence``'s
``hashmix``/``mix`` and ``generate_state``, then PCG's ``srandom``) and sets it on one
reused generator: the same stream, about half the cost; indices asked in increasing order
(a workload's builders) have their states derived a block at a time on numpy arrays, which
halves it again (5.2 -> 2.1 us a stream, measured). Tests compare the states with numpy's
for many seeds and indices, in any order, so a numpy that seeded differently would fail
them.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["CurveStreams", "curve_seeds", "curve_stream"]

_M32 = 0xFFFFFFFF
_M128 = (1 << 128) - 1
# numpy/random/bit_generator.pyx (SeedSequence) and pcg64.h (PCG_DEFAULT_MULTIPLIER_128).
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645
_POOL = 4
_BLOCK = 512  # the indices whose states CurveStreams.stream derives at once


def _words(value: int) -> list[int]:
    """``value`` as 32-bit words, least significant first (numpy's ``_int_to_uint32_array``)."""
    words = [value & _M32]
    while value > _M32:
        value >>= 32
        words.append(value & _M32)
    return words


def _absorb(pool: list[int], hashed: int, word: int) -> int:
    """Mix ``word`` into every entry of ``pool`` (``mix(pool[d], hashmix(word))``); the new
    hash constant."""
    for d in range(_POOL):
        value = word ^ hashed
        hashed = (hashed * _MULT_A) & _M32
        value = (value * hashed) & _M32
        value ^= value >> 16
        mixed = (_MIX_L * pool[d] - _MIX_R * value) & _M32
        pool[d] = mixed ^ (mixed >> 16)
    return hashed


def curve_stream(curves_seq: np.random.SeedSequence, index: int) -> np.random.Generator:
    """The random stream of job ``index``'s curves: keyed by the index alone (WRK-1)."""
    key = (*curves_seq.spawn_key, index)
    # default_rng(seq) is Generator(PCG64(seq)); built directly, without its dispatch.
    return np.random.Generator(
        np.random.PCG64(np.random.SeedSequence(curves_seq.entropy, spawn_key=key))
    )


def curve_seeds(seed: int) -> np.random.SeedSequence:
    """The parent of every job's curve stream in the workload of ``seed`` (WRK-1)."""
    return np.random.SeedSequence(seed).spawn(2)[1]


class CurveStreams:
    """The curve streams of the jobs of one workload, from its curves' ``SeedSequence``.

    Args:
        parent: the workload's curve seed sequence (``curve_seeds(seed)``). Anything but one
            integer entropy and the default pool size takes numpy's own path.

    :meth:`stream` returns one reused generator: a stream is valid until the next call. The
    states of an index and of the :data:`_BLOCK` indices after it are derived
    together (:func:`_block_states`, numpy's arithmetic on whole arrays), so that asking for
    indices in increasing order, as a workload's builders do, costs about half as much a
    stream as deriving each alone; any other order gets the same states.
    """

    __slots__ = ("_bits", "_first", "_generator", "_hashed", "_parent", "_pool", "_states")

    def __init__(self, parent: np.random.SeedSequence) -> None:
        self._parent = parent
        self._bits = np.random.PCG64(parent)
        self._generator = np.random.Generator(self._bits)
        self._pool: list[int] | None = None
        self._hashed = 0
        self._first = 0  # the index of _states[0]
        self._states: list[tuple[int, int]] = []  # (state, increment) of the indices from it
        entropy = parent.entropy
        if isinstance(entropy, numbers.Integral) and entropy >= 0 and parent.pool_size == _POOL:
            self._pool, self._hashed = _mixed(int(entropy), parent.spawn_key)

    def stream(self, index: int) -> np.random.Generator:
        """Job ``index``'s curve stream: ``curve_stream(parent, index)``'s, on the reused
        generator (a fresh numpy generator when the parent's entropy is not one integer)."""
        if index < 0:
            raise ValueError(f"a job index is >= 0, got {index}")
        pool = self._pool
        if pool is None:
            key = (*self._parent.spawn_key, index)
            seq = np.random.SeedSequence(self._parent.entropy, spawn_key=key)
            return np.random.Generator(np.random.PCG64(seq))
        offset = index - self._first
        if not 0 <= offset < len(self._states):
            self._states = _block_states(pool, self._hashed, index)
            self._first, offset = index, 0
        state, increment = self._states[offset]
        self._bits.state = {
            "bit_generator": "PCG64",
            "state": {"state": state, "inc": increment},
            "has_uint32": 0,
            "uinteger": 0,
        }
        return self._generator


def _seeded(out: Sequence[int]) -> tuple[int, int]:
    """PCG64's (state, increment) seeded with the eight words ``out`` (``srandom``: two
    steps)."""
    seed = (out[0] | out[1] << 32) << 64 | out[2] | out[3] << 32
    sequence = (out[4] | out[5] << 32) << 64 | out[6] | out[7] << 32
    increment = ((sequence << 1) | 1) & _M128
    return ((increment + seed) * _PCG_MULT + increment) & _M128, increment


def _block_states(pool: list[int], hashed: int, first: int) -> list[tuple[int, int]]:
    """(state, increment) of the streams of index ``first`` and of up to :data:`_BLOCK` - 1
    indices after it that have as many 32-bit words: :func:`_absorb` of each index's words,
    ``generate_state(4, uint64)`` and :func:`_seeded`, on uint64 arrays, one element an index
    (every product of two 32-bit words fits in 64 bits; a difference wraps modulo 2**64,
    which the mask reduces modulo 2**32 as Python's ``&`` does)."""
    count = len(_words(first))
    end = min(first + _BLOCK, 1 << (32 * count))  # the same number of words
    if count == 1:
        columns = [np.arange(first, end, dtype=np.uint64)]
    else:
        columns = [
            np.array([(i >> (32 * k)) & _M32 for i in range(first, end)], dtype=np.uint64)
            for k in range(count)
        ]
    mask = np.uint64(_M32)
    mixed: list[Any] = [np.uint64(entry) for entry in pool]  # arrays after the first word
    for words in columns:  # _absorb of each index's word
        for d in range(_POOL):
            value = words ^ np.uint64(hashed)
            hashed = (hashed * _MULT_A) & _M32
            value = (value * np.uint64(hashed)) & mask
            value ^= value >> np.uint64(16)
            both = (np.uint64(_MIX_L) * mixed[d] - np.uint64(_MIX_R) * value) & mask
            mixed[d] = both ^ (both >> np.uint64(16))
    hashed, out = _INIT_B, []
    for position in range(2 * _POOL):  # generate_state(4, uint64): eight 32-bit words
        value = mixed[position % _POOL] ^ np.uint64(hashed)
        hashed = (hashed * _MULT_B) & _M32
        value = (value * np.uint64(hashed)) & mask
        out.append((value ^ (value >> np.uint64(16))).tolist())
    return [_seeded(words8) for words8 in zip(*out, strict=True)]


def _mixed(entropy: int, spawn_key: tuple[int, ...]) -> tuple[list[int], int]:
    """The pool and hash constant of ``SeedSequence(entropy, spawn_key=(*spawn_key, i))``
    before the words of ``i`` (``get_assembled_entropy`` and ``mix_entropy``)."""
    run = _words(entropy)
    run += [0] * (_POOL - len(run))  # padded: the spawn key is never empty here
    assembled = run + [word for key in spawn_key for word in _words(key)]
    hashed, pool = _INIT_A, []
    for word in assembled[:_POOL]:
        value = word ^ hashed
        hashed = (hashed * _MULT_A) & _M32
        value = (value * hashed) & _M32
        pool.append(value ^ (value >> 16))
    for source in range(_POOL):
        for target in range(_POOL):
            if source != target:
                value = pool[source] ^ hashed
                hashed = (hashed * _MULT_A) & _M32
                value = (value * hashed) & _M32
                value ^= value >> 16
                mix = (_MIX_L * pool[target] - _MIX_R * value) & _M32
                pool[target] = mix ^ (mix >> 16)
    for word in assembled[_POOL:]:
        hashed = _absorb(pool, hashed, word)
    return pool, hashed
