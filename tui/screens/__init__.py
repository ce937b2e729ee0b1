"""Screens and modals: main screen, approval, reject/reason prompt, note editor, detail, help, error."""
