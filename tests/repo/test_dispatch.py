"""ARC-8: which built-in rule a detector or a system is, by its class, is asked in one place.

An ``ast`` walk over every module of ``src/evalstop`` counts the class checks of a built-in
detector (a row of ``registry.DETECTORS``), ``EvalStop`` or a base policy's class:
``type(x) is C`` (and ``is not``, ``==``, ``!=``, ``in``; ``x.__class__`` alike),
``isinstance(x, C)`` / ``issubclass(x, C)`` (C alone, in a tuple or a ``|`` union), a
``case C(...)`` pattern, and reads of a detector's ``k`` (``detector.k``, ``self._rule.k``,
``getattr(detector, "k")``; a class reading its own ``self.k`` is not a dispatch). Only the
core's fold entry point may make them.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from evalstop.core.policies import BASE_POLICIES
from evalstop.core.registry import DETECTORS

SRC = Path(__file__).resolve().parents[2] / "src" / "evalstop"

ENTRY_POINT = frozenset({"core/registry.py", "core/folds.py"})
"""The core's fold entry point: the modules that may dispatch on a rule's class (ARC-8)."""

EXEMPT: frozenset[str] = frozenset()
"""Modules exempt by name while they exist (the test fails on an entry whose module no longer
exists); ``engine/builtin_fast.py`` was the last, deleted in issue 23."""

CLASSES = frozenset(
    {row.kind.__name__ for row in DETECTORS}
    | {"EvalStop"}
    | {type(policy).__name__ for policy in BASE_POLICIES.values()}
)
"""The classes whose identity is the entry point's to ask."""

_HOLDER = re.compile(r"detector|rule", re.IGNORECASE)
"""The last name of an expression that holds a detector (``detector``, ``self._rule``)."""


def _names(node: ast.expr) -> list[str]:
    """The class names ``node`` spells: a name, an attribute's last name, a tuple or a union."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.Tuple):
        return [name for item in node.elts for name in _names(item)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _names(node.left) + _names(node.right)
    return []


def _is_class_of(node: ast.expr) -> bool:
    """``type(x)`` or ``x.__class__``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id == "type" and len(node.args) == 1
    return isinstance(node, ast.Attribute) and node.attr == "__class__"


def _holds_detector(node: ast.expr) -> bool:
    """Whether ``node`` names a detector other than ``self``."""
    if isinstance(node, ast.Name):
        return node.id != "self" and bool(_HOLDER.search(node.id))
    if isinstance(node, ast.Attribute):
        return bool(_HOLDER.search(node.attr))
    return False


def dispatches(source: str) -> list[str]:
    """Every class check of :data:`CLASSES` and detector ``k`` read in ``source``, as
    ``line: code``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        hit = False
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            hit = any(_is_class_of(side) for side in sides) and any(
                name in CLASSES for side in sides for name in _names(side)
            )
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
                hit = any(name in CLASSES for name in _names(node.args[1]))
            elif node.func.id == "getattr" and len(node.args) >= 2:
                key = node.args[1]
                hit = isinstance(key, ast.Constant) and key.value == "k"
                hit = hit and _holds_detector(node.args[0])
        elif isinstance(node, ast.MatchClass):
            hit = any(name in CLASSES for name in _names(node.cls))
        elif isinstance(node, ast.Attribute) and node.attr == "k":
            hit = isinstance(node.ctx, ast.Load) and _holds_detector(node.value)
        if hit:
            found.append((getattr(node, "lineno", 0), ast.unparse(node)))
    return [f"{line}: {code}" for line, code in sorted(found)]


def test_arc8_no_class_dispatch_outside_the_entry_point() -> None:
    """ARC-8: 0 class checks of a built-in rule or system outside ``core/registry.py`` and
    ``core/folds.py`` (none exempt since issue 23 deleted ``engine/builtin_fast.py``)."""
    outside: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        name = path.relative_to(SRC).as_posix()
        if name in ENTRY_POINT or name in EXEMPT:
            continue
        checks = dispatches(path.read_text(encoding="utf-8"))
        if checks:
            outside[name] = checks
    assert outside == {}, "ask the registry (in_place, alone, base_of) or the detector instead"


def test_arc8_the_entry_point_and_the_exemptions_exist() -> None:
    """ARC-8: every module named by the rule exists (a deleted one must leave its list)."""
    for name in ENTRY_POINT | EXEMPT:
        assert (SRC / name).is_file(), name


def test_arc8_the_counter_sees_every_form() -> None:
    """ARC-8: the counter finds each form of a class check and a ``k`` read, and passes by
    what is not one (a class reading its own ``k``, a check of another class)."""
    bad = """
if type(detector) is DeclineDetector: pass
if policy.__class__ == EvalStop: pass
if type(d) in (NoiseAwareDetector, Never): pass
ok = isinstance(x, DeclineDetector)
ok = isinstance(x, (int, core.NoiseAwareDetector))
ok = issubclass(kind, LossPlateau | StopAtProgress)
k = monitor.detector.k
k = self._rule.k
k = getattr(detector, "k", None)
match policy:
    case EvalStop(base=b): pass
"""
    assert len(dispatches(bad)) == 10
    good = """
if type(value) is int: pass
ok = isinstance(value, float | int)
k = self.k
k = args.k
k = getattr(args, "k")
row = DETECTORS[0].kind
"""
    assert dispatches(good) == []
