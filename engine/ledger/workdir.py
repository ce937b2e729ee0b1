"""The `{ledger_dir}` of a database ledger (a module of its own: the hook's fast path imports it)."""


class WorkingDir(str):
    """The working folder of the process, standing for `{ledger_dir}` of a database ledger
    (it has no file of its own to stand beside). Commands run there; an approval's hash
    (engine.ledger.render.approval_hash) leaves it unrendered, since approver and runner differ."""
