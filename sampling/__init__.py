"""Language sampling for multilingual pretraining (alpha-smoothed sampler). Not built yet: see the issues."""
