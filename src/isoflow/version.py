"""isoflow's version, on its own so that the lowest modules can name it without importing the package's root (which
offers the losses, a tier above them)."""

__version__ = "0.1.0"
