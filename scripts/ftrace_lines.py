"""Read a tracefs text trace (plain or .xz): one regex match per event line."""
import lzma
import re

# TASK-PID [CPU] FLAGS TIMESTAMP: EVENT: FIELDS
LINE = re.compile(r"\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)")


def matches(path):
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        for line in f:
            m = LINE.match(line)
            if m:
                yield m
