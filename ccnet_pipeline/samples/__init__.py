"""Inputs the project generates for itself, offline: the embedded multilingual WET sample
(``embedded``), the near-duplicate test set (``near_duplicates``) and the WET writer both use
(``wet_writer``)."""
