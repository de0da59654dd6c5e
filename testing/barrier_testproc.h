/*
 * barrier_testproc: runs the real muster-barrier binary as a child process
 * for the binary tests and the benchmark, captures its standard error, and
 * waits for log lines and for its exit, every wait bounded in time.
 *
 * Test-only. Lifecycle: testproc_start() either starts the child or leaves
 * nothing behind; after success, testproc_finish() (or a wait that saw the
 * exit) must reap it. testproc_finish() kills a child still running.
 */
#ifndef MUSTER_BARRIER_TESTPROC_H
#define MUSTER_BARRIER_TESTPROC_H

#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

#define TESTPROC_OUT_MAX 65536
/* The most arguments (argv[0] included) testproc_start() passes. */
#define TESTPROC_ARGS_MAX 64

struct testproc {
	pid_t pid;
	int out_fd;
	int exited;
	int exit_code; /* 128 + signal when killed by a signal */
	struct rusage usage;
	size_t out_len;
	char out[TESTPROC_OUT_MAX];
};

/* Path of the barrier under test: $MUSTER_BARRIER_BIN or bin/muster-barrier. */
const char *testproc_barrier_path(void);

/* Starts `argv` (argv[0] is the program path, at most TESTPROC_ARGS_MAX
 * entries) with stdout and stderr piped to the parent, under the command
 * $MUSTER_BARRIER_EMULATOR when set (e.g. qemu-aarch64-static for an arm64
 * barrier; argv[0] becomes its first argument). `env` entries
 * ("NAME=value") are added to the parent's environment; `unset` names are
 * removed from it (each may be NULL). A program that cannot be started
 * exits 127. */
int testproc_start(struct testproc *proc, char *const argv[], char *const env[], const char *const unset[]);

/* Waits until `needle` appears in the output. Returns 0, or -1 on timeout or
 * when the child closed its output first. */
int testproc_wait_for(struct testproc *proc, const char *needle, int timeout_ms);

/* Waits for the exit and returns the exit code (128 + signal if signalled),
 * or -1 when still running after timeout_ms. */
int testproc_wait_exit(struct testproc *proc, int timeout_ms);

/* Blocks in wait4() until the child exits (no polling: for latency
 * measurements) and returns the exit code. */
int testproc_wait_exit_blocking(struct testproc *proc);

/* Kills the child if running, reaps it and closes the pipe. */
void testproc_finish(struct testproc *proc);

/* The integer in environment variable `name`, or `fallback` when unset or
 * empty (benchmark knobs). */
int testproc_env_int(const char *name, int fallback);

/* Milliseconds of CLOCK_MONOTONIC. */
double testproc_now_ms(void);

/* Sum of the numbers after every occurrence of `field` in /proc/PID/status
 * ("ctxt_switches:" adds the voluntary and involuntary counts, "VmHWM:" is
 * the peak resident set in KB). Returns -1 when the file cannot be read. */
long testproc_status_field(pid_t pid, const char *field);

/* utime + stime + cutime + cstime of /proc/PID/stat, in clock ticks, or -1. */
long testproc_cpu_ticks(pid_t pid);

#endif
