"""What the gateway's fuzzers share: byte mutations and a bounded run of worker threads that watches the gateway."""
import threading
import time

# Numbers and tokens that break parsers: overflows, negatives, separators, NUL, high bytes, a huge field.
INTERESTING = [b"0", b"-1", b"4294967296", b"99999999999999999999", b"\x00", b"\xff", b"\r", b"\n", b"\r\n", b":",
               b" ", b"chunked", b"\x80\x80", b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"a" * 70000,
               b"Transfer-Encoding: chunked\r\n", b"Content-Length: 3\r\n"]
NUMBERS = INTERESTING[:4]


def mutate(rnd, data, interesting=INTERESTING):
    """One to six random edits: bit flips, random bytes, cuts, splices, tokens, numbers replaced."""
    data = bytearray(data)
    for _ in range(rnd.randint(1, 6)):
        if not data:
            data += b"x"
        i = rnd.randrange(len(data))
        op = rnd.randint(0, 7)
        if op == 0:
            data[i] ^= 1 << rnd.randrange(8)
        elif op == 1:
            data[i] = rnd.randrange(256)
        elif op == 2:
            del data[i:i + rnd.randint(1, 16)]
        elif op == 3:
            data[i:i] = rnd.choice(interesting)
        elif op == 4:
            j = rnd.randrange(len(data))
            data[i:i] = data[j:j + rnd.randint(1, 64)]
        elif op == 5:
            data = data[:i]
        elif op == 6:
            k = i
            while k < len(data) and 48 <= data[k] <= 57:
                k += 1
            data[i:k] = rnd.choice(NUMBERS)
        else:
            data[i:i] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 9)))
    return bytes(data)


class BoundedRun:
    """Hands out at most `cases` cases until `deadline` seconds have passed to `workers` threads, and stops them all
    once the gateway's process (`pid`) is gone. A worker's own exception is kept in `harness_errors` (and should fail
    the run) instead of ending its thread unseen."""

    def __init__(self, pid, cases, deadline, workers):
        self.pid, self.limit, self.workers = pid, cases, workers
        self.deadline = time.monotonic() + deadline
        self.lock = threading.Lock()
        self.taken = 0
        self.dead = False
        self.harness_errors = []

    def alive(self):
        try:
            with open(f"/proc/{self.pid}/stat") as stat:
                return stat.read().rsplit(") ", 1)[1][0] not in "ZX"
        except (FileNotFoundError, IndexError):
            return False

    def take(self):
        """Whether a worker may run one more case."""
        with self.lock:
            if self.dead or self.taken >= self.limit or time.monotonic() > self.deadline:
                return False
            self.taken += 1
            return True

    def check(self):
        """Called after each case: stops the run when the gateway died."""
        if not self.alive():
            with self.lock:
                self.dead = True

    def run(self, worker):
        """Runs `worker(index)` on every thread; returns the seconds taken."""
        started = time.monotonic()

        def guarded(index):
            try:
                worker(index)
            except Exception as error:
                with self.lock:
                    self.harness_errors.append(repr(error)[:200])

        threads = [threading.Thread(target=guarded, args=(i,)) for i in range(self.workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return round(time.monotonic() - started, 1)
