# Selects the lines of a kit file (handout.md, a student file of starter/ or solutions/) that one
# release ships, and drops every marker line. The markers, each on a line of its own, in a
# comment of the file's language (<!-- ... -->, // ..., or /* ... */ inside a macro):
#
#   dtk:only A     ... dtk:end   lines of assignment A only
#   dtk:part N     ... dtk:end   lines of Part N: its stubs, its reference, its handout section
#   dtk:without N  ... dtk:end   lines shown only when Part N is disabled (the handout's words
#                                 that would otherwise name it)
#
# Blocks may nest. A line of a Markdown table cannot sit between marker lines (they would end the
# table), so one line may carry its marker at its end instead, as an HTML comment:
#   | 6 | backward passes ... | 25 |  <!-- dtk:part 6 -->
# Variables (awk -v):
#   assignment   the release's assignment (dtk:only blocks of others are dropped)
#   disabled     the disabled parts, separated by spaces ("" when all are enabled)
#   mode         "assigned" (default): what students get, disabled parts' blocks dropped;
#                "provided": the provided code of the disabled parts, i.e. the file without
#                the blocks of the parts that are assigned
# With all parts enabled, the output is the file without its marker lines.
BEGIN {
  split(disabled, list, " ")
  for (i in list) is_disabled[list[i]] = 1
  depth = 0
  hidden = 0  # open blocks whose lines are not shown
}

function shows(kind, number) {
  if (kind == "only") return assignment == "" || number == assignment
  if (kind == "without") return number in is_disabled
  if (mode == "provided") return number in is_disabled
  return !(number in is_disabled)
}

function open_block(kind, number, shown) {
  shown = shows(kind, number)
  hides[++depth] = !shown
  hidden += !shown
}

# A line with its own marker at its end: shown (without the marker) or dropped.
match($0, /[^ \t][ \t]*<!-- dtk:(only|part|without) [0-9]+ -->[ \t]*$/) {
  split(substr($0, RSTART + 1), words, /[ \t]+|-->/)
  for (i = 1; words[i] !~ /^dtk:/; ++i) {}
  if (hidden == 0 && shows(substr(words[i], 5), words[i + 1])) print substr($0, 1, RSTART)
  next
}

# A marker line: a comment whose first word is dtk:<kind> (not dtk::, C++'s namespace).
{
  line = $0
  commented = sub(/^[ \t]*(<!--|\/\/|\/\*)[ \t]*/, "", line)
}
commented && line ~ /^dtk:(only|part|without) [0-9]+([ \t]|$)/ {
  split(line, words, /[ \t]+/)
  open_block(substr(words[1], 5), words[2])
  next
}
commented && line ~ /^dtk:end([ \t]|$)/ {
  if (depth == 0) {
    print FILENAME ":" FNR ": dtk:end without an open block" > "/dev/stderr"
    failed = 1
    exit 1
  }
  hidden -= hides[depth--]
  next
}
commented && line ~ /^dtk:[a-z]/ {
  print FILENAME ":" FNR ": unknown marker \"" line "\"" > "/dev/stderr"
  failed = 1
  exit 1
}
hidden == 0 { print }

END {
  if (!failed && depth != 0) {
    print FILENAME ": a dtk: block is never closed (dtk:end missing)" > "/dev/stderr"
    exit 1
  }
}
