# One self-test of dtk-grade: assemble a submission, grade it, check the per-part scores.
#
#   cmake -DDTK_GRADE=<dtk-grade> -DNAME=<name> -DWORK=<dir> -DBASE=<solutions or starter dir>
#         -DSTUDENT_FILES=<the assignment's student files>
#         [-DPATCH=<NAME.patch applied to a copy of BASE> -DPATCHED_FILES=<the files it changes>]
#         [-DPACK=<how>]
#         [-DMANIFEST=<the build's manifest> -DALLOW_MPI=<call;...>]
#         -DEXPECT="1=full;2=lost;3=zero;..." [-DEXPECT_OUTPUT="regex;..."]
#         [-DMAX_SECONDS=<n>] [-DARGS="--timeout;5"] [-DSEEDS="28741244;844925099"]
#         [-DGUARD=ON] [-DSECOND_CHECKOUT=ON] [-DLIMITS="total_memory_mb=1024;..."]
#         [-DSPEED_BONUS="max_busy=1;..."] [-DNO_MOUNT_NAMESPACE=ON] [-DLOAD=<n>]
#         -P grade_submission.cmake
#
# PACK: dir (default: grade the directory), tar (make handin.tar), or a broken archive:
# tar-absolute, tar-dotdot, tar-symlink (an extra member with an absolute path, with "..", or
# model/func_impl.cpp as a symbolic link), tar-missing (without the assignment's first student
# file: model/func_impl.cpp, or collectives/my_collectives.cpp), not-a-tar,
# tar-not-utf8, tar-newline-name (an extra member with an absolute path named with bytes
# \377\376, or with lines of fake feedback), tar-gzip (tar -czf, named handin.tar), tar-empty
# (a valid archive without members), tar-duplicate (a second model/func_impl.cpp, the
# starter's, appended).
# PATCH: a unified diff against solutions/, paths relative to the student tree (a/FILE, b/FILE);
# it must apply exactly (no fuzz), or the test fails with patch's own output. The files it
# touches (PATCHED_FILES, its "+++ b/FILE" lines, read when the test was registered) are then
# configured (@ONLY): @DTK_SOLUTIONS_DIR@, @DTK_SELFTEST_RESULTS@, @DTK_SELFTEST_VICTIM@ and
# @DTK_SELFTEST_SECOND_CHECKOUT@ expand.
# ALLOW_MPI: grade with a copy of MANIFEST whose allowed_mpi also lists these calls.
# LIMITS: grade with a copy of MANIFEST whose "limits" have these values.
# SPEED_BONUS: likewise for the "speed_bonus" of the part that has one (max_busy=1 and a large
# max_spread time the bonus whatever the machine's load: for tests that assert a bonus is not
# earned, so that the timing, not a deferral, decides).
# GUARD: a hostile submission; the grading must leave the victim (a directory outside the
# scratch, owned by the caller) and the kit's precompiled header unchanged (world-writable
# directories are made in /var/tmp, one of them two levels down, for the submission to try), and
# results.json goes where the submission may plant a link and the sweep of world-writable
# directories does not look (a world-writable directory one level below /var/tmp's).
# SECOND_CHECKOUT: another checkout of the kit (its solutions/ and grader/runner/, readable by
# everyone) is copied to /opt/dtk-selftest-<NAME>, outside the kit's trees, for the submission
# to try to read.
# NO_MOUNT_NAMESPACE: grade as root without CAP_SYS_ADMIN, like a container that allows no
# mount namespace: no private temporary directories, the sweep alone cleans up; nothing hides
# the kit, so the kit's checkout and build are locked (go-rwx) meanwhile (locked_kit.sh).
# LOAD: grade while <n> busy processes (endless loops, as root) share the machine's cores, as
# other jobs would (a load of about <n> on top of the grading's own); they are stopped when the
# grading ends, whatever happens. Load must never cost points.
# A grading in a sandbox slot of CTest's (RESOURCE_GROUPS sandbox:1) runs on that slot's share of
# the CPUs (taskset), as a batch's gradings do (docs/grading.md, Grading a whole class).
# Every grading must leave nothing behind: no process of the sandbox user; no file of it where
# anyone may write (/tmp, /var/tmp, /dev/shm, /run/lock, at any depth) that was not there before
# it (what an earlier grading left is said, not charged); no System V IPC object it owns or made
# (/proc/sysvipc/shm, msg, sem) and no POSIX message queue of it (/dev/mqueue, when mounted) that
# was not there before; no scratch directory (it goes to $TMPDIR/dtk-selftest-scratch-NAME, which
# must be empty afterwards); and no WARNING from the grader that it could not remove some of the
# sandbox user's files or IPC objects.
# EXPECT: the scores expected, checked by check_totals.py on the totals.json dtk-grade writes
# beside results.json: per part, N=full (all points), N=zero (none), N=lost (some lost); per
# function (the rubric items named "Part N | <function>: ..."), the same or <function>=half (at
# least half of its points lost), <function>=minor (some lost, less than half); a speed bonus
# (assignment 2): <function>_bonus=zero (it earned none); others=full (everything else graded).
# A part's and a function's scores leave the bonus out.
# SEEDS: grade again with each of these seeds; every test must get the same score as with seed 7.
cmake_minimum_required(VERSION 3.21)

set(files ${STUDENT_FILES})
set(files_but_func_impl ${files})
list(REMOVE_ITEM files_but_func_impl model/func_impl.cpp)
set(files_but_first ${files})
list(POP_FRONT files_but_first)
set(tree ${WORK}/tree)
set(shared /var/tmp/dtk-selftest-${NAME})
set(drop /var/tmp/dtk-selftest-${NAME}-results)
if(GUARD)
  set(results ${drop}/anyone/results.json)
else()
  set(results ${WORK}/results.json)
endif()
set(DTK_SELFTEST_RESULTS ${results})
set(DTK_SELFTEST_VICTIM ${WORK}/victim)
set(DTK_SELFTEST_SECOND_CHECKOUT /opt/dtk-selftest-${NAME})
get_filename_component(build_dir ${DTK_GRADE} DIRECTORY)
set(kit_pch ${build_dir}/grader/data/pch/dtk_grade_pch.hpp.gch)
get_filename_component(DTK_SOLUTIONS_DIR ${BASE}/../solutions ABSOLUTE)

set(load_flag ${WORK}/load-running)  # the busy processes of LOAD spin while it exists
function(fail message)
  file(REMOVE ${load_flag})
  message(FATAL_ERROR "grader self-test ${NAME}: ${message}")
endfunction()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_QUIET ERROR_VARIABLE error)
  if(NOT status EQUAL 0)
    fail("${ARGN} failed: ${error}")
  endif()
endfunction()

# The submission.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
file(COPY ${BASE}/ DESTINATION ${tree} FILES_MATCHING PATTERN "*.cpp")
if(PATCH)
  get_filename_component(patch_name ${PATCH} NAME)
  execute_process(COMMAND patch -p1 --batch --forward --fuzz=0 --no-backup-if-mismatch
                          -d ${tree} -i ${PATCH}
                  RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT status EQUAL 0)
    fail("${patch_name} no longer applies to ${BASE}: update the patch (patch said:\n${output})")
  endif()
  foreach(file IN LISTS PATCHED_FILES)
    file(RENAME ${tree}/${file} ${tree}/${file}.in)
    configure_file(${tree}/${file}.in ${tree}/${file} @ONLY)
    file(REMOVE ${tree}/${file}.in)
  endforeach()
endif()

set(submission ${tree})
set(tar ${WORK}/handin.tar)
if(PACK STREQUAL "tar")
  run(tar -cf ${tar} -C ${tree} ${files})
elseif(PACK STREQUAL "tar-absolute" OR PACK STREQUAL "tar-dotdot")
  file(WRITE ${WORK}/evil.txt "should never be extracted\n")
  run(tar -cf ${tar} -C ${tree} ${files})
  if(PACK STREQUAL "tar-absolute")
    run(tar -rPf ${tar} ${WORK}/evil.txt)
  else()
    run(tar -rPf ${tar} -C ${tree} ../evil.txt)
  endif()
elseif(PACK STREQUAL "tar-symlink")
  file(MAKE_DIRECTORY ${WORK}/links/model)
  file(CREATE_LINK /etc/passwd ${WORK}/links/model/func_impl.cpp SYMBOLIC)
  run(tar -cf ${tar} -C ${tree} ${files_but_func_impl} -C ${WORK}/links model/func_impl.cpp)
elseif(PACK STREQUAL "tar-missing")
  run(tar -cf ${tar} -C ${tree} ${files_but_first})
elseif(PACK STREQUAL "not-a-tar")
  file(WRITE ${tar} "This is my homework, please grade it.\n")
elseif(PACK STREQUAL "tar-not-utf8" OR PACK STREQUAL "tar-newline-name")
  if(PACK STREQUAL "tar-not-utf8")
    set(name "evil\\377\\376.txt")
  else()
    set(name "evil\\nAll 61 tests passed\\nScore: 100")
  endif()
  run(tar -cf ${tar} -C ${tree} ${files})
  # The name's bytes come from printf: CMake strings cannot hold invalid UTF-8.
  run(sh -c "name=\"$(printf '${WORK}/${name}')\" && echo x > \"$name\" && tar -rPf ${tar} \"$name\"")
elseif(PACK STREQUAL "tar-gzip")
  run(tar -czf ${tar} -C ${tree} ${files})
elseif(PACK STREQUAL "tar-empty")
  run(tar -cf ${tar} -T /dev/null)
elseif(PACK STREQUAL "tar-duplicate")
  run(tar -cf ${tar} -C ${tree} ${files})
  run(tar -rf ${tar} -C ${BASE}/../starter model/func_impl.cpp)
endif()
if(PACK AND NOT PACK STREQUAL "dir")
  set(submission ${tar})
endif()

# A copy of the build's manifest with other rules or limits.
if(ALLOW_MPI OR LIMITS OR SPEED_BONUS)
  file(READ ${MANIFEST} manifest)
  # The copy holds what the manifest includes (common.json), so that it stands on its own.
  string(JSON include ERROR_VARIABLE no_include GET "${manifest}" include)
  if(NOT no_include)
    get_filename_component(manifest_dir ${MANIFEST} DIRECTORY)
    file(READ ${manifest_dir}/${include} base)
    string(JSON key_count LENGTH "${base}")
    math(EXPR last_key "${key_count} - 1")
    foreach(index RANGE ${last_key})
      string(JSON key MEMBER "${base}" ${index})
      if(key STREQUAL "about")
        continue()
      endif()
      string(JSON type TYPE "${base}" ${key})
      string(JSON value GET "${base}" ${key})
      if(type STREQUAL "STRING")
        set(value "\"${value}\"")
      endif()
      string(JSON manifest SET "${manifest}" ${key} "${value}")
    endforeach()
    string(JSON manifest REMOVE "${manifest}" include)
  endif()
  foreach(call IN LISTS ALLOW_MPI)
    string(JSON count LENGTH "${manifest}" allowed_mpi)
    string(JSON manifest SET "${manifest}" allowed_mpi ${count} "\"${call}\"")
  endforeach()
  foreach(limit IN LISTS LIMITS)
    string(REPLACE "=" ";" limit ${limit})
    list(GET limit 0 key)
    list(GET limit 1 value)
    string(JSON manifest SET "${manifest}" limits ${key} ${value})
  endforeach()
  string(JSON parts LENGTH "${manifest}" parts)
  math(EXPR last_part "${parts} - 1")
  foreach(part RANGE ${last_part})
    string(JSON bonus ERROR_VARIABLE no_bonus GET "${manifest}" parts ${part} speed_bonus)
    if(no_bonus)
      continue()
    endif()
    foreach(setting IN LISTS SPEED_BONUS)
      string(REPLACE "=" ";" setting ${setting})
      list(GET setting 0 key)
      list(GET setting 1 value)
      string(JSON manifest SET "${manifest}" parts ${part} speed_bonus ${key} ${value})
    endforeach()
  endforeach()
  file(WRITE ${WORK}/manifest.json "${manifest}")
  list(APPEND ARGS --manifest ${WORK}/manifest.json)
endif()

# The self-tests of one manifest share the reference's outputs, as a batch's gradings do
# (expected_cache.hpp): the reference runs each test once per `ctest` run, which empties the
# cache first (grader_selftests_fresh_reference, selftests.cmake). Not under LOAD: there the
# reference runs under the load too.
if(NOT LOAD)
  list(FIND ARGS --manifest at)
  if(at GREATER_EQUAL 0)  # a manifest of its own: the one copied above, or one it names
    math(EXPR at "${at} + 1")
    list(GET ARGS ${at} own_manifest)
    file(READ ${own_manifest} manifest_text)
  else()  # the build's, and the base it includes
    get_filename_component(manifest_dir ${MANIFEST} DIRECTORY)
    file(GLOB manifest_files ${manifest_dir}/*.json)
    set(manifest_text "${MANIFEST}")
    foreach(manifest_file IN LISTS manifest_files)
      file(READ ${manifest_file} text)
      string(APPEND manifest_text "${text}")
    endforeach()
  endif()
  string(SHA256 manifest_hash "${manifest_text}")
  string(SUBSTRING ${manifest_hash} 0 16 manifest_hash)
  get_filename_component(selftests_dir ${WORK} DIRECTORY)
  set(reference_cache ${selftests_dir}/.reference-${manifest_hash})
  file(MAKE_DIRECTORY ${reference_cache})
  run(chmod 700 ${reference_cache})
  list(APPEND ARGS --expected-cache ${reference_cache})
endif()

if(SECOND_CHECKOUT)
  file(REMOVE_RECURSE ${DTK_SELFTEST_SECOND_CHECKOUT})
  file(COPY ${DTK_SOLUTIONS_DIR} DESTINATION ${DTK_SELFTEST_SECOND_CHECKOUT})
  file(COPY ${DTK_SOLUTIONS_DIR}/../grader/runner DESTINATION ${DTK_SELFTEST_SECOND_CHECKOUT}/grader)
  run(chmod -R a+rX ${DTK_SELFTEST_SECOND_CHECKOUT})
endif()

if(GUARD)
  file(WRITE ${DTK_SELFTEST_VICTIM}/file "must keep its owner and content\n")
  file(SHA256 ${DTK_SELFTEST_VICTIM}/file victim_before)
  run(rm -rf ${shared} ${drop})
  file(MAKE_DIRECTORY ${shared}/nested/open ${drop}/anyone)
  run(chmod 1777 ${shared} ${shared}/nested/open ${drop}/anyone)
  file(SHA256 ${kit_pch} pch_before)
endif()

# The sandbox slot: 0, or the one CTest gave this test (a test registered with the resource
# group "sandbox:1", run with grader/tests/sandbox-slots.json as `make test` runs it): two such
# gradings run at once, each as its own sandbox user with its own lock, as a batch's do.
set(slot 0)
if(DEFINED ENV{CTEST_RESOURCE_GROUP_0_SANDBOX})
  string(REGEX MATCH "id:([0-9]+)" slot_match "$ENV{CTEST_RESOURCE_GROUP_0_SANDBOX}")
  set(slot ${CMAKE_MATCH_1})
endif()
if(slot EQUAL 0)
  set(sandbox_user dtk-sandbox)
  set(sandbox_lock /run/dtk-grade.lock)
else()
  set(sandbox_user dtk-sandbox${slot})
  set(sandbox_lock /run/dtk-grade-${slot}.lock)
  list(APPEND ARGS --slot ${slot})
endif()

# Not root, there is no sandbox: grade as the caller (the checks below still hold).
execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT uid EQUAL 0)
  list(APPEND ARGS --no-sandbox)
endif()
set(grader ${DTK_GRADE})
# In a slot of CTest's, the grading runs on the slot's share of the CPUs, as dtk-grade --batch
# shares them out between its job slots (slot_cpus): a contiguous block of the CPUs this process
# may use, or, with more slots than CPUs, one CPU they wrap around.
if(DEFINED ENV{CTEST_RESOURCE_GROUP_0_SANDBOX})
  file(STRINGS /proc/self/status allowed REGEX "^Cpus_allowed_list:")
  string(REGEX REPLACE "^Cpus_allowed_list:[ \t]*" "" allowed "${allowed}")
  string(REPLACE "," ";" ranges "${allowed}")
  set(cpus "")
  foreach(range IN LISTS ranges)
    if(range MATCHES "^([0-9]+)-([0-9]+)$")
      foreach(cpu RANGE ${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
        list(APPEND cpus ${cpu})
      endforeach()
    else()
      list(APPEND cpus ${range})
    endif()
  endforeach()
  file(READ ${CMAKE_CURRENT_LIST_DIR}/sandbox-slots.json slot_spec)
  string(JSON slots LENGTH "${slot_spec}" local 0 sandbox)
  list(LENGTH cpus cpu_count)
  if(slots GREATER cpu_count)
    math(EXPR first "${slot} % ${cpu_count}")
    set(share_size 1)
  else()
    math(EXPR first "${slot} * ${cpu_count} / ${slots}")
    math(EXPR share_size "(${slot} + 1) * ${cpu_count} / ${slots} - ${first}")
  endif()
  list(SUBLIST cpus ${first} ${share_size} share)
  list(JOIN share "," share)
  set(grader taskset --cpu-list ${share} ${grader})
endif()
if(NO_MOUNT_NAMESPACE AND uid EQUAL 0)
  set(without_mounts setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin)
  execute_process(COMMAND ${without_mounts} unshare --mount true RESULT_VARIABLE status
                  OUTPUT_QUIET ERROR_QUIET)
  if(status EQUAL 0)
    fail("${without_mounts} still allows a mount namespace")
  endif()
  # Nothing hides the kit from the sandbox then: it is locked, as the grader asks.
  get_filename_component(kit ${BASE} DIRECTORY)
  get_filename_component(build ${DTK_GRADE} DIRECTORY)
  set(grader ${CMAKE_CURRENT_LIST_DIR}/locked_kit.sh ${kit} ${build} -- ${without_mounts}
             ${DTK_GRADE})
endif()

# The grading's scratch directory goes to a directory of the test's own under $TMPDIR (so,
# usually, under /tmp, which the sandboxed commands see as their own private /tmp), to be
# found empty afterwards.
set(tmp $ENV{TMPDIR})
if(NOT tmp)
  set(tmp /tmp)
endif()
set(grading_tmp ${tmp}/dtk-selftest-scratch-${NAME})
run(rm -rf ${grading_tmp})
file(MAKE_DIRECTORY ${grading_tmp})
set(ENV{TMPDIR} ${grading_tmp})

# The files of the slot's sandbox user where anyone may write, at any depth: one line per tree,
# the top one, "device:inode" then find's -ls (names escaped). Gradings of a slot take turns
# with its lock, and other gradings' files are theirs while they run: look while holding it,
# when none runs, and never in another grading's scratch directory (root's dtk-grade.*:
# gradings of other kits may not take the same lock).
function(sandbox_files out)
  set(files "")
  execute_process(COMMAND id -u ${sandbox_user} RESULT_VARIABLE no_user
                  OUTPUT_VARIABLE sandbox_uid OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(uid EQUAL 0 AND no_user EQUAL 0)
    execute_process(COMMAND flock ${sandbox_lock}
                            find /tmp /var/tmp /dev/shm /run/lock
                            -name "dtk-grade.*" -user root -prune
                            -o -uid ${sandbox_uid} -prune -printf "%D:%i " -ls
                    OUTPUT_VARIABLE files ERROR_QUIET)
  endif()
  string(REPLACE ";" "\\x3b" files "${files}")  # one list item per line
  string(REGEX MATCHALL "[^\n]+" files "${files}")
  set(${out} "${files}" PARENT_SCOPE)
endfunction()
sandbox_files(files_before)

# The slot's sandbox user's System V IPC objects (those it owns or made: "<file> <id>: " then the
# line of /proc/sysvipc/<file>, found by its header's column names) and POSIX message queues
# ("mqueue <name>: "), one list item each; read under the slot's lock, like its files.
function(sandbox_ipc out)
  set(objects "")
  execute_process(COMMAND id -u ${sandbox_user} RESULT_VARIABLE no_user
                  OUTPUT_VARIABLE sandbox_uid OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(uid EQUAL 0 AND no_user EQUAL 0)
    execute_process(COMMAND flock ${sandbox_lock} awk -v user=${sandbox_uid} [=[
        FNR == 1 { delete column; for (i = 1; i <= NF; i++) column[$i] = i; next }
        $column["uid"] == user || $column["cuid"] == user {
          name = FILENAME; sub(".*/", "", name); print name " " $2 ": " $0
        }]=] /proc/sysvipc/shm /proc/sysvipc/msg /proc/sysvipc/sem
                    OUTPUT_VARIABLE objects ERROR_QUIET)
    if(IS_DIRECTORY /dev/mqueue)
      execute_process(COMMAND flock ${sandbox_lock} find /dev/mqueue -mindepth 1 -uid ${sandbox_uid}
                              -printf "mqueue %f: %M %u %s bytes\n"
                      OUTPUT_VARIABLE queues ERROR_QUIET)
      string(APPEND objects "${queues}")
    endif()
  endif()
  string(REPLACE ";" "\\x3b" objects "${objects}")
  string(REGEX MATCHALL "[^\n]+" objects "${objects}")
  set(${out} "${objects}" PARENT_SCOPE)
endfunction()
sandbox_ipc(ipc_before)

# Busy processes for LOAD: each spins until the flag file goes (at the end, or in fail()), or
# for at most the test's own time limit.
if(LOAD)
  file(WRITE ${load_flag} "")
  set(spin "while [ -e \"$0\" ]; do :; done")
  execute_process(COMMAND sh -c "i=0; while [ $i -lt ${LOAD} ]; do \
timeout 600 sh -c '${spin}' ${load_flag} </dev/null >/dev/null 2>&1 & i=$((i + 1)); done")
endif()

# Grading.
string(TIMESTAMP start "%s")
execute_process(COMMAND ${grader} ${submission} --seed 7 --results ${results} ${ARGS}
                RESULT_VARIABLE status OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
string(TIMESTAMP end "%s")
math(EXPR seconds "${end} - ${start}")
set(under_load "")
if(LOAD)
  file(READ /proc/loadavg loadavg)
  string(REGEX MATCH "^[^ ]+ [^ ]+" loadavg "${loadavg}")
  file(REMOVE ${load_flag})
  set(under_load " with ${LOAD} busy processes (load average ${loadavg} at the end)")
endif()
message(STATUS "${NAME}: graded in ${seconds} s${under_load}, sandbox slot ${slot}\n${stdout}${stderr}")
if(SECOND_CHECKOUT)
  file(REMOVE_RECURSE ${DTK_SELFTEST_SECOND_CHECKOUT})
endif()
if(NOT status EQUAL 0)
  fail("dtk-grade exited with ${status}, expected 0")
endif()
# What the grader could not remove of the sandbox user's files, it says; what an earlier grading
# left is not this one's.
string(REGEX MATCHALL
       "WARNING: (files|IPC objects) the sandbox user [^\n]*could not be removed:[^\n]*\n[^\n]*"
       not_removed "${stdout}${stderr}")
list(FILTER not_removed EXCLUDE REGEX "an earlier grading")
if(not_removed)
  fail("the grader could not remove the sandbox user's files: ${not_removed}")
endif()
if(MAX_SECONDS AND seconds GREATER MAX_SECONDS)
  fail("grading took ${seconds} s, more than ${MAX_SECONDS} s")
endif()

# The feedback, every test's output with the summary's, for EXPECT_OUTPUT; and every judged
# test's score, for SEEDS (a speed bonus is timed, not judged: it may differ from one grading
# to the next).
file(SIZE ${results} size)
if(size GREATER 1000000)
  fail("results.json is ${size} bytes: captured output is not capped")
endif()
file(READ ${results} json)
string(JSON count LENGTH "${json}" tests)
string(JSON all_output GET "${json}" output)
math(EXPR last "${count} - 1")
set(scores "")
foreach(i RANGE ${last})
  string(JSON name GET "${json}" tests ${i} name)
  string(JSON score GET "${json}" tests ${i} score)
  string(JSON output GET "${json}" tests ${i} output)
  string(APPEND all_output "\n${output}")
  if(NOT name MATCHES ": speed bonus$")
    list(APPEND scores "${name}=${score}")
  endif()
endforeach()

# The same submission under other seeds: the same score on every test.
foreach(seed IN LISTS SEEDS)
  set(again ${WORK}/results-${seed}.json)
  execute_process(COMMAND ${grader} ${submission} --seed ${seed} --results ${again} ${ARGS}
                  RESULT_VARIABLE status OUTPUT_VARIABLE again_stdout ERROR_VARIABLE again_stderr)
  if(NOT status EQUAL 0)
    fail("grading with seed ${seed} exited with ${status}:\n${again_stdout}${again_stderr}")
  endif()
  file(READ ${again} json)
  string(JSON count_again LENGTH "${json}" tests)
  set(scores_again "")
  math(EXPR last_again "${count_again} - 1")
  foreach(i RANGE ${last_again})
    string(JSON name GET "${json}" tests ${i} name)
    string(JSON score GET "${json}" tests ${i} score)
    if(NOT name MATCHES ": speed bonus$")
      list(APPEND scores_again "${name}=${score}")
    endif()
  endforeach()
  list(LENGTH scores judged)
  list(LENGTH scores_again judged_again)
  if(NOT judged_again EQUAL judged)
    fail("grading with seed ${seed} judged ${judged_again} tests, seed 7 judged ${judged}")
  endif()
  foreach(with_seed_7 with_seed IN ZIP_LISTS scores scores_again)
    if(NOT with_seed STREQUAL with_seed_7)
      fail("seed ${seed} gives \"${with_seed}\", seed 7 gave \"${with_seed_7}\"")
    endif()
  endforeach()
  message(STATUS "seed ${seed}: the same score on all ${judged} judged tests")
endforeach()

# The scores, as dtk-grade added them up (totals.json, beside results.json).
get_filename_component(results_dir ${results} DIRECTORY)
execute_process(COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/check_totals.py
                        ${results_dir}/totals.json --results ${results} ${EXPECT}
                RESULT_VARIABLE status OUTPUT_VARIABLE verdicts ERROR_VARIABLE problem)
message(STATUS "The scores:\n${verdicts}")
if(NOT status EQUAL 0)
  fail("${problem}")
endif()

foreach(pattern IN LISTS EXPECT_OUTPUT)
  if(NOT "${all_output}\n${stdout}" MATCHES "${pattern}")
    fail("the feedback does not match \"${pattern}\"")
  endif()
endforeach()

if(GUARD)
  execute_process(COMMAND find ${DTK_SELFTEST_VICTIM} ! -user ${uid} OUTPUT_VARIABLE changed)
  if(changed)
    fail("the grading changed the owner of files outside its scratch:\n${changed}")
  endif()
  file(SHA256 ${DTK_SELFTEST_VICTIM}/file victim_after)
  if(NOT victim_after STREQUAL victim_before)
    fail("the grading wrote into ${DTK_SELFTEST_VICTIM}/file, outside its scratch")
  endif()
  file(SHA256 ${kit_pch} pch_after)
  if(NOT pch_after STREQUAL pch_before)
    fail("the grading changed the kit's precompiled header ${kit_pch}")
  endif()
endif()

# Nothing of the submission may outlive the grading. Other gradings of the slot (ctest -j) use
# the same sandbox user: look while holding their lock, when none of them is running. Files an earlier
# grading left are a finding, but not this one's: said, not charged.
execute_process(COMMAND find ${grading_tmp} -mindepth 1 -maxdepth 1 -ls OUTPUT_VARIABLE left_in_tmp)
run(rm -rf ${grading_tmp})
if(left_in_tmp)
  fail("the grading left its scratch directory behind:\n${left_in_tmp}")
endif()
sandbox_files(files_after)
set(keys_before "")
foreach(file IN LISTS files_before)
  string(REGEX MATCH "^[0-9]+:[0-9]+" key "${file}")
  list(APPEND keys_before ${key})
endforeach()
set(left_behind "")
set(still_there "")
foreach(file IN LISTS files_after)
  string(REGEX MATCH "^[0-9]+:[0-9]+" key "${file}")
  if(key IN_LIST keys_before)
    string(APPEND still_there "\n${file}")
  else()
    string(APPEND left_behind "\n${file}")
  endif()
endforeach()
if(GUARD)
  run(rm -rf ${shared} ${drop})
endif()
if(still_there)
  message(WARNING "An earlier grading left files of the sandbox user that are still there (a "
                  "finding, but not this test's):${still_there}")
endif()
if(left_behind)
  fail("files of the sandbox user were left behind by this grading (or by another that took \
turns with it while this test ran):${left_behind}")
endif()
sandbox_ipc(ipc_after)
set(ipc_left "")
foreach(object IN LISTS ipc_after)
  string(REGEX MATCH "^[^:]+" key "${object}")
  set(was_there FALSE)
  foreach(before IN LISTS ipc_before)
    string(REGEX MATCH "^[^:]+" before_key "${before}")
    if(before_key STREQUAL key)
      set(was_there TRUE)
    endif()
  endforeach()
  if(was_there)
    message(WARNING "An earlier grading left this IPC object of the sandbox user, still there (a \
finding, but not this test's): ${object}")
  else()
    string(APPEND ipc_left "\n${object}")
  endif()
endforeach()
if(ipc_left)
  fail("System V IPC objects or POSIX message queues of the sandbox user were left behind by \
this grading (or by another that took turns with it while this test ran):${ipc_left}")
endif()
execute_process(COMMAND id -u ${sandbox_user} RESULT_VARIABLE no_user OUTPUT_QUIET ERROR_QUIET)
if(no_user EQUAL 0 AND EXISTS ${sandbox_lock})
  execute_process(COMMAND flock ${sandbox_lock} ps -u ${sandbox_user} -o stat=,pid=,args=
                  OUTPUT_VARIABLE processes)
  string(REGEX MATCHALL "(^|\n)[^Z\n][^\n]*" alive "${processes}")  # zombies are dead
  if(alive)
    fail("processes of the sandbox user are still running:\n${processes}")
  endif()
endif()
