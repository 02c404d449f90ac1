"""File access for every reader: what may be opened, how text and JSON are loaded (``TRC-13``).

Bad input never escapes as anything but a :class:`~evalstop.traces.errors.TraceError`:

- special files (named pipes, devices, sockets) are refused before they are opened, so a pipe
  with no writer or ``/dev/zero`` cannot hang a read; a path under ``/dev/fd/`` (what a shell's
  ``<(...)`` passes), ``/proc/self/fd/`` or ``/dev/stdin`` is a stream, copied once to a
  temporary file so that format detection and reading see the same bytes;
- text is decoded as strict UTF-8 (a BOM is dropped) line by line, so memory follows the rows
  a reader keeps, not the file;
- a whole-document JSON file larger than :data:`MAX_JSON_BYTES` is refused, nesting deeper than
  :data:`MAX_JSON_DEPTH` is malformed, and so is an integer too long to convert.
"""

from __future__ import annotations

import codecs
import contextlib
import contextvars
import io
import json
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

from evalstop.traces.errors import EmptyTraceError, MalformedTraceError, UnreadableTraceError

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "STREAM_PREFIXES",
    "load_json",
    "opened",
    "parse_json",
    "read_prefix",
    "text_lines",
]

MAX_JSON_BYTES = 256 * 2**20
"""Largest whole-document JSON file read (trainer state, checkpoint map). Chosen from the
machine, not from data: parsed whole, a trainer state needs 7-9 times its size in memory
(measured at 16 and 64 MiB), so 256 MiB stays near 2 GB. Line-based formats (CSV, JSONL) and
TensorBoard have no such limit."""

MAX_JSON_DEPTH = 64
"""Deepest nesting accepted in a JSON value; every supported layout needs at most 3 levels."""

STREAM_PREFIXES = ("/dev/fd/", "/proc/self/fd/", "/dev/stdin")
"""Paths read as a stream (a shell's process substitution, an inherited descriptor)."""

_SCAN = cast("Callable[[str, int], tuple[Any, int]]", vars(json.JSONDecoder())["scan_once"])
"""The decoder's own scanner (C when available): ``json.loads`` minus its wrapper, used for
a line that ``json.loads`` would read the same way (see :func:`parse_json`)."""

_DOCUMENTS: contextvars.ContextVar[dict[tuple[str, int, int, int], Any] | None] = (
    contextvars.ContextVar("evalstop_json_documents", default=None)
)
"""The documents :func:`load_json` parsed inside the current :func:`opened` block."""

_KINDS = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _oserror(label: str, error: OSError) -> UnreadableTraceError:
    return UnreadableTraceError(label, f"cannot read: {error.strerror or error}")


def _is_stream(label: str) -> bool:
    return label.startswith(STREAM_PREFIXES)


def _check_kind(path: Path, label: str) -> None:
    try:
        mode = path.stat().st_mode
    except ValueError:
        raise UnreadableTraceError(label, "cannot read: the path has a NUL byte") from None
    except OSError as error:
        raise _oserror(label, error) from None
    for test, kind in _KINDS:
        if test(mode):
            raise UnreadableTraceError(
                label,
                f"is {kind}, not a file; give a regular file, a directory, or a stream "
                f"under {STREAM_PREFIXES[0]}",
            )


@contextlib.contextmanager
def opened(path: Path, label: str) -> Iterator[Path]:
    """A regular file or directory holding the trace: ``path`` itself, or a stream's copy.

    Inside the ``with`` block, :func:`load_json` parses a file once: format detection and the
    reader share the document (it is dropped when the block ends).

    Args:
        path: what the user named.
        label: how errors name it (the path as given).

    Yields:
        ``path``, or a temporary copy of a stream that lives until the ``with`` block ends.

    Raises:
        UnreadableTraceError: a missing path, a special file or an I/O error.
    """
    token = _DOCUMENTS.set({})
    try:
        with _located(path, label) as found:
            yield found
    finally:
        _DOCUMENTS.reset(token)


@contextlib.contextmanager
def _located(path: Path, label: str) -> Iterator[Path]:
    if not _is_stream(label):
        _check_kind(path, label)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="evalstop-stream-") as folder:
        # Keep the stream's own name: format detection reads it (a ``*tfevents*`` name).
        copy = Path(folder) / (path.name or "stream")
        try:
            with path.open("rb") as source, copy.open("wb") as target:
                shutil.copyfileobj(source, target, 2**20)
        except OSError as error:
            raise _oserror(label, error) from None
        yield copy


def text_lines(path: Path, label: str, *, csv: bool = False) -> Iterator[str]:
    """The file's lines, decoded as UTF-8 (BOM dropped), read lazily.

    Args:
        path: the file.
        label: how errors name it.
        csv: keep the line endings, as the ``csv`` module wants them.

    Yields:
        Each line of the file.

    Raises:
        UnreadableTraceError: an I/O error, or bytes that are not UTF-8 (naming the line).
        EmptyTraceError: a blank file.
    """
    try:
        with path.open(encoding="utf-8-sig", newline="" if csv else None) as handle:
            for line in handle:
                yield line
                if line.strip():
                    break
            else:
                raise EmptyTraceError(label, "the file is empty")
            yield from handle
    except UnicodeDecodeError:
        raise UnreadableTraceError(
            label, f"cannot read: not UTF-8 text (line {_bad_utf8_line(path)})"
        ) from None
    except OSError as error:
        raise _oserror(label, error) from None


def _bad_utf8_line(path: Path) -> int:
    """The line holding the file's first byte that is not UTF-8 (an error path: reads again)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    line = 1
    with contextlib.suppress(OSError), path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(2**20), b""):
            held = len(decoder.getstate()[0])  # an unfinished character from the last chunk
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as error:
                return line + chunk.count(b"\n", 0, max(0, error.start - held))
            line += chunk.count(b"\n")
    return line


def _depth_ok(value: object, limit: int) -> bool:
    """No container nested ``limit`` or more levels below ``value`` (walked level by level,
    looking only at containers: JSON gives exact ``dict`` and ``list``)."""
    level: list[Any] = [value] if value.__class__ is dict or value.__class__ is list else []
    depth = 0
    while level:
        if depth >= limit:
            return False
        below: list[Any] = []
        for item in level:
            children = item.values() if isinstance(item, dict) else item
            below += [c for c in children if c.__class__ is dict or c.__class__ is list]
        level, depth = below, depth + 1
    return True


def parse_json(label: str, text: str, where: str = "line 1") -> Any:
    """One JSON value, parsed from ``text``.

    Args:
        label: how errors name the file.
        text: the JSON text.
        where: the place errors name (``line 7`` for a JSONL line).

    Returns:
        The value, nested at most :data:`MAX_JSON_DEPTH` deep.

    Raises:
        MalformedTraceError: bad JSON, deeper nesting, or an integer with too many digits.
    """
    # Fast path, same result as json.loads: a value starting at 0 followed only by JSON
    # whitespace, too few brackets to nest past the limit. Anything else takes the slow path,
    # which raises the error json.loads would.
    if text.count("{") + text.count("[") < MAX_JSON_DEPTH:
        try:
            value, end = _SCAN(text, 0)
        except (StopIteration, ValueError, RecursionError):
            pass
        else:
            if end == len(text) or not text[end:].strip(" \t\n\r"):
                return value
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        place = f"line {error.lineno}" if where == "line 1" else where
        raise MalformedTraceError(label, f"{place}: not JSON ({error.msg})") from None
    except RecursionError:
        raise MalformedTraceError(
            label, f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels"
        ) from None
    except ValueError:  # an integer literal past Python's digit limit
        raise MalformedTraceError(
            label, f"{where}: a JSON number has more than {sys.get_int_max_str_digits()} digits"
        ) from None
    if not _depth_ok(value, MAX_JSON_DEPTH):
        raise MalformedTraceError(
            label, f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels"
        )
    return value


def load_json(path: Path, label: str) -> Any:
    """A whole-document JSON file, size-checked before it is read.

    Raises:
        UnreadableTraceError: the file cannot be read.
        MalformedTraceError: it is over :data:`MAX_JSON_BYTES`, or not JSON (:func:`parse_json`).
    """
    try:
        info = path.stat()
    except OSError as error:
        raise _oserror(label, error) from None
    size = info.st_size
    documents = _DOCUMENTS.get()
    key = (str(path), info.st_ino, size, info.st_mtime_ns)
    if documents is not None and key in documents:
        return documents[key]
    if size > MAX_JSON_BYTES:
        raise MalformedTraceError(
            label,
            f"a {size} byte JSON document is over the {MAX_JSON_BYTES} byte limit for "
            "whole-document formats; write the log as JSONL or CSV instead",
        )
    text = "".join(text_lines(path, label))
    value = parse_json(label, text)
    if documents is not None:
        documents[key] = value
    return value


def read_prefix(path: Path, label: str, size: int = 2**16) -> str:
    """Up to ``size`` bytes of the file's start as text (format sniffing), bad bytes replaced."""
    try:
        with path.open("rb") as handle:
            data = handle.read(size)
    except OSError as error:
        raise _oserror(label, error) from None
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", errors="replace").read()
