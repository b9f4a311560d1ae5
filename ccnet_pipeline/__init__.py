"""The corpus pipeline on Apache Beam: ``python -m ccnet_pipeline mine|sample``.

A thin layer of labelled composite PTransforms (``transforms``) over the pure functions of
``lid`` and ``filters``; the WET reader (``wet``) and the sample generator (``sample``) are
plain Python."""
