"""Ledgers whose text carries a terminal escape (an OSC 0 that would set the window's title),
shared by the tests that check such text never reaches a terminal raw (tests/tui, tests/e2e)."""

OSC = "\x1b]0;pwned\x07"

# A step whose template cannot be rendered (no {nope}); its name carries an OSC 0.
UNRENDERABLE = '''\
task: t
targets:
  a: {state: queued}
runbook:
  steps:
    - {name: "go\\e]0;pwned\\a", from: queued, to: done, reversible: true, run: ["echo", "{nope}"]}
'''

# A runbook state with an OSC 0 in its name (valid: `handoff check` says ok).
STATE = '''\
task: t
targets:
  a: {state: "held\\e]0;pwned\\a"}
runbook:
  states: ["held\\e]0;pwned\\a"]
  steps:
    - {name: go, from: "held\\e]0;pwned\\a", to: done, reversible: false, run: ["echo"]}
'''
