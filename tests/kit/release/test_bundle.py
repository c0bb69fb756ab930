#!/usr/bin/python3
"""Kit self-test of an assignment's student bundle, end to end, as a student and then the grader
meet it:
  1. `scripts/make-release.sh` packs it; it unpacks into an empty directory, one top directory;
  2. it holds what students need, nothing of the other assignments (student files, public
     tests, programs, handout sections) and no solution code or hidden test;
  3. its `make` builds it;
  4. its `make test` fails, every public test with NotImplemented (the stubs);
  5. with the reference files copied in, `make test` passes;
  6. its programs run (tests/kit/release/bundle_programs_assignment<N>.py, where the
     assignment has one: unified_train trains with its own assignment's trainer and refuses the
     other's flags with a message);
  7. its `make handin.tar` packs its student files, and dtk-grade gives full marks.
With parts to disable, it does all this for a course that does not assign them (a scratch copy
of the manifest with "enabled": false): their stubs, public tests and handout sections must be
left out, their reference provided, and the hand-in graded without them.

usage: test_bundle.py <kit source dir> <dtk_source_check> --grader=<dtk-grade, or empty>
                      [ASSIGNMENT [PART_TO_DISABLE...]]   (default 1, none)
Set DTK_KEEP_BUNDLE_TEST=1 to keep the scratch directory for a look.
"""
import glob
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import steps as release_steps


def listed(path):
    """A list's paths, comments dropped (none when there is no such list)."""
    if not os.path.exists(path):
        return []
    with open(path) as listing:
        return [word for word in (re.match(r"[^# \n]*", line).group(0) for line in listing) if word]


def output(*command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, check=True, **kwargs).stdout


def read(path):
    with open(path, errors="replace") as file:
        return file.read()


class BundleTest:
    def __init__(self, steps, root, check, grader, assignment, disabled):
        self.s, self.root, self.check, self.grader = steps, root, check, grader
        self.assignment, self.disabled = assignment, disabled
        self.student_files = listed(f"{root}/starter/handin/assignment{assignment}.txt")
        self.top = "dtk-student" if assignment == "1" else f"dtk-student-assignment{assignment}"
        self.manifest = f"{root}/grader/manifests/assignment{assignment}.json"

    def select_parts(self, path, assignment=None, disabled=None):
        """What the release makes of a kit file: markers dropped, the disabled parts' blocks cut
        (this test's assignment and disabled parts unless others are given)."""
        assignment = assignment or self.assignment
        disabled = " ".join(self.disabled if disabled is None else disabled)
        return output("awk", "-v", f"assignment={assignment}", "-v", f"disabled={disabled}",
                      "-f", f"{self.root}/scripts/select-parts.awk", path)

    def run(self):
        s = self.s
        if self.disabled:
            s.step(f"disabling Part {' '.join(self.disabled)} in a scratch copy of the manifest")
            subprocess.run([sys.executable, f"{self.root}/grader/tests/scratch_manifest.py",
                            self.manifest, s.path("manifest.json"), "--disable", *self.disabled],
                           check=True)
            self.manifest = s.path("manifest.json")
        self.bundle = self.pack()
        self.check_contents()
        s.step("building it with its make (-j2)")
        if not s.logged("build.log", "make", "-C", self.bundle, "JOBS=2"):
            s.show("build.log")
            s.fail("make failed in the bundle")
        self.check_stubs_fail()
        self.check_reference_passes()
        self.try_programs()
        self.check_handin()
        s.step("done: the bundle builds, fails on the stubs, passes on the reference and grades "
               "full marks")

    def pack(self):
        s = self.s
        s.step(f"packing assignment {self.assignment}'s bundle with scripts/make-release.sh")
        if not s.logged("release.log", f"{self.root}/scripts/make-release.sh", s.path("dist"),
                        self.assignment, self.manifest):
            s.show("release.log")
            s.fail("make-release.sh failed")
        archive = s.path("dist", f"{self.top}.tar.gz")
        os.mkdir(s.path("unpacked"))
        subprocess.run(["tar", "-xzf", archive, "-C", s.path("unpacked")], check=True)
        found = sorted(os.listdir(s.path("unpacked")))
        if found != [self.top]:
            s.fail(f"the bundle must hold one top directory {self.top}/, found: {' '.join(found)}")
        members = [m for m in output("tar", "-tzf", archive).splitlines() if not m.endswith("/")]
        size = output("du", "-h", archive).split("\t")[0]
        print(f"    {len(members)} files, {size}")
        return s.path("unpacked", self.top)

    def check_contents(self):
        s, bundle, root = self.s, self.bundle, self.root
        s.step("checking what the bundle holds")
        for path in ("CMakeLists.txt", "Makefile", "AGENTS.md", "handout.md", "figs", "cmake",
                     "make", "scripts/ensure-deps.sh", "starter", "tests/harness", "tests/public",
                     "docs/measurements.md"):
            if not os.path.exists(f"{bundle}/{path}"):
                s.fail(f"the bundle lacks {path}")
        self.check_handout_links()
        self.check_handout_sections()
        hidden = " ".join(found[len("./"):] for found in output(
            "find", ".", "-path", "./solutions", "-o", "-path", "./grader", "-o", "-path",
            "./tests/kit", "-o", "-name", "dtk_source_check*", "-o", "-name", "dtk-grade*",
            cwd=bundle).splitlines())
        if hidden:
            s.fail(f"the bundle holds what students must never see: {hidden}")
        for name in self.student_files:
            if self.select_parts(f"{root}/starter/{name}") != read(f"{bundle}/starter/{name}"):
                s.fail(f"starter/{name} in the bundle is not the kit's starter/{name} (markers and "
                       "disabled parts cut)")
            if "throw NotImplemented(" not in read(f"{bundle}/starter/{name}"):
                s.fail(f"starter/{name} in the bundle throws no NotImplemented: not the stub")
        self.check_provided_reference()
        self.check_other_assignments_left_out()
        self.check_handout_speaks_of_this_bundle()

    def check_handout_links(self):
        """Every file the bundle's handout links to (a figure, the measurements) is in the
        bundle: a student has nothing else."""
        links = re.findall(r"\]\(([^)#\s]+)", read(f"{self.bundle}/handout.md"))
        missing = sorted({link for link in links if "://" not in link
                          and not os.path.exists(f"{self.bundle}/{link}")})
        if missing:
            self.s.fail(f"the handout links to files the bundle lacks: {' '.join(missing)}")

    def check_handout_sections(self):
        """The handout as this assignment's students read it: no section cut empty by its blocks.
        (An assignment the handout does not address yet, such as kit_new_assignment's, is said,
        not checked.)"""
        block = f"<!-- dtk:only {self.assignment} -->"
        if block not in read(f"{self.root}/handout.md").splitlines():
            print(f"    handout.md has no {block} block yet: its sections are not checked")
        elif subprocess.run([sys.executable, f"{self.root}/tests/kit/release/check_handout_sections.py",
                             f"{self.bundle}/handout.md"]).returncode != 0:
            self.s.fail("the bundle's handout.md has sections with nothing in them (above): give "
                        f"each its {block} block")

    def check_provided_reference(self):
        """The disabled parts' reference is provided on purpose, and only theirs: the provided
        files define exactly their functions, and the rest of the bundle holds no reference code."""
        s, bundle = self.s, self.bundle
        provided = sorted(output("find", "starter", "-name", "*_provided.cpp", cwd=bundle).split())
        disabled = " ".join(self.disabled)
        if self.disabled and not provided:
            s.fail(f"Part {disabled} is disabled but no reference is provided")
        if not self.disabled and provided:
            s.fail(f"every part is assigned, yet the bundle provides {' '.join(provided)}")
        if provided:
            listings = "".join(output(self.check, "list", f"{bundle}/{name}") for name in provided)
            defined = sorted({m.group(1) for m in re.finditer(
                r"^function [0-9]*: .* ([a-zA-Z_0-9]*)\(.*", listings, re.M)})
            with open(self.manifest) as file:
                manifest = json.load(file)
            expected = sorted({test["function"] for part in manifest["parts"]
                               if part.get("enabled") is False for test in part["tests"]})
            if defined != expected:
                s.fail(f"the provided files define '{' '.join(defined)}', expected the functions "
                       f"of Part {disabled}: '{' '.join(expected)}'")
        scan = s.path("scan")
        subprocess.run(["cp", "-a", bundle, scan], check=True)
        for name in provided:
            os.remove(f"{scan}/{name}")
        if subprocess.run([self.check, "no-solution-code", f"{self.root}/starter",
                           f"{self.root}/solutions", scan, *self.student_files]).returncode != 0:
            s.fail("the bundle contains reference code")

    def check_prebuilt_reference(self):
        """The earlier assignments' reference this assignment's programs call
        (release/assignment<N>-reference.txt) is in the bundle compiled, those files' objects
        and nothing else; a bundle with no such list carries none."""
        s, bundle = self.s, self.bundle
        reference_list = f"{self.root}/release/assignment{self.assignment}-reference.txt"
        prebuilt = f"{bundle}/starter/prebuilt"
        if not os.path.exists(reference_list):
            if os.path.exists(prebuilt):
                s.fail("the bundle carries starter/prebuilt/, but this assignment lists no "
                       "reference to carry")
            return
        if read(f"{prebuilt}/reference.txt") != read(reference_list):
            s.fail(f"starter/prebuilt/reference.txt is not {reference_list}")
        members = sorted(output("ar", "t", f"{prebuilt}/libdtk_reference.a").split())
        expected = sorted(os.path.basename(f) + ".o" for f in listed(reference_list))
        if members != expected:
            s.fail(f"starter/prebuilt/libdtk_reference.a holds {' '.join(members)}, expected the "
                   f"listed files' objects only: {' '.join(expected)}")

    def check_other_assignments_left_out(self):
        """Nothing of the other assignments: their student files and lists, their own tests and
        programs (release/assignment<N>.txt), their handout sections and the figures only they
        show; nothing only a disabled part needs."""
        s, bundle, root = self.s, self.bundle, self.root
        own = listed(f"{root}/release/assignment{self.assignment}.txt")
        for listing in sorted(glob.glob(f"{root}/starter/handin/assignment*.txt")):
            other = os.path.basename(listing)[len("assignment"):-len(".txt")]
            if other == self.assignment:
                continue
            for path in ([f"starter/{p}" for p in listed(listing)]
                         + [f"starter/handin/assignment{other}.txt"]
                         + [p for p in listed(f"{root}/release/assignment{other}.txt")
                            if p not in own]):
                if os.path.exists(f"{bundle}/{path}"):
                    s.fail(f"the bundle holds {path}, which is assignment {other}'s")
        self.check_prebuilt_reference()
        left_out = [p for part in self.disabled for p in listed(f"{root}/release/part{part}.txt")]
        for path in listed(f"{root}/release/assignment{self.assignment}.txt"):
            if path not in left_out and not os.path.exists(f"{bundle}/{path}"):
                s.fail(f"the bundle lacks {path} (release/assignment{self.assignment}.txt)")
        marked = [f"{bundle}/handout.md"] + [f"{bundle}/starter/{f}" for f in self.student_files]
        if any(re.search(r"dtk:[a-z]", read(path)) for path in marked):
            s.fail("the bundle's handout.md or student files still hold release markers")
        handout = read(f"{bundle}/handout.md")
        for part in self.disabled:
            if re.search(rf"Part {part}\b", handout):
                s.fail(f"the bundle's handout.md still speaks of Part {part}")
        for path in left_out:
            if os.path.exists(f"{bundle}/{path}"):
                s.fail(f"the bundle holds {path}, which only a disabled part needs")
        # A heading only another assignment's handout has must not be in this one.
        ours = self.headings(self.assignment)
        bundle_lines = set(handout.splitlines())
        for other in output(f"{root}/scripts/list-assignments.sh", root).split():
            if other == self.assignment:
                continue
            for heading in sorted(self.headings(other) - ours):
                if heading in bundle_lines:
                    s.fail(f"the bundle's handout.md holds assignment {other}'s section \"{heading}\"")

    def headings(self, assignment):
        selected = self.select_parts(f"{self.root}/handout.md", assignment, disabled=())
        return {line for line in selected.splitlines() if line.startswith("#")}

    def check_handout_speaks_of_this_bundle(self):
        """The sections all assignments share speak of this bundle: its archive, the test programs
        it builds, the figures it ships."""
        s, bundle = self.s, self.bundle
        handout = read(f"{bundle}/handout.md")
        for unpacked in sorted({m.split(" ")[2] for m in re.findall(r"tar -xzf [^ \n]*", handout)}):
            if unpacked != f"{self.top}.tar.gz":
                s.fail(f"the bundle's handout.md unpacks {unpacked}, not {self.top}.tar.gz")
        for match in sorted({m.group(0) for m in re.finditer(r"(build/tests/|--target )test_[a-z_]+", handout)}):
            program = match[match.index("test_"):]
            if not os.path.exists(f"{bundle}/tests/public/{program}.cpp"):
                s.fail(f"the bundle's handout.md runs {program}, a test program this bundle does "
                       "not build")
        for svg in sorted(glob.glob(f"{bundle}/figs/*.svg")):
            if f"figs/{os.path.basename(svg)}" not in handout:
                s.fail(f"figs/{os.path.basename(svg)} ships but the handout never shows it")
        if subprocess.run([f"{self.root}/tests/kit/release/check_figures.sh", bundle],
                          stdout=subprocess.DEVNULL).returncode != 0:
            s.fail("the bundle's handout shows a figure it lacks")

    def check_stubs_fail(self):
        s = self.s
        s.step("running its public tests on the stubs (make test): each must fail with NotImplemented")
        if s.logged("stubs.log", "make", "-C", self.bundle, "test"):
            s.show("stubs.log")
            s.fail("make test passed on the stubs; every public test should fail with NotImplemented")
        verdicts = stub_verdicts(s.read("stubs.log"))
        if not verdicts:
            s.show("stubs.log")
            s.fail("no test results in the output of make test")
        for name, verdict in verdicts:
            print(f"    {name} {verdict}")
        if any(verdict != "failed" for _, verdict in verdicts):
            s.show("stubs.log", 60)
            s.fail("on the stubs, every public test must fail with NotImplemented")

    def check_reference_passes(self):
        s = self.s
        s.step("copying the reference files in: make test must pass")
        for name in self.student_files:
            with open(f"{self.bundle}/starter/{name}", "w") as file:
                file.write(self.select_parts(f"{self.root}/solutions/{name}"))
        if not s.logged("reference.log", "make", "-C", self.bundle, "test"):
            s.show("reference.log", 60)
            s.fail("the public tests fail on the reference")
        s.indented("reference.log", "tests passed")

    def try_programs(self):
        """An assignment's programs, tried in its bundle: bundle_programs_assignment<N>.py beside
        this file (if any) defines try_bundle_programs(steps, bundle), run with the built bundle
        as a student would."""
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            f"bundle_programs_assignment{self.assignment}.py")
        if os.path.exists(path):
            spec = importlib.util.spec_from_file_location(f"bundle_programs_{self.assignment}", path)
            programs = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(programs)
            programs.try_bundle_programs(self.s, self.bundle)

    def check_handin(self):
        s = self.s
        s.step("packing handin.tar with its make handin.tar")
        if not s.logged("handin.log", "make", "-C", self.bundle, "handin.tar"):
            s.show("handin.log")
            s.fail("make handin.tar failed")
        packed = sorted(output("tar", "-tf", f"{self.bundle}/handin.tar").split())
        if packed != sorted(self.student_files):
            s.fail(f"handin.tar holds '{' '.join(packed)}', expected "
                   f"'{' '.join(sorted(self.student_files))}'")

        s.step("grading handin.tar with dtk-grade: full marks expected")
        if not (self.grader and os.access(self.grader, os.X_OK)):
            s.fail("dtk-grade is not built (grader/ defines no dtk-grade target yet?): cannot grade")
        sandbox_flag = [] if os.getuid() == 0 else ["--no-sandbox"]  # not root: no sandbox user
        if not s.logged("grade.log", self.grader, f"{self.bundle}/handin.tar", "--assignment",
                        self.assignment, "--manifest", self.manifest, "--results",
                        s.path("results.json"), *sandbox_flag):
            s.show("grade.log")
            s.fail("dtk-grade exited non-zero")
        if not os.path.exists(s.path("results.json")) or os.path.getsize(s.path("results.json")) == 0:
            s.show("grade.log")
            s.fail("dtk-grade wrote no results file")
        # The scores dtk-grade added up (totals.json, beside results.json): every part graded
        # gets full marks, and the parts the manifest disables are not graded at all.
        expectations = ["all=full"] + [f"{part}=absent" for part in self.disabled]
        if not s.logged("verdicts.log", "/usr/bin/python3",
                        f"{self.root}/grader/tests/check_totals.py", s.path("totals.json"),
                        "--results", s.path("results.json"), *expectations):
            s.show("grade.log", 60)
            s.show("verdicts.log")
            s.fail("the reference, handed in from the bundle, must get full marks")
        s.indented("verdicts.log")


def stub_verdicts(log):
    """(test, verdict) in the order ctest ran them: ctest prints "k/n Test #k: <name> ....
    ***Failed  0.4 sec" and then that test's output, which must name the NotImplemented stub."""
    order, status, said, current = [], {}, set(), ""
    for line in log.splitlines():
        result = re.match(r" *[0-9]+/[0-9]+ Test +#[0-9]+: ", line)
        if result:
            current = line[result.end():].split(" ")[0]
            order.append(current)
            status[current] = "failed" if "***Failed" in line else "passed, but should fail"
            if re.search(r"\*\*\*(Timeout|Exception)", line):
                status[current] = "crashed or hung"
        elif re.match(r" *Start +[0-9]+: ", line):
            current = ""
        elif current and "NotImplemented: dtk::" in line:
            said.add(current)
    return [(test, "failed without a NotImplemented message"
             if status[test] == "failed" and test not in said else status[test]) for test in order]


def main(root, check, grader, assignment="1", *disabled):
    release_steps.leave_outer_make()
    grader = grader[len("--grader="):] if grader.startswith("--grader=") else grader
    release_steps.run("dtk-bundle-test", "DTK_KEEP_BUNDLE_TEST", lambda steps: BundleTest(
        steps, root, check, grader, assignment, list(disabled)).run())


if __name__ == "__main__":
    main(*sys.argv[1:])
