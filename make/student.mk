# The make targets students and the kit share; the kit's Makefile and the student bundle's
# (release/Makefile) both include this file.
#
#   make              build everything into $(BUILD_DIR) (default build/)
#   make test         build, then run the tests with ctest
#   make handin.tar   pack the student files of starter/ into handin.tar (ASSIGNMENT=2 in the
#                     kit: assignment 2's; a bundle knows its own assignment)
#   make clean        remove $(BUILD_DIR) and handin.tar
#
# On Debian/Ubuntu every build first runs scripts/ensure-deps.sh: as root it installs missing
# packages with apt-get, otherwise it prints the `sudo apt-get install` line to run.
# EXTRA_PACKAGES: Debian packages needed on top of that script's list.
BUILD_DIR ?= build
JOBS ?= 2
# Tests at once in `make test` (the kit's Makefile runs one more than JOBS: its gradings idle).
TEST_JOBS ?= $(JOBS)
CTEST_FLAGS ?=  # more flags of `make test`'s ctest

# The student files: starter/handin/assignment<N>.txt, the kit's one list of them.
ASSIGNMENT ?= 1
STUDENT_FILES := $(shell grep '^[^\#]' starter/handin/assignment$(ASSIGNMENT).txt 2> /dev/null)
ifeq ($(STUDENT_FILES),)
  $(error there is no assignment "$(ASSIGNMENT)": starter/handin/assignment$(ASSIGNMENT).txt lists no student file)
endif

# ccache, where installed, makes a rebuild quick, and so the kit's own tests that build whole
# trees (student bundles, autograders). Paths inside this tree are made relative to the build
# (base_dir: this tree's root, always, so a bundle built from within the kit's tests takes its
# own root; the build directory is left out of the hash), so that the same sources built in
# another copy hit the same entries. Paths outside the tree (/usr's headers) stay absolute: made
# relative, they would differ with the copy's depth. Read when a command runs, after `deps` may
# have installed it.
export CMAKE_CXX_COMPILER_LAUNCHER ?= $(if $(shell command -v ccache),ccache)
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR ?= 1

.PHONY: all deps configure test clean

all: configure
	cmake --build $(BUILD_DIR) -j$(JOBS)

deps:
	@scripts/ensure-deps.sh $(EXTRA_PACKAGES)

configure: deps
	@test -f $(BUILD_DIR)/CMakeCache.txt || cmake -S . -B $(BUILD_DIR)

test: all
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(TEST_JOBS) $(CTEST_FLAGS)

# Exactly the assignment's student files, as plain ustar members (symbolic links replaced by the
# files they point to: the grader takes regular files only), with no owner names.
handin.tar: $(addprefix starter/,$(STUDENT_FILES))
	tar --format=ustar --dereference --owner=0 --group=0 --numeric-owner -cf $@ -C starter \
	    $(STUDENT_FILES)
	@echo "Wrote $@ with assignment $(ASSIGNMENT)'s $(words $(STUDENT_FILES)) student $(if $(filter 1,$(words $(STUDENT_FILES))),file,files) ($(STUDENT_FILES)): hand it in."

clean:
	rm -rf $(BUILD_DIR) handin.tar
