"""`handoff slack` end to end: a real process against a fake Slack on 127.0.0.1."""
