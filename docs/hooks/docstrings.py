"""Griffe extension: render evalstop's plain-text docstring idioms as checked Markdown.

The docstrings are Google style written to read well in ``help()``. Three idioms in them are
not Markdown; once the whole package is loaded, this extension rewrites them in the docstrings
griffe hands to mkdocstrings (the source files are not changed):

1. **Sphinx roles** (``:class:`JobView```, ``:func:`~evalstop.core.detectors.observe```,
   ``:mod:`evalstop.core.boundary```) become mkdocs-autorefs cross-references with full paths,
   ``[`JobView`][evalstop.core.boundary.JobView]``. A dotted target that starts with the package
   name is already a full path; otherwise its first name is resolved the way Python would from
   the documented object (its members, then its parents' scopes, following imports) and the
   rest is appended. A public object (exported by a tier, ``evalstop``, ``evalstop.sim`` or
   ``evalstop.engine``, or by a wing's module that an API page renders, or a member of one) is
   linked under the name the pages document it by (``evalstop.JobView``); an object of the
   machinery, which the pages do not render, is shown as code without a link. A target that
   cannot be resolved at all is left as written, so the strict build fails on it ("Could not
   find cross-reference target"): a renamed object breaks the docs build. ``~`` shows only the
   last name, as in Sphinx; functions and methods get ``()``.
2. **PEP 316 contracts** (the ``pre:`` / ``post:`` lines that ``nox -s crosshair`` checks)
   become a code block under a "Contract" label, instead of one paragraph in which
   ``__return__`` would turn bold.
3. **reStructuredText simple tables** (``====  ====`` borders) become Markdown tables.

It also makes the frozen ``attrs`` value classes read like the dataclasses they are:

4. an ``Attributes:`` section entry becomes the docstring of the field it names (the config
   sets ``show_docstring_attributes: false``), so each field is listed once, with its type
   and its description; an entry that names no member of the class is reported as a warning,
   which fails the strict build;
5. a field's value ``attrs.field(default=2, validator=...)`` is shown as its default (``2``),
   or not at all, and the field is labelled an instance attribute; ``__attrs_post_init__``
   (validation machinery, not API) is left out, and so is any class's ``__slots__``.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import griffe

_ROLE = re.compile(
    r":(?:py:)?(?P<role>class|func|meth|mod|data|attr|exc|obj|const|type)"
    r":`(?P<short>~)?(?P<target>[A-Za-z_][\w.]*)(?:\(\))?`"
)
_CALLABLE_ROLES = {"func", "meth"}
_CONTRACT = re.compile(r"^(pre|post|inv)(\[[\w., ]*\])?:\s")
_BORDER = re.compile(r"^=+( +=+)+\s*$")
_ATTRS_DECORATORS = {"attrs.frozen", "attrs.define", "attrs.mutable", "attr.s", "attr.attrs"}
_ATTRS_FIELDS = {"attrs.field", "attr.ib", "attr.attrib"}


def _final(loader: griffe.GriffeLoader, path: str) -> griffe.Object | None:
    try:
        obj = loader.modules_collection.get_member(path)
        found = obj.final_target if obj.is_alias else obj
    except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None
    return found if isinstance(found, griffe.Object) else None


def _resolve(loader: griffe.GriffeLoader, obj: griffe.Object, role: str, target: str) -> str:
    """The full path of the object ``target`` names from ``obj``'s scope (``target`` if none)."""
    package = obj.package.name
    if target.startswith(f"{package}."):
        path = target
    else:
        first, dot, rest = target.partition(".")
        try:
            path = f"{obj.resolve(first)}{dot}{rest}"
        except griffe.NameResolutionError:
            return target
    found = _final(loader, path)
    if found is None:
        return path
    # `from evalstop.sim.run import simulate`: the package's member `simulate` is the
    # submodule, but :func:`simulate` means the function inside it.
    name = target.rsplit(".", 1)[-1]
    if role != "mod" and found.is_module and name in found.members:
        found = _final(loader, f"{found.path}.{name}") or found
    return found.path


TIERS = ("evalstop", "evalstop.sim", "evalstop.engine")
"""The public tiers (spec ``ARC-5``)."""
WINGS = ("evalstop.adapters", "evalstop.gym", "evalstop.watch")
"""Packages of their own (spec ``ARC-5``): each module of theirs an API page renders is public."""
API_PAGES = Path(__file__).resolve().parents[1] / "api"
_DIRECTIVE = re.compile(r"^::: *([\w.]+)", flags=re.MULTILINE)


def _rendered_wing_modules() -> list[str]:
    targets = [
        t for page in sorted(API_PAGES.glob("*.md")) for t in _DIRECTIVE.findall(page.read_text())
    ]
    return [t for t in targets if any(t == w or t.startswith(w + ".") for w in WINGS)]


@dataclasses.dataclass
class _Public:
    """Canonical path -> documented path of every public object, and which of them are modules."""

    paths: dict[str, str] = dataclasses.field(default_factory=dict)
    modules: set[str] = dataclasses.field(default_factory=set)

    def documented(self, path: str) -> str | None:
        """The path the pages document ``path`` under, or None if they do not render it."""
        if path in self.paths:
            return self.paths[path]
        head = path
        while "." in head:
            head = head.rsplit(".", 1)[0]
            if head in self.paths and head not in self.modules:
                return self.paths[head] + path[len(head) :]
        return None


def _public_modules(pkg: griffe.Module) -> list[griffe.Module]:
    found: list[griffe.Module] = []
    for name in (*TIERS, *_rendered_wing_modules()):
        module = pkg if name == pkg.path else pkg.get_member(name.removeprefix(pkg.path + "."))
        if isinstance(module, griffe.Module):
            found.append(module)
    return found


def collect_public(pkg: griffe.Module) -> _Public:
    """Every public object of ``pkg``: the tiers' and the rendered wing modules' exports."""
    public = _Public()
    for module in _public_modules(pkg):
        public.paths[module.path] = module.path
        public.modules.add(module.path)
        for name in module.exports or ():
            target = exported(module, str(name))
            # A submodule shadows the function of its name it exports (``engine.step``,
            # ``traces.replay``): the page renders that function by its own path.
            shadowed = target.parent is not None and target.parent.name == name
            public.paths.setdefault(
                target.path, target.path if shadowed else f"{module.path}.{name}"
            )
    return public


def exported(module: griffe.Module, name: str) -> griffe.Object:
    """The object ``module`` exports as ``name``: the function, where a submodule of the same
    name (griffe's member) shadows it."""
    member = module.members[name]
    target = member.final_target if member.is_alias else member
    if target.is_module and name in target.members:
        inner = target.members[name]
        target = inner.final_target if inner.is_alias else inner
    assert isinstance(target, griffe.Object)
    return target


def _roles(loader: griffe.GriffeLoader, obj: griffe.Object, text: str, public: _Public) -> str:
    def replace(match: re.Match[str]) -> str:
        target = match["target"]
        shown = target.rsplit(".", 1)[-1] if match["short"] else target
        if match["role"] in _CALLABLE_ROLES:
            shown += "()"
        path = _resolve(loader, obj, match["role"], target)
        documented = public.documented(path)
        if documented is None and _final(loader, path) is not None:
            return f"`{shown}`"  # machinery: named, not rendered, so not linked
        return f"[`{shown}`][{documented or path}]"

    return _ROLE.sub(replace, text)


def _contracts(lines: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not _CONTRACT.match(lines[i]):
            out.append(lines[i])
            i += 1
            continue
        block: list[str] = []
        while i < len(lines) and (_CONTRACT.match(lines[i]) or lines[i].startswith(" ")):
            block.append(lines[i])
            i += 1
        if out and out[-1].strip():
            out.append("")
        out += ["Contract (PEP 316, checked by `nox -s crosshair`):", "", "```text", *block]
        out += ["```", ""]
    return out


def _spans(border: str) -> list[int]:
    return [m.start() for m in re.finditer(r"=+", border)]


def _cells(line: str, starts: list[int]) -> list[str]:
    bounds = [*starts[1:], None]
    return [line[a:b].strip().replace("|", r"\|") for a, b in zip(starts, bounds, strict=True)]


def _tables(lines: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        borders = [j for j in range(i, len(lines)) if _BORDER.match(lines[j])][:3]
        if len(borders) < 3 or borders[0] != i:
            out.append(lines[i])
            i += 1
            continue
        starts = _spans(lines[i])
        header = _cells(" ".join(lines[i + 1 : borders[1]]), starts)
        rows: list[list[str]] = []
        for line in lines[borders[1] + 1 : borders[2]]:
            cells = _cells(line, starts)
            if rows and not cells[0]:
                rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
            elif any(cells):
                rows.append(cells)
        if out and out[-1].strip():
            out.append("")
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "---|" * len(header))
        out += ["| " + " | ".join(row) + " |" for row in rows]
        out.append("")
        i = borders[2] + 1
    return out


def render(loader: griffe.GriffeLoader, obj: griffe.Object, text: str, public: _Public) -> str:
    """The docstring ``text`` of ``obj`` with the three idioms rewritten."""
    lines = _tables(_contracts(text.splitlines()))
    return _roles(loader, obj, "\n".join(lines), public)


def _is_attrs_class(cls: griffe.Class) -> bool:
    return any(str(d.value).split("(")[0] in _ATTRS_DECORATORS for d in cls.decorators)


def _attrs_fields(cls: griffe.Class) -> None:
    cls.members.pop("__attrs_post_init__", None)
    for member in cls.members.values():
        if member.is_alias or not member.is_attribute or "property" in member.labels:
            continue
        member.labels.discard("class-attribute")
        member.labels.add("instance-attribute")
        value = member.value  # type: ignore[union-attr]
        if isinstance(value, griffe.ExprCall) and str(value.function) in _ATTRS_FIELDS:
            default = None
            for argument in value.arguments:
                if isinstance(argument, griffe.ExprKeyword) and argument.name == "default":
                    default = argument.value
                elif isinstance(argument, griffe.ExprKeyword) and argument.name == "factory":
                    default = f"{argument.value}()"
            member.value = default  # type: ignore[union-attr]


def _attributes_section(cls: griffe.Class) -> None:
    if cls.docstring is None or "Attributes:" not in cls.docstring.value:
        return
    for section in griffe.parse_google(cls.docstring, warnings=False):
        if section.kind is not griffe.DocstringSectionKind.attributes:
            continue
        for item in section.value:
            member = cls.members.get(item.name)
            if not isinstance(member, griffe.Object):
                griffe.logger.warning(
                    f"{cls.path}: its Attributes section documents {item.name!r}, "
                    "which is not a member of the class"
                )
            elif member.docstring is None and item.description:
                member.docstring = griffe.Docstring(
                    item.description, lineno=cls.docstring.lineno, parent=member
                )


class DocstringIdioms(griffe.Extension):
    """Rewrite roles, contracts and RST tables in every docstring of a package."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        self._visit(loader, pkg, collect_public(pkg))

    def _visit(self, loader: griffe.GriffeLoader, obj: griffe.Object, public: _Public) -> None:
        docstring = obj.docstring
        if docstring is not None:
            new = render(loader, obj, docstring.value, public)
            if new != docstring.value:
                docstring.value = new
                docstring.__dict__.pop("parsed", None)  # drop a cached parse, if any
        if isinstance(obj, griffe.Class):
            obj.members.pop("__slots__", None)  # layout, not API
            if _is_attrs_class(obj):
                _attrs_fields(obj)
            _attributes_section(obj)
        for member in list(obj.members.values()):
            if not member.is_alias:
                self._visit(loader, member, public)  # type: ignore[arg-type]
