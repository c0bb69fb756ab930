"""What the kit's figure scripts share: the opening of a self-contained SVG, with its size, font,
white background, title (as <title> for screen readers and as a bold heading) and grey subtitle
lines below it; and its closing."""
from xml.sax.saxutils import escape


def svg_opening(width, height, title, subtitle):
    """The SVG's first elements, one string each; subtitle: a list of lines. Close with
    "</svg>"."""
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="13">'
           % (width, height, width, height),
           "  <title>%s</title>" % escape(title),
           '  <rect width="%d" height="%d" fill="#ffffff"/>' % (width, height),
           '  <text x="%d" y="24" text-anchor="middle" font-size="15" font-weight="bold">%s</text>'
           % (width // 2, escape(title))]
    for i, line in enumerate(subtitle):
        out.append('  <text x="%d" y="%d" text-anchor="middle" fill="#555555" font-size="12">%s'
                   '</text>' % (width // 2, 44 + 17 * i, escape(line)))
    return out


def svg_text(elements):
    """The SVG whole: `elements` (svg_opening's and what follows, one string each), closed."""
    return "\n".join(elements + ["</svg>"]) + "\n"


def write_svg(path, elements):
    """Writes svg_text(elements) to `path` and prints the path."""
    with open(path, "w") as f:
        f.write(svg_text(elements))
    print(path)
