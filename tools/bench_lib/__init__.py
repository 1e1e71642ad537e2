"""Helpers of ``tools/bench``; see that script's docstring for what is measured and how."""
