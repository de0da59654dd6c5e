# muster: top-level build. `make help` lists every target with one line
# each (the HELP table below); `make` builds every binary into bin/.
# CFLAGS and LDFLAGS from the command line add to the project's flags.

CC       ?= cc
MUSL_CC  ?= musl-gcc
CLANG    ?= clang
CLANG_FORMAT ?= clang-format
# arm64, cross-built with Debian's cross gcc and multiarch :arm64 libraries
# (README, "Images"), run under qemu-user without binfmt registration.
ARM64_CC ?= aarch64-linux-gnu-gcc
ARM64_AR ?= aarch64-linux-gnu-ar
ARM64_MUSL_CC ?= aarch64-linux-musl-gcc
ARM64_EMULATOR ?= qemu-aarch64-static

VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo dev)
FUZZ_SECONDS ?= 15

WARNINGS := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wstrict-prototypes \
	-Wmissing-prototypes -Wpointer-arith -Wcast-align -Wvla -Wwrite-strings \
	-Wundef
BASE_CFLAGS := -std=c11 $(WARNINGS) -MMD -MP -DMUSTER_VERSION='"$(VERSION)"'
OPT_CFLAGS  := -O2 -g
# The sanitized and fuzz builds (so `make check`) also abort on an API
# request made under a muster lock (lib/base/muster_lock.h).
SAN_CFLAGS  := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all \
	-DMUSTER_LOCK_CHECK

# Layout (docs/layout.md). lib/ is split by layer; each layer is a static
# archive, as is each program folder's non-main code and testing/ (test
# helpers shared by several folders). A program is its own main file(s) plus
# the archives, so a new library file is added to the build by being created
# in its folder. The archives are linked in layer order, top to bottom:
LIB_LAYERS := cli topo muster kube http base
ARCHIVE_DIRS := controller webhook topology kubectl initbarrier testing $(LIB_LAYERS:%=lib/%)
# Files with a main() (or a test/fuzz/bench entry point): not in an archive.
MAIN_PATTERNS := %/main.c %_test.c %_fuzz.c %_bench.c %_tool.c %_load.c
# A folder's rooms: subfolders whose files join its archive (one file a
# phase of a larger module; they include their folder's headers as "../x.h").
ROOMS_controller := controller/placement
archive_srcs = $(filter-out $(MAIN_PATTERNS),$(wildcard $(1)/*.c $(ROOMS_$(1):%=%/*.c)))
INCLUDES := $(LIB_LAYERS:%=-Ilib/%) -Itesting
BASE_CFLAGS += $(INCLUDES)
# Libraries every host program may need; --as-needed keeps only the used ones.
SYS_LIBS := -Wl,--as-needed -lcurl -lcjson -lyaml -lmicrohttpd -lgnutls -lm -pthread

# The barrier: static, musl, size-optimised (docs/barrier.md), so its sources
# are listed rather than archived (musl has no cJSON; the barrier needs none).
BARRIER_SRCS := initbarrier/main.c $(call archive_srcs,initbarrier) lib/base/mlog.c lib/muster/release_line.c
BARRIER_MUSL_OBJS := $(BARRIER_SRCS:%.c=build/musl/%.o)
BARRIER_ASAN_OBJS := $(BARRIER_SRCS:%.c=build/asan/%.o)
BARRIER_ARM64_OBJS := $(BARRIER_SRCS:%.c=build/musl-arm64/%.o)
MUSL_CFLAGS := -Os -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables \
	-fno-unwind-tables -fno-stack-protector
MUSL_LDFLAGS := -static -s -Wl,--gc-sections -Wl,--build-id=none
# arm64 links for pages of up to 64 KiB, and RELRO would pad the file to put
# the end of its read-only part on such a boundary (+56 KiB here). musl's
# static start never makes that part read-only (only its dynamic loader does),
# so RELRO protects nothing in this binary: left out.
ARM64_MUSL_LDFLAGS := $(MUSL_LDFLAGS) -Wl,-z,norelro

# Programs by kind; each is NAME.c plus the archives unless NAME_SRCS says more.
# Unit tests (cmocka). push_fanout's tests release real barriers
# (bin/muster-barrier or $$MUSTER_BARRIER_BIN).
UNIT_TESTS := initbarrier/barrier_core_test controller/push_fanout_test \
	lib/kube/kube_client_test lib/kube/kube_config_test lib/base/json_arena_test lib/kube/kube_lease_test \
	lib/kube/kube_informer_test lib/kube/kube_path_test lib/muster/jobset_pod_test lib/muster/jobset_state_test \
	lib/base/flag_test lib/base/name_table_test lib/base/quantity_test lib/base/yaml_json_test lib/base/kjson_test lib/base/utf8_test lib/base/json_patch_test lib/http/metrics_test lib/http/http_serve_test \
	controller/group_decode_test controller/group_tracker_test controller/controller_group_test controller/placement_loop_test controller/watch_hub_test webhook/record_cache_test \
	webhook/jobset_admission_test topology/topo_test topology/topo_property_test topology/topo_quality_test lib/cli/topo_input_test lib/cli/topo_view_test lib/cli/topo_run_test kubectl/kc_args_test kubectl/kc_kubeconfig_test kubectl/kc_status_test lib/topo/topo_objects_test lib/topo/topo_cache_test lib/topo/topo_record_test lib/topo/topo_promise_test lib/topo/topo_move_test lib/topo/topo_retire_test
# The unit tests that also run on the arm64 build, under qemu-user (make
# arm64-test): all but those that measure wall-clock deadlines (a shared,
# emulated CPU misses them) or take minutes under emulation (the property
# test's 10,000 searches).
ARM64_UNIT_TESTS := $(filter-out lib/http/http_serve_test webhook/record_cache_test \
	controller/controller_group_test controller/placement_loop_test controller/watch_hub_test \
	topology/topo_property_test,$(UNIT_TESTS))
# Tests that drive a real binary (cmocka too).
BINARY_TESTS := initbarrier/barrier_binary_test
# C tests against the real control plane, run by `make e2e`.
E2E_C_TESTS := lib/kube/kube_client_e2e_test lib/kube/kube_lease_e2e_test
TOOLS := testing/atomic_write_tool
# controller/replay_bench: the controller's event rate, replaying a watch
# stream recorded by bench/release_latency.py. bench/webhook_load: the
# webhook's paced HTTPS load generator, driven by bench/webhook_latency.py.
BENCHES := initbarrier/barrier_bench controller/push_fanout_bench controller/group_bench topology/topo_bench topology/topo_property_bench lib/topo/topo_cache_bench \
	controller/replay_bench bench/webhook_load
FUZZERS := initbarrier/barrier_push_fuzz initbarrier/barrier_attempt_fuzz initbarrier/barrier_listen_fuzz \
	lib/kube/kube_watch_fuzz lib/kube/kube_config_fuzz lib/kube/kube_response_fuzz lib/http/http_listen_fuzz lib/http/metrics_fuzz controller/group_decode_fuzz controller/release_record_fuzz \
	webhook/admission_fuzz webhook/jobset_mutate_fuzz lib/cli/topo_input_fuzz lib/topo/topo_cache_fuzz lib/topo/topo_record_fuzz lib/topo/topo_retire_fuzz

BINARIES := bin/muster-barrier bin/muster-controller bin/muster-webhook bin/muster-topology bin/kubectl-muster
ARM64_BINARIES := bin/arm64/muster-barrier bin/arm64/muster-controller bin/arm64/muster-webhook

.PHONY: install images arm64 arm64-test all test check unit binary-test cel-test docs-test reference fuzz bench bench-controller bench-micro bench-release bench-placement bench-real lint deps clean format demo demo-barrier cluster cluster-down e2e bench-e2e bench-webhook help

# Every target a user may name, one line each; `make lint` checks that each
# .PHONY target has its line.
define HELP
all             build every binary into bin/ (the default)
install         the command-line tools (kubectl-muster, muster-topology) into DESTDIR PREFIX/bin (PREFIX: /usr/local)
test            every test that exists: lint, unit, binary, arm64 (qemu), sanitizers, brief fuzz, CEL, docs, e2e; one summary line
unit            the cmocka unit tests
binary-test     the barrier's tests against its real binary, once per watch kind
arm64           cross-build the arm64 programs of the images into bin/arm64
arm64-test      the arm64 build under qemu-user: unit tests (all but the deadline ones) and the barrier's binary tests
cel-test        the webhooks' CEL matchConditions evaluated as a 1.28+ apiserver does (deploy/test/, no cluster)
docs-test       the links of README.md and docs/, and docs/reference/ against the binaries' --help (no cluster)
reference       rewrite docs/reference/ from the binaries' --help (after a flag changed)
check           unit and binary tests under ASan+UBSan, failing on any report or leak
fuzz            each fuzz target for FUZZ_SECONDS (large inputs once, then 64 KiB ones mutated)
e2e             the end-to-end suite on the local control plane (part of make test)
lint            warnings as errors, banned calls, formatting, ShellCheck on every script, flake8 on the Python
format          clang-format every C file in place
deps            install the Debian packages the build and tests need
images          muster's images, amd64 and arm64 (and the test nodes' pause and busybox), as OCI archives in build/images
cluster         start (or reuse) the local control plane and its real kubelet node(s); last line: kubeconfig
cluster-down    stop them and remove their state (the built Kubernetes binaries stay cached)
demo            install, build, start the local control plane and gang-start a JobSet
demo-barrier    the barrier alone holding and releasing four local "pods"
bench           every benchmark (micro, webhook, release, placement, real pods, replay); BENCH_SIZE=ci for CI's size
bench-micro     the benchmarks with no cluster (barrier, push fan-out, tracker, placement core, cache)
bench-webhook   webhook latency, memory (large reviews, forged /pin records), hostile connections, admission overhead
bench-controller the controller's peak RSS with 300 JobSets of 250 KiB, while it releases a gang
bench-release   release latency of 5,000 pods, push against volume only
bench-placement create-to-bound of 5,000 pods with and without placement
bench-real      release latency on real pods on the real kubelet
bench-e2e       scale check of the stand-ins (1,000 nodes, 5,000 pods)
clean           remove build/ and bin/
help            this list
endef
export HELP

help:
	@printf '%s\n' "$$HELP"
.DEFAULT_GOAL := all

all: $(BINARIES)

# The command-line tools a user runs (docs/kubectl-muster.md, docs/topology.md);
# the daemons and the barrier ship in images (make images). kubectl finds
# kubectl-muster on PATH as `kubectl muster`.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
install: bin/kubectl-muster bin/muster-topology
	install -d $(DESTDIR)$(BINDIR)
	install -m 0755 bin/kubectl-muster bin/muster-topology $(DESTDIR)$(BINDIR)/

bin/muster-barrier: $(BARRIER_MUSL_OBJS)
	@mkdir -p $(@D)
	$(MUSL_CC) $(MUSL_LDFLAGS) $(LDFLAGS) -o $@ $^

build/musl/%.o: %.c
	@mkdir -p $(@D)
	$(MUSL_CC) $(BASE_CFLAGS) $(MUSL_CFLAGS) $(CFLAGS) -c -o $@ $<

build/host/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(OPT_CFLAGS) $(CFLAGS) -c -o $@ $<

build/musl-arm64/%.o: %.c
	@mkdir -p $(@D)
	$(ARM64_MUSL_CC) $(BASE_CFLAGS) $(MUSL_CFLAGS) $(CFLAGS) -c -o $@ $<

build/arm64/%.o: %.c
	@mkdir -p $(@D)
	$(ARM64_CC) $(BASE_CFLAGS) $(OPT_CFLAGS) $(CFLAGS) -c -o $@ $<

build/asan/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(SAN_CFLAGS) $(CFLAGS) -c -o $@ $<

build/fuzz/%.o: %.c
	@mkdir -p $(@D)
	$(CLANG) $(BASE_CFLAGS) -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -DMUSTER_LOCK_CHECK $(CFLAGS) -c -o $@ $<

# Archives: one per folder of ARCHIVE_DIRS and flavour. Each depends on a
# list of its members, rewritten only when it changes, so that a source
# moved or deleted leaves no stale object in the archive.
define archive
$$(shell mkdir -p build/$(2)/$(1) && echo '$$(call archive_srcs,$(1))' | cmp -s - build/$(2)/$(1)/members || echo '$$(call archive_srcs,$(1))' > build/$(2)/$(1)/members)
build/$(2)/$(1)/lib.a: $$(patsubst %.c,build/$(2)/%.o,$$(call archive_srcs,$(1))) build/$(2)/$(1)/members
	@mkdir -p $$(@D)
	@rm -f $$@
	$$(if $$(filter arm64,$(2)),$$(ARM64_AR),$$(AR)) rcs $$@ $$(filter %.o,$$^)
endef
$(foreach f,host asan fuzz arm64,$(foreach d,$(ARCHIVE_DIRS),$(eval $(call archive,$(d),$(f)))))

# A program's sources (NAME.c unless NAME_SRCS lists them) and its archives:
# its own folder's (a folder of PROGRAM_DIRS), testing/, then the layers.
PROGRAM_DIRS := controller webhook topology kubectl initbarrier
srcs_of = $(or $($(1)_SRCS),$(1).c)
archives_of = $(foreach d,$(filter $(patsubst %/,%,$(dir $(firstword $(call srcs_of,$(1))))),$(PROGRAM_DIRS)) \
	testing $(LIB_LAYERS:%=lib/%),build/$(2)/$(d)/lib.a)
objs_of = $(patsubst %.c,build/$(2)/%.o,$(call srcs_of,$(1))) $(call archives_of,$(1),$(2))

# One link rule per flavour.
define program
build/host/$(1): $$(call objs_of,$(1),host)
	$$(CC) $$(OPT_CFLAGS) $$(LDFLAGS) -o $$@ $$^ $$(SYS_LIBS) -lcmocka
build/asan/$(1): $$(call objs_of,$(1),asan)
	$$(CC) $$(SAN_CFLAGS) $$(LDFLAGS) -o $$@ $$^ $$(SYS_LIBS) -lcmocka
build/arm64/$(1): $$(call objs_of,$(1),arm64)
	$$(ARM64_CC) $$(OPT_CFLAGS) $$(LDFLAGS) -o $$@ $$^ $$(SYS_LIBS) -lcmocka
endef
$(foreach p,$(UNIT_TESTS) $(BINARY_TESTS) $(BENCHES) $(TOOLS) $(E2E_C_TESTS),$(eval $(call program,$(p))))

define fuzzer
build/fuzz/$(1): $$(call objs_of,$(1),fuzz)
	$$(CLANG) -fsanitize=fuzzer,address,undefined $$(LDFLAGS) -o $$@ $$^ $$(SYS_LIBS)
endef
$(foreach p,$(FUZZERS),$(eval $(call fuzzer,$(p))))

# The daemons: host libc, dynamically linked (controller/controller.md, webhook/webhook.md, docs/topology.md).
bin/muster-controller_SRCS := controller/main.c
bin/muster-webhook_SRCS := webhook/main.c
bin/muster-topology_SRCS := topology/main.c
bin/kubectl-muster_SRCS := kubectl/main.c
define daemon
$(1): $$(call objs_of,$(1),host)
	@mkdir -p $$(@D)
	$$(CC) $$(OPT_CFLAGS) $$(LDFLAGS) -o $$@ $$^ $$(SYS_LIBS)
endef
$(foreach p,bin/muster-controller bin/muster-webhook bin/muster-topology bin/kubectl-muster,$(eval $(call daemon,$(p))))

# The arm64 programs of the images: the barrier static with musl:arm64, the
# daemons linked against the :arm64 libraries (README, "Images").
bin/arm64/muster-barrier: $(BARRIER_ARM64_OBJS)
	@mkdir -p $(@D)
	$(ARM64_MUSL_CC) $(ARM64_MUSL_LDFLAGS) $(LDFLAGS) -o $@ $^
bin/arm64/muster-controller_SRCS := controller/main.c
bin/arm64/muster-webhook_SRCS := webhook/main.c
define arm64_daemon
$(1): $$(call objs_of,$(1),arm64)
	@mkdir -p $$(@D)
	$$(ARM64_CC) $$(OPT_CFLAGS) $$(LDFLAGS) -o $$@ $$^ $$(SYS_LIBS)
endef
$(foreach p,bin/arm64/muster-controller bin/arm64/muster-webhook,$(eval $(call arm64_daemon,$(p))))
arm64: $(ARM64_BINARIES)

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

# The arm64 build under qemu-user: its unit tests (the barriers that
# push_fanout_test releases are the arm64 barrier too), then the binary tests
# (the host's driver) against the arm64 barrier, once per watch kind.
ARM64_BARRIER_ENV := MUSTER_BARRIER_BIN=$(CURDIR)/bin/arm64/muster-barrier MUSTER_BARRIER_EMULATOR=$(ARM64_EMULATOR)
arm64-test: bin/arm64/muster-barrier $(ARM64_UNIT_TESTS:%=build/arm64/%) $(BINARY_TESTS:%=build/host/%)
	$(ARM64_BARRIER_ENV) TEST_EMULATOR=$(ARM64_EMULATOR) scripts/run-tests arm64-unit $(ARM64_UNIT_TESTS:%=build/arm64/%)
	$(ARM64_BARRIER_ENV) MUSTER_BARRIER_WATCH=dnotify scripts/run-tests arm64-binary-dnotify $(BINARY_TESTS:%=build/host/%)
	$(ARM64_BARRIER_ENV) MUSTER_BARRIER_WATCH=inotify scripts/run-tests arm64-binary-inotify $(BINARY_TESTS:%=build/host/%)

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
# BENCH_SIZE=ci runs the cluster benchmarks smaller (1,000 pods for the
# release, one pair of rounds of 2,000 for each placement shape, one round of real pods, 10 s
# webhook runs, 10,000 of topo_bench's 100,000 quality cases; the other micro
# benchmarks, webhook memory and admission overhead as
# they are), about 40 % of the full time: what `.ci/run` runs in the time its
# tests leave. The figures of record in docs/benchmarks.md come from the full
# size; an *_BENCH_ARGS given on the command line wins over both.
# BENCH_RECORD: the watch streams the replay reads, which the release
# benchmark records in build/bench/watch-<its --pods>.
ifeq ($(BENCH_SIZE),ci)
WEBHOOK_BENCH_ARGS ?= --duration 10 --warmup 2 --wrk-seconds 5
RELEASE_BENCH_ARGS ?= --pods 1000
BENCH_RECORD ?= build/bench/watch-1000
PLACEMENT_BENCH_ARGS ?= --rounds 1 --replicas 20
PLACEMENT_1K_BENCH_ARGS ?= --rounds 1
PLACEMENT_RACK_BENCH_ARGS ?= --rounds 1 --replicas 40
REAL_BENCH_ARGS ?= --rounds 1
PROPERTY_BENCH_CASES ?= 100000
TOPO_BENCH_ARGS ?= --quality-cases 10000
else ifneq ($(BENCH_SIZE),)
$(error BENCH_SIZE is "ci" or empty (the full size), not "$(BENCH_SIZE)")
endif
BENCH_RECORD ?= build/bench/watch-5000
bench: bench-micro bench-webhook bench-controller bench-release bench-placement bench-real
	build/host/controller/replay_bench --pods $(BENCH_RECORD)/pods.jsonl --jobsets $(BENCH_RECORD)/jobsets.jsonl

# Webhook latency over TLS (2,000 req/s on /mutate, /validate and the pod
# route /pin, whose placement record is a ConfigMap on the local control
# plane; the maximum paced rate, a wrk cross-check), its peak memory under
# the largest hostile reviews, /mutate while 0, 600 and 5,000 hostile idle
# connections are held (no cluster needed; WEBHOOK_HOSTILE_ARGS), then the
# admission overhead of a 5,000-pod JobSet's create, with and without the
# webhook.
bench-webhook: bin/muster-webhook build/host/bench/webhook_load
	/usr/bin/python3 bench/webhook_memory.py
	/usr/bin/python3 bench/webhook_hostile.py $(WEBHOOK_HOSTILE_ARGS)
	/usr/bin/python3 bench/pin_memory.py $(if $(MUSTER_KUBECONFIG),--kubeconfig $(MUSTER_KUBECONFIG))
	/usr/bin/python3 bench/webhook_latency.py \
		--pin-kubeconfig "$${MUSTER_KUBECONFIG:-$$(bash e2e/cluster/up.sh | tail -n 1)}" $(WEBHOOK_BENCH_ARGS)
	/usr/bin/python3 bench/admission_overhead.py $(if $(MUSTER_KUBECONFIG),--kubeconfig $(MUSTER_KUBECONFIG))

# The controller's peak RSS with 300 JobSets of 250 KiB in its namespace while
# it releases a gang (the e2e test that proves it prints the figure).
bench-controller: all
	@mkdir -p build/bench
	@MUSTER_KUBECONFIG="$${MUSTER_KUBECONFIG:-$$(bash e2e/cluster/up.sh | tail -n 1)}" \
		/usr/bin/python3 -m pytest e2e/tests/test_controller_tenant.py -p no:cacheprovider -q -s \
		-k large_jobsets_of_a_tenant >build/bench/controller-memory.log 2>&1; status=$$?; \
		grep -E '^controller peak RSS|passed|failed' build/bench/controller-memory.log; exit $$status

bench-micro: bin/muster-barrier $(BENCHES:%=build/host/%)
	MUSTER_BARRIER_BIN=$(CURDIR)/bin/muster-barrier build/host/initbarrier/barrier_bench
	MUSTER_BARRIER_BIN=$(CURDIR)/bin/muster-barrier build/host/controller/push_fanout_bench
	build/host/controller/group_bench
	build/host/topology/topo_bench $(TOPO_BENCH_ARGS)
	build/host/topology/topo_property_bench $(PROPERTY_BENCH_CASES)
	build/host/lib/topo/topo_cache_bench

# Release latency, push versus volume only, 5,000 pods on 1,000 fake nodes
# (bench/release_latency.py; --pods etc. through RELEASE_BENCH_ARGS).
bench-release: all
	/usr/bin/python3 bench/release_latency.py $(if $(MUSTER_KUBECONFIG),--kubeconfig $(MUSTER_KUBECONFIG)) \
		$(RELEASE_BENCH_ARGS)

# Placement's cost end to end, create to all pods bound, with and without
# placement, alternating in pairs after a warm-up round (bench/placement.py;
# 4 pairs at full size, 1 at CI's): first 1,000 pods (20 Jobs of 50, each in
# one block) on 200 fake nodes; then a 5,000-pod JobSet on 1,000 fake nodes,
# Jobs of 100 pods each in one block (they span two racks of 80, so their
# pods are pinned one by one), then Jobs of 50 pods each in one rack (each
# Job pinned whole, no admission call per pod).
bench-placement: all
	/usr/bin/python3 bench/placement.py $(if $(MUSTER_KUBECONFIG),--kubeconfig $(MUSTER_KUBECONFIG)) \
		--shape e2e/shapes/scale-200.yaml --replicas 20 --parallelism 50 $(PLACEMENT_1K_BENCH_ARGS)
	/usr/bin/python3 bench/placement.py $(if $(MUSTER_KUBECONFIG),--kubeconfig $(MUSTER_KUBECONFIG)) \
		$(PLACEMENT_BENCH_ARGS)
	/usr/bin/python3 bench/placement.py $(if $(MUSTER_KUBECONFIG),--kubeconfig $(MUSTER_KUBECONFIG)) \
		--replicas 100 --parallelism 50 --level rack $(PLACEMENT_RACK_BENCH_ARGS)

# Release latency on real pods (the local cluster's real node, kubelet's
# default sync): push versus volume only, image sizes, the node's memory
# (bench/real_release.py; REAL_BENCH_ARGS).
bench-real: all images
	/usr/bin/python3 bench/real_release.py $(if $(MUSTER_KUBECONFIG),--kubeconfig $(MUSTER_KUBECONFIG)) \
		$(REAL_BENCH_ARGS)

# The webhooks' matchConditions, which the local control plane (1.20) drops:
# every expression deploy/ writes, on a table of JobSet admission requests,
# with @bufbuild/cel (scripts/deps installs it; deploy/test/).
cel-test:
	@scripts/run-tests cel deploy/test/match_conditions_test.mjs

# The docs: every relative link and #anchor of README.md and docs/ resolves,
# and docs/reference/ is what the binaries' --help prints now (docs/test/).
docs-test: $(BINARIES)
	@scripts/run-tests docs docs/test/test_links.py docs/test/test_reference.py

# The flag reference, from the binaries themselves.
reference: $(BINARIES)
	scripts/gen-reference

# Everything that exists, with one summary line at the end.
test: deps
	@$(MAKE) --no-print-directory lint
	@rm -f build/test-summary
	@$(MAKE) --no-print-directory -k unit binary-test arm64-test check fuzz cel-test docs-test e2e; status=$$?; \
		if [ $$status -ne 0 ] && ! awk '$$4 > 0 { bad = 1 } END { exit !bad }' build/test-summary 2>/dev/null; then \
			echo "test: a target failed to build or run without a test to show it (see the errors above)"; \
			scripts/run-tests --record make build-or-run 0 1; \
		fi; \
		scripts/run-tests --summary && exit $$status

# muster's images as OCI archives, without a daemon, reproducibly, each an
# index of an amd64 and an arm64 image (images/images.sh;
# build/images/images.txt lists references and digests).
images: build/images/images.txt
build/images/images.txt: $(BINARIES) $(ARM64_BINARIES) images/images.sh images/oci_image.py images/pause.c
	@MUSTER_IMAGE_TAG=$(VERSION) bash images/images.sh build/images

cluster:
	@bash e2e/cluster/up.sh

cluster-down:
	@bash e2e/cluster/down.sh

e2e: all $(E2E_C_TESTS:%=build/host/%)
	E2E_C_TESTS="$(E2E_C_TESTS:%=build/host/%)" scripts/run-e2e

# Scale check of the stand-ins: 1,000 nodes, a 5,000-pod JobSet (docs/benchmarks.md).
bench-e2e: all
	/usr/bin/python3 bench/scale.py

SHELL_SCRIPTS := deploy/*.sh deploy/crd/*.sh e2e/cluster/*.sh images/images.sh scripts/barrier-demo scripts/deps \
	scripts/run-e2e scripts/run-fuzz scripts/run-tests scripts/gen-reference .ci/run
BANNED := sprintf|vsprintf|strcpy|strcat|strncat|strtok|atoi|atol|gets|system|tmpnam|mktemp
LINT_SRCS = $(shell git ls-files --cached --others --exclude-standard '*.c' '*.h' 2>/dev/null || \
	find . -name '*.[ch]' -not -path './build/*')

# The decoders of a JobSet's parts: in the webhook only its admission model
# (webhook/jobset_admission.c) calls them, once per object of a review.
JOBSET_DECODERS := group_config_decode|jobset_model_decode[a-z_]*|topo_jobset_decode[a-z_]*|jobset_state_decode|jobset_gang_generation
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
	@echo "lint: ShellCheck on every shell script"
	@shellcheck -x --source-path=SCRIPTDIR $(SHELL_SCRIPTS)
	@echo "lint: flake8 (pyflakes' checks) on the Python"
	@flake8 --select=F e2e bench docs/test scripts/demo.py images/*.py
	@echo "lint: every .PHONY target in make help"
	@for t in $(filter-out .PHONY,$(shell sed -n 's/^\.PHONY://p' Makefile)); do \
		printf '%s\n' "$$HELP" | grep -q "^$$t " || { echo "lint: make help lacks $$t"; exit 1; }; \
	done
	@echo "lint: the webhook decodes a JobSet in one place (webhook/jobset_admission.h)"
	@! grep -nE '\b($(JOBSET_DECODERS))[[:space:]]*\(' $(filter-out webhook/jobset_admission.c webhook/jobset_shape.c \
		%_test.c %_fuzz.c,$(wildcard webhook/*.c)) || { echo "lint: decode through jobset_admission"; exit 1; }
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
	@$(MAKE) --no-print-directory all build/host/testing/atomic_write_tool
	scripts/barrier-demo

clean:
	rm -rf build bin

-include $(shell find build -name '*.d' 2>/dev/null)
