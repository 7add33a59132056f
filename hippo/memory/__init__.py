"""The engine: build, recall, retrieve."""

from hippo.memory.engine import Memory

__all__ = ["Memory"]
