"""The ledger's YAML codec: a strict loader (no aliases, no surprises), a fast reader for the
targets the emitter writes (so 10,000 targets load in tens of milliseconds instead of
seconds), a canonical emitter for new documents (`canonical`), the document model
(`document`), and the splice that writes a change into an existing document without
touching anything else (`splice`).

This package's face imports nothing: its small text helpers (`textsafe`, `timefmt`) are
imported on their own by the hook's fast path, which must not pay for the YAML loader.
"""
