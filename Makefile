# dtk's make targets. On a fresh Debian 12 machine `make test` or `make grade` is all the set-up:
# run as root they install missing packages with apt-get; otherwise they print the command.
#
#   make              build everything (build/)
#   make test         build, then run every test of the kit (ctest)
#   make handin.tar   pack the three student files of starter/ into handin.tar
BUILD_DIR ?= build
JOBS ?= 2

STUDENT_FILES := model/func_impl.cpp data/data_parallel_preprocess.cpp \
                 model_training_cost_analysis.cpp

.PHONY: all deps test clean

all: deps
	@test -f $(BUILD_DIR)/CMakeCache.txt || cmake -S . -B $(BUILD_DIR)
	cmake --build $(BUILD_DIR) -j$(JOBS)

deps:
	@scripts/ensure-deps.sh

test: all
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS)

handin.tar: $(addprefix starter/,$(STUDENT_FILES))
	tar -cf $@ -C starter $(STUDENT_FILES)
	@echo "Wrote $@: hand it in."

clean:
	rm -rf $(BUILD_DIR) handin.tar
