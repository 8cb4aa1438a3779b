"""The memory consolidation service: decay, creative associations, clustering and forgetting for agent memory."""

__version__ = "0.6.0"

# The five tasks, in the order a full run takes them (here, so the command line can name them without loading
# the settings machinery).
TASK_NAMES = ("decay", "dedup", "creative", "cluster", "forget")
