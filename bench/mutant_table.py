"""The critical mutations bench/mutants.py applies, one at a time: the fences on a spawn,
the approvals' witnesses, the never-twice marks, the lease, the people-only lock.

Each row: an id, the file (as it is today; when the lead moves it, bench/mutants.py finds
the file by its snippet, but update the path here), the exact source text to replace (it
must occur exactly once in that file), what replaces it, and the tests that must catch it.
A snippet the source no longer holds makes the mutant "stale": tests/unit/test_mutant_table.py
fails at once, so the table keeps up with the code.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    id: str
    path: str
    find: str
    replace: str
    tests: tuple[str, ...]
    what: str


F = "tests/unit/test_fences_one_by_one.py::"
I = "tests/unit/test_fences_intent.py::"
W = "tests/unit/test_approval_witness.py::"
STEPS, AUTH = "engine/session/steps.py", "engine/approvals/authority.py"

MUTANTS: tuple[Mutant, ...] = (
    # -- the spawn's fence (engine.session.steps.fenced_launch, under the store's lock) --
    Mutant("spawn-lease", STEPS,
           "if ledger.session is None or ledger.session.id != s.sid:\n            holder =",
           "if False:\n            holder =",
           (F + "test_another_holders_lease_fences_the_spawn",),
           "the lease-holder check before a spawn"),
    Mutant("spawn-token", STEPS,
           "if t is None or t.in_flight is None or t.in_flight.token != it.token:\n            now =",
           "if t is None or t.in_flight is None:\n            now =",
           (F + "test_an_intent_token_that_is_no_longer_ours_fences_the_spawn",),
           "the intent-token check before a spawn"),
    Mutant("spawn-attempt", STEPS,
           "if (t.in_flight.attempt or 1) != it.attempt:",
           "if False:",
           (F + "test_a_later_attempt_fences_an_earlier_one",
            "tests/unit/test_temporal_core.py::test_the_spawn_itself_is_fenced_on_the_attempt"),
           "the attempt check before a spawn (Temporal retries on another worker)"),
    Mutant("spawn-heartbeat", STEPS,
           "why = s.beat.can_act() if s.beat is not None else None",
           "why = None",
           (F + "test_a_holder_whose_heartbeat_was_replaced_starts_nothing",),
           "a holder that cannot beat (or was taken over) spawns nothing"),
    Mutant("spawn-approval", STEPS,
           "why = authority.launch_refusal(s.handle.journal, ledger, name, it.decision.approval)",
           "why = None",
           (F + "test_an_approval_taken_off_the_target_after_the_intent_fences_the_spawn",
            W + "test_the_spawn_itself_checks_the_witness_again"),
           "the approval checked again at the spawn itself"),
    Mutant("spawn-approval-gone", AUTH,
           "    if not mine:\n        return f\"the approval of {approval.step} by {approval.by} at {approval.at} is no longer in the ledger\"\n",
           "    mine = mine or [approval]\n",
           (F + "test_an_approval_taken_off_the_target_after_the_intent_fences_the_spawn",),
           "an approval withdrawn after the intent authorises no spawn"),
    Mutant("file-fence-rollback", "engine/store/file.py",
           "            self._refuse_regressions(snap, False, False)\n            check(snap.ledger)",
           "            check(snap.ledger)",
           (F + "test_a_ledger_that_went_back_in_time_under_the_fence_starts_nothing[file]",),
           "the rollback refusal inside the file store's fence"),
    Mutant("pg-fence-rollback", "engine/store/postgres.py",
           "if snap.rollback:  # a row restored from a backup",
           "if False:  # a row restored from a backup",
           (F + "test_a_ledger_that_went_back_in_time_under_the_fence_starts_nothing[postgres]",),
           "the rollback refusal inside the PostgreSQL fence"),
    Mutant("pg-fence-retry", "engine/store/postgres.py",
           "            if not spawned:\n                _, body = self._row(conn, lock=True)",
           "            if True:\n                _, body = self._row(conn, lock=True)",
           ("tests/integration/test_pg_fence_retry.py::test_a_cut_after_the_spawn_never_starts_the_step_again",),
           "a PostgreSQL retry after the spawn never checks and spawns again"),
    # -- the approvals' witnesses ------------------------------------------------------
    Mutant("witness-user", "engine/approvals/witness.py",
           "hash=approval.hash, actor=approval.by,\n                           user=approval.user, at=approval.at)",
           "hash=approval.hash, actor=approval.by,\n                           at=approval.at)",
           (F + "test_an_approval_whose_witness_no_longer_matches_fences_the_spawn",
            W + "test_the_spawn_itself_checks_the_witness_again"),
           "the witness binds the approval's OS user"),
    Mutant("witness-any", "engine/approvals/witness.py",
           "    return journal.last_of(\"approval\"",
           "    return True or journal.last_of(\"approval\"",
           (I + "test_an_approval_without_its_witness_gets_no_intent",
            W + "test_a_hand_written_approval_is_refused_and_nothing_spawns"),
           "an approval without its journal record never authorises"),
    Mutant("intent-witness", STEPS,
           "refused = authority.check_in_fence(s.handle.journal, ledger, name, fresh, decision.approval, s.ledger_arg,\n"
           "                                               used_by=s.identity)",
           "refused = None",
           (I + "test_an_approval_without_its_witness_gets_no_intent",
            W + "test_a_hand_written_approval_is_refused_and_nothing_spawns"),
           "the witness (and verified identity) checked in the intent's transaction"),
    Mutant("guard-hash", "engine/ledger/guard.py",
           "    have = standing(ledger, name, step, digest)\n",
           "    have = [a for a in target.approvals if a.step == step.name and not a.used_at]\n",
           ("tests/unit/test_guard.py::test_approval_allows_exactly_the_approved_command_and_checkpoint",
            "tests/unit/test_never_twice.py::test_an_approval_does_not_follow_a_ledger_copied_to_another_folder"),
           "the guard takes only an approval bound to the command and checkpoint as they are now"),
    Mutant("policy-hash", "engine/approvals/policy.py",
           "and not approval.used_at and approval.hash == digest and",
           "and not approval.used_at and",
           ("tests/unit/test_guard.py::test_approval_allows_exactly_the_approved_command_and_checkpoint",
            "tests/unit/test_never_twice.py::test_an_approval_does_not_follow_a_ledger_copied_to_another_folder"),
           "an approval binds the hash of the command and checkpoint"),
    # -- never twice -----------------------------------------------------------------------
    Mutant("intent-journal-used", STEPS,
           "used = used_before(s.handle.journal, name, decision.approval)\n            if used is not None:",
           "used = used_before(s.handle.journal, name, decision.approval)\n            if False:",
           (I + "test_the_journal_alone_refuses_an_approval_used_before",),
           "the journal's step_start under an approval refuses a second use"),
    Mutant("highwater-spent", "engine/store/highwater.py",
           "        if starting and spent_key(name, approval) in known:",
           "        if False:",
           ("tests/unit/test_restore_backup.py::test_a_restored_folder_is_refused_and_the_spent_approval_never_runs_again",),
           "the spent approvals outside the folder refuse a second use after a restore"),
    Mutant("highwater-behind", "engine/store/highwater.py",
           "    if revision < mark:",
           "    if False:",
           ("tests/unit/test_restore_backup.py::test_a_restored_folder_is_refused_and_the_spent_approval_never_runs_again",),
           "the high-water mark sees a whole-folder restore"),
    Mutant("probe-first", "engine/session/already.py",
           "    if step.reversible or not step.verify or s.dry_run:\n        return False",
           "    if True:\n        return False",
           (I + "test_a_probe_that_proves_the_link_happened_starts_nothing",
            "tests/unit/test_probe_first.py::test_a_step_whose_probe_proves_it_happened_is_recorded_not_run"),
           "the already-ran probe before an irreversible run"),
    Mutant("temporal-started-once", "engine/temporal/core.py",
           "if actor.handle.journal.last_of(\"step_start\", target=name, token=token) is not None:",
           "if False:",
           ("tests/unit/test_temporal_core.py::test_an_irreversible_intent_is_started_once",),
           "a redelivered Temporal activity never starts an irreversible intent again"),
    Mutant("temporal-claim-attempt", "engine/temporal/core.py",
           "if (t.in_flight.attempt or 1) > attempt:",
           "if False:",
           ("tests/unit/test_temporal_core.py::test_a_later_attempt_fences_an_earlier_one",),
           "a step activity of an earlier attempt never claims the intent"),
    # -- the intent's transaction and the record -------------------------------------------
    Mutant("intent-lease", STEPS,
           "if ledger.session is None or ledger.session.id != s.sid:\n            raise NoChange(",
           "if False:\n            raise NoChange(",
           (I + "test_no_intent_is_written_by_a_session_that_lost_the_lease",),
           "no intent is written without the lease"),
    Mutant("intent-in-flight", "engine/ledger/guard.py",
           "    if target.in_flight is not None:\n        return Decision(False",
           "    if False:\n        return Decision(False",
           (I + "test_a_target_with_a_step_in_flight_gets_no_second_intent",
            "tests/unit/test_guard.py::test_in_flight_target_is_refused"),
           "one intent per target"),
    Mutant("record-own-intent", STEPS,
           "if t is None or t.in_flight is None or getattr(t.in_flight, \"token\", None) != it.token:",
           "if t is None:",
           (I + "test_a_step_that_ends_after_a_humans_decision_never_records_over_it",),
           "a finished step records only over its own intent"),
    # -- the lease -------------------------------------------------------------------------
    Mutant("lease-live-holder", "engine/lease/leasing.py",
           "if state.status == \"live\" and ledger.session is not None and ledger.session.id != lease.id:",
           "if False:",
           (I + "test_a_second_holder_never_takes_a_live_lease",),
           "a live lease is never taken"),
    Mutant("lease-binding-pid", "engine/lease/binding.py",
           "        same = (presented.pid == held.pid and presented.pid_start == held.pid_start\n"
           "                and presented.boot_id == held.boot_id)",
           "        same = True",
           ("tests/unit/test_session_id_copy.py::test_a_built_in_sessions_id_presented_by_another_process_does_not_renew_its_lease",),
           "a copied session id does not renew a built-in session's lease"),
    Mutant("lease-binding-nonce", "engine/lease/binding.py",
           "        if not held.bind or held.bind != presented.bind:",
           "        if False:",
           ("tests/unit/test_session_id_copy.py::test_a_claude_code_sessions_id_presented_without_its_secret_does_not_renew_its_lease",),
           "a Claude Code session's id without its secret does not renew its lease"),
    Mutant("hook-holds-here", "engine/lease/binding.py",
           "            and held.bind is not None and held.bind == session_bind(session_id, create=False))",
           "            )",
           ("tests/unit/test_session_id_copy.py::test_a_hook_presenting_a_claude_code_sessions_id_without_its_secret_is_denied",),
           "a hook presenting a Claude Code session's id without its secret is not its holder"),
    # -- people only -----------------------------------------------------------------------
    Mutant("people-refusal", "engine/approvals/refusal.py",
           "    if caller is None:\n        return\n",
           "    if True:\n        return\n",
           ("tests/unit/test_people_only.py::test_each_people_only_command_is_refused_in_a_claude_code_session",),
           "the engine's own lock on people-only operations"),
    Mutant("people-step-process", "engine/approvals/people.py",
           "    if holder:\n        return f\"a process the engine started for {holder}\"",
           "    if False:\n        return f\"a process the engine started for {holder}\"",
           ("tests/unit/test_people_only.py::test_a_step_process_the_engine_spawned_cannot_approve",),
           "a step process the engine spawned is an agent (it cannot approve)"),
    Mutant("hook-judge-people", "engine/hooks/judge.py",
           "    op = people_only_words(command, args)\n",
           "    op = None\n",
           ("tests/unit/test_hook_spellings.py::test_people_only_operations_are_denied_in_every_spelling",),
           "the hook denies people-only operations in every spelling"),
)
