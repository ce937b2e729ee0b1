"""The `handoff` command line (engine side; no Textual, no Rich)."""
