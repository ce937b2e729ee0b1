"""This machine: processes by pid, per-user state folders, reading a file up to a limit, and the failpoints tests freeze a process at."""
