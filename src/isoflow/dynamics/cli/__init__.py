"""The dynamics section's commands, one module each (``add_parser`` and ``run``): ``isoflow`` offers them from here."""
