#!/usr/bin/python3
"""Checks a grading's scores against what a kit test expects of them.

usage: check_totals.py TOTALS [--results RESULTS] EXPECTATION...

TOTALS is the totals.json dtk-grade writes beside results.json (docs/grading.md): the scores it
already added up per part, per function and per speed bonus. Each EXPECTATION is KEY=VERDICT:

  KEY      a part number (10), a function (qkv_columns), <function>_bonus (a speed bonus),
           all (every part graded), or others (every part and function graded that no other
           expectation names: a part named covers its functions, and a part holding a function
           named to lose points must lose points: what a mistake costing one function expects
           of the rest, e.g. qkv_columns=half others=full)
  VERDICT  full (all points), zero (none), lost (some lost), half (at least half of its points
           lost), minor (some lost, less than half), absent (not graded at all)

A part's and a function's scores leave the speed bonus out. With --results, the results.json
must hold what Gradescope and the kit's tests read (a score, and tests[] each with a name, a
score and a max_score), its score the parts' and the bonus's together. Prints one line per
score checked; exits 1 naming the first that is not as expected.
"""
import json
import sys

VERDICTS = ("full", "zero", "lost", "half", "minor", "absent")
EPSILON = 1e-9  # the scores are sums of doubles: the same sums, never rounded apart


def fail(message):
    print(f"check_totals: {message}", file=sys.stderr)
    sys.exit(1)


def read_json(path, what):
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except (OSError, ValueError) as error:
        fail(f"cannot read the {what} {path}: {error}")


def check_results(path, totals):
    """results.json holds what its readers need, and the score that totals.json adds up to."""
    results = read_json(path, "results file")
    if not isinstance(results, dict) or not isinstance(results.get("score"), (int, float)):
        fail(f"{path} lacks a top-level number \"score\"")
    tests = results.get("tests")
    if not isinstance(tests, list) or not tests:
        fail(f"{path} lacks a \"tests\" array with at least one test")
    for index, test in enumerate(tests):
        for field, kind in (("name", str), ("score", (int, float)), ("max_score", (int, float))):
            if not isinstance(test, dict) or not isinstance(test.get(field), kind):
                fail(f"{path}: tests[{index}] lacks \"{field}\"")
    added = sum(part["score"] for part in totals["parts"].values())
    added += sum(bonus["score"] for bonus in totals["bonus"].values())
    # results.json rounds its score to four decimals.
    if abs(results["score"] - added) > 1e-4:
        fail(f"{path} has score {results['score']}, but its totals add up to {added}")


def judge(what, total, want):
    """The line saying that `total` is as wanted, or exits naming what it is instead."""
    score, top = total["score"], total["max"]
    lost = top - score
    got = f"{score:g} of {top:g}"
    wrong = {
        "full": lost > EPSILON,
        "zero": score > EPSILON,
        "lost": lost <= EPSILON,
        "half": 2 * lost < top - EPSILON,
        "minor": lost <= EPSILON or 2 * lost >= top - EPSILON,
    }[want]
    if wrong:
        fail(f"{what} should get {describe(want)}, got {got}")
    return f"{what}: {got} ({want}, as expected)"


def describe(verdict):
    return {
        "full": "full marks",
        "zero": "no points",
        "lost": "fewer than all its points",
        "half": "at most half its points",
        "minor": "fewer than all its points, but more than half",
    }[verdict]


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-"):
        fail("usage: check_totals.py TOTALS [--results RESULTS] EXPECTATION...")
    totals = read_json(argv[1], "totals file")
    if not isinstance(totals, dict) or any(
        not isinstance(totals.get(section), dict) for section in ("parts", "functions", "bonus")
    ):
        fail(f"{argv[1]} lacks \"parts\", \"functions\" or \"bonus\"")
    expectations = argv[2:]
    if expectations[:1] == ["--results"]:
        if len(expectations) < 2:
            fail("--results needs a file")
        check_results(expectations[1], totals)
        expectations = expectations[2:]

    for what, total, want in checks(totals, argv[1], expectations):
        if want == "absent":
            if total is not None:
                fail(f"{what} should not be graded, but {argv[1]} has it")
            print(f"{what}: not graded (absent, as expected)")
        elif total is None:
            fail(f"{argv[1]} has no {what}: it was not graded")
        else:
            print(judge(what, total, want))


def checks(totals, path, expectations):
    """(what, its total or None, the verdict wanted), for each score an expectation names."""
    parts, functions = totals["parts"], totals["functions"]
    wanted = {}
    for expectation in expectations:
        key, _, want = expectation.partition("=")
        if not key or want not in VERDICTS:
            fail(f"bad expectation \"{expectation}\": KEY=VERDICT, VERDICT one of "
                 + ", ".join(VERDICTS))
        wanted[key] = want
    if "all" in wanted and not parts:
        fail(f"{path} has no part: nothing was graded")
    # others: what no other expectation names. A part named covers its functions; a part
    # holding a function that loses points must lose them too.
    losing = {str(functions[f]["part"]) for f, want in wanted.items()
              if f in functions and want not in ("full", "absent")}
    for key, want in wanted.items():
        if key == "all":
            yield from ((f"Part {number}", total, want) for number, total in parts.items())
        elif key == "others":
            for number, total in parts.items():
                if number not in wanted:
                    yield f"Part {number}", total, "lost" if number in losing else want
            for function, total in functions.items():
                if function not in wanted and str(total["part"]) not in wanted:
                    yield function, total, want
        elif key.isdigit():
            yield f"Part {key}", parts.get(key), want
        elif key.endswith("_bonus"):
            function = key[: -len("_bonus")]
            yield f"{function}'s speed bonus", totals["bonus"].get(function), want
        else:
            yield key, functions.get(key), want

if __name__ == "__main__":
    main(sys.argv)
