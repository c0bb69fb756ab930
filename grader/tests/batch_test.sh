#!/usr/bin/env bash
# Self-test of `dtk-grade --batch`: a small class graded two at a time.
#   1. five hand-ins (a tar, directories, a wrong one, an edited one, a broken tar) get the
#      scores single gradings give them with the same seed, in gradebook.csv;
#   2. an interrupted batch goes on where it stopped, with its seed; another seed is refused;
#   3. summary.html holds a histogram (valid SVG) per part and the most failed tests;
#   4. Gradescope's "Export Submissions" layout is graded by student id, and ids such as
#      gradebook.csv or summary.html are students like the others;
#   5. --similarity ranks a renamed and reordered copy first, an independent function nowhere;
#   6. a class's results stay private: a hand-in reading the class's other hand-ins and results
#      (the batch still running) and another checkout of the kit finds nothing; everything the
#      batch writes is private to its owner; names such as "-o", "+1+1" or "@A1" are data, not
#      options of sim_c++ nor spreadsheet formulas; an --out of another user is refused;
#   7. the summary page ranks a class by its leaderboard (assignment 3's mean MFU);
#   8. nothing of the job slots' sandbox users is left running, nor any file of theirs where
#      anyone may write that was not there before.
#
# usage: batch_test.sh <kit source dir> <dtk-grade> <work dir>
set -euo pipefail
root=$1 grade=$2 work=$3
mapfile -t files < <(grep '^[^#]' "$root/starter/handin/assignment1.txt")
rm -rf "$work"
mkdir -p "$work"
fail() {
  echo "FAIL: $*"
  exit 1
}
args=()
[ "$(id -u)" = 0 ] || args+=(--no-sandbox)

# The job slots' sandbox users, and the lock each slot's gradings take turns with: what is
# theirs is looked at holding it, when no grading of that slot (this test's or another's) runs.
slot_users=(dtk-sandbox dtk-sandbox1)
slot_lock() { [ "$1" = dtk-sandbox ] && echo /run/dtk-grade.lock || echo "/run/dtk-grade-${1#dtk-sandbox}.lock"; }
# Their files where anyone may write, at any depth: the top of each of their trees,
# "device:inode" then find's -ls (names escaped); never in another grading's scratch.
sandbox_files() {
  [ "$(id -u)" = 0 ] || return 0
  local user
  for user in "${slot_users[@]}"; do
    id -u "$user" > /dev/null 2>&1 || continue
    flock "$(slot_lock "$user")" find /tmp /var/tmp /dev/shm /run/lock \
      -name 'dtk-grade.*' -user root -prune -o -user "$user" -prune -printf '%D:%i ' -ls 2> /dev/null
  done
}
files_before=$(sandbox_files)

class=$work/class out=$work/class-graded
mkdir -p "$class"
copy_of() { mkdir -p "$2" && (cd "$1" && cp --parents "${files[@]}" "$2/"); }
tar -cf "$class/alice.tar" -C "$root/solutions" "${files[@]}"
copy_of "$root/starter" "$class/bob"
copy_of "$root/solutions" "$class/carol"
patch -s -p1 -d "$class/carol" < "$root/grader/tests/submissions/wrong_split_modulo.patch"
copy_of "$root/solutions" "$class/dave"
echo "// edited, so compiled" >> "$class/dave/model/func_impl.cpp"
# dave also leaves chains of directories far beyond PATH_MAX wherever he may write (step 6).
patch -s -p1 -d "$class/dave" < "$root/grader/tests/submissions/hostile_deep_chains.patch"
echo "This is my homework, please grade it." > "$class/eve.tar"

# columns GRADEBOOK NAME...: the gradebook's rows as CSV reads them, those columns joined by ",",
# one row a line.
columns() {
  python3 - "$@" <<'EOF'
import csv, sys
for row in csv.DictReader(open(sys.argv[1], newline="")):
    print(",".join(row[name] for name in sys.argv[2:]))
EOF
}

echo "1. grading the class, two at a time"
"$grade" --batch "$class" --jobs 2 --seed 7 "${args[@]}" > "$work/batch.log" 2>&1 ||
  { cat "$work/batch.log"; fail "dtk-grade --batch exited with $?"; }
cat "$work/batch.log"
gradebook=$out/gradebook.csv
[ "$(head -1 "$gradebook")" = '"student","Part 1","Part 2","Part 3","Part 4","Part 5","Part 6","total","bonus","seed","seconds","status"' ] ||
  fail "unexpected gradebook header: $(head -1 "$gradebook")"
[ "$(columns "$gradebook" student | tr '\n' ' ')" = "alice bob carol dave eve " ] ||
  fail "the gradebook's students are not alice bob carol dave eve"
total_of() { columns "$gradebook" student total | sed -n "s/^$1,//p"; }
for student in alice bob carol dave eve; do
  [ "$(columns "$gradebook" student seed status | grep "^$student,")" = "$student,7,graded" ] ||
    fail "$student's row: $(grep "^\"$student\"," "$gradebook")"
done
[ "$(total_of alice)" = 100 ] && [ "$(total_of bob)" = 0 ] && [ "$(total_of dave)" = 100 ] &&
  [ "$(total_of eve)" = 0 ] || fail "totals: $(columns "$gradebook" student total | tr '\n' ' ')"
# The same seed alone gives the same score.
"$grade" "$class/carol" --seed 7 --results "$work/carol.json" "${args[@]}" > /dev/null
single=$(python3 -c "import json,sys; print('%.4g' % json.load(open(sys.argv[1]))['score'])" "$work/carol.json")
[ "$(total_of carol)" = "$single" ] || fail "carol: $(total_of carol) in the batch, $single alone"
echo "    carol: $single in the batch and alone"

echo "2. resuming"
rm "$out/students/carol/graded.json"
"$grade" --batch "$class" --jobs 2 "${args[@]}" > "$work/resume.log" 2>&1 || fail "resume failed"
grep -q "1 to grade (4 graded before).*seed 7" "$work/resume.log" ||
  fail "a resumed batch must grade only carol, with seed 7: $(head -1 "$work/resume.log")"
[ "$(total_of carol)" = "$single" ] || fail "carol after resuming: $(total_of carol)"
if "$grade" --batch "$class" --seed 8 "${args[@]}" > "$work/seed.log" 2>&1; then
  fail "another seed on a graded batch must be refused"
fi
grep -q "graded with seed 7" "$work/seed.log" || fail "no reason given: $(cat "$work/seed.log")"

echo "3. the summary page"
summary=$out/summary.html
grep -q "Hidden tests failed most often" "$summary" || fail "no list of failed tests"
grep -q "split_train" "$summary" || fail "carol's split_train failure is not in the summary"
python3 - "$summary" <<'EOF' || fail "the summary's histograms are not 7 valid SVG images"
import re, sys, xml.dom.minidom
svgs = re.findall(r"<svg .*?</svg>", open(sys.argv[1]).read(), re.S)
assert len(svgs) == 7, len(svgs)  # six parts and the total
for svg in svgs:
    xml.dom.minidom.parseString(svg)
EOF

echo "4. Gradescope's export layout"
export=$work/export
mkdir -p "$export"
copy_of "$root/solutions" "$export/submission_101"
tar -cf "$export/submission_102.tar" -C "$root/starter" "${files[@]}"
mkdir "$export/submission_102" && mv "$export/submission_102.tar" "$export/submission_102/handin.tar"
copy_of "$root/solutions" "$export/submission_103"
copy_of "$root/solutions" "$export/submission_104"
cat > "$export/submission_metadata.yml" <<'EOF'
submission_101:
  :submitters:
  - :name: Ada Lovelace
    :sid: '1815'
    :email: ada@example.edu
  :created_at: 2026-11-20 10:00:00.000000000 +00:00
  :score: 0.0
submission_102:
  :submitters:
  - :name: Alan Turing
    :email: alan@example.edu
  :created_at: 2026-11-20 11:00:00.000000000 +00:00
submission_103:
  :submitters:
  - :name: Grace Hopper
    :sid: gradebook.csv
submission_104:
  :submitters:
  - :name: Barbara Liskov
    :sid: summary.html
EOF
"$grade" --batch "$export" --seed 7 "${args[@]}" > "$work/export.log" 2>&1 || { cat "$work/export.log"; fail "the export did not grade"; }
rows=$(columns "$work/export-graded/gradebook.csv" student total | tr '\n' ' ')
[ "$rows" = "1815,100 alan@example.edu,0 gradebook.csv,100 summary.html,100 " ] ||
  fail "export gradebook: $rows"
grep -q "<h1>Assignment 1: 4 hand-ins</h1>" "$work/export-graded/summary.html" ||
  fail "summary.html is not the batch's summary page"

echo "5. the similarity report"
similar=$work/similar
copy_of "$root/solutions" "$similar/ada"
copy_of "$root/solutions" "$similar/bob"
copy_of "$root/starter" "$similar/cyd"
python3 - "$similar" <<'END'
import re, sys
root = sys.argv[1]
# bob: ada's func_impl.cpp with identifiers renamed and two functions swapped.
path = root + "/bob/model/func_impl.cpp"
text = open(path).read()
for old, new in [("slice", "piece"), ("parts", "count"), ("width", "w"), ("result", "res")]:
    text = re.sub(r"\b%s\b" % old, new, text)
blocks = text.split("\ntemplate <class T>\n")
blocks[3], blocks[5] = blocks[5], blocks[3]
open(path, "w").write("\ntemplate <class T>\n".join(blocks))
# cyd: split_train written independently, with loops instead of views.
path = root + "/cyd/data/data_parallel_preprocess.cpp"
text = open(root + "/ada/data/data_parallel_preprocess.cpp").read()
start, end = text.index("template <class T>\nstd::pair"), text.index("// ----")
open(path, "w").write(text[:start] + """template <class T>
std::pair<xt::xtensor<T, 2>, xt::xtensor<std::int32_t, 1>> split_train(
    const xt::xtensor<T, 2>& x_train, const xt::xtensor<std::int32_t, 1>& y_train, int mp_size,
    int dp_size, int rank) {
  std::size_t per_replica = y_train.size() / static_cast<std::size_t>(dp_size);
  std::size_t first = per_replica * static_cast<std::size_t>(rank / mp_size);
  auto features = x_train.shape()[1];
  xt::xtensor<T, 2> mine = xt::zeros<T>({per_replica, features});
  xt::xtensor<std::int32_t, 1> labels = xt::zeros<std::int32_t>({per_replica});
  for (std::size_t k = 0; k < per_replica; ++k) {
    labels(k) = y_train(first + k);
    for (std::size_t f = 0; f < features; ++f) mine(k, f) = x_train(first + k, f);
  }
  return std::make_pair(mine, labels);
}

""" + text[end:])
END
"$grade" --batch "$similar" --similarity --public-only --seed 7 "${args[@]}" > "$work/similar.log" 2>&1 ||
  { cat "$work/similar.log"; fail "--similarity failed"; }
pairs=$(sed -n 's|.*<tr><td>\([^<]*\)</td><td>\([^<]*\)</td><td[^>]*>\([0-9]*\) %</td>.*|\1: \2 \3|p' "$work/similar-graded/summary.html")
echo "$pairs" | sed 's/^/    /'
[ "$(echo "$pairs" | grep '^model/func_impl.cpp' | head -1 | cut -d' ' -f2-4)" = "ada and bob" ] ||
  fail "the renamed and reordered copy is not the top pair of model/func_impl.cpp"
if echo "$pairs" | grep -q "^data/data_parallel_preprocess.cpp: .*cyd"; then
  fail "cyd's independent split_train is listed as similar"
fi
# summary_link PAGE A B: the side-by-side page the summary links for students A and B.
summary_link() {
  sed -n "s|.*<td>$2 and $3</td><td[^>]*>[0-9]* %</td><td[^>]*><a href='\([^']*\)'>.*|\1|p" "$1" | head -1
}
view=$(summary_link "$work/similar-graded/summary.html" ada bob)
[ -n "$view" ] && grep -q "<h2>ada</h2>" "$work/similar-graded/$view" &&
  grep -q "<h2>bob</h2>" "$work/similar-graded/$view" || fail "no side-by-side page of ada and bob"

echo "6. a class's results stay private; names are data"
if [ "$(id -u)" = 0 ]; then
  # Where an instructor may well keep them, readable by everyone: the class's hand-ins under
  # /var/lib (a system directory: the sandbox sees /var), another checkout of the kit in /opt.
  private_class=$(mktemp -d /var/lib/dtk-selftest-class.XXXXXX)
  second=$(mktemp -d /opt/dtk-selftest-checkout.XXXXXX)
  trap 'rm -rf "$private_class" "$second"' EXIT
  cp -r "$root/solutions" "$second/solutions"
  mkdir -p "$second/grader" && cp -r "$root/grader/runner" "$second/grader/runner"
  private_out=$work/private-graded
  tar -cf "$private_class/alice.tar" -C "$root/solutions" "${files[@]}"
  copy_of "$root/solutions" "$private_class/mallory"
  patch -s -p1 -d "$private_class/mallory" < "$root/grader/tests/submissions/hostile_reads_private.patch"
  sed -i -e "s|@DTK_SOLUTIONS_DIR@|$root/solutions|g" -e "s|@DTK_SELFTEST_SECOND_CHECKOUT@|$second|g" \
    -e "s|@DTK_SELFTEST_CLASS@|$private_class|g" -e "s|@DTK_SELFTEST_OUT@|$private_out|g" \
    "$private_class/mallory/data/data_parallel_preprocess.cpp"
  # "-2+3" and "-o" first in sim_c++'s command line ("+1+1" hands in no file to compare).
  copy_of "$root/solutions" "$private_class/-o"
  copy_of "$root/solutions" "$private_class/-2+3"
  echo "This is my homework, please grade it." > "$private_class/+1+1.tar"
  copy_of "$root/starter" "$private_class/@A1"
  chmod -R a+rX "$private_class" "$second"
  # One at a time: mallory, graded last, could read the others' results of this very batch.
  "$grade" --batch "$private_class" --out "$private_out" --similarity --public-only --seed 7 \
    > "$work/private.log" 2>&1 || { cat "$work/private.log"; fail "the private class did not grade"; }
  if grep -q "read what the grader keeps private" "$private_out/students/mallory/results.json"; then
    grep -o "read what the grader keeps private:[^\"]*" "$private_out/students/mallory/results.json" | head -1
    fail "mallory read what the grader keeps private"
  fi
  part1_of() { columns "$private_out/gradebook.csv" student "Part 1" | sed -n "s/^$1,//p"; }
  [ "$(part1_of mallory)" = "$(part1_of alice)" ] ||
    fail "mallory's Part 1 is not alice's: $(part1_of mallory) and $(part1_of alice)"
  [ "$(stat -c %a "$private_out")" = 700 ] || fail "$private_out is not private: $(stat -c %a "$private_out")"
  shared=$(find "$private_out" -perm /077 -printf "%m %p\n")
  [ -z "$shared" ] || fail "files of the batch others may read: $shared"
  # Every field quoted; a name a spreadsheet would run as a formula starts with '.
  unquoted=$(grep -v '^"[^"]*"\(,"[^"]*"\)*$' "$private_out/gradebook.csv" || true)
  [ -z "$unquoted" ] || fail "gradebook lines with a field not quoted: $unquoted"
  names=$(columns "$private_out/gradebook.csv" student | tr '\n' ' ')
  [ "$names" = "'+1+1 '-2+3 '-o '@A1 alice mallory " ] || fail "gradebook names: $names"
  # "-o" and "-2+3" hand in the reference, as alice does: sim_c++ compares them all.
  view=$(summary_link "$private_out/summary.html" -2+3 -o)
  [ -n "$view" ] || fail "the identical -2+3 and -o are not a similar pair: sim_c++ read a name as an option?"
  grep -q "<h2>-o</h2>" "$private_out/$view" && grep -q "^Total input: 2 files" "$private_out/$view" ||
    fail "the side-by-side page of -2+3 and -o does not show sim_c++'s comparison of both"
  echo "    mallory read nothing private; the batch's files are 0600/0700; names stay names"
  foreign=$work/foreign-out
  mkdir -p "$foreign" && chown nobody "$foreign"
  if "$grade" --batch "$private_class" --out "$foreign" --list > "$work/foreign.log" 2>&1; then
    fail "an --out that belongs to another user must be refused"
  fi
  grep -q "belongs to another user" "$work/foreign.log" || fail "no reason given: $(cat "$work/foreign.log")"
else
  echo "    (not root: no sandbox, nothing is private from the submission; skipped)"
fi

echo "7. a class ranked by its leaderboard (assignment 3, Part 13's mean MFU, higher first)"
planners=$work/planners
for student in ann ben cid; do mkdir -p "$planners/$student/planner"; done
cp "$root/solutions/planner/planner.cpp" "$planners/ben/planner/"
cp "$root/starter/planner/planner.cpp" "$planners/ann/planner/"
cp "$root/solutions/planner/planner.cpp" "$planners/cid/planner/"
patch -s -p1 -d "$planners/cid" < "$root/grader/tests/submissions/planner_no_context_parallel.patch"
"$grade" --batch "$planners" --assignment 3 --jobs 2 --seed 7 "${args[@]}" > "$work/planners.log" 2>&1 ||
  { cat "$work/planners.log"; fail "assignment 3's batch failed"; }
ranking=$(sed -n 's|^<tr><td>\([0-9]*\)</td><td>\([a-z]*\)</td><td>[0-9.]*</td></tr>$|\1 \2|p' \
  "$work/planners-graded/summary.html" | tr '\n' ' ')
[ "$ranking" = "1 ben 2 cid 3 ann " ] || fail "the leaderboard ranks: '$ranking'"
grep -q "<h2>Leaderboard: Part 13: mean MFU</h2>" "$work/planners-graded/summary.html" ||
  fail "no leaderboard on the summary page"
echo "    ranked: $ranking"

echo "8. nothing left running or lying around"
for user in "${slot_users[@]}"; do
  id -u "$user" > /dev/null 2>&1 || continue
  running=$(flock "$(slot_lock "$user")" ps -u "$user" -o stat=,pid=,args= | grep -v '^Z' || true)
  [ -z "$running" ] || fail "processes of $user are still running: $running"
done
left=$(sandbox_files | awk 'NR == FNR { before[$1]; next } !($1 in before)' \
  <(printf '%s\n' "$files_before") -)
[ -z "$left" ] || fail "files of the sandbox users were left behind:
$left"
echo "PASS"
