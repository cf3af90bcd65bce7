"""A crasher with a realistic heap: a Python process full of objects that aborts.

    python3 pyheap_crasher.py --mib N [--ready-fd FD]

Builds a dict of records (str keys; values mixing str, int, float, list, tuple and small dicts,
made from a word list so strings repeat like real data) until the process's resident memory
reaches N MiB, writes one byte to FD, then calls os.abort() (SIGABRT, core dumped).
The content is seeded, so every run with the same N builds the same heap.
"""

import argparse
import os
import random

WORDS = (
    "alpha beta gamma delta error warning request response user session token cache index "
    "value config path host port timeout retry buffer socket stream record field table query "
    "result status pending complete failed memory thread worker queue event handler").split()


def rss_mib():
    """Resident set size of this process in MiB (from /proc/self/statm)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


def make_record(rng, i):
    """One heap record, shaped like a parsed log or JSON object."""
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
    return {
        "id": i,
        "name": f"{rng.choice(WORDS)}-{i}",
        "text": text,
        "score": rng.random() * 1000,
        "tags": [rng.choice(WORDS) for _ in range(rng.randint(1, 6))],
        "counts": [rng.randint(0, 1 << 20) for _ in range(rng.randint(2, 10))],
        "pos": (rng.randint(0, 4096), rng.randint(0, 4096)),
    }


def build_heap(mib):
    """Returns a dict whose objects bring the process to about `mib` MiB resident."""
    rng = random.Random(42)
    heap = {}
    i = 0
    while True:
        for _ in range(10000):
            heap[f"key:{i}"] = make_record(rng, i)
            i += 1
        if rss_mib() >= mib:
            return heap


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, required=True, help="resident memory to reach, MiB")
    parser.add_argument("--ready-fd", type=int, default=-1, help="fd to write one byte to before aborting")
    args = parser.parse_args()
    heap = build_heap(args.mib)
    if args.ready_fd >= 0:
        os.write(args.ready_fd, b"r")
    os.abort()
    return heap  # not reached; keeps the heap alive until the abort


if __name__ == "__main__":
    main()
