#!/usr/bin/env python3
"""Turn the output of Debian's `bible` (package bible-kjv) into the training corpus.

Input:  `bible -m 8192 gen1:1-rev22:21 > corpus_raw.txt` (chapter headings like "Genesis 1",
        verses starting with "  N " and wrapped at ~80 columns).
Output: one verse per line with the verse number removed; each chapter starts with its
        heading line ("Genesis 1") and chapters are separated by a blank line.

Usage: python3 scripts/train/prepare_corpus.py .train/corpus_raw.txt .train/corpus.txt
"""
import re
import sys

VERSE = re.compile(r"^\s+(\d+)\s+(.*)$")


def main(src: str, dst: str) -> None:
    chapters = []  # list of (heading, [verses])
    cur = None
    with open(src, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n").rstrip()
            if not line.strip():
                continue
            m = VERSE.match(line)
            if m:
                cur[1].append(m.group(2).strip())
            elif line.startswith(" "):
                raise SystemExit(f"unexpected indented line: {line!r}")
            elif cur is not None and cur[1] and not re.match(r"^(\d )?[A-Z][A-Za-z ]+ \d+$", line):
                # continuation of a wrapped verse
                cur[1][-1] += " " + line.strip()
            else:
                cur = (line.strip(), [])
                chapters.append(cur)
    nverses = sum(len(v) for _, v in chapters)
    with open(dst, "w", encoding="utf-8") as f:
        f.write("\n\n".join(h + "\n" + "\n".join(v) for h, v in chapters) + "\n")
    print(f"{len(chapters)} chapters, {nverses} verses -> {dst}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
