# Selects the lines of a kit file (handout.md, a student file of starter/ or solutions/) that one
# release ships, and drops every marker line. The markers, each on a line of its own, in a
# comment of the file's language (<!-- ... -->, // ..., or /* ... */ inside a macro):
#
#   dtk:only A     ... dtk:end   lines of assignment A only
#   dtk:part N     ... dtk:end   lines of Part N: its stubs, its reference, its handout section
#   dtk:without N  ... dtk:end   lines shown only when Part N is disabled (the handout's words
#                                 that would otherwise name it)
#
# Blocks may nest. Variables (awk -v):
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

function open_block(kind, number, shown) {
  if (kind == "only") shown = assignment == "" || number == assignment
  else if (kind == "without") shown = number in is_disabled
  else if (mode == "provided") shown = number in is_disabled
  else shown = !(number in is_disabled)
  hides[++depth] = !shown
  hidden += !shown
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
