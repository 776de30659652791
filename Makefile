# The front door: `make run` and `make test` work on a fresh Debian 12 machine.
# Both install what they need (scripts/install-deps), configure meson in build/
# and build; `run` then profiles the bundled example, `test` runs every test.

BUILD     ?= build
SAN_BUILD ?= build-sanitize
SONDE      = $(BUILD)/src/sonde
EXAMPLE    = $(BUILD)/examples/sort

.PHONY: all deps build run test test-sanitize sanitize bench format clean

all: build

deps:
	@./scripts/install-deps

$(BUILD)/build.ninja:
	meson setup $(BUILD) --buildtype=debugoptimized

build: deps $(BUILD)/build.ninja
	@ninja -C $(BUILD)

run: build
	@echo
	@echo "== sonde collect time -- $(EXAMPLE) 200000"
	@$(SONDE) collect time -r 10 --output suppress -o $(BUILD)/example-time.json -- $(EXAMPLE) 200000
	@echo "(show it again with: $(SONDE) show $(BUILD)/example-time.json)"
	@echo
	@echo "== sonde collect memory -- $(EXAMPLE) 200000"
	@$(SONDE) collect memory --output suppress -o $(BUILD)/example-memory.json -- $(EXAMPLE) 200000
	@echo "(show it again with: $(SONDE) show $(BUILD)/example-memory.json memory)"
	@echo
	@echo "== sonde collect trace -- $(EXAMPLE)-traced 20000   (built with -finstrument-functions)"
	@$(SONDE) collect trace --output suppress -o $(BUILD)/example-trace.json -- $(EXAMPLE)-traced 20000
	@echo "(the call graph: $(SONDE) show $(BUILD)/example-trace.json graph;"
	@echo " a timeline for ui.perfetto.dev: $(SONDE) export $(BUILD)/example-trace.json --format perfetto -o trace.json)"
	@echo
	@echo "== sonde collect counters -- $(EXAMPLE) 200000"
	@$(SONDE) collect counters --output suppress -o $(BUILD)/example-counters.json -- $(EXAMPLE) 200000
	@echo "(the catalog: $(SONDE) counters list; the C API: $(BUILD)/examples/counters)"
	@echo
	@echo "== sonde postprocess (regression of time per size) and sonde report"
	@$(SONDE) postprocess $(BUILD)/example-trace.json regression >/dev/null
	@$(SONDE) report $(BUILD)/example-trace.json $(BUILD)/example-memory.json $(BUILD)/example-time.json -o $(BUILD)/report.html >/dev/null
	@echo "open the report first: $(abspath $(BUILD))/report.html"

test: build
	@tests/run $(BUILD)

$(SAN_BUILD)/build.ninja:
	meson setup $(SAN_BUILD) --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false

sanitize: deps $(SAN_BUILD)/build.ninja
	@ninja -C $(SAN_BUILD)

test-sanitize: sanitize
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		tests/run $(SAN_BUILD)

bench: build
	@bench/time-overhead.sh
	@bench/memory-overhead.sh
	@bench/trace-overhead.sh
	@bench/trace-ebpf-hit.sh
	@bench/counters-overhead.sh
	@bench/analysis-scale.sh

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(SAN_BUILD)
