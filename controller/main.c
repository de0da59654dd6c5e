/*
 * muster-controller: gives a group-scheduled JobSet a gang start. Parses the
 * flags, loads the API configuration, and runs the group-start loop
 * (controller_group) until SIGTERM or SIGINT. See controller/controller.md.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller_group.h"
#include "kube_config.h"
#include "kube_error.h"
#include "mlog.h"

static atomic_int stop_requested;

static void on_signal(int signal_number)
{
	(void)signal_number;
	atomic_store(&stop_requested, 1);
}

static void usage(FILE *out)
{
	fputs("usage: muster-controller [--kubeconfig PATH] [--namespace NS] [--push-port 9443]\n"
	      "                         [--push-parallelism 256] [--push-timeout-ms 2000]\n"
	      "\n"
	      "Releases the barrier of every group-scheduled JobSet once all its pods have started:\n"
	      "writes the ConfigMap <jobset>-group-scheduling (data.started) and pushes the release\n"
	      "to each pod's barrier at POD_IP:push-port.\n"
	      "\n"
	      "  --kubeconfig PATH      kubeconfig to use (default: in-cluster service account)\n"
	      "  --namespace NS         watch only this namespace (default: all)\n"
	      "  --push-port N          the barrier's port (default 9443)\n"
	      "  --push-parallelism N   push connections in flight, 1..4096 (default 256)\n"
	      "  --push-timeout-ms N    time per pushed pod (default 2000; the whole push gets 5x)\n"
	      "  --help                 this text\n",
	      out);
}

static int parse_number(const char *text, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end = NULL;

	errno = 0;
	*out = strtoul(text, &end, 10);
	return errno || end == text || *end || *out < min || *out > max || text[0] == '-' ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct controller_group_options options = {
		.namespace = NULL,
		.push_port = 9443,
		.push_parallelism = 256,
		.push_target_timeout_ms = 2000,
		.push_total_timeout_ms = 10000,
	};
	const char *kubeconfig = NULL;
	struct kube_config cfg;
	struct controller_group *group = NULL;
	struct sigaction action;
	char *cause = NULL;
	int err;

	kube_config_defaults(&cfg);
	for (int i = 1; i < argc; i++) {
		const char *flag = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
		unsigned long number;

		if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
			usage(stdout);
			return 0;
		}
		if (!value) {
			fprintf(stderr, "muster-controller: %s needs a value\n", flag);
			usage(stderr);
			return 2;
		}
		i++;
		if (strcmp(flag, "--kubeconfig") == 0) {
			kubeconfig = value;
		} else if (strcmp(flag, "--namespace") == 0) {
			options.namespace = value;
		} else if (strcmp(flag, "--push-port") == 0 && !parse_number(value, 1, 65535, &number)) {
			options.push_port = (uint16_t)number;
		} else if (strcmp(flag, "--push-parallelism") == 0 &&
			   !parse_number(value, 1, 4096, &number)) {
			options.push_parallelism = number;
		} else if (strcmp(flag, "--push-timeout-ms") == 0 &&
			   !parse_number(value, 1, 600000, &number)) {
			options.push_target_timeout_ms = (int)number;
			options.push_total_timeout_ms = (int)number * 5;
		} else {
			fprintf(stderr, "muster-controller: bad flag or value: %s %s\n", flag, value);
			usage(stderr);
			return 2;
		}
	}

	mlog_init("controller", NULL, NULL);
	memset(&action, 0, sizeof(action));
	action.sa_handler = on_signal;
	sigemptyset(&action.sa_mask);
	sigaction(SIGTERM, &action, NULL);
	sigaction(SIGINT, &action, NULL);
	signal(SIGPIPE, SIG_IGN);

	err = kubeconfig ? kube_config_from_kubeconfig(kubeconfig, NULL, &cfg, &cause)
			 : kube_config_in_cluster(NULL, &cfg, &cause);
	if (err)
		goto out;
	err = controller_group_new(&cfg, &options, &group, &cause);
	if (err)
		goto out;
	mlog(MLOG_INFO, "started", "namespace=%s push_port=%u push_parallelism=%zu",
	     options.namespace ? options.namespace : "*", options.push_port, options.push_parallelism);
	err = controller_group_run(group, &stop_requested, &cause);
out:
	if (err)
		mlog(MLOG_ERROR, "exit", "err=%s cause=\"%s\"", kube_err_name(err), cause ? cause : "");
	else
		mlog(MLOG_INFO, "stopped", NULL);
	free(cause);
	controller_group_free(group);
	kube_config_free(&cfg);
	return err ? 1 : 0;
}
