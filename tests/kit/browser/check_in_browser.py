#!/usr/bin/env python3
"""Kit self-test: what the grader shows people, looked at in a real browser (Debian's chromium,
headless, offline).

  1. A small class (a Gradescope export: the reference twice, a wrong split_train, the starter,
     and a hand-in whose exceptions are HTML, under ids that are HTML too) is graded with
     `dtk-grade --batch --similarity`. Its summary.html, opened from disk:
       - loads nothing from the network (chromium's NetLog of the page's requests) and names no
         resource outside the batch's directory;
       - runs nothing and creates no element from a name or a feedback (no script, img or
         on... attribute anywhere; the title is the grader's; no #pwned);
       - has a histogram per part and of the total, both axes labelled, ten bars whose counts
         add up to the class size, a bar drawn for every count;
       - lists failed tests that are real tests of the hand-ins' results.json, with counts;
       - links every similar pair to a side-by-side page that exists and shows both files;
       - fits a 1280 px and a 375 px wide window (no sideways scrolling, charts scaled down).
  2. Each student's results.json asks Gradescope to show its texts as plain text
     (output_format, test_output_format, test_name_format "text"); rendered that way (escaped,
     white space kept) every output reads exactly as written and the HTML one stays text, while
     the same output taken as HTML would create its elements (the hand-in's attack is real).
  3. The handout's figures (figs/*.svg) each render non-blank.

Screenshots (summary at 1280 and 375 px, a side-by-side page, the feedback as Gradescope would
show it, the figures) are kept in the work directory for a person to look at.

usage: check_in_browser.py <kit source dir> <dtk-grade> <work dir> [<graded batch dir>]
(with a graded batch directory, nothing is graded: that batch's pages are checked)
"""
import csv
import glob
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars", "--force-device-scale-factor=1",
]
WIDTHS = (1280, 375)
PAGE_TITLE = "dtk-grade: assignment 1"
failures = []


def fail(message):
    print("FAIL: " + message)
    failures.append(message)


def chromium(args, work):
    """Runs chromium on `args` with a fresh profile; returns its stdout."""
    with tempfile.TemporaryDirectory(dir=work) as profile:
        result = subprocess.run(["chromium", *CHROMIUM_FLAGS, "--user-data-dir=" + profile, *args],
                                capture_output=True, text=True, timeout=120)
    return result.stdout


def file_url(path):
    return "file://" + os.path.abspath(path)


def dump_dom(url, work, *flags):
    return chromium([*flags, "--dump-dom", url], work)


def screenshot(url, png, width, height, work):
    chromium(["--screenshot=" + png, "--window-size=%d,%d" % (width, height), url], work)
    if not os.path.exists(png):
        fail("chromium wrote no screenshot " + png)


# A page of the test's own that loads `targets` in iframes (same origin with
# --allow-file-access-from-files), runs `probe` on each loaded document and leaves the results,
# as JSON, in <pre id="out">: how the browser laid out and understood the page.
PROBE_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>probe</title></head>
<body style="margin:0"><pre id="out"></pre><div id="frames"></div><script>
const targets = %s, width = %d;
const probe = %s;
const results = [];
let pending = targets.length;
for (const [i, url] of targets.entries()) {
  const frame = document.createElement('iframe');
  frame.style = 'border:0;display:block;width:' + width + 'px;height:900px';
  frame.addEventListener('load', () => {
    let result;
    try { result = probe(frame.contentDocument, frame.contentWindow); }
    catch (e) { result = {error: String(e)}; }
    results[i] = result;
    if (--pending === 0) document.getElementById('out').textContent = JSON.stringify(results);
  });
  frame.src = url;
  document.getElementById('frames').append(frame);
}
</script></body></html>
"""


def probe(targets, width, script, work, name):
    page = os.path.join(work, name + ".html")
    with open(page, "w") as out:
        out.write(PROBE_PAGE % (json.dumps(targets), width, script))
    dom = dump_dom(file_url(page), work, "--allow-file-access-from-files",
                   "--window-size=%d,900" % width)
    found = re.search(r'<pre id="out">(.*?)</pre>', dom, re.S)
    if not found or not found.group(1):
        fail("the probe page %s gave no result" % page)
        return [{} for _ in targets]
    return json.loads(html.unescape(found.group(1)))


# What a reader sees of the summary page, read from the laid-out document.
SUMMARY_PROBE = r"""(doc, win) => {
  const text = e => e ? e.textContent.trim() : null;
  const charts = [...doc.querySelectorAll('figure svg')].map(svg => ({
    label: svg.getAttribute('aria-label'),
    x_label: text(svg.querySelector('.x-label')),
    y_label: text(svg.querySelector('.y-label')),
    bars: svg.querySelectorAll('rect.bar').length,
    counts: [...svg.querySelectorAll('text.count')].map(t => Number(t.textContent)),
    drawn: [...svg.querySelectorAll('rect.bar')].filter(r => r.getBoundingClientRect().height > 0.5).length,
    right: svg.getBoundingClientRect().right,
  }));
  const rows = heading => {
    let node = [...doc.querySelectorAll('h2')].find(h => h.textContent === heading);
    while (node && node.tagName !== 'TABLE') node = node.nextElementSibling;
    return node ? [...node.querySelectorAll('tr')].slice(1).map(tr =>
        [...tr.children].map(td => ({text: td.textContent, href: td.querySelector('a') ?
                                     td.querySelector('a').getAttribute('href') : null}))) : [];
  };
  const widest = [...doc.body.querySelectorAll('*')].map(e => e.getBoundingClientRect().right);
  const urls = [...doc.querySelectorAll('*')].flatMap(e => [...e.attributes]
      .filter(a => /^(href|src|xlink:href|action|poster|data|srcset|background)$/.test(a.name))
      .map(a => a.value));
  return {
    title: doc.title,
    dangerous: [...doc.querySelectorAll('script,img,iframe,object,embed,link,base,form,#pwned')]
        .map(e => e.outerHTML.slice(0, 80)),
    handlers: [...doc.querySelectorAll('*')].flatMap(e => [...e.attributes])
        .filter(a => a.name.startsWith('on')).map(a => a.name),
    css_urls: [...doc.querySelectorAll('style')].filter(s => /url\(|@import/.test(s.textContent)).length,
    urls, charts,
    failed: rows('Hidden tests failed most often').map(r => r.map(c => c.text)),
    similar: rows('Most similar hand-ins').map(r => ({file: r[0].text, pair: r[1].text,
                                                     href: r[3].href})),
    page_width: doc.documentElement.scrollWidth,
    widest: Math.max(...widest),
    height: doc.documentElement.scrollHeight,
    text: doc.body.innerText,
  };
}"""

# A side-by-side page: its headings and the two files it shows.
VIEW_PROBE = r"""(doc, win) => ({
  title: doc.title,
  h1: doc.querySelector('h1') ? doc.querySelector('h1').textContent : null,
  names: [...doc.querySelectorAll('.two h2')].map(h => h.textContent),
  files: [...doc.querySelectorAll('.two pre')].map(p => p.textContent),
  dangerous: doc.querySelectorAll('script,img,iframe,object,embed,#pwned').length,
})"""

# A rendering of a results.json: each output's text as a reader sees it, and what was created.
FEEDBACK_PROBE = r"""(doc, win) => ({
  title: doc.title,
  outputs: [...doc.querySelectorAll('.output')].map(p => p.innerText),
  created: [...doc.querySelectorAll('.output *')].map(e => e.tagName.toLowerCase()),
  pwned: doc.querySelectorAll('#pwned').length,
})"""

# The handout's figures drawn on a canvas: how many pixels are not white.
FIGURES_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>figures</title>
<style>figure{display:inline-block;margin:8px;border:1px solid #ccc}figcaption{font:12px sans-serif}
img{display:block;max-width:600px}</style></head><body><pre id="out"></pre>%s<script>
window.addEventListener('load', () => {
  const inked = [...document.querySelectorAll('img')].map(img => {
    const canvas = document.createElement('canvas');
    canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
    if (!canvas.width || !canvas.height) return [img.dataset.name, 0, 0];
    const g = canvas.getContext('2d');
    g.fillStyle = '#fff'; g.fillRect(0, 0, canvas.width, canvas.height);
    g.drawImage(img, 0, 0);
    const px = g.getImageData(0, 0, canvas.width, canvas.height).data;
    let count = 0;
    for (let i = 0; i < px.length; i += 4)
      if (Math.max(255 - px[i], 255 - px[i + 1], 255 - px[i + 2]) > 48) ++count;
    return [img.dataset.name, count, canvas.width * canvas.height];
  });
  document.getElementById('out').textContent = JSON.stringify(inked);
});
</script></body></html>
"""


def page_requests(netlog_path):
    """URLs the page asked for over the network (chromium's own requests, made with no page
    origin, left out)."""
    with open(netlog_path) as log:
        netlog, _ = json.JSONDecoder().raw_decode(log.read())
    types = {number: name for name, number in netlog["constants"]["logEventTypes"].items()}
    starts = [event.get("params", {}) for event in netlog["events"]
              if types.get(event["type"]) == "URL_REQUEST_START_JOB"]
    return sorted({start["url"] for start in starts
                   if "url" in start and start.get("initiator") != "not an origin"})


def grade_class(root, grade, work):
    """A Gradescope export of five hand-ins, graded with --similarity; returns the output dir."""
    files = [line.strip() for line in open(os.path.join(root, "starter/handin/assignment1.txt"))
             if line.strip() and not line.startswith("#")]
    export = os.path.join(work, "export")
    shutil.rmtree(export, ignore_errors=True)

    def hand_in(number, tree, patch=None):
        folder = os.path.join(export, "submission_%d" % number)
        for file in files:
            os.makedirs(os.path.dirname(os.path.join(folder, file)), exist_ok=True)
            shutil.copy(os.path.join(root, tree, file), os.path.join(folder, file))
        if patch:
            subprocess.run(["patch", "-s", "-p1", "-d", folder, "-i", patch], check=True)

    hand_in(1, "solutions")
    hand_in(2, "solutions")
    hand_in(3, "solutions", os.path.join(root, "tests/kit/browser/hostile_feedback.patch"))
    hand_in(4, "solutions", os.path.join(root, "grader/tests/submissions/wrong_split_modulo.patch"))
    hand_in(5, "starter")
    ids = ["alice", "bob", '"><script>document.title=1</script>',
           "<img src=x onerror=document.title=2>", "dave"]
    with open(os.path.join(export, "submission_metadata.yml"), "w") as metadata:
        for number, sid in enumerate(ids, 1):
            metadata.write("submission_%d:\n  :submitters:\n  - :name: Student %d\n"
                           "    :sid: %s\n" % (number, number, sid))
    out = os.path.join(work, "export-graded")
    shutil.rmtree(out, ignore_errors=True)
    args = [grade, "--batch", export, "--out", out, "--similarity", "--jobs", "2", "--seed", "7"]
    if os.geteuid() != 0:
        args.append("--no-sandbox")
    result = subprocess.run(args, capture_output=True, text=True)
    print(result.stdout + result.stderr)
    if result.returncode != 0:
        fail("dtk-grade --batch exited with %d" % result.returncode)
    return out


def check_summary(out, work):
    summary = os.path.join(out, "summary.html")
    students = [row["student"].lstrip("'")
                for row in csv.DictReader(open(os.path.join(out, "gradebook.csv"), newline=""))]
    tests = set()
    for student in students:
        results = json.load(open(os.path.join(out, "students", student, "results.json")))
        tests |= {test["name"] for test in results["tests"]}
    print("summary.html of %d hand-ins: %s" % (len(students), ", ".join(students)))

    # Opened as a reader opens it: nothing runs, nothing is fetched.
    netlog = os.path.join(work, "summary-netlog.json")
    dom = dump_dom(file_url(summary), work, "--log-net-log=" + netlog)
    title = re.search(r"<head>.*?<title>(.*?)</title>", dom, re.S)
    if not title or title.group(1) != PAGE_TITLE:
        fail("the page's title is %r, not the grader's: a script ran"
             % (title.group(1) if title else None))
    # Elements, not text: a "<" the serializer writes is a tag's (text has &lt;).
    for tag in ("script", "img", "iframe", "object", "embed"):
        if re.search(r"<%s[\s>]" % tag, dom, re.I):
            fail("the page holds a <%s> element" % tag)
    if re.search(r'<[a-z][^<>]*\sid="?pwned', dom, re.I):
        fail("an element of a hand-in's feedback was created (id=pwned)")
    requests = page_requests(netlog)
    if requests:
        fail("the page asked the network for %s" % requests)
    print("  no script ran, no element created, no network request")

    for width in WIDTHS:
        seen = probe([file_url(summary)], width, SUMMARY_PROBE, work, "probe-summary-%d" % width)[0]
        check_laid_out_summary(seen, width, len(students), tests, out, work)
        screenshot(file_url(summary), os.path.join(work, "summary-%d.png" % width), width,
                   min(max(seen.get("height", 900), 600), 12000), work)


def check_laid_out_summary(seen, width, class_size, tests, out, work):
    where = "at %d px: " % width
    if seen.get("error"):
        fail(where + "the page could not be read: " + seen["error"])
        return
    if seen["title"] != PAGE_TITLE or seen["dangerous"] or seen["handlers"]:
        fail(where + "title %r, elements %s, handlers %s" % (seen["title"], seen["dangerous"],
                                                             seen["handlers"]))
    outside = [url for url in seen["urls"]
               if re.match(r"^[a-z][a-z0-9+.-]*:|^//|^/", url, re.I) or ".." in url.split("/")]
    if outside or seen["css_urls"]:
        fail(where + "the page names resources outside its directory: %s" % outside)
    labels = [chart["label"] for chart in seen["charts"]]
    wanted = ["Part %d" % n for n in range(1, 7)] + ["Total"]
    if [label.split(":")[0] for label in labels] != wanted:
        fail(where + "histograms %s, expected one per part and the total" % labels)
    for chart in seen["charts"]:
        name = "%s's histogram" % chart["label"]
        if not chart["x_label"] or not chart["x_label"].startswith("points"):
            fail(where + name + " has no x-axis label (points)")
        if chart["y_label"] != "hand-ins":
            fail(where + name + " has no y-axis label (hand-ins)")
        if chart["bars"] != 10 or sum(chart["counts"]) != class_size:
            fail(where + "%s: %d bars whose counts %s add up to %d, not the class's %d"
                 % (name, chart["bars"], chart["counts"], sum(chart["counts"]), class_size))
        if chart["drawn"] != len(chart["counts"]):
            fail(where + "%s: %d counts but %d bars drawn" % (name, len(chart["counts"]),
                                                              chart["drawn"]))
        if chart["right"] > width + 0.5:
            fail(where + name + " is cut at the window's edge (right at %.0f px)" % chart["right"])
    if not seen["failed"]:
        fail(where + "no failed tests listed (the class has wrong hand-ins)")
    for test, failed_by, sample in seen["failed"]:
        if test not in tests:
            fail(where + "the failed-tests table names %r, a test no results.json holds" % test)
        if not re.fullmatch(r"[1-9]\d* of %d" % class_size, failed_by):
            fail(where + "%r failed by %r" % (test, failed_by))
    if not seen["similar"]:
        fail(where + "no similar pairs listed (two hand-ins are the same reference)")
    for pair in seen["similar"]:
        target = os.path.join(out, pair["href"] or "")
        if not pair["href"] or not os.path.isfile(target):
            fail(where + "the side-by-side link of %s goes nowhere: %r" % (pair["pair"],
                                                                          pair["href"]))
    if seen["page_width"] > width or seen["widest"] > width + 0.5:
        fail(where + "the page scrolls sideways: %d px wide, an element reaching %.0f px"
             % (seen["page_width"], seen["widest"]))
    if "<img src=x onerror" not in seen["text"]:
        fail(where + "the hostile feedback is not shown as text")
    print("  at %d px: %d histograms, %d failed tests, %d similar pairs; fits the window"
          % (width, len(seen["charts"]), len(seen["failed"]), len(seen["similar"])))
    if width == WIDTHS[0]:
        check_views(seen["similar"], out, work)


def check_views(pairs, out, work):
    linked = [pair for pair in pairs if pair["href"] and os.path.isfile(os.path.join(out, pair["href"]))]
    if not linked:
        return
    views = probe([file_url(os.path.join(out, pair["href"])) for pair in linked], 1280, VIEW_PROBE,
                  work, "probe-views")
    shown = 0
    for pair, view in zip(linked, views):
        # similarity/<file>/h<i>--h<j>.html shows h<i>.cpp and h<j>.cpp of its directory: the
        # hand-ins' files without the starter's lines.
        page = os.path.join(out, pair["href"])
        compared = [open(os.path.join(os.path.dirname(page), name + ".cpp")).read()
                    for name in os.path.basename(page)[:-len(".html")].split("--")]
        if view.get("names") != pair["pair"].split(" and ") or view.get("files") != compared \
                or not all(compared) or view.get("dangerous"):
            fail("the side-by-side page of %s (%s) does not show both files: names %s, files "
                 "of %s characters (expected %s)" % (
                     pair["pair"], pair["href"], view.get("names"),
                     [len(text) for text in view.get("files", [])],
                     [len(text) for text in compared]))
        else:
            shown += 1
    screenshot(file_url(os.path.join(out, linked[0]["href"])),
               os.path.join(work, "side-by-side.png"), 1280, 1400, work)
    print("  %d of %d side-by-side pages show both files" % (shown, len(linked)))


def check_feedback(out, work):
    """Each results.json shown as Gradescope shows its format, and as HTML for contrast."""
    shown = 0
    for results_path in sorted(glob.glob(os.path.join(out, "students", "*", "results.json"))):
        student = os.path.basename(os.path.dirname(results_path))
        results = json.load(open(results_path))
        formats = {key: results.get(key) for key in
                   ("output_format", "test_output_format", "test_name_format")}
        if set(formats.values()) != {"text"}:
            fail("%s's results.json asks for %s, not plain text" % (student, formats))
            continue
        outputs = [results["output"]] + [test["output"] for test in results["tests"]]
        if not any("<img" in text for text in outputs):
            continue
        shown += 1
        pages = {}
        for fmt, render in (("text", lambda t: "<pre class='output' style='white-space:pre-wrap'>"
                             + html.escape(t) + "</pre>"),
                            ("html", lambda t: "<div class='output'>" + t + "</div>")):
            body = "".join("<h3>%s</h3>%s" % (html.escape(test.get("name", "")), render(text))
                           for test, text in zip([{"name": "output"}] + results["tests"], outputs))
            page = os.path.join(work, "feedback-as-%s.html" % fmt)
            with open(page, "w") as file:
                file.write("<!DOCTYPE html><html><head><meta charset='utf-8'><title>feedback"
                           "</title></head><body style='font-family:sans-serif'>%s</body></html>"
                           % body)
            pages[fmt] = probe([file_url(page)], 1280, FEEDBACK_PROBE, work,
                               "probe-feedback-" + fmt)[0]
        text = pages["text"]
        if text.get("title") != "feedback" or text.get("created") or text.get("pwned"):
            fail("%s's feedback shown as text created %s or ran a script (title %r)"
                 % (student, text.get("created"), text.get("title")))
        if text.get("outputs") != outputs:
            wrong = next((i for i, (a, b) in enumerate(zip(text.get("outputs", []), outputs))
                          if a != b), None)
            fail("%s's feedback does not read as written when shown as text (output %s)"
                 % (student, wrong))
        as_html = pages["html"]
        if not as_html.get("created"):
            fail("the hostile feedback shown as HTML creates nothing: the check above proves "
                 "nothing")
        screenshot(file_url(os.path.join(work, "feedback-as-text.html")),
                   os.path.join(work, "feedback-as-text.png"), 1280, 2400, work)
        print("  %s's feedback: plain text in Gradescope; shown so it reads as written, while "
              "as HTML it would create %s" % (student, sorted(set(as_html["created"]))))
    if shown == 0:
        fail("no results.json holds the hostile feedback")


def check_figures(root, work):
    figures = sorted(glob.glob(os.path.join(root, "figs", "*.svg")))
    if not figures:
        fail("no figs/*.svg")
        return
    page = os.path.join(work, "figures.html")
    with open(page, "w") as out:
        out.write(FIGURES_PAGE % "".join(
            "<figure><img data-name='%s' src='%s'><figcaption>%s</figcaption></figure>"
            % (html.escape(os.path.basename(f)), html.escape(file_url(f)),
               html.escape(os.path.basename(f))) for f in figures))
    dom = dump_dom(file_url(page), work, "--allow-file-access-from-files")
    found = re.search(r'<pre id="out">(.*?)</pre>', dom, re.S)
    inked = json.loads(html.unescape(found.group(1))) if found and found.group(1) else []
    if len(inked) != len(figures):
        fail("the figures page measured %d of %d figures" % (len(inked), len(figures)))
    for name, count, area in inked:
        # An empty or broken figure has no pixel drawn; a real one has thousands.
        if area == 0 or count < 500:
            fail("figs/%s renders blank in chromium (%d of %d pixels drawn)" % (name, count, area))
    screenshot(file_url(page), os.path.join(work, "figures.png"), 1280, 6000, work)
    print("  %d figures render: %s" % (len(inked), ", ".join(
        "%s %d px" % (name, count) for name, count, _ in inked)))


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    root, grade, work = (os.path.abspath(arg) for arg in sys.argv[1:4])
    if shutil.which("chromium") is None:
        print("FAIL: chromium is not installed (apt-get install chromium): the browser checks "
              "cannot run")
        sys.exit(1)
    os.makedirs(work, exist_ok=True)
    out = os.path.abspath(sys.argv[4]) if len(sys.argv) == 5 else grade_class(root, grade, work)
    print("1. the summary page")
    check_summary(out, work)
    print("2. the feedback, as Gradescope shows it")
    check_feedback(out, work)
    print("3. the handout's figures")
    check_figures(root, work)
    print("Screenshots: " + ", ".join(sorted(glob.glob(os.path.join(work, "*.png")))))
    if failures:
        print("%d failures" % len(failures))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
