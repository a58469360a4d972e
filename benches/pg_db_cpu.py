#!/usr/bin/env python3
"""The server CPU time of one database's backends while a command runs, the other
databases' left out (on a machine shared with other Postgres users, pg_bench's own server
figure counts every backend). BENCHMARKS.md, round 10.

Usage: benches/pg_db_cpu.py DBNAME COMMAND [ARG ...]

Runs COMMAND (its output passed through), sampling /proc every 20 ms for the processes
titled `postgres: ... DBNAME ...` (the backends of that database: `ps` shows them as
`postgres: 15/main: postgres DBNAME 127.0.0.1(port) ...`), each backend's utime + stime
kept at its last sample (a backend that exits loses at most its last 20 ms); then prints
`db_cpu_s <seconds> backends <n>`. Linux only; clock ticks of 1/100 s.
"""
import os
import subprocess
import sys
import time


def sample(db, seen):
    needle = f" {db} ".encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            if not cmd.startswith(b"postgres:") or needle not in cmd.replace(b"\0", b" "):
                continue
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        # utime, stime: fields 14 and 15 (11 and 12 after the name); starttime 22 (19).
        ticks = int(fields[11]) + int(fields[12])
        key = (pid, fields[19])
        seen[key] = max(seen.get(key, 0), ticks)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    db, cmd = sys.argv[1], sys.argv[2:]
    seen = {}
    child = subprocess.Popen(cmd)
    while child.poll() is None:
        sample(db, seen)
        time.sleep(0.02)
    sample(db, seen)
    print(f"db_cpu_s {sum(seen.values()) / 100:.2f} backends {len(seen)}", flush=True)
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()
