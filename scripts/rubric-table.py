#!/usr/bin/env python3
"""A part's rubric as the handout shows it: a Markdown table with one row per rubric item and one
column per function, each cell the points the item is worth (the manifest's rule: the part's
points x the item's weight / the sum of the weights of the part's items).

  scripts/rubric-table.py MANIFEST PART                 print the table
  scripts/rubric-table.py MANIFEST PART --check FILE    exit 1 unless FILE holds it, verbatim

The manifest is the one source: handout.md's table of Part 7 is this script's output, and the
kit test kit_handout_rubric runs --check, so a changed weight or item fails until the handout
is regenerated.
"""
import json
import sys


def points_text(points):
    return f"{points:g}"


def rubric_table(manifest, part_number):
    part = next((p for p in manifest["parts"] if p["part"] == part_number), None)
    if part is None:
        sys.exit(f"rubric-table.py: the manifest has no part {part_number}")
    total_weight = sum(item["weight"] for test in part["tests"] for item in test["rubric"])
    functions = [test["function"] for test in part["tests"]]
    points = {}  # (item, function) -> points
    place = {}  # item -> how far down a rubric it comes first (0 = at the top, 1 = past the end)
    for test in part["tests"]:
        for position, item in enumerate(test["rubric"]):
            name = item["item"]
            points[name, test["function"]] = part["points"] * item["weight"] / total_weight
            place[name] = min(place.get(name, 1), position / len(test["rubric"]))
    # Rows in rubric order, like items of different functions side by side.
    items = sorted(place, key=lambda name: place[name])
    lines = ["| item | " + " | ".join(f"`{f}`" for f in functions) + " |",
             "|---|" + "---:|" * len(functions)]
    for item in items:
        cells = [points_text(points[item, f]) if (item, f) in points else "—" for f in functions]
        lines.append(f"| {item} | " + " | ".join(cells) + " |")
    totals = [sum(v for (i, f), v in points.items() if f == function) for function in functions]
    lines.append("| **all of the function** | " +
                 " | ".join(f"**{points_text(t)}**" for t in totals) + " |")
    return "\n".join(lines) + "\n"


def main(argv):
    if len(argv) not in (3, 5) or (len(argv) == 5 and argv[3] != "--check"):
        sys.exit(__doc__.strip())
    with open(argv[1], encoding="utf-8") as file:
        table = rubric_table(json.load(file), int(argv[2]))
    if len(argv) == 3:
        sys.stdout.write(table)
        return 0
    with open(argv[4], encoding="utf-8") as file:
        if table in file.read():
            return 0
    sys.stderr.write(f"{argv[4]} does not hold Part {argv[2]}'s rubric table as {argv[1]} gives "
                     f"it; replace the table there with the output of\n  scripts/rubric-table.py "
                     f"{argv[1]} {argv[2]}\nwhich is:\n{table}")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
