#!/usr/bin/python3
"""Kit self-test: an assignment is added by adding its files, and nothing else. In a copy of the
kit, a throw-away assignment (one student file, one part: rank_sum, the sum of the ranks of a
communicator) is added as its own files only:
  starter/handin/assignmentN.txt   its student files
  starter/include/dtk/rank_sum.hpp its header        starter/hello/rank_sum.cpp  its stub
  solutions/hello/rank_sum.cpp     its reference     tests/public/test_rank_sum.cpp  its public test
  release/assignmentN.txt          what only its bundle ships
  grader/manifests/assignmentN.json  its part        grader/runner/checks_rank_sum.cpp  its check
Then the copy is configured and built, its public test passes on the reference and fails
cleanly on the stub, dtk-grade --help and --list-checks name it, its bundle is proved like the
others' (test_bundle.py: built, stubs fail, reference passes, graded full), and handin.tar made
with `make handin.tar ASSIGNMENT=N` grades 0 on the stub and full marks on the reference.

usage: test_new_assignment.py <kit source dir>
Set DTK_KEEP_NEW_ASSIGNMENT_TEST=1 to keep the scratch directory for a look.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import steps as release_steps

# The throw-away assignment's files, by path in the kit ({n}: its number, {part}: its part).
NEW_FILES = {
    "starter/handin/assignment{n}.txt": """\
# Assignment {n}'s student files (a kit test's throw-away assignment).
hello/rank_sum.cpp
""",
    "release/assignment{n}.txt": """\
# What only assignment {n}'s bundle ships, besides its student files.
starter/include/dtk/rank_sum.hpp
tests/public/test_rank_sum.cpp
""",
    "starter/include/dtk/rank_sum.hpp": """\
// Part {part}: the sum of the ranks of a communicator.
#pragma once

#include "dtk/communicator.hpp"

namespace dtk {{

// The sum of comm's ranks, 0 + 1 + ... + (size - 1), on every rank, with one Allreduce.
int rank_sum(Communicator& comm);

}}  // namespace dtk
""",
    "starter/hello/rank_sum.cpp": """\
#include <dtk/dtk.hpp>
#include <dtk/rank_sum.hpp>

namespace dtk {{

int rank_sum(Communicator& comm) {{
  // TODO: one Allreduce of this rank's number.
  throw NotImplemented("rank_sum", "hello/rank_sum.cpp");
}}

}}  // namespace dtk
""",
    "solutions/hello/rank_sum.cpp": """\
#include <dtk/dtk.hpp>
#include <dtk/rank_sum.hpp>

namespace dtk {{

int rank_sum(Communicator& comm) {{
  xt::xtensor<std::int32_t, 1> mine = {{comm.Get_rank()}}, sum = {{0}};
  comm.Allreduce(mine, sum, MPI_SUM);
  return sum(0);
}}

}}  // namespace dtk
""",
    "tests/public/test_rank_sum.cpp": """\
// Part {part} public test: rank_sum on 3 ranks.
#include <dtk/rank_sum.hpp>

#include "dtk_test.hpp"

namespace {{

constexpr int kRanks = 3;

TEST_CASE("Part {part} | rank_sum: 0 + 1 + 2 on every rank") {{
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {{
    dtk::Communicator world;
    check.equal("rank_sum(world)", 3, dtk::rank_sum(world));
  }});
}}

}}  // namespace
""",
    "grader/runner/checks_rank_sum.cpp": """\
// Part {part}: rank_sum on the test's p ranks.
#include <dtk/rank_sum.hpp>

#include "check_context.hpp"

namespace dtk::grade {{

namespace {{

void check_rank_sum(CheckContext& context) {{
  context.out.integer("rank_sum", context.call([&] {{ return rank_sum(context.world); }}));
}}

}}  // namespace

DTK_GRADE_CHECK(check_rank_sum, {{"rank_sum", CaseKind::fields, /*collective=*/true,
                                 /*typed=*/false}});

}}  // namespace dtk::grade
""",
}


def manifest(n, part):
    return {
        "about": "A kit test's throw-away assignment.",
        "assignment": n,
        "include": "common.json",
        "allowed_mpi": ["MPI_Comm_rank", "MPI_Comm_size"],
        "forbidden_call_costs": "function",
        "parts": [{
            "part": part,
            "title": "the sum of the ranks",
            "points": 10,
            "file": "hello/rank_sum.cpp",
            "tests": [{
                "function": "rank_sum",
                "cases": ["p=1", "p=2", "p=3", "p=5"],
                "public": ["p=3"],
                "rubric": [{"item": "the sum on 1, 2, 3 and 5 ranks", "weight": 10}],
            }],
        }],
    }


def copy_tree(source, destination, *excluded):
    """`source`'s files copied to `destination` (tar, as a student's checkout would be copied),
    but the `excluded` patterns."""
    os.makedirs(destination, exist_ok=True)
    excludes = [f"--exclude={pattern}" for pattern in excluded]
    packer = subprocess.Popen(["tar", "-C", source, *excludes, "-cf", "-", "."],
                              stdout=subprocess.PIPE)
    subprocess.run(["tar", "-C", destination, "-xf", "-"], stdin=packer.stdout, check=True)
    if packer.wait() != 0:
        raise subprocess.CalledProcessError(packer.returncode, "tar")


class NewAssignmentTest:
    def __init__(self, steps, kit):
        self.s, self.kit = steps, kit
        last = subprocess.run([f"{kit}/scripts/list-assignments.sh", kit], capture_output=True,
                              text=True, check=True).stdout.split()[-1]
        self.n = int(last) + 1
        self.part = 100 + self.n  # a part number no other assignment uses
        self.copy = steps.path("kit")
        self.build = f"{self.copy}/build"

    def run(self):
        s, n = self.s, self.n
        self.add_assignment()
        self.build_copy()
        self.check_public_test()
        self.check_grader_names_it()

        s.step(f"its bundle, proved like every assignment's (test_bundle.py {n})")
        if not s.logged("bundle.log", f"{self.copy}/tests/kit/release/test_bundle.py", self.copy,
                        f"{self.build}/tests/kit/dtk_source_check",
                        f"--grader={self.build}/dtk-grade", str(n)):
            s.show("bundle.log", 60)
            s.fail("the bundle test failed")
        s.indented("bundle.log", r"^\[|score")

        s.step(f"make handin.tar ASSIGNMENT={n}: the stub grades 0, the reference full marks")
        self.pack(self.copy)
        self.grade(f"{self.copy}/handin.tar", 0)
        # A student's checkout of the kit with the function written (not the graded kit's own
        # starter/: a file identical to that is graded as the starter's prebuilt stub).
        student = s.path("student")
        copy_tree(self.copy, student, "./build")
        shutil.copy(f"{self.copy}/solutions/hello/rank_sum.cpp", f"{student}/starter/hello/rank_sum.cpp")
        self.pack(student)
        self.grade(f"{student}/handin.tar", 10)
        s.step(f"done: assignment {n} was added by adding its files only")

    def add_assignment(self):
        self.s.step(f"copying the kit and adding assignment {self.n} (Part {self.part}: rank_sum) "
                    "as files only")
        copy_tree(self.kit, self.copy, "./.git", "./build*", "./dist")
        for path, text in NEW_FILES.items():
            path = os.path.join(self.copy, path.format(n=self.n))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as file:
                file.write(text.format(n=self.n, part=self.part))
        with open(f"{self.copy}/grader/manifests/assignment{self.n}.json", "w") as file:
            json.dump(manifest(self.n, self.part), file, indent=2)

    def build_copy(self):
        s = self.s
        s.step("configuring and building the copy (the grader, and the new public test)")
        # The copy's sources are the kit's, at the same paths relative to its build: with ccache
        # taking paths inside the copy relative to the build (CCACHE_BASEDIR: its root, as
        # make/student.mk does in the kit), its build mostly hits the kit's own.
        if shutil.which("ccache"):
            os.environ.update(CMAKE_CXX_COMPILER_LAUNCHER="ccache", CCACHE_BASEDIR=self.copy,
                              CCACHE_NOHASHDIR="1")
        if not s.logged("configure.log", "cmake", "-S", self.copy, "-B", self.build):
            s.show("configure.log")
            s.fail("cmake failed on the copy")
        if not s.logged("build.log", "cmake", "--build", self.build, "-j2", "--target", "dtk-grade",
                        "test_rank_sum", "test_rank_sum_solutions", "dtk_source_check"):
            s.show("build.log")
            s.fail("the copy does not build")

    def check_public_test(self):
        s = self.s
        s.step("its public test: passes on the reference, fails cleanly on the stub")
        if not s.logged("ctest.log", "ctest", "-R", "rank_sum", "--output-on-failure", cwd=self.build):
            s.show("ctest.log")
            s.fail("ctest -R rank_sum")
        s.indented("ctest.log", r"^ *[0-9]+/[0-9]+ Test")
        if s.read("ctest.log").count(" Passed ") != 2:
            s.show("ctest.log")
            s.fail("expected test_rank_sum_solutions and kit_starter_fails_cleanly_test_rank_sum")

    def check_grader_names_it(self):
        s, n = self.s, self.n
        s.step("dtk-grade --help and --list-checks name it")
        if not s.logged("help.txt", f"{self.build}/dtk-grade", "--help"):
            s.fail("dtk-grade --help failed")
        if f"{n} (Part {self.part})" not in s.read("help.txt"):
            s.fail(f"dtk-grade --help does not list assignment {n}")
        s.logged("checks.txt", f"{self.build}/dtk-grade", "--list-checks")
        checks = s.read("checks.txt")
        if not (re.search(rf"^Assignment {n} ", checks, re.M)
                and re.search(r"^    rank_sum  \[fields, 1,2,3,5 ranks\]", checks, re.M)):
            s.show("checks.txt")
            s.fail(f"dtk-grade --list-checks does not show assignment {n}'s check")

    def pack(self, tree):
        """`make handin.tar ASSIGNMENT=n` in a kit tree, checked to hold exactly the student file."""
        s = self.s
        if not s.logged("handin.log", "make", "-C", tree, "handin.tar", f"ASSIGNMENT={self.n}"):
            s.show("handin.log")
            s.fail(f"make handin.tar ASSIGNMENT={self.n}")
        members = subprocess.run(["tar", "-tf", f"{tree}/handin.tar"], capture_output=True,
                                 text=True).stdout.strip()
        if members != "hello/rank_sum.cpp":
            s.fail(f"handin.tar holds {members}")

    def grade(self, handin, expected_score):
        s = self.s
        sandbox_flag = [] if os.getuid() == 0 else ["--no-sandbox"]
        if not s.logged("grade.log", f"{self.build}/dtk-grade", handin, "--assignment", str(self.n),
                        "--results", s.path("results.json"), *sandbox_flag):
            s.show("grade.log")
            s.fail(f"dtk-grade --assignment {self.n} failed")
        with open(s.path("results.json")) as file:
            score = json.load(file)["score"]
        print(f"    score {score}, expected {expected_score}")
        if abs(score - expected_score) > 1e-9:
            s.show("grade.log")
            s.fail("wrong score")


def main(kit):
    release_steps.leave_outer_make()
    kit = os.path.abspath(kit)
    release_steps.run("dtk-new-assignment", "DTK_KEEP_NEW_ASSIGNMENT_TEST",
                      lambda steps: NewAssignmentTest(steps, kit).run())


if __name__ == "__main__":
    main(*sys.argv[1:])
