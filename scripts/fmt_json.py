#!/usr/bin/env python3
"""Formats JSON files for reading: a value that fits on its line stays on one line (110 columns),
larger objects and arrays put one member per line. Usage: scripts/fmt_json.py FILE…"""

import json
import sys

WIDTH = 110


def render(value, indent: int) -> str:
    flat = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    if len(flat) + indent <= WIDTH or not isinstance(value, (dict, list)) or not value:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            key = json.dumps(k, ensure_ascii=False)
            flat = json.dumps(v, ensure_ascii=False, separators=(", ", ": "))
            if len(pad) + len(key) + 2 + len(flat) <= WIDTH:
                items.append(f"{pad}{key}: {flat}")
            else:
                items.append(f"{pad}{key}: {render(v, indent + 2)}")
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + render(v, indent + 2) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def main() -> None:
    for path in sys.argv[1:]:
        with open(path) as f:
            data = json.load(f)
        with open(path, "w") as f:
            f.write(render(data, 0) + "\n")


if __name__ == "__main__":
    main()
