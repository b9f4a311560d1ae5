"""What every package shares: file storage with atomic writes (``storage``), the corpus folder's
layout and manifest (``corpus``) and command lines made from config dataclasses (``cli``).
Imports no other package of the project, and Beam only for remote paths."""
