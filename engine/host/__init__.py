"""This machine: processes by pid, a terminal that can go away (console), per-user state folders, reading a file up to a limit, and the failpoints tests freeze a process at."""
