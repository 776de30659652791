# The front door: `make run` and `make test` work on a fresh Debian 12 machine.
# Both install what they need (scripts/install-deps), configure meson in build/
# and build; `run` then profiles the bundled example, `test` runs every test.

BUILD     ?= build
PREFIX    ?= /usr/local
DESTDIR   ?=
SAN_BUILD ?= build-sanitize
TSAN_BUILD ?= build-tsan
# more for every meson setup below: CI gives --werror (a warning fails its build)
MESON_FLAGS ?=
SONDE      = $(BUILD)/src/sonde
EXAMPLE    = $(BUILD)/examples/sort

.PHONY: all deps build run test test-full test-sanitize sanitize test-thread bench format clean install uninstall

all: build

deps:
	@./scripts/install-deps

$(BUILD)/build.ninja:
	@./scripts/install-deps
	meson setup $(BUILD) --buildtype=debugoptimized $(MESON_FLAGS)

build: deps $(BUILD)/build.ninja
	@ninja -C $(BUILD)

# what running the example needs, and nothing more (make build or make test: all of it)
RUN_TARGETS = src/sonde runtime/memory/libsonde-memory.so runtime/trace/libsonde-trace.so \
	runtime/sample/libsonde-sample.so runtime/spawn/sonde-spawn examples/sort examples/sort-traced

run: deps $(BUILD)/build.ninja
	@ninja -C $(BUILD) $(RUN_TARGETS)
	@echo
	@echo "== sonde collect time -- $(EXAMPLE) 200000"
	@$(SONDE) collect time -r 10 -o $(BUILD)/example-time.json -- $(EXAMPLE) 200000
	@echo "(show it again with: $(SONDE) show $(BUILD)/example-time.json)"
	@echo
	@echo "== sonde collect memory -- $(EXAMPLE) 200000"
	@$(SONDE) collect memory -o $(BUILD)/example-memory.json -- $(EXAMPLE) 200000
	@echo "(show it again with: $(SONDE) show $(BUILD)/example-memory.json memory)"
	@echo
	@echo "== sonde collect trace -- $(EXAMPLE)-traced 20000   (built with -finstrument-functions)"
	@$(SONDE) collect trace -o $(BUILD)/example-trace.json -- $(EXAMPLE)-traced 20000
	@echo "(the call graph: $(SONDE) show $(BUILD)/example-trace.json graph;"
	@echo " a timeline for ui.perfetto.dev: $(SONDE) export $(BUILD)/example-trace.json --format perfetto -o trace.json)"
	@echo
	@echo "== sonde collect counters -- $(EXAMPLE) 200000"
	@$(SONDE) collect counters -o $(BUILD)/example-counters.json -- $(EXAMPLE) 200000
	@echo "(the catalog: $(SONDE) counters list; the C API: $(BUILD)/examples/counters)"
	@echo
	@echo "== sonde collect sample -- $(EXAMPLE) 2000000   (perf_event stacks, 999 Hz)"
	@$(SONDE) collect sample -o $(BUILD)/example-sample.json -- $(EXAMPLE) 2000000
	@echo "(a flame graph: $(SONDE) show $(BUILD)/example-sample.json flamegraph -o sample.svg)"
	@echo
	@echo "== sonde collect time+system+sched -- $(EXAMPLE) 200000   (three collectors, one run, one clock)"
	@$(SONDE) collect time+system+sched -q -o $(BUILD)/example-run.json -- $(EXAMPLE) 200000
	@$(SONDE) show $(BUILD)/example-run-sched.json sched
	@$(SONDE) export $(BUILD)/example-run-time.json $(BUILD)/example-run-system.json \
		$(BUILD)/example-run-sched.json --format perfetto -o $(BUILD)/example-run.trace.json
	@echo "(the run on one timeline for ui.perfetto.dev: $(BUILD)/example-run.trace.json)"
	@echo
	@echo "== sonde postprocess (regression of time per size) and sonde report"
	@$(SONDE) postprocess $(BUILD)/example-trace.json regression >/dev/null
	@$(SONDE) report $(BUILD)/example-trace.json $(BUILD)/example-memory.json $(BUILD)/example-time.json -o $(BUILD)/report.html >/dev/null
	@echo "open the report first: $(abspath $(BUILD))/report.html"

# make test: every test but the suite `slow` (the fuzzers, 20 s each; the
# allocation-fault torture in full), about 6 minutes on 2 cores once built.
# make test-full: all of it, as CI runs it.
test: build
	@tests/run $(BUILD) --no-suite slow

test-full: build
	@TEST_FULL=1 tests/run $(BUILD)

# meson install underneath: the binary, libsonde and sonde.pc, the runtimes, the
# headers, the man pages and the bash and zsh completion, under PREFIX (DESTDIR
# staged). The build directory is reconfigured only when it was set up for
# another prefix (the install rpath and the runtimes' directory depend on it);
# meson install builds what is out of date.
CONFIGURED_PREFIX = $(shell meson introspect $(BUILD) --buildoptions 2>/dev/null | \
	python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))' 2>/dev/null)

install: $(BUILD)/build.ninja
	@[ "$(CONFIGURED_PREFIX)" = "$(abspath $(PREFIX))" ] || \
		meson configure $(BUILD) -Dprefix=$(abspath $(PREFIX)) >/dev/null
	@meson install -C $(BUILD) --quiet $(if $(DESTDIR),--destdir $(abspath $(DESTDIR)))
	@# libsonde in a folder the loader searches: its cache knows it at once
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi
	@echo "installed under $(DESTDIR)$(abspath $(PREFIX)); try: man sonde"

uninstall:
	@ninja -C $(BUILD) uninstall >/dev/null && echo "uninstalled from $(abspath $(PREFIX))"

$(SAN_BUILD)/build.ninja:
	meson setup $(SAN_BUILD) --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false $(MESON_FLAGS)

sanitize: deps $(SAN_BUILD)/build.ninja
	@ninja -C $(SAN_BUILD)

# the fuzzers are sanitized builds of their own: run once, by test-full
test-sanitize: sanitize
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		tests/run $(SAN_BUILD) --no-suite fuzz

$(TSAN_BUILD)/build.ninja:
	meson setup $(TSAN_BUILD) --buildtype=debugoptimized -Db_sanitize=thread -Db_lundef=false \
		-Dc_args=-Wno-tsan $(MESON_FLAGS)

# sonde's own threads under ThreadSanitizer (tests/thread/run); the profiled
# programs and preload runtimes come from the normal build
test-thread: build $(TSAN_BUILD)/build.ninja
	@ninja -C $(TSAN_BUILD) src/sonde tests/test-parallel runtime/spawn/sonde-spawn
	@tests/thread/run $(TSAN_BUILD) $(BUILD)

bench: build
	@bench/time-overhead.sh
	@bench/memory-overhead.sh
	@bench/trace-overhead.sh
	@bench/trace-pg-overhead.sh
	@bench/trace-after-run.sh
	@bench/trace-ebpf-hit.sh
	@bench/counters-overhead.sh
	@bench/analysis-scale.sh

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(TSAN_BUILD)
