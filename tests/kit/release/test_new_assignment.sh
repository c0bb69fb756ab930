#!/usr/bin/env bash
# Kit self-test: an assignment is added by adding its files, and nothing else. In a copy of the
# kit, a throw-away assignment (one student file, one part: rank_sum, the sum of the ranks of a
# communicator) is added as its own files only:
#   starter/handin/assignmentN.txt   its student files
#   starter/include/dtk/rank_sum.hpp its header        starter/hello/rank_sum.cpp  its stub
#   solutions/hello/rank_sum.cpp     its reference     tests/public/test_rank_sum.cpp  its public test
#   release/assignmentN.txt          what only its bundle ships
#   grader/manifests/assignmentN.json  its part        grader/runner/checks_rank_sum.cpp  its check
# Then the copy is configured and built, its public test passes on the reference and fails
# cleanly on the stub, dtk-grade --help and --list-checks name it, its bundle is proved like the
# others' (test_bundle.sh: built, stubs fail, reference passes, graded full), and handin.tar made
# with `make handin.tar ASSIGNMENT=N` grades 0 on the stub and full marks on the reference.
#
# usage: test_new_assignment.sh <kit source dir>
# Set DTK_KEEP_NEW_ASSIGNMENT_TEST=1 to keep the scratch directory for a look.
set -euo pipefail
kit=$(cd "$1" && pwd)
unset MAKEFLAGS MFLAGS MAKELEVEL  # the copy's make is not part of a make that started this test
source "$(dirname "$0")/steps.sh"
scratch_dir dtk-new-assignment "${DTK_KEEP_NEW_ASSIGNMENT_TEST:-0}"

last=$("$kit/scripts/list-assignments.sh" "$kit" | tail -n 1)
n=$((last + 1))
part=$((100 + n))  # a part number no other assignment uses
copy=$work/kit
# The copy's sources are the kit's, at the same paths relative to its build: with ccache taking
# paths inside the copy relative to the build (CCACHE_BASEDIR: its root, as make/student.mk does
# in the kit), its build mostly hits the kit's own.
if command -v ccache > /dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR=$copy CCACHE_NOHASHDIR=1
fi
step "copying the kit and adding assignment $n (Part $part: rank_sum) as files only"
mkdir "$copy"
tar -C "$kit" --exclude=./.git --exclude='./build*' --exclude=./dist -cf - . | tar -C "$copy" -xf -

cat > "$copy/starter/handin/assignment$n.txt" << EOF
# Assignment $n's student files (a kit test's throw-away assignment).
hello/rank_sum.cpp
EOF
cat > "$copy/release/assignment$n.txt" << EOF
# What only assignment $n's bundle ships, besides its student files.
starter/include/dtk/rank_sum.hpp
tests/public/test_rank_sum.cpp
EOF
cat > "$copy/starter/include/dtk/rank_sum.hpp" << 'EOF'
// Part N: the sum of the ranks of a communicator.
#pragma once

#include "dtk/communicator.hpp"

namespace dtk {

// The sum of comm's ranks, 0 + 1 + ... + (size - 1), on every rank, with one Allreduce.
int rank_sum(Communicator& comm);

}  // namespace dtk
EOF
mkdir -p "$copy/starter/hello" "$copy/solutions/hello"
cat > "$copy/starter/hello/rank_sum.cpp" << 'EOF'
#include <dtk/dtk.hpp>
#include <dtk/rank_sum.hpp>

namespace dtk {

int rank_sum(Communicator& comm) {
  // TODO: one Allreduce of this rank's number.
  throw NotImplemented("rank_sum", "hello/rank_sum.cpp");
}

}  // namespace dtk
EOF
cat > "$copy/solutions/hello/rank_sum.cpp" << 'EOF'
#include <dtk/dtk.hpp>
#include <dtk/rank_sum.hpp>

namespace dtk {

int rank_sum(Communicator& comm) {
  xt::xtensor<std::int32_t, 1> mine = {comm.Get_rank()}, sum = {0};
  comm.Allreduce(mine, sum, MPI_SUM);
  return sum(0);
}

}  // namespace dtk
EOF
cat > "$copy/tests/public/test_rank_sum.cpp" << 'EOF'
// Part N public test: rank_sum on 3 ranks.
#include <dtk/rank_sum.hpp>

#include "dtk_test.hpp"

namespace {

constexpr int kRanks = 3;

TEST_CASE("Part N | rank_sum: 0 + 1 + 2 on every rank") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    check.equal("rank_sum(world)", 3, dtk::rank_sum(world));
  });
}

}  // namespace
EOF
cat > "$copy/grader/runner/checks_rank_sum.cpp" << 'EOF'
// Part N: rank_sum on the test's p ranks.
#include <dtk/rank_sum.hpp>

#include "check_context.hpp"

namespace dtk::grade {

namespace {

void check_rank_sum(CheckContext& context) {
  context.out.integer("rank_sum", context.call([&] { return rank_sum(context.world); }));
}

}  // namespace

DTK_GRADE_CHECK(check_rank_sum, {"rank_sum", CaseKind::fields, /*collective=*/true,
                                 /*typed=*/false});

}  // namespace dtk::grade
EOF
cat > "$copy/grader/manifests/assignment$n.json" << EOF
{
  "about": "A kit test's throw-away assignment.",
  "assignment": $n,
  "include": "common.json",
  "allowed_mpi": ["MPI_Comm_rank", "MPI_Comm_size"],
  "forbidden_call_costs": "function",
  "parts": [
    {
      "part": $part,
      "title": "the sum of the ranks",
      "points": 10,
      "file": "hello/rank_sum.cpp",
      "tests": [
        {
          "function": "rank_sum",
          "cases": ["p=1", "p=2", "p=3", "p=5"],
          "public": ["p=3"],
          "rubric": [{"item": "the sum on 1, 2, 3 and 5 ranks", "weight": 10}]
        }
      ]
    }
  ]
}
EOF
sed -i "s/Part N/Part $part/" "$copy/starter/include/dtk/rank_sum.hpp" "$copy/tests/public/test_rank_sum.cpp" \
  "$copy/grader/runner/checks_rank_sum.cpp"

step "configuring and building the copy (the grader, and the new public test)"
build=$copy/build
logged configure.log cmake -S "$copy" -B "$build" || { show configure.log; fail "cmake failed on the copy"; }
logged build.log cmake --build "$build" -j2 --target dtk-grade test_rank_sum test_rank_sum_solutions \
  dtk_source_check || { show build.log; fail "the copy does not build"; }

step "its public test: passes on the reference, fails cleanly on the stub"
(cd "$build" && logged ctest.log ctest -R 'rank_sum' --output-on-failure) || { show ctest.log; fail "ctest -R rank_sum"; }
grep -E '^ *[0-9]+/[0-9]+ Test' "$work/ctest.log" | sed 's/^/    /'
[ "$(grep -c ' Passed ' "$work/ctest.log")" = 2 ] ||
  { show ctest.log; fail "expected test_rank_sum_solutions and kit_starter_fails_cleanly_test_rank_sum"; }

step "dtk-grade --help and --list-checks name it"
"$build/dtk-grade" --help > "$work/help.txt"  # whole: grep -q would stop reading it (SIGPIPE)
grep -q "$n (Part $part)" "$work/help.txt" || fail "dtk-grade --help does not list assignment $n"
"$build/dtk-grade" --list-checks > "$work/checks.txt"
grep -q "^Assignment $n " "$work/checks.txt" && grep -q "^    rank_sum  \[fields, 1,2,3,5 ranks\]" "$work/checks.txt" ||
  { show checks.txt; fail "dtk-grade --list-checks does not show assignment $n's check"; }

step "its bundle, proved like every assignment's (test_bundle.sh $n)"
logged bundle.log "$copy/tests/kit/release/test_bundle.sh" "$copy" "$build/tests/kit/dtk_source_check" \
  --grader="$build/dtk-grade" "$n" || { show bundle.log 60; fail "the bundle test failed"; }
grep -E '^\[|score' "$work/bundle.log" | sed 's/^/    /'

step "make handin.tar ASSIGNMENT=$n: the stub grades 0, the reference full marks"
grade() {  # grade <handin.tar> <expected score>
  local sandbox_flag
  sandbox_flag=$([ "$(id -u)" = 0 ] || echo --no-sandbox)
  logged grade.log "$build/dtk-grade" "$1" --assignment "$n" --results "$work/results.json" $sandbox_flag ||
    { show grade.log; fail "dtk-grade --assignment $n failed"; }
  python3 - "$work/results.json" "$2" << 'EOF' || { show grade.log; fail "wrong score"; }
import json, sys
score = json.load(open(sys.argv[1]))["score"]
print(f"    score {score}, expected {sys.argv[2]}")
sys.exit(abs(score - float(sys.argv[2])) > 1e-9)
EOF
}
# pack <kit tree>: its `make handin.tar ASSIGNMENT=n`, checked to hold exactly the student file.
pack() {
  logged handin.log make -C "$1" handin.tar ASSIGNMENT="$n" || { show handin.log; fail "make handin.tar ASSIGNMENT=$n"; }
  [ "$(tar -tf "$1/handin.tar")" = hello/rank_sum.cpp ] || fail "handin.tar holds $(tar -tf "$1/handin.tar")"
}
pack "$copy"
grade "$copy/handin.tar" 0
# A student's checkout of the kit with the function written (not the graded kit's own starter/:
# a file identical to that is graded as the starter's prebuilt stub).
student=$work/student
mkdir "$student"
tar -C "$copy" --exclude=./build -cf - . | tar -C "$student" -xf -
cp "$copy/solutions/hello/rank_sum.cpp" "$student/starter/hello/rank_sum.cpp"
pack "$student"
grade "$student/handin.tar" 10

step "done: assignment $n was added by adding its files only"
