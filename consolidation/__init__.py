"""The memory consolidation service: decay, creative associations, clustering and forgetting for agent memory."""

__version__ = "0.1.0"
