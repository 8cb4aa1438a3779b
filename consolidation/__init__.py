"""The memory consolidation service: decay, creative associations, clustering and forgetting for agent memory."""

__version__ = "0.6.0"

# The tasks, in the order a run takes them (here, so the command line can name them without loading the settings
# machinery). A run that names no task runs the first five: entity hygiene is off until asked for by name or
# given an interval.
TASK_NAMES = ("decay", "dedup", "creative", "cluster", "forget", "entities")
DEFAULT_TASKS = TASK_NAMES[:5]
