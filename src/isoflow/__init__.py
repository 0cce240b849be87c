"""isoflow: how the geometry of embedding spaces changes when embeddings are optimised for classification."""

__version__ = "0.1.0"
