# muster: top-level build. Targets a newcomer can guess:
#   make            build every binary into bin/
#   make test       every test that exists (lint, unit, binary, sanitizers, brief fuzz)
#   make check      unit and binary tests under ASan+UBSan, failing on any report or leak
#   make fuzz       run each fuzz target for FUZZ_SECONDS
#   make bench      benchmarks (micro, webhook, then 5,000 pods on the local control plane); figures
#                   go to docs/benchmarks.md by hand
#   make lint       compiler warnings as errors, banned calls, formatting
#   make deps       install the Debian packages the build and tests need
#   make cluster    start (or reuse) the local control plane; last line: admin kubeconfig
#   make cluster-down  stop it and remove its state (the built binaries stay cached)
#   make e2e        end-to-end suite on the local control plane (part of make test)
#   make bench-e2e  scale check of the stand-ins (1,000 nodes, 5,000 pods)
#   make demo       install, build, start the local control plane and gang-start a JobSet
#   make demo-barrier  the barrier alone holding and releasing four local "pods"
# CFLAGS and LDFLAGS from the command line add to the project's flags.

CC       ?= cc
MUSL_CC  ?= musl-gcc
CLANG    ?= clang
CLANG_FORMAT ?= clang-format

VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo dev)
FUZZ_SECONDS ?= 15

WARNINGS := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wstrict-prototypes \
	-Wmissing-prototypes -Wpointer-arith -Wcast-align -Wvla -Wwrite-strings \
	-Wundef
BASE_CFLAGS := -std=c11 $(WARNINGS) -Ilib -MMD -MP -DMUSTER_VERSION='"$(VERSION)"'
OPT_CFLAGS  := -O2 -g
SAN_CFLAGS  := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all

# The barrier: static, musl, size-optimised (see initbarrier/README section in README.md).
BARRIER_SRCS := initbarrier/main.c initbarrier/barrier_core.c initbarrier/barrier_volume.c \
	initbarrier/barrier_push.c initbarrier/barrier_run.c lib/mlog.c lib/release_line.c
BARRIER_MUSL_OBJS := $(BARRIER_SRCS:%.c=build/musl/%.o)
BARRIER_ASAN_OBJS := $(BARRIER_SRCS:%.c=build/asan/%.o)
MUSL_CFLAGS := -Os -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables \
	-fno-unwind-tables -fno-stack-protector
MUSL_LDFLAGS := -static -s -Wl,--gc-sections -Wl,--build-id=none

# Unit tests (cmocka): name -> sources under test.
UNIT_TESTS := initbarrier/barrier_core_test controller/push_fanout_test
initbarrier/barrier_core_test_SRCS := initbarrier/barrier_core_test.c initbarrier/barrier_core.c lib/release_line.c
# push_fanout's tests release real barriers (bin/muster-barrier or $$MUSTER_BARRIER_BIN).
controller/push_fanout_test_SRCS := controller/push_fanout_test.c controller/push_fanout.c lib/release_line.c \
	initbarrier/barrier_testproc.c

# Tests that drive a real binary (cmocka too).
BINARY_TESTS := initbarrier/barrier_binary_test
initbarrier/barrier_binary_test_SRCS := initbarrier/barrier_binary_test.c initbarrier/atomic_writer.c \
	initbarrier/barrier_testproc.c

TOOLS := initbarrier/atomic_write_tool
initbarrier/atomic_write_tool_SRCS := initbarrier/atomic_write_tool.c initbarrier/atomic_writer.c

BENCHES := initbarrier/barrier_bench controller/push_fanout_bench
controller/push_fanout_bench_SRCS := controller/push_fanout_bench.c controller/push_fanout.c lib/release_line.c \
	initbarrier/barrier_testproc.c
initbarrier/barrier_bench_SRCS := initbarrier/barrier_bench.c initbarrier/atomic_writer.c \
	initbarrier/barrier_testproc.c

FUZZERS := initbarrier/barrier_push_fuzz initbarrier/barrier_attempt_fuzz initbarrier/barrier_listen_fuzz
initbarrier/barrier_push_fuzz_SRCS := initbarrier/barrier_push_fuzz.c initbarrier/barrier_core.c \
	lib/release_line.c
initbarrier/barrier_attempt_fuzz_SRCS := initbarrier/barrier_attempt_fuzz.c initbarrier/barrier_core.c \
	lib/release_line.c
initbarrier/barrier_listen_fuzz_SRCS := initbarrier/barrier_listen_fuzz.c initbarrier/barrier_push.c \
	initbarrier/barrier_core.c lib/mlog.c lib/release_line.c

# The Kubernetes API client (lib/kube_client.md).
KUBE_SRCS := lib/kube_client.c lib/kube_curl.c lib/kube_config.c lib/kube_ratelimit.c lib/kube_error.c \
	lib/json_arena.c
KUBE_LIBS := -lcurl -lcjson -lyaml
UNIT_TESTS += lib/kube_client_test lib/kube_config_test lib/json_arena_test
lib/kube_client_test_SRCS := lib/kube_client_test.c lib/kube_client.c lib/kube_config.c \
	lib/kube_ratelimit.c lib/kube_error.c lib/json_arena.c
lib/kube_client_test_LIBS := $(KUBE_LIBS) -pthread
lib/json_arena_test_SRCS := lib/json_arena_test.c lib/json_arena.c
lib/json_arena_test_LIBS := -lcjson -pthread
lib/kube_config_test_SRCS := lib/kube_config_test.c lib/kube_config.c lib/kube_error.c
lib/kube_config_test_LIBS := -lyaml
FUZZERS += lib/kube_watch_fuzz lib/kube_config_fuzz
lib/kube_watch_fuzz_SRCS := lib/kube_watch_fuzz.c lib/kube_client.c lib/kube_ratelimit.c lib/kube_error.c \
	lib/json_arena.c
lib/kube_watch_fuzz_LIBS := -lcjson -pthread
lib/kube_config_fuzz_SRCS := lib/kube_config_fuzz.c lib/kube_config.c lib/kube_error.c
lib/kube_config_fuzz_LIBS := -lyaml
# C tests against the real control plane, run by `make e2e`.
E2E_C_TESTS := lib/kube_client_e2e_test
lib/kube_client_e2e_test_SRCS := lib/kube_client_e2e_test.c $(KUBE_SRCS)
lib/kube_client_e2e_test_LIBS := $(KUBE_LIBS) -pthread
# Leader election on a Lease (lib/kube_lease.h).
UNIT_TESTS += lib/kube_lease_test
lib/kube_lease_test_SRCS := lib/kube_lease_test.c lib/kube_lease.c lib/kube_client.c lib/kube_config.c \
	lib/kube_ratelimit.c lib/kube_error.c lib/json_arena.c lib/mlog.c
lib/kube_lease_test_LIBS := $(KUBE_LIBS) -pthread
E2E_C_TESTS += lib/kube_lease_e2e_test
lib/kube_lease_e2e_test_SRCS := lib/kube_lease_e2e_test.c lib/kube_lease.c lib/mlog.c $(KUBE_SRCS)
lib/kube_lease_e2e_test_LIBS := $(KUBE_LIBS) -pthread

# Command-line conventions of the daemons (lib/flag.h).
UNIT_TESTS += lib/flag_test
lib/flag_test_SRCS := lib/flag_test.c lib/flag.c

# Metrics registry and the /metrics, /healthz, /readyz server (lib/metrics.h, lib/http_serve.h).
HTTP_SERVE_SRCS := lib/http_serve.c lib/metrics.c lib/mlog.c
HTTP_SERVE_LIBS := -lmicrohttpd -lgnutls -pthread -lm
UNIT_TESTS += lib/metrics_test lib/http_serve_test
lib/metrics_test_SRCS := lib/metrics_test.c lib/metrics.c
lib/metrics_test_LIBS := -pthread -lm
lib/http_serve_test_SRCS := lib/http_serve_test.c $(HTTP_SERVE_SRCS)
lib/http_serve_test_LIBS := $(HTTP_SERVE_LIBS) -lcurl
FUZZERS += lib/http_listen_fuzz
lib/http_listen_fuzz_SRCS := lib/http_listen_fuzz.c $(HTTP_SERVE_SRCS)
lib/http_listen_fuzz_LIBS := $(HTTP_SERVE_LIBS)

# Group-start core of the controller: decode, expected count, tracker (controller/group_core.md).
GROUP_CORE_SRCS := controller/group_decode.c controller/group_expect.c controller/group_tracker.c lib/group_config.c \
	lib/cause.c
GROUP_CORE_LIBS := -lcjson -lm
UNIT_TESTS += controller/group_decode_test controller/group_tracker_test
controller/group_decode_test_SRCS := controller/group_decode_test.c $(GROUP_CORE_SRCS)
controller/group_decode_test_LIBS := $(GROUP_CORE_LIBS)
controller/group_tracker_test_SRCS := controller/group_tracker_test.c $(GROUP_CORE_SRCS)
controller/group_tracker_test_LIBS := $(GROUP_CORE_LIBS)
BENCHES += controller/group_bench
controller/group_bench_SRCS := controller/group_bench.c $(GROUP_CORE_SRCS)
controller/group_bench_LIBS := $(GROUP_CORE_LIBS)
FUZZERS += controller/group_decode_fuzz
controller/group_decode_fuzz_SRCS := controller/group_decode_fuzz.c $(GROUP_CORE_SRCS)
controller/group_decode_fuzz_LIBS := $(GROUP_CORE_LIBS)

# The admission webhook (webhook/webhook.md): pure modules, the routes, the binary.
WEBHOOK_CORE_SRCS := webhook/admission.c webhook/jobset_shape.c webhook/jobset_validate.c webhook/jobset_mutate.c \
	lib/group_config.c lib/cause.c
WEBHOOK_SRCS := webhook/main.c webhook/webhook.c $(WEBHOOK_CORE_SRCS) $(HTTP_SERVE_SRCS) lib/flag.c
UNIT_TESTS += webhook/jobset_admission_test
webhook/jobset_admission_test_SRCS := webhook/jobset_admission_test.c $(WEBHOOK_CORE_SRCS)
webhook/jobset_admission_test_LIBS := -lcjson -lm
FUZZERS += webhook/admission_fuzz webhook/jobset_mutate_fuzz
webhook/admission_fuzz_SRCS := webhook/admission_fuzz.c $(WEBHOOK_CORE_SRCS)
webhook/admission_fuzz_LIBS := -lcjson -lm
webhook/jobset_mutate_fuzz_SRCS := webhook/jobset_mutate_fuzz.c $(WEBHOOK_CORE_SRCS)
webhook/jobset_mutate_fuzz_LIBS := -lcjson -lm

# The webhook's paced HTTPS load generator (webhook/webhook_load.c), driven by e2e/bench/webhook_latency.py.
BENCHES += webhook/webhook_load
webhook/webhook_load_SRCS := webhook/webhook_load.c
webhook/webhook_load_LIBS := -lcurl -lm

# Topology placement core and muster-topology (docs/topology.md).
TOPO_CORE_SRCS := lib/topo_tree.c lib/topo_place.c lib/cause.c
TOPOLOGY_SRCS := topology/main.c topology/topo_input.c $(TOPO_CORE_SRCS)
TOPO_INPUT_LIBS := -lcjson -lyaml
UNIT_TESTS += topology/topo_test topology/topo_input_test
topology/topo_test_SRCS := topology/topo_test.c $(TOPO_CORE_SRCS)
topology/topo_input_test_SRCS := topology/topo_input_test.c topology/topo_input.c $(TOPO_CORE_SRCS)
topology/topo_input_test_LIBS := $(TOPO_INPUT_LIBS)
BENCHES += topology/topo_bench
topology/topo_bench_SRCS := topology/topo_bench.c $(TOPO_CORE_SRCS)
FUZZERS += topology/topo_input_fuzz
topology/topo_input_fuzz_SRCS := topology/topo_input_fuzz.c topology/topo_input.c $(TOPO_CORE_SRCS)
topology/topo_input_fuzz_LIBS := $(TOPO_INPUT_LIBS)

# The controller (controller/controller.md): host libc, dynamically linked.
CONTROLLER_SRCS := controller/main.c lib/flag.c controller/controller_group.c $(GROUP_CORE_SRCS) \
	controller/push_fanout.c $(KUBE_SRCS) lib/kube_lease.c lib/http_serve.c lib/metrics.c lib/mlog.c \
	lib/release_line.c

# The whole loop against a fake transport.
UNIT_TESTS += controller/controller_group_test
controller/controller_group_test_SRCS := controller/controller_group_test.c controller/controller_group.c \
	$(GROUP_CORE_SRCS) controller/push_fanout.c $(KUBE_SRCS) lib/mlog.c lib/release_line.c
controller/controller_group_test_LIBS := $(KUBE_LIBS) -lm -pthread

# The controller's event rate, replaying a watch stream recorded by e2e/bench/release_latency.py.
BENCHES += controller/replay_bench
controller/replay_bench_SRCS := controller/replay_bench.c controller/controller_group.c $(GROUP_CORE_SRCS) \
	controller/push_fanout.c $(KUBE_SRCS) lib/mlog.c lib/release_line.c
controller/replay_bench_LIBS := $(KUBE_LIBS) -lm -pthread

BINARIES := bin/muster-barrier bin/muster-controller bin/muster-webhook bin/muster-topology

.PHONY: all test check unit binary-test fuzz bench bench-micro bench-release lint deps clean format demo demo-barrier cluster cluster-down e2e bench-e2e bench-webhook
.DEFAULT_GOAL := all

all: $(BINARIES)

bin/muster-barrier: $(BARRIER_MUSL_OBJS)
	@mkdir -p $(@D)
	$(MUSL_CC) $(MUSL_LDFLAGS) $(LDFLAGS) -o $@ $^

bin/muster-controller: $(CONTROLLER_SRCS:%.c=build/host/%.o)
	@mkdir -p $(@D)
	$(CC) $(OPT_CFLAGS) -pthread $(LDFLAGS) -o $@ $^ $(KUBE_LIBS) $(HTTP_SERVE_LIBS)

bin/muster-topology: $(TOPOLOGY_SRCS:%.c=build/host/%.o)
	@mkdir -p $(@D)
	$(CC) $(OPT_CFLAGS) $(LDFLAGS) -o $@ $^ $(TOPO_INPUT_LIBS) -lm

bin/muster-webhook: $(WEBHOOK_SRCS:%.c=build/host/%.o)
	@mkdir -p $(@D)
	$(CC) $(OPT_CFLAGS) -pthread $(LDFLAGS) -o $@ $^ -lcjson $(HTTP_SERVE_LIBS)

build/musl/%.o: %.c
	@mkdir -p $(@D)
	$(MUSL_CC) $(BASE_CFLAGS) $(MUSL_CFLAGS) $(CFLAGS) -c -o $@ $<

build/host/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(OPT_CFLAGS) $(CFLAGS) -c -o $@ $<

build/asan/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(SAN_CFLAGS) $(CFLAGS) -c -o $@ $<

build/fuzz/%.o: %.c
	@mkdir -p $(@D)
	$(CLANG) $(BASE_CFLAGS) -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all $(CFLAGS) -c -o $@ $<

# One link rule per flavour; each program lists its sources in NAME_SRCS and
# its libraries in NAME_LIBS.
define program
build/host/$(1): $$($(1)_SRCS:%.c=build/host/%.o)
	$$(CC) $$(OPT_CFLAGS) $$(LDFLAGS) -o $$@ $$^ $$($(1)_LIBS) -lcmocka
build/asan/$(1): $$($(1)_SRCS:%.c=build/asan/%.o)
	$$(CC) $$(SAN_CFLAGS) $$(LDFLAGS) -o $$@ $$^ $$($(1)_LIBS) -lcmocka
endef
$(foreach p,$(UNIT_TESTS) $(BINARY_TESTS) $(BENCHES) $(TOOLS) $(E2E_C_TESTS),$(eval $(call program,$(p))))

define fuzzer
build/fuzz/$(1): $$($(1)_SRCS:%.c=build/fuzz/%.o)
	$$(CLANG) -fsanitize=fuzzer,address,undefined $$(LDFLAGS) -o $$@ $$^ $$($(1)_LIBS)
endef
$(foreach p,$(FUZZERS),$(eval $(call fuzzer,$(p))))

# A sanitized, dynamically linked barrier: the binary tests also run against it.
build/asan/bin/muster-barrier: $(BARRIER_ASAN_OBJS)
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) $(LDFLAGS) -o $@ $^

unit: bin/muster-barrier $(UNIT_TESTS:%=build/host/%)
	MUSTER_BARRIER_BIN=$(CURDIR)/bin/muster-barrier scripts/run-tests unit $(UNIT_TESTS:%=build/host/%)

# The binary tests run once per watch kind.
binary-test: bin/muster-barrier $(BINARY_TESTS:%=build/host/%)
	MUSTER_BARRIER_BIN=$(CURDIR)/bin/muster-barrier MUSTER_BARRIER_WATCH=dnotify \
		scripts/run-tests binary-dnotify $(BINARY_TESTS:%=build/host/%)
	MUSTER_BARRIER_BIN=$(CURDIR)/bin/muster-barrier MUSTER_BARRIER_WATCH=inotify \
		scripts/run-tests binary-inotify $(BINARY_TESTS:%=build/host/%)

check: build/asan/bin/muster-barrier $(UNIT_TESTS:%=build/asan/%) $(BINARY_TESTS:%=build/asan/%)
	ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	MUSTER_BARRIER_BIN=$(CURDIR)/build/asan/bin/muster-barrier MUSTER_BARRIER_SANITIZED=1 \
		scripts/run-tests check $(UNIT_TESTS:%=build/asan/%) $(BINARY_TESTS:%=build/asan/%)

fuzz: $(FUZZERS:%=build/fuzz/%)
	scripts/run-fuzz $(FUZZ_SECONDS) $^

# The micro benchmarks, then the 5,000-pod release latency on the local control
# plane (which records the controller's input), then the controller's event
# rate replaying that recording. `make bench-micro` runs the first part only.
bench: bench-micro bench-webhook bench-release
	build/host/controller/replay_bench

# Webhook latency over TLS (2,000 req/s on /mutate and /validate, the maximum
# paced rate, a wrk cross-check), then the admission overhead of a 5,000-pod
# JobSet's create on the local control plane, with and without the webhook.
bench-webhook: bin/muster-webhook build/host/webhook/webhook_load
	/usr/bin/python3 e2e/bench/webhook_latency.py $(WEBHOOK_BENCH_ARGS)
	/usr/bin/python3 e2e/bench/admission_overhead.py $(if $(MUSTER_KUBECONFIG),--kubeconfig $(MUSTER_KUBECONFIG))

bench-micro: bin/muster-barrier $(BENCHES:%=build/host/%)
	MUSTER_BARRIER_BIN=$(CURDIR)/bin/muster-barrier build/host/initbarrier/barrier_bench
	MUSTER_BARRIER_BIN=$(CURDIR)/bin/muster-barrier build/host/controller/push_fanout_bench
	build/host/controller/group_bench
	build/host/topology/topo_bench

# Release latency, push versus volume only, 5,000 pods on 1,000 fake nodes
# (e2e/bench/release_latency.py; --pods etc. through RELEASE_BENCH_ARGS).
bench-release: all
	/usr/bin/python3 e2e/bench/release_latency.py $(if $(MUSTER_KUBECONFIG),--kubeconfig $(MUSTER_KUBECONFIG)) \
		$(RELEASE_BENCH_ARGS)

# Everything that exists, with one summary line at the end.
test: deps
	@$(MAKE) --no-print-directory lint
	@rm -f build/test-summary
	@$(MAKE) --no-print-directory -k unit binary-test check fuzz e2e; status=$$?; \
		if [ $$status -ne 0 ] && ! awk '$$4 > 0 { bad = 1 } END { exit !bad }' build/test-summary 2>/dev/null; then \
			echo "test: a target failed to build or run without a test to show it (see the errors above)"; \
			scripts/run-tests --record make build-or-run 0 1; \
		fi; \
		scripts/run-tests --summary && exit $$status

cluster:
	@bash e2e/cluster/up.sh

cluster-down:
	@bash e2e/cluster/down.sh

e2e: all $(E2E_C_TESTS:%=build/host/%)
	E2E_C_TESTS="$(E2E_C_TESTS:%=build/host/%)" scripts/run-e2e

# Scale check of the stand-ins: 1,000 nodes, a 5,000-pod JobSet (docs/benchmarks.md).
bench-e2e: all
	/usr/bin/python3 e2e/bench/scale.py

BANNED := sprintf|vsprintf|strcpy|strcat|strncat|strtok|atoi|atol|gets|system|tmpnam|mktemp
LINT_SRCS = $(shell git ls-files --cached --others --exclude-standard '*.c' '*.h' 2>/dev/null || \
	find . -name '*.[ch]' -not -path './build/*')

lint: all
	@echo "lint: banned calls"
	@! grep -nE '\b($(BANNED))[[:space:]]*\(' $(LINT_SRCS) || { echo "lint: banned call above"; exit 1; }
	@echo "lint: clang's warnings (the fuzz build compiles with clang, whose -Wformat=2 is stricter than gcc's)"
	@for f in $(filter %.c,$(LINT_SRCS)); do \
		case $$f in */fuzz-seeds/*) continue;; esac; \
		$(CLANG) $(filter-out -MMD -MP,$(BASE_CFLAGS)) -fsyntax-only $$f || exit 1; \
	done
	@echo "lint: formatting"
	@$(CLANG_FORMAT) --dry-run -Werror $(LINT_SRCS)
	@echo "lint: shell scripts of deploy/"
	@shellcheck deploy/*.sh deploy/crd/*.sh
	@echo "lint: ok"

format:
	$(CLANG_FORMAT) -i $(LINT_SRCS)

deps:
	scripts/deps
	bash e2e/cluster/deps.sh

# The README's first command: a JobSet gang-started on the local control plane
# (webhook, controller, real barrier; nodes appearing at staggered times).
demo: deps
	@$(MAKE) --no-print-directory all
	/usr/bin/python3 scripts/demo.py $(DEMO_ARGS)

# The barrier alone, no cluster: four "pods" of one group on local directories.
demo-barrier: deps
	@$(MAKE) --no-print-directory all build/host/initbarrier/atomic_write_tool
	scripts/barrier-demo

clean:
	rm -rf build bin

-include $(shell find build -name '*.d' 2>/dev/null)
