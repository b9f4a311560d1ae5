"""The one error of the engines package."""


class EngineError(ValueError):
    """Something an engine needs is missing or did not start: printed as one line, no traceback."""
