"""Benchmarks (``make bench-…``, never ``make test``): each module runs as ``python -m bench.NAME``
from the repository root, compares against a reference measured in the same run, and imports
only the project's library modules and ``bench.common``. ``datatrove_job`` and
``adapterhub_side`` are the exceptions: scripts run by path in venvs of their own."""
