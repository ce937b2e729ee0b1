"""Reading and writing the ledger's YAML: a strict loader, a fast path for the one-line
targets the emitter writes (so 10,000 targets load in tens of milliseconds instead of
seconds), a canonical emitter for new documents, and the splice that writes a change
into an existing document without touching anything else."""

from engine.codec.canonical import emit_document
from engine.codec.document import Parsed, parse_document
from engine.codec.splice import Change, splice

__all__ = ["Change", "Parsed", "emit_document", "parse_document", "splice"]
