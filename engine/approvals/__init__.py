"""Approvals as facts the engine can check: who may approve (people, never an agent's
process), the witness an approval needs before it authorises a spawn (its own journal
record), verified approvers (`os_user`, `ssh_key`) and approval policies.

- `refusal`: the engine's own refusal of people-only operations in an agent's environment;
- `witness`: the approval's journal record, found through the journal's API;
- `authority`: everything an approval must pass, at approval time and under the fence.
"""
