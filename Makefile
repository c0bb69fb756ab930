# dtk's make targets. On a fresh Debian 12 machine `make test` or `make grade` is all the set-up:
# run as root they install missing packages with apt-get; otherwise they print the command.
#
#   make              build everything (build/)
#   make test         build, then run every test of the kit (ctest)
#   make test-fast    build, then run the tests that take seconds each (the edit loop)
#   make grade        grade solutions/ with the hidden tests (dtk-grade; full marks expected)
#   make unit-tests   build and run the grader's unit tests only (what CI runs first)
#   make handin.tar [ASSIGNMENT=2]   pack an assignment's student files of starter/ into handin.tar
#   make release [ASSIGNMENT=2]      write an assignment's student bundle: dist/dtk-student.tar.gz,
#                     dist/dtk-student-assignment2.tar.gz (scripts/make-release.sh)
#   MANIFEST=FILE     with release, autolab and autograder.zip: the assignment's manifest to
#                     follow (default grader/manifests/assignment<N>.json); the parts it
#                     disables ("enabled": false) are neither shipped nor graded
#   make autolab [ASSIGNMENT=2]   write Autolab's autograder of an assignment,
#                     dist/autolab-assignment<N>/{autograde.tar,autograde-Makefile}
#   make autograder.zip [ASSIGNMENT=2]   write Gradescope's autograder of an assignment,
#                     dist/autograder-assignment<N>.zip (scripts/make-autograder.sh)

# Packages only the kit's own tests need: xmllint checks the figures, ps finds processes a
# graded submission left behind, sim_c++ compares hand-ins (dtk-grade --batch --similarity),
# zip packs Gradescope's autograder, Slurm with munge runs the cluster-grading test, and
# python3 reads JSON in the class-scale tests, chromium looks at the summary page, feedback and
# figures as a reader's browser shows them, ccache lets the tests that build whole trees
# (bundles, autograders) reuse the kit's own build, and PyTorch is the oracle the GPT's kit test
# compares with (and bench/gpt_benchmark.sh races), run by Debian's /usr/bin/python3.
EXTRA_PACKAGES := libxml2-utils procps python3 similarity-tester zip unzip slurm-wlm munge \
                  chromium ccache python3-torch

# The grader's self-tests grade three at a time, each in a sandbox slot of its own: CTest hands
# out the slots this file lists (grader/tests/selftests.cmake). A grading leaves a core idle
# about a third of the time (watchdogs, deadlocks, sandboxing), so CTest runs one test more than
# JOBS: on two cores 71 gradings took 272 s two at a time, 229 s three, 244 s four (2026-12-05).
# The tests that need the machine to themselves say so (dtk_whole_machine, cmake/DtkMpiTest.cmake).
CTEST_FLAGS := --resource-spec-file $(CURDIR)/grader/tests/sandbox-slots.json
TEST_JOBS ?= $(shell expr $(JOBS) + 1)

include make/student.mk

# Builds only what grading needs; results.json goes to $(BUILD_DIR)/grade-results.json.
.PHONY: grade
grade: configure
	cmake --build $(BUILD_DIR) -j$(JOBS) --target dtk-grade
	$(BUILD_DIR)/dtk-grade solutions --results $(BUILD_DIR)/grade-results.json

# The edit loop: every test that runs in seconds (CTest label `fast`: the public tests against
# both trees, the kit's tests of its programs and the grader's unit tests), a few minutes; the
# gradings, the class-scale runs and the release bundles are left to `make test`.
.PHONY: test-fast
test-fast: all
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS) -L fast $(CTEST_FLAGS)

# The grader's unit tests only (its parsers, manifests and judge; under a second once built):
# what .ci/run runs before the whole suite, so that a parser bug fails in minutes, not after all.
.PHONY: unit-tests
unit-tests: configure
	cmake --build $(BUILD_DIR) -j$(JOBS) --target dtk_grade_unit_tests
	$(BUILD_DIR)/grader/dtk_grade_unit_tests

# An assignment's student bundle (ASSIGNMENT, default 1): starter, public tests, handout, figs;
# no solutions, no hidden tests. Always repacked, from the tree as it is now; the earlier parts'
# reference an assignment's programs call (release/assignment<N>-reference.txt) is compiled first.
.PHONY: release
release:
	@if [ -f release/assignment$(ASSIGNMENT)-reference.txt ]; then \
	  $(MAKE) --no-print-directory configure && \
	  cmake --build $(BUILD_DIR) -j$(JOBS) --target dtk_release_references; fi
	DTK_BUILD_DIR=$(BUILD_DIR) scripts/make-release.sh dist $(ASSIGNMENT) $(MANIFEST)

# Gradescope's autograder of one assignment (default 1): dist/autograder-assignment<N>.zip.
.PHONY: autograder.zip
autograder.zip:
	scripts/make-autograder.sh $(ASSIGNMENT) dist $(MANIFEST)

# Autolab's autograder of one assignment: dist/autolab-assignment<N>/ (autograde.tar and
# autograde-Makefile).
.PHONY: autolab
autolab:
	scripts/make-autolab.sh $(ASSIGNMENT) dist $(MANIFEST)
