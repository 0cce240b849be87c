"""Errors shared across isoflow's data and model modules."""


class DataFormatError(ValueError):
    """A source file does not have the structure its loader expects (the message names the file and the fix)."""


def read_json(path, *, missing, invalid):
    """The JSON object in ``path``, or one error naming the file and the fix: ``missing()`` when there is no file,
    ``invalid(exc)`` when it is not JSON (each returns the exception to raise: the caller's kind, the caller's fix)."""
    import json
    from pathlib import Path

    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise missing() from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise invalid(exc) from exc
