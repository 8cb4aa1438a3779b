"""`python -m consolidation ...`: the command-line interface."""

from .cli import main

main()
