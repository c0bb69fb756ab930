"""The handout as one assignment's students get it (a bundle's handout.md) has no section the
bundle cut empty: every heading has text under it, and no sentence that announces a list, a
table or an example (ending with ":") is followed by nothing but the next heading or paragraph.
A section written as per-assignment blocks (<!-- dtk:only N -->) that forgot an assignment shows
up as one of these. And every heading has a blank line before it: without one, some Markdown
readers take it for the end of the paragraph above (a text ending right before a block's
<!-- dtk:end --> marker, whose heading follows the markers, loses it in the bundle).

usage: check_handout_sections.py HANDOUT.md      (exit 1 and one line per problem)
"""
import re
import sys


def is_heading(line):
    return re.match(r"#+ ", line) is not None


def prose_lines(lines):
    """(number, line) of every line outside the fenced code blocks (the fences left out)."""
    in_code = False
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code:
            yield number, line


def problems_of(lines):
    problems = []
    for number, line in prose_lines(lines):
        if is_heading(line) and number > 1 and lines[number - 2].strip():
            problems.append("line %d: %s has no blank line before it" % (number, line.strip()))
    heading, text = None, 0
    for number, line in enumerate(lines + ["# (end)"], 1):
        if is_heading(line):
            if heading and not text:
                problems.append("line %d: %s has no text under it" % heading)
            heading, text = (number, line.strip()), 0
        elif line.strip():
            text += 1
    # A line ending with ":" must be followed (after blank lines) by what it announces: a code
    # block, a table, a list, a figure or an indented block, not by a heading or new prose.
    for number, line in prose_lines(lines):
        ends_paragraph = number == len(lines) or not lines[number].strip()
        if not ends_paragraph or not line.rstrip().endswith(":") or line.startswith(("    ", "|")):
            continue
        following = next((l for l in lines[number:] if l.strip()), "# (end)")
        if is_heading(following) or not re.match(r"(    |\t| *\|| *```| *[-*] | *[0-9]+\. |!\[|<!--)", following):
            problems.append("line %d ends with ':' and nothing follows it: %s" % (number, line.strip()))
    return problems


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    found = problems_of(open(sys.argv[1], encoding="utf-8").read().split("\n"))
    for problem in found:
        print("    " + problem)
    sys.exit(1 if found else 0)
