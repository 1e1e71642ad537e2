"""The package's version, the one place it is written.

A plain string literal: setuptools reads it with ``ast`` (``[tool.setuptools.dynamic]`` in
``pyproject.toml``) without importing the package or torch, and every module that needs it
imports it from here, the bottom layer, rather than from the package's ``__init__``.
"""

__version__ = "0.1.0"
