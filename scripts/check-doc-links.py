#!/usr/bin/env python3
"""Checks that every relative link of the kit's documentation resolves.

Reads README.md and every Markdown file under docs/ (or the files given), and for each link or
image, [text](target) or ![text](target), whose target is not a URL: the file must exist
(relative to the Markdown file) and a #anchor must be the slug of one of the target's headings,
as GitHub makes it (lower case, punctuation dropped, spaces as hyphens, -1, -2, ... for repeats).
Links in code blocks and code spans are not links and are skipped.

usage: scripts/check-doc-links.py KIT_ROOT [FILE.md ...]
Prints each broken link as FILE:LINE: why, and exits 1 when there is one.
"""
import pathlib
import re
import sys

LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
HEADING = re.compile(r'^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$')
FENCE = re.compile(r'^ {0,3}(```|~~~)')
CODE_SPAN = re.compile(r'(`+)(?:(?!\1).)+?\1', re.S)


def prose_lines(text):
    """The file's lines, those inside fenced code blocks blanked (line numbers kept)."""
    lines, fence = [], None
    for line in text.split('\n'):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)
            lines.append('')
        elif fence is not None:
            if line.strip().startswith(fence):
                fence = None
            lines.append('')
        else:
            lines.append(line)
    return lines


def slug(heading):
    text = CODE_SPAN.sub(lambda m: m.group(0).strip('`'), heading)
    text = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', text)  # a link's text only
    text = text.lower()
    text = re.sub(r'[^\w\- ]', '', text)
    return text.replace(' ', '-')


def anchors(path, cache={}):
    if path not in cache:
        found, seen = set(), {}
        for line in prose_lines(path.read_text(encoding='utf-8')):
            match = HEADING.match(line)
            if not match:
                continue
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f'{base}-{count}')
        found.update(re.findall(r'<a\s+(?:name|id)="([^"]+)"', path.read_text(encoding='utf-8')))
        cache[path] = found
    return cache[path]


def check(path):
    problems = []
    lines = prose_lines(path.read_text(encoding='utf-8'))
    text = '\n'.join(lines)
    # Code spans may cross lines: blank them over the whole text, keeping the newlines.
    text = CODE_SPAN.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text)
    for match in LINK.finditer(text):
        target = match.group(1)
        line = text.count('\n', 0, match.start()) + 1
        if re.match(r'^[a-z][a-z0-9+.-]*:', target, re.I):
            continue  # a URL (https:, mailto:, ...)
        file_part, _, anchor = target.partition('#')
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.exists():
            problems.append(f'{path}:{line}: {target}: no such file')
            continue
        if anchor and resolved.suffix == '.md' and anchor not in anchors(resolved):
            problems.append(f'{path}:{line}: {target}: {resolved.name} has no heading #{anchor}')
    return problems


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    root = pathlib.Path(argv[1])
    files = [pathlib.Path(f) for f in argv[2:]] or (
        [root / 'README.md'] + sorted((root / 'docs').rglob('*.md')))
    problems = [problem for path in files for problem in check(path)]
    for problem in problems:
        print(problem)
    if problems:
        print(f'check-doc-links: {len(problems)} broken link(s)', file=sys.stderr)
        return 1
    print(f'check-doc-links: every link of {len(files)} files resolves')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
