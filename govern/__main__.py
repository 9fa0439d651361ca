"""``python -m govern`` runs the CLI."""

from govern.cli import program

program()
