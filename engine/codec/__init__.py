"""Reading and writing the ledger's YAML: a strict loader, a canonical emitter, and a
fast path for the one-line targets the emitter writes (so 10,000 targets load in
tens of milliseconds instead of seconds)."""

from engine.codec.document import Parsed, emit_document, parse_document

__all__ = ["Parsed", "emit_document", "parse_document"]
