#!/usr/bin/env bash
# Self-test of `dtk-grade --batch`: a small class graded two at a time.
#   1. five hand-ins (a tar, directories, a wrong one, an edited one, a broken tar) get the
#      scores single gradings give them with the same seed, in gradebook.csv;
#   2. an interrupted batch goes on where it stopped, with its seed; another seed is refused;
#   3. summary.html holds a histogram (valid SVG) per part and the most failed tests;
#   4. Gradescope's "Export Submissions" layout is graded by student id;
#   5. --similarity ranks a disguised copy first;
#   6. the summary page ranks a class by its leaderboard (assignment 3's mean MFU);
#   7. nothing of the job slots' sandbox users is left running.
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

class=$work/class out=$work/class-graded
mkdir -p "$class"
copy_of() { mkdir -p "$2" && (cd "$1" && cp --parents "${files[@]}" "$2/"); }
tar -cf "$class/alice.tar" -C "$root/solutions" "${files[@]}"
copy_of "$root/starter" "$class/bob"
copy_of "$root/solutions" "$class/carol"
patch -s -p1 -d "$class/carol" < "$root/grader/tests/submissions/wrong_split_modulo.patch"
copy_of "$root/solutions" "$class/dave"
echo "// edited, so compiled" >> "$class/dave/model/func_impl.cpp"
echo "This is my homework, please grade it." > "$class/eve.tar"

echo "1. grading the class, two at a time"
"$grade" --batch "$class" --jobs 2 --seed 7 "${args[@]}" > "$work/batch.log" 2>&1 ||
  { cat "$work/batch.log"; fail "dtk-grade --batch exited with $?"; }
cat "$work/batch.log"
gradebook=$out/gradebook.csv
[ "$(head -1 "$gradebook")" = "student,Part 1,Part 2,Part 3,Part 4,Part 5,Part 6,total,bonus,seed,seconds,status" ] ||
  fail "unexpected gradebook header: $(head -1 "$gradebook")"
[ "$(tail -n +2 "$gradebook" | cut -d, -f1 | tr '\n' ' ')" = "alice bob carol dave eve " ] ||
  fail "the gradebook's students are not alice bob carol dave eve"
total_of() { awk -F, -v s="$1" '$1 == s { print $8 }' "$gradebook"; }
for student in alice bob carol dave eve; do
  grep -q "^$student,.*,7,[0-9.]*,\"graded\"$" "$gradebook" || fail "$student's row: $(grep "^$student," "$gradebook")"
done
[ "$(total_of alice)" = 100 ] && [ "$(total_of bob)" = 0 ] && [ "$(total_of dave)" = 100 ] &&
  [ "$(total_of eve)" = 0 ] || fail "totals: $(cut -d, -f1,8 "$gradebook" | tr '\n' ' ')"
# The same seed alone gives the same score.
"$grade" "$class/carol" --seed 7 --results "$work/carol.json" "${args[@]}" > /dev/null
single=$(python3 -c "import json,sys; print('%.4g' % json.load(open(sys.argv[1]))['score'])" "$work/carol.json")
[ "$(total_of carol)" = "$single" ] || fail "carol: $(total_of carol) in the batch, $single alone"
echo "    carol: $single in the batch and alone"

echo "2. resuming"
rm "$out/carol/graded.json"
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
EOF
"$grade" --batch "$export" --seed 7 "${args[@]}" > "$work/export.log" 2>&1 || { cat "$work/export.log"; fail "the export did not grade"; }
rows=$(tail -n +2 "$work/export-graded/gradebook.csv" | cut -d, -f1,8 | tr '\n' ' ')
[ "$rows" = "1815,100 alan@example.edu,0 " ] || fail "export gradebook: $rows"

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
pairs=$(sed -n 's|.*<tr><td>\([^<]*\)</td><td>\([^<]*\)</td><td>\([0-9]*\) %</td>.*|\1: \2 \3|p' "$work/similar-graded/summary.html")
echo "$pairs" | sed 's/^/    /'
[ "$(echo "$pairs" | grep '^model/func_impl.cpp' | head -1 | cut -d' ' -f2-4)" = "ada and bob" ] ||
  fail "the renamed and reordered copy is not the top pair of model/func_impl.cpp"
if echo "$pairs" | grep -q "^data/data_parallel_preprocess.cpp: .*cyd"; then
  fail "cyd's independent split_train is listed as similar"
fi
[ -f "$work/similar-graded/similarity/model_func_impl.cpp/ada--bob.html" ] || fail "no side-by-side page"

echo "6. a class ranked by its leaderboard (assignment 3, Part 13's mean MFU, higher first)"
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

echo "7. nothing left running"
for user in dtk-sandbox dtk-sandbox1; do
  if id -u "$user" > /dev/null 2>&1 && pgrep -u "$user" > /dev/null; then
    fail "processes of $user are still running: $(ps -u "$user" -o pid=,args=)"
  fi
done
echo "PASS"
