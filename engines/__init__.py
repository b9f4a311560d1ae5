"""Spark and Flink for the mine job, started here from the project's own files: ``engine`` (what
an engine is: its config, its state while up, the Beam flags it gives a job), ``maven`` (Beam's
Java runner libraries), ``spark`` and ``flink`` (each one's jars and processes), ``services``
(background processes by pid) and ``errors``; ``python -m engines`` (docs/cluster.md)."""
