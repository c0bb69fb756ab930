#!/usr/bin/python3
"""One self-test of dtk-grade: assemble a submission, grade it, check the per-part scores.

usage: grade_submission.py --dtk-grade=<dtk-grade> --name=<name> --work=<dir>
           --base=<solutions or starter dir> --manifest=<the build's manifest>
           --student-file=<each of the assignment's student files>...
           [--patch=<NAME.patch applied to a copy of BASE> --patched-file=<each file it changes>...]
           [--pack=<how>] [--allow-mpi=<call>...] [--limit=<key=value>...]
           [--speed-bonus=<key=value>...] --expect=<KEY=VERDICT>... [--expect-output=<regex>...]
           [--max-seconds=<n>] [--seed=<n>...] [--guard] [--second-checkout]
           [--no-mount-namespace] [--load=<n>] [-- <dtk-grade's own arguments>]

Options that take a list are given once per value, as --KEY=VALUE (a value may start with "-").
selftests.cmake registers each self-test with this command line.

--pack: dir (default: grade the directory), tar (make handin.tar), or a broken archive:
tar-absolute, tar-dotdot, tar-symlink (an extra member with an absolute path, with "..", or
model/func_impl.cpp as a symbolic link), tar-missing (without the assignment's first student
file: model/func_impl.cpp, or collectives/my_collectives.cpp), not-a-tar,
tar-not-utf8, tar-newline-name (an extra member with an absolute path named with bytes
\\377\\376, or with lines of fake feedback), tar-gzip (tar -czf, named handin.tar), tar-empty
(a valid archive without members), tar-duplicate (a second model/func_impl.cpp, the
starter's, appended).
--patch: a unified diff against solutions/, paths relative to the student tree (a/FILE, b/FILE);
it must apply exactly (no fuzz), or the test fails with patch's own output. The files it
touches (--patched-file, its "+++ b/FILE" lines, read when the test was registered) are then
configured as CMake's configure_file(@ONLY) would: @DTK_SOLUTIONS_DIR@, @DTK_SELFTEST_RESULTS@,
@DTK_SELFTEST_VICTIM@ and @DTK_SELFTEST_SECOND_CHECKOUT@ expand, any other @NAME@ to nothing.
--allow-mpi: grade with a copy of the manifest whose allowed_mpi also lists these calls.
--limit: grade with a copy of the manifest whose "limits" have these values.
--speed-bonus: likewise for the "speed_bonus" of the part that has one (max_busy=1 and a large
max_spread time the bonus whatever the machine's load: for tests that assert a bonus is not
earned, so that the timing, not a deferral, decides).
--guard: a hostile submission; the grading must leave the victim (a directory outside the
scratch, owned by the caller) and the kit's precompiled header unchanged (world-writable
directories are made in /var/tmp, one of them two levels down, for the submission to try), and
results.json goes where the submission may plant a link and the sweep of world-writable
directories does not look (a world-writable directory one level below /var/tmp's).
--second-checkout: another checkout of the kit (its solutions/ and grader/runner/, readable by
everyone) is copied to /opt/dtk-selftest-<NAME>, outside the kit's trees, for the submission
to try to read.
--no-mount-namespace: grade as root without CAP_SYS_ADMIN, like a container that allows no
mount namespace: no private temporary directories, the sweep alone cleans up; nothing hides
the kit, so the kit's checkout and build are locked (go-rwx) meanwhile (locked_kit.sh).
--load: grade while <n> busy processes (endless loops, as root) share the machine's cores, as
other jobs would (a load of about <n> on top of the grading's own); they are stopped when the
grading ends, whatever happens. Load must never cost points.
A grading in a sandbox slot of CTest's (RESOURCE_GROUPS sandbox:1) runs on that slot's share of
the CPUs (taskset), as a batch's gradings do (docs/grading.md, Grading a whole class).
Every grading must leave nothing behind: no process of the sandbox user; no file of it where
anyone may write (/tmp, /var/tmp, /dev/shm, /run/lock, at any depth) that was not there before
it (what an earlier grading left is said, not charged); no System V IPC object it owns or made
(/proc/sysvipc/shm, msg, sem) and no POSIX message queue of it (/dev/mqueue, when mounted) that
was not there before; no scratch directory (it goes to $TMPDIR/dtk-selftest-scratch-NAME, which
must be empty afterwards); and no WARNING from the grader that it could not remove some of the
sandbox user's files or IPC objects.
--expect: the scores expected, checked by check_totals.py on the totals.json dtk-grade writes
beside results.json: per part, N=full (all points), N=zero (none), N=lost (some lost); per
function (the rubric items named "Part N | <function>: ..."), the same or <function>=half (at
least half of its points lost), <function>=minor (some lost, less than half); a speed bonus
(assignment 2): <function>_bonus=zero (it earned none); others=full (everything else graded).
A part's and a function's scores leave the bonus out.
--seed: grade again with each of these seeds; every test must get the same score as with seed 7.
"""
import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

import sandbox_leftovers

HERE = os.path.dirname(os.path.abspath(__file__))
FIRST_SEED = "7"


class Failure(Exception):
    """A check of the self-test that does not hold: the message says which."""


def parse_options(argv):
    own, grader_args = argv, []
    if "--" in argv:
        at = argv.index("--")
        own, grader_args = argv[:at], argv[at + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for option in ("--dtk-grade", "--name", "--work", "--base", "--manifest"):
        parser.add_argument(option, required=True)
    for option in ("--patch", "--pack", "--max-seconds", "--load"):
        parser.add_argument(option)
    for option in ("--student-file", "--patched-file", "--allow-mpi", "--limit", "--speed-bonus",
                   "--expect", "--expect-output", "--seed"):
        parser.add_argument(option, action="append", default=[])
    for flag in ("--guard", "--second-checkout", "--no-mount-namespace"):
        parser.add_argument(flag, action="store_true")
    options = parser.parse_args(own)
    options.grader_args = grader_args
    return options


def run(*command):
    """Runs a command that must succeed; its output is not wanted."""
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          errors="replace")
    if done.returncode != 0:
        raise Failure(f"{' '.join(map(str, command))} failed: {done.stderr}")


def output_of(*command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, errors="replace", **kwargs)


def sha256(path):
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


class SelfTest:
    def __init__(self, options):
        self.o = options
        self.name = options.name
        self.work = options.work
        self.tree = os.path.join(self.work, "tree")
        self.shared = f"/var/tmp/dtk-selftest-{self.name}"
        self.drop = f"/var/tmp/dtk-selftest-{self.name}-results"
        self.results = (os.path.join(self.drop, "anyone", "results.json") if options.guard
                        else os.path.join(self.work, "results.json"))
        self.victim = os.path.join(self.work, "victim")
        self.second_checkout = f"/opt/dtk-selftest-{self.name}"
        self.solutions = os.path.abspath(os.path.join(options.base, "..", "solutions"))
        self.kit_pch = os.path.join(os.path.dirname(options.dtk_grade),
                                    "grader/data/pch/dtk_grade_pch.hpp.gch")
        self.load_flag = os.path.join(self.work, "load-running")  # LOAD's processes spin on it
        self.args = list(options.grader_args)
        self.uid = os.getuid()

    # The submission.

    def assemble(self):
        """The student tree (BASE's .cpp files, patched), packed as --pack says."""
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        shutil.copytree(self.o.base, self.tree, ignore=only_cpp_files)
        if self.o.patch:
            self.apply_patch()
        pack = self.o.pack or "dir"
        if pack == "dir":
            return self.tree
        tar = os.path.join(self.work, "handin.tar")
        PACKERS[pack](self, tar)
        return tar

    def apply_patch(self):
        done = subprocess.run(["patch", "-p1", "--batch", "--forward", "--fuzz=0",
                               "--no-backup-if-mismatch", "-d", self.tree, "-i", self.o.patch],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode != 0:
            raise Failure(f"{os.path.basename(self.o.patch)} no longer applies to {self.o.base}: "
                          f"update the patch (patch said:\n{done.stdout})")
        values = {"DTK_SOLUTIONS_DIR": self.solutions, "DTK_SELFTEST_RESULTS": self.results,
                  "DTK_SELFTEST_VICTIM": self.victim,
                  "DTK_SELFTEST_SECOND_CHECKOUT": self.second_checkout}
        for name in self.o.patched_file:
            configure_file(os.path.join(self.tree, name), values)

    def tar_files(self, tar, *extra, flags="-cf", files=None):
        run("tar", flags, tar, "-C", self.tree, *(self.o.student_file if files is None else files),
            *extra)

    def pack_tar(self, tar):
        self.tar_files(tar)

    def pack_with_evil_member(self, tar):
        evil = os.path.join(self.work, "evil.txt")
        with open(evil, "w") as file:
            file.write("should never be extracted\n")
        self.tar_files(tar)
        if self.o.pack == "tar-absolute":
            run("tar", "-rPf", tar, evil)
        else:
            run("tar", "-rPf", tar, "-C", self.tree, "../evil.txt")

    def pack_symlink(self, tar):
        links = os.path.join(self.work, "links")
        os.makedirs(os.path.join(links, "model"))
        os.symlink("/etc/passwd", os.path.join(links, "model/func_impl.cpp"))
        others = [f for f in self.o.student_file if f != "model/func_impl.cpp"]
        self.tar_files(tar, "-C", links, "model/func_impl.cpp", files=others)

    def pack_missing(self, tar):
        self.tar_files(tar, files=self.o.student_file[1:])

    def pack_not_a_tar(self, tar):
        with open(tar, "w") as file:
            file.write("This is my homework, please grade it.\n")

    def pack_strange_name(self, tar):
        """An extra member whose absolute path is not UTF-8, or holds fake feedback's lines."""
        name = (b"evil\377\376.txt" if self.o.pack == "tar-not-utf8"
                else b"evil\nAll 61 tests passed\nScore: 100")
        path = os.fsencode(self.work) + b"/" + name
        with open(path, "w") as file:
            file.write("x\n")
        self.tar_files(tar)
        run("tar", "-rPf", tar, path)

    def pack_gzip(self, tar):
        self.tar_files(tar, flags="-czf")

    def pack_empty(self, tar):
        run("tar", "-cf", tar, "-T", "/dev/null")

    def pack_duplicate(self, tar):
        self.tar_files(tar)
        run("tar", "-rf", tar, "-C", os.path.join(self.o.base, "..", "starter"),
            "model/func_impl.cpp")

    # What the grading is given besides the submission.

    def manifest_copy(self):
        """A copy of the build's manifest with other rules or limits, standing on its own."""
        with open(self.o.manifest) as file:
            manifest = json.load(file)
        if "include" in manifest:  # what it includes (common.json) goes into the copy
            with open(os.path.join(os.path.dirname(self.o.manifest), manifest.pop("include"))) as file:
                base = json.load(file)
            manifest.update((key, value) for key, value in base.items() if key != "about")
        if self.o.allow_mpi:
            manifest["allowed_mpi"] += self.o.allow_mpi
        for key, value in settings(self.o.limit):
            manifest["limits"][key] = value
        for part in manifest["parts"]:
            if "speed_bonus" in part:
                part["speed_bonus"].update(settings(self.o.speed_bonus))
        path = os.path.join(self.work, "manifest.json")
        with open(path, "w") as file:
            json.dump(manifest, file, indent=2)
        return path

    def object_cache(self):
        """The self-tests share the objects they compile, as a batch's gradings do
        (object_cache.hpp), across `ctest` runs and checkouts too, as ccache shares the kit's
        builds: a patch compiles once until it, a provided header it includes, the compiler or an
        installed package changes. Compiling is about half of a one-part grading.
        $DTK_SELFTEST_OBJECTS moves the cache (bench/suite_benchmark.sh --new-machine gives it an
        empty one)."""
        default = os.path.join(os.path.expanduser("~"), ".cache", "dtk", "selftest-objects")
        return os.environ.get("DTK_SELFTEST_OBJECTS") or default

    def reference_cache(self):
        """The self-tests of one manifest share the reference's outputs, as a batch's gradings
        do (expected_cache.hpp): the reference runs each test once per `ctest` run, which
        empties the cache first (grader_selftests_fresh_reference, selftests.cmake)."""
        if "--manifest" in self.args:  # a manifest of its own: a copy, or one it names
            with open(self.args[self.args.index("--manifest") + 1], "rb") as file:
                manifest_text = file.read()
        else:  # the build's, and the base it includes
            manifest_text = self.o.manifest.encode()
            for path in sorted(glob.glob(os.path.join(os.path.dirname(self.o.manifest), "*.json"))):
                with open(path, "rb") as file:
                    manifest_text += file.read()
        digest = hashlib.sha256(manifest_text).hexdigest()[:16]
        cache = os.path.join(os.path.dirname(self.work), f".reference-{digest}")
        os.makedirs(cache, exist_ok=True)
        run("chmod", "700", cache)
        return cache

    def make_second_checkout(self):
        shutil.rmtree(self.second_checkout, ignore_errors=True)
        shutil.copytree(self.solutions, os.path.join(self.second_checkout, "solutions"))
        shutil.copytree(os.path.join(self.solutions, "..", "grader", "runner"),
                        os.path.join(self.second_checkout, "grader", "runner"))
        run("chmod", "-R", "a+rX", self.second_checkout)

    def set_up_guard(self):
        """The victim, the world-writable directories to try, and the checksums to keep."""
        os.makedirs(self.victim)
        with open(os.path.join(self.victim, "file"), "w") as file:
            file.write("must keep its owner and content\n")
        self.victim_before = sha256(os.path.join(self.victim, "file"))
        run("rm", "-rf", self.shared, self.drop)
        open_dirs = (self.shared, os.path.join(self.shared, "nested/open"),
                     os.path.join(self.drop, "anyone"))
        for directory in open_dirs:
            os.makedirs(directory, exist_ok=True)
        run("chmod", "1777", *open_dirs)
        self.pch_before = sha256(self.kit_pch)

    def grader_command(self, slot):
        """dtk-grade, on the slot's share of the CPUs, or with the kit locked and no mounts."""
        grader = [self.o.dtk_grade]
        if "CTEST_RESOURCE_GROUP_0_SANDBOX" in os.environ:
            grader = ["taskset", "--cpu-list", slot_cpus(slot)] + grader
        if self.o.no_mount_namespace and self.uid == 0:
            without_mounts = ["setpriv", "--inh-caps=-sys_admin", "--bounding-set=-sys_admin"]
            if output_of(*without_mounts, "unshare", "--mount", "true").returncode == 0:
                raise Failure(f"{' '.join(without_mounts)} still allows a mount namespace")
            # Nothing hides the kit from the sandbox then: it is locked, as the grader asks.
            grader = [os.path.join(HERE, "locked_kit.sh"), os.path.dirname(self.o.base),
                      os.path.dirname(self.o.dtk_grade), "--", *without_mounts, self.o.dtk_grade]
        return grader

    def start_load(self):
        """LOAD's busy processes: each spins until the flag file goes, or for at most the test's
        own time limit."""
        open(self.load_flag, "w").close()
        for _ in range(int(self.o.load)):
            subprocess.Popen(["timeout", "600", "sh", "-c", 'while [ -e "$0" ]; do :; done',
                              self.load_flag], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop_load(self):
        if os.path.exists(self.load_flag):
            os.remove(self.load_flag)

    # The test.

    def run(self):
        submission = self.assemble()
        if self.o.allow_mpi or self.o.limit or self.o.speed_bonus:
            self.args += ["--manifest", self.manifest_copy()]
        if not self.o.load:  # under LOAD the reference runs under the load too
            self.args += ["--expected-cache", self.reference_cache()]
        self.args += ["--object-cache", self.object_cache()]
        if self.o.second_checkout:
            self.make_second_checkout()
        if self.o.guard:
            self.set_up_guard()
        slot = sandbox_slot()
        self.sandbox = sandbox_leftovers.user_of_slot(slot)  # the user and its lock
        if slot != 0:
            self.args += ["--slot", str(slot)]
        if self.uid != 0:  # not root, there is no sandbox: grade as the caller
            self.args.append("--no-sandbox")
        grader = self.grader_command(slot)
        # The scratch directory goes under $TMPDIR (usually /tmp, which the sandboxed commands
        # see as their own private /tmp), to be found empty afterwards.
        self.grading_tmp = os.path.join(os.environ.get("TMPDIR") or "/tmp",
                                        f"dtk-selftest-scratch-{self.name}")
        run("rm", "-rf", self.grading_tmp)
        os.makedirs(self.grading_tmp)
        os.environ["TMPDIR"] = self.grading_tmp
        files_before = sandbox_leftovers.files(*self.sandbox)
        ipc_before = sandbox_leftovers.ipc(*self.sandbox)

        stdout = self.grade(grader, submission, slot)
        scores, all_output, lost_feedback = self.read_results()
        self.check_seeds(grader, submission, scores)
        self.check_scores()
        for pattern in self.o.expect_output:
            if not re.search(pattern, f"{all_output}\n{stdout}", re.DOTALL):
                raise Failure(f'the feedback does not match "{pattern}". The feedback of the '
                              f"tests that lost points:\n{lost_feedback}")
        if self.o.guard:
            self.check_guard()
        self.check_left_behind(files_before, ipc_before)

    def grade(self, grader, submission, slot):
        """The grading with seed 7; returns what dtk-grade printed on its standard output."""
        if self.o.load:
            self.start_load()
        start = time.monotonic()
        done = output_of(*grader, submission, "--seed", FIRST_SEED, "--results", self.results,
                         *self.args)
        seconds = round(time.monotonic() - start)
        under_load = ""
        if self.o.load:
            with open("/proc/loadavg") as file:
                loadavg = " ".join(file.read().split()[:2])
            self.stop_load()
            under_load = f" with {self.o.load} busy processes (load average {loadavg} at the end)"
        print(f"{self.name}: graded in {seconds} s{under_load}, sandbox slot {slot}\n"
              f"{done.stdout}{done.stderr}", flush=True)
        if self.o.second_checkout:
            shutil.rmtree(self.second_checkout, ignore_errors=True)
        if done.returncode != 0:
            raise Failure(f"dtk-grade exited with {done.returncode}, expected 0")
        # What the grader could not remove of the sandbox user's files, it says; what an earlier
        # grading left is not this one's.
        not_removed = [match.group(0) for match in re.finditer(
            r"WARNING: (files|IPC objects) the sandbox user [^\n]*could not be removed:[^\n]*\n[^\n]*",
            done.stdout + done.stderr) if "an earlier grading" not in match.group(0)]
        if not_removed:
            raise Failure(f"the grader could not remove the sandbox user's files: {not_removed}")
        if self.o.max_seconds and seconds > int(self.o.max_seconds):
            raise Failure(f"grading took {seconds} s, more than {self.o.max_seconds} s")
        return done.stdout

    def read_results(self):
        """Every judged test's "name=score" (a speed bonus is timed, not judged: it may differ
        from one grading to the next), the feedback (every test's output with the summary's),
        and the feedback of the tests that lost points, to show when a pattern is missing."""
        size = os.path.getsize(self.results)
        if size > 1000000:
            raise Failure(f"results.json is {size} bytes: captured output is not capped")
        with open(self.results) as file:
            results = json.load(file)
        all_output = "\n".join([results["output"]] + [test["output"] for test in results["tests"]])
        lost = [f"{test['name']}:\n{test['output']}" for test in results["tests"]
                if test["score"] < test["max_score"]]
        return judged_scores(results), all_output, "\n".join(lost) or "(none)"

    def check_seeds(self, grader, submission, scores):
        """The same submission under other seeds: the same score on every test."""
        for seed in self.o.seed:
            again = os.path.join(self.work, f"results-{seed}.json")
            done = output_of(*grader, submission, "--seed", seed, "--results", again, *self.args)
            if done.returncode != 0:
                raise Failure(f"grading with seed {seed} exited with {done.returncode}:\n"
                              f"{done.stdout}{done.stderr}")
            with open(again) as file:
                scores_again = judged_scores(json.load(file))
            if len(scores_again) != len(scores):
                raise Failure(f"grading with seed {seed} judged {len(scores_again)} tests, "
                              f"seed {FIRST_SEED} judged {len(scores)}")
            for with_first, with_seed in zip(scores, scores_again):
                if with_seed != with_first:
                    raise Failure(f'seed {seed} gives "{with_seed}", seed {FIRST_SEED} gave '
                                  f'"{with_first}"')
            print(f"seed {seed}: the same score on all {len(scores)} judged tests")

    def check_scores(self):
        """The scores, as dtk-grade added them up (totals.json, beside results.json)."""
        totals = os.path.join(os.path.dirname(self.results), "totals.json")
        done = output_of(sys.executable, os.path.join(HERE, "check_totals.py"), totals,
                         "--results", self.results, *self.o.expect)
        print(f"The scores:\n{done.stdout}")
        if done.returncode != 0:
            raise Failure(done.stderr)

    def check_guard(self):
        changed = output_of("find", self.victim, "!", "-user", str(self.uid)).stdout
        if changed:
            raise Failure(f"the grading changed the owner of files outside its scratch:\n{changed}")
        if sha256(os.path.join(self.victim, "file")) != self.victim_before:
            raise Failure(f"the grading wrote into {self.victim}/file, outside its scratch")
        if sha256(self.kit_pch) != self.pch_before:
            raise Failure(f"the grading changed the kit's precompiled header {self.kit_pch}")

    def check_left_behind(self, files_before, ipc_before):
        """Nothing of the submission may outlive the grading. Other gradings of the slot (ctest
        -j) use the same sandbox user: look while holding their lock, when none of them is
        running. What an earlier grading left is a finding, but not this one's: said, not
        charged."""
        left_in_tmp = output_of("find", self.grading_tmp, "-mindepth", "1", "-maxdepth", "1",
                                "-ls").stdout
        run("rm", "-rf", self.grading_tmp)
        if left_in_tmp:
            raise Failure(f"the grading left its scratch directory behind:\n{left_in_tmp}")
        still_there, left_behind = sandbox_leftovers.split_by_key(
            files_before, sandbox_leftovers.files(*self.sandbox), sandbox_leftovers.FILE_KEY)
        if self.o.guard:
            run("rm", "-rf", self.shared, self.drop)
        if still_there:
            warn("An earlier grading left files of the sandbox user that are still there (a "
                 "finding, but not this test's):" + "".join(f"\n{f}" for f in still_there))
        if left_behind:
            raise Failure("files of the sandbox user were left behind by this grading (or by "
                          "another that took turns with it while this test ran):"
                          + "".join(f"\n{f}" for f in left_behind))
        still_there, left_behind = sandbox_leftovers.split_by_key(
            ipc_before, sandbox_leftovers.ipc(*self.sandbox), sandbox_leftovers.IPC_KEY)
        for ipc_object in still_there:
            warn("An earlier grading left this IPC object of the sandbox user, still there (a "
                 f"finding, but not this test's): {ipc_object}")
        if left_behind:
            raise Failure("System V IPC objects or POSIX message queues of the sandbox user were "
                          "left behind by this grading (or by another that took turns with it "
                          "while this test ran):" + "".join(f"\n{o}" for o in left_behind))
        processes = os.path.exists(self.sandbox[1]) and sandbox_leftovers.running(*self.sandbox)
        if processes:
            raise Failure(f"processes of the sandbox user are still running:\n{processes}")


PACKERS = {
    "tar": SelfTest.pack_tar,
    "tar-absolute": SelfTest.pack_with_evil_member,
    "tar-dotdot": SelfTest.pack_with_evil_member,
    "tar-symlink": SelfTest.pack_symlink,
    "tar-missing": SelfTest.pack_missing,
    "not-a-tar": SelfTest.pack_not_a_tar,
    "tar-not-utf8": SelfTest.pack_strange_name,
    "tar-newline-name": SelfTest.pack_strange_name,
    "tar-gzip": SelfTest.pack_gzip,
    "tar-empty": SelfTest.pack_empty,
    "tar-duplicate": SelfTest.pack_duplicate,
}


def only_cpp_files(directory, names):
    """copytree's filter: directories and .cpp files only."""
    return [name for name in names
            if not name.endswith(".cpp") and not os.path.isdir(os.path.join(directory, name))]


def configure_file(path, values):
    """The file with each @NAME@ replaced by values[NAME], or by nothing, as CMake's
    configure_file(@ONLY) does."""
    with open(path, encoding="utf-8", errors="surrogateescape") as file:
        text = file.read()
    text = re.sub(r"@([A-Za-z_][A-Za-z0-9_]*)@", lambda match: values.get(match.group(1), ""), text)
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as file:
        file.write(text)


def settings(pairs):
    """KEY=VALUE pairs, each value read as JSON (a number)."""
    for pair in pairs:
        key, value = pair.split("=", 1)
        yield key, json.loads(value)


def judged_scores(results):
    return [f"{test['name']}={test['score']}" for test in results["tests"]
            if not test["name"].endswith(": speed bonus")]


def sandbox_slot():
    """0, or the slot CTest gave this test (a test registered with the resource group
    "sandbox:1", run with grader/tests/sandbox-slots.json as `make test` runs it): three such
    gradings run at once, each as its own sandbox user with its own lock, as a batch's do.
    CTest's slots are 61 to 63, the last three --slot takes: slot 0 is the one every grading
    without --slot takes (a test's that grades by itself), and a batch's job slots count up from
    0, so a slotted self-test never waits for either's lock, nor they for its."""
    match = re.search(r"id:([0-9]+)", os.environ.get("CTEST_RESOURCE_GROUP_0_SANDBOX", ""))
    return int(match.group(1)) if match else 0


def slot_cpus(slot):
    """The slot's share of the CPUs, as dtk-grade --batch shares them out between its job slots
    (slot_cpus): a contiguous block of the CPUs this process may use, or, with more slots than
    CPUs, one CPU they wrap around."""
    cpus = sorted(os.sched_getaffinity(0))
    with open(os.path.join(HERE, "sandbox-slots.json")) as file:
        ids = [int(entry["id"]) for entry in json.load(file)["local"][0]["sandbox"]]
    slots, index = len(ids), ids.index(slot)
    if slots > len(cpus):
        share = [cpus[index % len(cpus)]]
    else:
        first = index * len(cpus) // slots
        share = cpus[first:(index + 1) * len(cpus) // slots]
    return ",".join(map(str, share))


def warn(message):
    print(f"WARNING: {message}", file=sys.stderr)


def main():
    test = SelfTest(parse_options(sys.argv[1:]))
    try:
        test.run()
    except Failure as failure:
        print(f"grader self-test {test.name}: {failure}", file=sys.stderr)
        sys.exit(1)
    finally:
        test.stop_load()


if __name__ == "__main__":
    main()
