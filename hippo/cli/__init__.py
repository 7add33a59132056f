"""The ``hippo`` command (``hippo.cli.main``); ``hippo keys`` and ``hippo serve``/``hippo mcp`` are
``hippo.cli.keys`` and ``hippo.cli.serve``."""

from hippo.cli.main import app

__all__ = ["app"]
