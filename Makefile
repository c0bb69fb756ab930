# dtk's make targets. On a fresh Debian 12 machine `make test` or `make grade` is all the set-up:
# run as root they install missing packages with apt-get; otherwise they print the command.
#
#   make              build everything (build/)
#   make test         build, then run every test of the kit (ctest)
#   make handin.tar   pack the three student files of starter/ into handin.tar
#   make release      write the student bundle dist/dtk-student.tar.gz (scripts/make-release.sh)
BUILD_DIR ?= build
JOBS ?= 2

# Packages only the kit's own tests need, on top of scripts/ensure-deps.sh's list.
KIT_PACKAGES := libxml2-utils

STUDENT_FILES := model/func_impl.cpp data/data_parallel_preprocess.cpp \
                 model_training_cost_analysis.cpp

.PHONY: all deps test clean

all: deps
	@test -f $(BUILD_DIR)/CMakeCache.txt || cmake -S . -B $(BUILD_DIR)
	cmake --build $(BUILD_DIR) -j$(JOBS)

deps:
	@scripts/ensure-deps.sh $(KIT_PACKAGES)

test: all
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS)

handin.tar: $(addprefix starter/,$(STUDENT_FILES))
	tar -cf $@ -C starter $(STUDENT_FILES)
	@echo "Wrote $@: hand it in."

clean:
	rm -rf $(BUILD_DIR) handin.tar

# The student bundle: dist/dtk-student.tar.gz (starter, public tests, handout, figs; no
# solutions, no hidden tests). Always repacked, from the tree as it is now.
.PHONY: release
release:
	scripts/make-release.sh dist
