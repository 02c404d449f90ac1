"""The one source of the package version (pyproject reads it: ``[tool.hatch.version]``)."""

__version__ = "0.2.0"
