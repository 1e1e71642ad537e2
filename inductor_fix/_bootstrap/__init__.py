"""The folder ``inductor-fix run`` puts first on ``PYTHONPATH``; see ``sitecustomize.py`` here."""
