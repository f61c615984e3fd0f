#!/usr/bin/env python3
"""rusage.py OUT_FILE CMD ARGS... : run CMD (no shell), wait for it, then write the CPU time its process tree
used (RUSAGE_CHILDREN: user + system, µs) to OUT_FILE as `child_cpu_us=N wall_s=S`; exit with CMD's status.
Used to get wrk's CPU per request without sampling /proc while it runs (the interpreter's own start-up
is not counted: RUSAGE_CHILDREN covers only waited-for children)."""
import resource
import signal
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    out, cmd = sys.argv[1], sys.argv[2:]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd)
    # pass TERM/INT on to the child so a cleanup that stops us stops it too
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda s, _f: proc.send_signal(s))
    rc = proc.wait()
    wall = time.monotonic() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out, "w") as f:
        f.write(f"child_cpu_us={int((ru.ru_utime + ru.ru_stime) * 1e6)} wall_s={wall:.3f}\n")
    sys.exit(rc if rc >= 0 else 128 - rc)


if __name__ == "__main__":
    main()
