# shellcheck shell=bash
# What one release of an assignment selects, for the scripts that make it: sourced by
# make-release.sh (the student bundle) and render-handouts.sh (the handout each bundle ships),
# so both select with the same code.
#
# release_selection ROOT ASSIGNMENT MANIFEST reads the parts the manifest disables
# ("enabled": false; scripts/disabled-parts.cmake) into `disabled`, and fails (with die, which
# the caller defines) when the manifest cannot be used or a disabled part is not marked where
# its stubs and its handout section are. select_parts FILE... then prints what that release
# ships of each file (scripts/select-parts.awk; awk's -v options pass through).

listed() { grep -o '^[^# ]*' "$1" | grep .; }  # a list's paths, comments dropped

release_selection() {
  selection_root=$1 selection_assignment=$2
  local manifest=$3 part student_files
  mapfile -t student_files < <(listed "$selection_root/starter/handin/assignment$selection_assignment.txt")
  disabled=$(cmake -DMANIFEST="$manifest" -DASSIGNMENT="$selection_assignment" \
    -P "$selection_root/scripts/disabled-parts.cmake")
  [[ $disabled != error:* ]] || die "${disabled#error: }"
  for part in $disabled; do
    (cd "$selection_root/starter" && grep -qx "// dtk:part $part" "${student_files[@]}") ||
      die "Part $part cannot be disabled: no student file marks its stubs (// dtk:part $part ... // dtk:end)"
    grep -qx "<!-- dtk:part $part -->" "$selection_root/handout.md" ||
      die "Part $part cannot be disabled: handout.md does not mark its section (<!-- dtk:part $part -->)"
  done
}

select_parts() {
  awk -v assignment="$selection_assignment" -v disabled="$disabled" \
    -f "$selection_root/scripts/select-parts.awk" "$@"
}
