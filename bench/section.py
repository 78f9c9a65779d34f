#!/usr/bin/env python3
"""Puts stdin into docs/performance.md as the section marked `<!-- NAME:start -->` ...
`<!-- NAME:end -->`, replacing the old one or adding it at the end. Usage: section.py NAME"""

import sys
from pathlib import Path

name = sys.argv[1]
doc = Path(__file__).resolve().parent.parent / "docs" / "performance.md"
text = doc.read_text() if doc.exists() else "# Performance\n"
start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
block = f"{start}\n{sys.stdin.read().strip()}\n{end}"
if start in text and end in text:
    head, rest = text.split(start, 1)
    text = head + block + rest.split(end, 1)[1]
else:
    text = text.rstrip("\n") + "\n\n" + block + "\n"
doc.write_text(text)
