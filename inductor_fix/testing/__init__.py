"""Test helpers shipped with the package: the CPU harness and the crash workloads.

Importing this subpackage imports nothing heavy; each helper imports torch when called.
"""
