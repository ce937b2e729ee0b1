"""Widgets of the main screen: header, summary, target table, log, invariants, note."""
