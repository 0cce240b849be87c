"""Errors shared across isoflow's data and model modules."""


class DataFormatError(ValueError):
    """A source file does not have the structure its loader expects (the message names the file and the fix)."""
