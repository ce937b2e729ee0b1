"""The record of what happened: the journal and its hash chain, redaction, the review of handoff notes, the auditor's report, time travel."""
