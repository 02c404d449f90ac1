"""The nasty-case corpus of ``tests/data/bad``: every file and what replaying it must give.

Regenerate with ``python tests/traces/bad_corpus.py`` (deterministic). ``expect`` is ``ok``
(exit 0), ``error`` (exit 2 and one stderr line) or ``partial`` (exit 0 and the JSON says the
last record was incomplete). Cases whose path is made at test time (a named pipe, devices, a
process substitution) are listed in ``SPECIAL``.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

from tfwrite import record, scalar_event, tensor_event, tf_file

__all__ = ["BAD", "SPECIAL", "build"]

BAD = Path(__file__).resolve().parents[1] / "data" / "bad"
CURVE = [(10 * i, v) for i, v in enumerate([0.1, 0.2, 0.3, 0.35, 0.4, 0.45, 0.5], 1)]
SPECIAL: dict[str, str] = {
    "fifo_no_writer": "error",
    "dev_zero": "error",
    "dev_urandom": "error",
    "dev_null": "error",
    "directory_no_events": "error",
    "process_substitution_csv": "ok",
    "process_substitution_tb": "ok",
    "symlink_loop": "error",
    "long_path": "error",
}


def _tb(points: list[tuple[int, float]]) -> bytes:
    return tf_file([scalar_event(s, "acc", v) for s, v in points])[0]


def _flip(data: bytes, at: int) -> bytes:
    damaged = bytearray(data)
    damaged[at] ^= 0xFF
    return bytes(damaged)


def tensorboard_cases() -> dict[str, tuple[bytes, str]]:
    good, offsets = tf_file([scalar_event(s, "acc", v) for s, v in CURVE])
    fourth = offsets[4]
    huge = struct.pack("<Q", 2**62)
    bomb = [scalar_event(1, "acc", 0.5), tensor_event(2, "img", [2**31, 2**31, 2**31])]
    return {
        "tb_good": (good, "ok"),
        "tb_bad_crc_mid": (_flip(good, fourth + 14), "error"),
        "tb_bad_length_crc_mid": (_flip(good, fourth + 9), "error"),
        "tb_truncated_last_data": (good[:-7], "partial"),
        "tb_truncated_last_header": (good + record(scalar_event(80, "acc", 0.6))[:5], "partial"),
        "tb_truncated_footer": (good[:-2], "partial"),
        "tb_negative_step": (_tb([(-5, 0.1), (10, 0.2)]), "error"),
        "tb_huge_length": (huge + record(huge)[8:12] + b"x" * 20, "error"),
        "tb_junk": (b"not an event file at all", "error"),
        "tb_empty": (b"", "error"),
        "tb_nan_only": (_tb([(1, float("nan")), (2, float("nan"))]), "error"),
        "tb_shape_bomb": (tf_file([tensor_event(1, "acc", [100000, 100000])])[0], "error"),
        "tb_shape_bomb_beside_scalars": (tf_file(bomb)[0], "ok"),
        "tb_negative_dim": (tf_file([tensor_event(1, "acc", [-1])])[0], "error"),
        "tb_garbage_proto": (tf_file([b"\xff\xff\xff\xff\xff"])[0], "error"),
        "tb_huge_step": (_tb([(2**63 - 1, 0.5), (1, 0.2)]), "ok"),
    }


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _state(history: list[dict[str, object]]) -> bytes:
    return json.dumps({"log_history": history}).encode()


def json_cases() -> dict[str, tuple[bytes, str]]:
    nines = b"9" * 5000
    return {
        "ts_deep.json": (('{"log_history": ' + _nested(5000) + "}").encode(), "error"),
        "ts_negative_step.json": (_state([{"step": -1, "acc": 0.5}]), "error"),
        "ts_float_step.json": (_state([{"step": 1.5, "acc": 0.5}]), "error"),
        "ts_bool_step.json": (_state([{"step": True, "acc": 0.5}]), "error"),
        "ts_huge_int_value.json": (
            b'{"log_history": [{"step": 1, "acc": 1' + b"0" * 400 + b'}, {"step": 2, "acc": 1}]}',
            "ok",
        ),
        "ts_huge_digits.json": (b'{"log_history": [{"step": 1, "acc": ' + nines + b"}]}", "error"),
        "ts_huge_step.json": (
            b'{"log_history": [{"step": 1' + b"0" * 400 + b', "acc": 1}]}',
            "error",
        ),
        "ts_value_dict.json": (
            _state([{"step": 1, "acc": {"a": 1}}, {"step": 2, "acc": 1}]),
            "error",
        ),
        "ts_utf16.json": (_state([{"step": 1, "acc": 0.5}]).decode().encode("utf-16"), "error"),
        "ts_bom.json": (b"\xef\xbb\xbf" + _state([{"step": 1, "acc": 0.5}]), "ok"),
        "ts_surrogate_key.json": (b'{"log_history": [{"step": 1, "\\ud800": 0.5}]}', "ok"),
        "ckpt_deep_dict.json": (
            ('{"c1": {"acc": ' + '{"a":' * 5000 + "1" + "}" * 5000 + "}}").encode(),
            "error",
        ),
        "ckpt_huge_number.json": (b'{"c1": {"acc": 1' + b"0" * 400 + b'}, "c2": {"acc": 1}}', "ok"),
        "ckpt_long_name.json": (b'{"c' + nines + b'": {"acc": 0.5}}', "error"),
        "jsonl_deep.jsonl": ((_nested(5000) + "\n").encode(), "error"),
        "jsonl_huge_step.jsonl": (b'{"step": ' + b"9" * 30 + b', "acc": 0.5}\n', "error"),
        "jsonl_cr.jsonl": (b'{"step": 1, "acc": 0.5}\r{"step": 2, "acc": 0.6}\r', "ok"),
        "jsonl_u2028.jsonl": ('{"step": 1, "acc": 0.5, "n": "a\u2028b"}\n'.encode(), "ok"),
        "jsonl_truncated_last.jsonl": (b'{"step": 1, "acc": 0.5}\n{"step": 2, "ac', "error"),
    }


def csv_cases() -> dict[str, tuple[bytes, str]]:
    header = ",".join(["step"] + [f"c{i}" for i in range(20000)])
    row = ",".join(["1"] + ["0.5"] * 20000)
    return {
        "csv_negative.csv": (b"step,acc\n-1,0.5\n", "error"),
        "csv_huge_step.csv": (b"step,acc\n" + b"9" * 5000 + b",0.5\n", "error"),
        "csv_huge_value.csv": (b"step,acc\n1," + b"9" * 5000 + b"\n2,0.5\n", "ok"),
        "csv_nul.csv": (b"step,acc\n1,0.5\x00\n", "error"),
        "csv_wide.csv": ((header + "\n" + row + "\n").encode(), "error"),
        "csv_huge_field.csv": (b"step,acc\n1," + b"x" * 200000 + b"\n", "error"),
        "csv_utf16.csv": ("step,acc\n1,0.5\n".encode("utf-16"), "error"),
        "csv_cr.csv": (b"step,acc\r1,0.5\r2,0.6\r", "ok"),
        "csv_escape_in_header.csv": (b"step,\x1b[31mred\n1,0.5\n", "ok"),
        "csv_dup_header.csv": (b"step,acc,acc\n1,0.5,0.6\n", "error"),
        "unknown_binary.bin": (bytes(range(256)) * 4, "error"),
    }


def build(folder: Path = BAD) -> dict[str, dict[str, object]]:
    """Write every case into ``folder`` and return ``cases.json``'s content."""
    folder.mkdir(parents=True, exist_ok=True)
    cases: dict[str, dict[str, object]] = {}
    for name, (data, expect) in tensorboard_cases().items():
        (folder / f"events.out.tfevents.{name}").write_bytes(data)
        cases[name] = {"args": [f"events.out.tfevents.{name}"], "expect": expect}
    for name, (data, expect) in {**json_cases(), **csv_cases()}.items():
        (folder / name).write_bytes(data)
        cases[name] = {"args": [name], "expect": expect}
    cases["csv_wide_metric"] = {"args": ["csv_wide.csv", "--metric", "c19999"], "expect": "ok"}
    text = json.dumps(cases, indent=1, sort_keys=True) + "\n"
    (folder / "cases.json").write_text(text, encoding="utf-8")
    return cases


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else BAD)
