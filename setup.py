"""Build shim: all of the project's metadata is in pyproject.toml, written once.

For tools and habits that look for a setup.py (``python setup.py --version``, older
editable installs); ``pip install .``, ``python -m build`` and this file build the same
sdist and wheel. Put nothing here: CI checks that a wheel built without this file is the same.
"""

from setuptools import setup

setup()
