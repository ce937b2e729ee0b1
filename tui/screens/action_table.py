"""The main screen's one table of actions: every key, `:` command, palette entry and help line.

Row order is the footer's order: what does not fit at 80 columns drops from the end (help
and quit stay). `mutating` rows are never offered in read-only mode and are refused there
before anything is asked; `while_broken` rows still work while the file does not parse.
Keys that must beat a text box (`/`, `:`, Esc, Enter) are priority keys: "/db-18" typed in
one burst filters instead of running `b` on the table, and a key typed right behind Esc or
Enter is a key, not text (`MainScreen.check_action` lets keys through to a focused box).
"""

from __future__ import annotations

from tui.registry import Action, ActionTable
from tui.screens.actions import LedgerActions as L
from tui.screens.batch_actions import BatchActions as B
from tui.screens.view_actions import ViewActions as V

ACTIONS = ActionTable([
    Action("approve", L.do_approve, "Approve", "Approve the selected target's awaiting step: shows the exact command first",
           key="a", mutating=True, command="approve", arg="TARGET", completes="awaiting"),
    Action("filter", V.do_filter, "Filter", "Filter: regex words, state:failed, !negated, a|b, is:attention; shows the match count",
           key="slash", key_display="/", priority=True),
    Action("command_line", V.do_command_line, "Command", "Command line: :approve NAME, :filter TEXT, :sort KEY, :theme, :NAME, :q",
           key="colon", key_display=":", priority=True),
    Action("toggle_side", V.do_toggle_side, "Log", "Show or hide the session log and invariants pane",
           key="l", command="toggle-side"),
    Action("help", V.do_help, "Help", "Every key and command", key="question_mark", key_display="?",
           command="help", aliases=("h",)),
    Action("quit", V.do_quit, "Quit", "Quit handoff-tui (a running session keeps running; a demo ends)",
           key="q", command="quit", aliases=("q", "q!")),
    Action("reject", L.do_reject, "Reject", "Reject the selected target's awaiting step, with a reason (blocks it)",
           key="x", mutating=True, command="reject", arg="TARGET", completes="awaiting"),
    Action("edit_note", L.do_edit_note, "Edit note", "Edit the handoff note (detects edits made underneath)",
           key="e", mutating=True, command="edit-note"),
    Action("pause", L.do_pause, "Pause", "Pause the ledger, with a reason: sessions stop before their next step",
           key="p", mutating=True, command="pause"),
    Action("unpause", L.do_unpause, "Unpause", "Unpause the ledger (asks first)",
           key="p", mutating=True, command="unpause"),
    Action("unapprove", L.do_unapprove, "Unapprove", "Withdraw the selected target's unused approval (the next session asks again)",
           key="U", show=False, mutating=True, command="unapprove", arg="[TARGET]", completes="targets"),
    Action("toggle_note", V.do_toggle_note, "Note", "Show or hide the handoff note panel",
           key="n", show=False, command="toggle-note"),
    Action("ack_note", L.do_ack_note, "Ack note", "Acknowledge the handoff note as the incoming operator (journaled)",
           key="N", show=False, mutating=True, command="ack-note"),
    Action("retry", L.do_retry, "Retry", "Retry the selected failed target (asks first in production)",
           key="r", show=False, mutating=True, command="retry", arg="[TARGET]", completes="targets"),
    Action("block", L.do_block, "Block", "Block the selected target, with a reason",
           key="b", show=False, mutating=True, command="block", arg="[TARGET]", completes="targets"),
    Action("unblock", L.do_unblock, "Unblock", "Unblock the selected target into a chosen state, with a reason",
           key="u", show=False, mutating=True, command="unblock", arg="[TARGET]", completes="targets"),
    Action("start_session", L.do_start_session, "Start session",
           "Start an agent session (handoff resume) as its own detached process",
           key="s", show=False, mutating=True, command="start-session"),
    Action("request_stop", L.do_request_stop, "Stop session", "Ask the running session to stop after its current step",
           key="S", show=False, mutating=True, while_broken=True, command="request-stop", aliases=("stop",)),
    Action("sort", V.do_sort, "Sort", "Cycle the sort: ledger order, state, name, age (`:sort age desc` reverses)",
           key="o", show=False, command="sort", arg="KEY", completes="sorts"),
    Action("toggle_follow", V.do_toggle_follow, "Follow log", "Follow the end of the session log, or stop following to scroll back",
           key="F", show=False, command="toggle-follow"),
    Action("reload", V.do_reload, "Reload", "Re-read the ledger and the journal now", key="R", show=False, command="reload"),
    Action("cycle_theme", V.do_cycle_theme, "Theme", "Switch to the next theme (dark, light, high contrast)",
           key="t", show=False, command="cycle-theme"),
    Action("copy_name", V.do_copy_name, "Copy name",
           "Copy the selected target's name to the clipboard (OSC 52, works over SSH)",
           key="y", show=False, command="copy-name", arg="[TARGET]", completes="targets"),
    Action("copy_command", V.do_copy_command, "Copy command",
           "Copy the command that would run next on the selected target (OSC 52)",
           key="Y", show=False, command="copy-command", arg="[TARGET]", completes="targets"),
    Action("timeline", V.do_timeline, "Timeline",
           "The journal over time, page by page, and every target as it was at any revision (read-only)",
           key="T", show=False, command="timeline", arg="[TARGET]", completes="targets"),
    # Marks serve only a batch approval, so read-only mode offers none of them (`mutating`).
    Action("toggle_mark", B.do_toggle_mark, "Mark", "Mark or unmark the selected target for a batch approval (A), and move down",
           key="space", key_display="space", show=False, mutating=True, command="toggle-mark", arg="[TARGET]",
           completes="awaiting"),
    Action("mark", B.do_mark, "Mark shown", "Mark every shown target awaiting approval (`:mark prod-*,edge-1` those "
           "matching); again when all are marked: clear every mark",
           key="M", show=False, mutating=True, command="mark", arg="TEXT", completes="awaiting"),
    Action("unmark", B.do_unmark, "Unmark", "Unmark the targets matching PATTERN (`:unmark` alone: every mark)",
           mutating=True, command="unmark", arg="TEXT", completes="targets"),
    Action("approve_marked", B.do_approve_marked, "Approve marked",
           "Approve one step on every marked target: shows each command and hash, asks for the step's name and the count",
           key="A", show=False, mutating=True, command="approve-marked"),
    Action("clear_filter", V.do_clear_filter, "Clear filter", "Clear the filter, or close the command line",
           key="escape", show=False, priority=True),
    Action("submit_box", V.do_submit_box, "Done", "Keep the filter, or run the command line",
           key="enter", show=False, priority=True),
    # `:` commands only (no key of their own).
    Action("set_filter", V.do_set_filter, "Filter",
           "show only matching targets: regex words, state:failed, !negated, a|b, is:attention; empty clears",
           command="filter", aliases=("f",), arg="TEXT", completes="states"),
    Action("goto", V.do_goto, "Go to", "move the cursor to TARGET (`:TARGET` does it too)",
           command="goto", aliases=("g",), arg="TARGET", completes="targets"),
    Action("theme", V.do_theme, "Theme", "switch theme (the next one, or NAME)", command="theme", arg="[NAME]",
           completes="themes"),
    Action("accept_removal", L.do_accept_removal, "Accept removal",
           "The targets missing from the file were removed on purpose", mutating=True, command="accept-removal"),
    Action("accept_rollback", L.do_accept_rollback, "Accept rollback", "The older file is the right one",
           mutating=True, command="accept-rollback"),
])
