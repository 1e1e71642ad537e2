"""The ``check`` command: stock vs patched two-compile sequences, one subprocess each."""
