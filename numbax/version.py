"""numbax's version, in its own module so that any layer can name it."""

__version__ = "0.1.0"
