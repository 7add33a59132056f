"""hippo's version, in a module of its own so that a layer can name it without importing the engine."""

__version__ = "0.1.0"
