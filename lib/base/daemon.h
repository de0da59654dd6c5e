/*
 * daemon: what every muster program does around its work, once: a stop flag
 * that SIGTERM and SIGINT set (SIGPIPE ignored: a peer that hangs up is an
 * error return, not a death), and waiting until it is set. The flag is the
 * caller's; the handler only stores 1 into it.
 *
 * Not here: flags (flag.h), logging (mlog.h), what stopping means (each
 * program's loops watch the flag and end their own work).
 */
#ifndef MUSTER_DAEMON_H
#define MUSTER_DAEMON_H

#include <stdatomic.h>

/* SIGTERM and SIGINT set *stop from now on; SIGPIPE is ignored. One flag a
 * process: a second call replaces the first. */
void daemon_signals(atomic_int *stop);

/* Sleeps in steps of 100 ms until *stop is set. */
void daemon_wait(const atomic_int *stop);

/* flag_parse's answer as what main() does next: -1 to run, else the exit
 * code (0 after --help or --version, 2 after a bad flag). */
int daemon_exit_code(int flag_parse_result);

#endif
