"""The ledger itself: its model, invariants, the guard, approval hashes and rendering, what people do to it, who may write it."""
