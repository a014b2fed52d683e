"""Reporting layer: the only code (with the CLI) that writes to the terminal."""
