"""This machine: processes by pid, per-user state folders, and the failpoints tests freeze a process at."""
