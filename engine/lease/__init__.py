"""The lease: one module family for its holders, their staleness, taking and keeping it, and binding a session to it."""
