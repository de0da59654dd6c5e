#!/usr/bin/python3
"""Release latency of a gang start on the local control plane, push versus volume only.

One node agent plays 1,000 nodes (e2e/shapes/scale.yaml) with kubelet's
volume sync (every --sync-period 60 s plus up to --sync-jitter 50 %: the
60-90 s window) and runs the real bin/muster-barrier as every pod's init
container; the JobSet stand-in makes the pods, kube-scheduler places them,
bin/muster-controller releases them. For each mode, in a namespace of its
own and one after the other, a JobSet of --pods pods (--parallelism per
child Job) is created in its post-injection form and measured:

  push    token in the JobSet annotation muster.dev/barrier-token and in the
          barrier's env, barrier listening on its pod IP: the controller writes
          the ConfigMap and pushes the release to every barrier;
  volume  no token, no listener: the controller writes the ConfigMap and skips
          the push (its log says push-skipped); kubelet's next sync of each pod
          projects the release into the barrier's volume.

Latency of a pod = its barrier process's exit (the node agent's pidfd time,
`exit_t` in its --events) minus the last barrier start of the JobSet (the
agent's `started` event of the init container, written just before it spawns
the barrier). Printed side by side: p50, p99, max and the count released,
with the controller's own figures from its event=release line.

During the push run the controller's input is recorded for a replay
benchmark: the pod watch (label jobset.sigs.k8s.io/jobset-name) and the
JobSet watch of that namespace, from a LIST's resourceVersion taken before the
JobSet is created, one JSON event per line, bytes as received, into
<record-dir>/pods.jsonl and jobsets.jsonl (meta.json says how).

Exit status 1 when a barrier did not release or exited non-zero, or the run
could not be made; never because a figure misses the goal.
"""

import argparse
import calendar
import datetime
import json
import os
import pathlib
import sys
import tempfile
import time
import uuid

from benchlib import (JOBSETS, ROOT, EventsTail, Kube, Proc, WatchRecorder, cluster_kubeconfig, create_namespace,
                      delete_namespace, jobset_body, load_shape, logfmt, percentile, proc_figures, start_standin,
                      stop_all, clean_up_on_sigterm, wait_nodes_ready, wait_pods_gone)

sys.path.insert(0, str(ROOT / "e2e" / "tests"))
from conftest import barrier_init_container, group_scheduling_volume  # noqa: E402
import muster_api as api  # noqa: E402

BARRIER = api.BARRIER_CONTAINER
TOKEN = "bench-release-token-0123456789abcdef"
JOBSET_LABEL = api.JOBSET_LABEL_NAME
JOBSET_NAME = "gang"
GOAL_P99_PUSH = 1.0


class Failed(Exception):
    """The run cannot be measured (a stand-in died, pods never started...)."""


def mlog_time(line):
    """Epoch seconds of an mlog line's ts=2026-11-21T07:11:23.802Z, or None."""
    ts = logfmt(line).get("ts")
    if not ts:
        return None
    try:
        parsed = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ")
    except ValueError:
        return None
    return calendar.timegm(parsed.timetuple()) + parsed.microsecond / 1e6


def pod_template(mode, barrier_timeout, push_port):
    """The pods of the JobSet as the webhook will make them: the real barrier
    first, the optional ConfigMap volume, a main container that runs an hour."""
    barrier = barrier_init_container(TOKEN, str(barrier_timeout))
    barrier["args"] = [arg.replace(f":{api.BARRIER_PORT}", f":{push_port}") for arg in barrier["args"]]
    if mode == "volume":
        # Push disabled: no listener, no token (as the webhook would inject a
        # pod of a JobSet without a token).
        args = barrier["args"]
        at = args.index("--listen")
        del args[at:at + 2]
        barrier["env"] = [e for e in barrier["env"] if e["name"] not in ("MUSTER_BARRIER_TOKEN", "POD_IP")]
    return {
        "metadata": {"labels": {api.LABEL_GROUP_SCHEDULING: "true"},
                     "annotations": {"e2e.muster.dev/run-seconds": "3600"}},
        "spec": {
            "restartPolicy": "Never",
            "initContainers": [barrier],
            "containers": [{"name": "worker", "image": "busybox", "command": ["sleep", "3600"]}],
            "volumes": [group_scheduling_volume(f"{JOBSET_NAME}{api.CONFIGMAP_SUFFIX}")],
        },
    }


def make_jobset(mode, replicas, parallelism, barrier_timeout, push_port):
    annotations = {api.ANNOTATION_GROUP_TIMEOUT: str(barrier_timeout)}
    if mode == "push":
        annotations[api.ANNOTATION_BARRIER_TOKEN] = TOKEN
    body = jobset_body(JOBSET_NAME, replicas, parallelism, pod_template(mode, barrier_timeout, push_port),
                       annotations)
    body["spec"]["groupSchedulingConfig"] = {"timeoutAfterSeconds": barrier_timeout}  # pruned by the 1.20 CRD
    return body


class Run:
    """Everything the benchmark started, so that cleanup finds it."""

    def __init__(self):
        self.agent = None
        self.procs = []       # per-mode stand-ins and controllers still running
        self.namespaces = []  # created, not yet confirmed empty
        self.recorders = []


def check_alive(*procs):
    for proc in procs:
        if proc is not None and not proc.alive():
            raise Failed(f"{proc.name} exited with code {proc.process.returncode}; log: {proc.log_path}")


def barrier_log(agent_dir, uid):
    """From the barrier's own log: how it was released (event=released
    via=push|volume, else '?'), when (its ts, ms precision, or None), and its
    other telling events (listen-failed, push-rejected: another process on
    these loopback addresses)."""
    path = pathlib.Path(agent_dir) / "pods" / uid / "containers" / BARRIER / "log"
    via, when, odd = "?", None, []
    try:
        for line in path.read_text(errors="replace").splitlines():
            fields = logfmt(line)
            if fields.get("event") == "released":
                via = fields.get("via", "?")
                when = mlog_time(line)
            elif fields.get("event") in ("listen-failed", "push-rejected"):
                odd.append(fields["event"] + (f"({fields['reason']})" if "reason" in fields else ""))
    except OSError:
        pass
    return via, when, odd


def pod_counts_as_started(pod):
    """The controller's rule (controller/group_core.md), minus the attempt and
    target checks that every pod here passes: bound, and its barrier running
    or done with 0, or the pod Running; not deleted, not failed."""
    meta, spec, status = pod["metadata"], pod.get("spec", {}), pod.get("status", {})
    if not spec.get("nodeName") or meta.get("deletionTimestamp") or status.get("phase") == "Failed":
        return False
    if status.get("phase") in ("Running", "Succeeded"):
        return True
    for container in status.get("initContainerStatuses") or []:
        if container.get("name") == BARRIER:
            state = container.get("state") or {}
            return "running" in state or (state.get("terminated") or {}).get("exitCode") == 0
    return False


def started_on_watch(recorder, pods):
    """From the recorded pod watch: (wall time at which it first showed every
    pod as started, which is what the controller waits for, or None;
    {uid: when that pod first showed as started})."""
    started, first, count, complete = {}, {}, 0, None
    with open(recorder.out_path, "rb") as handle:
        for line, received in zip(handle, recorder.times):
            if not line.strip():
                continue
            event = json.loads(line)
            if event.get("type") not in ("ADDED", "MODIFIED", "DELETED"):
                continue
            pod = event["object"]
            uid = pod["metadata"]["uid"]
            now = event["type"] != "DELETED" and pod_counts_as_started(pod)
            if now:
                first.setdefault(uid, received)
            count += int(now) - int(started.get(uid, False))
            started[uid] = now
            if complete is None and count >= pods:
                complete = received
    return complete, first


def run_mode(mode, args, ctx, run, tail, record):
    """Creates the JobSet of one mode, measures its release, deletes it.
    Returns the mode's results (a dict); raises Failed when it cannot measure."""
    kube, kubeconfig, work = ctx["kube"], ctx["kubeconfig"], ctx["work"]
    namespace = f"release-{mode}-{uuid.uuid4().hex[:6]}"
    result = {"mode": mode, "namespace": namespace, "pods": args.pods, "errors": []}
    print(f"\n== {mode}: {args.pods} pods in namespace {namespace}", flush=True)
    run.namespaces.append(namespace)
    create_namespace(kube, namespace)
    jobset_proc = start_standin("jobset_controller.py", kubeconfig, "--namespace", namespace,
                                log_path=work / f"jobset-{mode}.log", name=f"jobset stand-in ({mode})")
    # One controller, alone: leader election is not what this measures, and a
    # Lease renewal that a machine busy with 5,000 barriers answers late would
    # end the run (seen in CI: the apiserver took over 2 s per request for 10 s).
    controller = Proc([args.controller, "--kubeconfig", kubeconfig, "--namespace", namespace,
                       "--push-port", args.push_port, "--metrics-addr", "127.0.0.1:0", "--leader-elect=false"],
                      work / f"controller-{mode}.log", name=f"muster-controller ({mode})")
    run.procs += [controller, jobset_proc]
    result["controller_log"] = str(controller.log_path)

    # The controller's input, recorded in every mode (the pod stream also
    # tells when the API showed each pod started); kept in --record-dir for
    # the recorded run, in the work dir otherwise.
    record_dir = args.record_dir if record else work / f"watch-{mode}"
    record_dir.mkdir(parents=True, exist_ok=True)
    pods_path = f"/api/v1/namespaces/{namespace}/pods"
    _, pods_version = kube.list(pods_path, labelSelector=JOBSET_LABEL)
    _, jobsets_version = kube.list(JOBSETS.format(namespace))
    recorders = {
        "pods": WatchRecorder(Kube(kubeconfig), pods_path, pods_version, record_dir / "pods.jsonl",
                              query={"labelSelector": JOBSET_LABEL}),
        "jobsets": WatchRecorder(Kube(kubeconfig), JOBSETS.format(namespace), jobsets_version,
                                 record_dir / "jobsets.jsonl"),
    }
    run.recorders += recorders.values()
    watch = {"pods_version": pods_version, "jobsets_version": jobsets_version,
             "pods_path": pods_path, "jobsets_path": JOBSETS.format(namespace), "dir": str(record_dir)}

    starts, exits, mains, start_events = {}, {}, {}, {}
    prefix = namespace + "/"

    def absorb():
        for event in tail.read():
            pod = event.get("pod", "")
            if not pod.startswith(prefix):
                continue
            if event["container"] == BARRIER:
                if event["event"] == "started":
                    starts[pod] = event["t"]
                    start_events[pod] = event
                elif event["event"] == "exited":
                    exits[pod] = event
            elif event["event"] == "started":
                mains[pod] = event["t"]

    created = time.time()
    kube.create(JOBSETS.format(namespace), make_jobset(mode, args.pods // args.parallelism, args.parallelism,
                                                       args.barrier_timeout, args.push_port))
    result["created"] = created
    deadline = time.monotonic() + args.timeout
    last_report = time.monotonic()
    release_deadline = None
    while True:
        absorb()
        check_alive(run.agent, jobset_proc, controller)
        now = time.monotonic()
        failed = sum(1 for e in exits.values() if e.get("code") != 0)
        if len(exits) >= args.pods:
            break
        if release_deadline is None and len(starts) >= args.pods:
            release_deadline = now + args.release_wait
            print(f"  all {len(starts)} barriers started {max(starts.values()) - created:.1f} s after the "
                  f"JobSet was created; waiting up to {args.release_wait:.0f} s for every release", flush=True)
        if release_deadline is not None and now > release_deadline:
            result["errors"].append(f"{args.pods - len(exits)} barriers not released {args.release_wait:.0f} s "
                                    f"after the last start")
            break
        if release_deadline is None and now > deadline:
            result["errors"].append(f"only {len(starts)} of {args.pods} barriers started within "
                                    f"{args.timeout:.0f} s")
            break
        if failed and release_deadline is None:
            # A barrier failed before the group was complete: its pod (and
            # with backoffLimit 0 the JobSet) fails, the rest never starts.
            deadline = min(deadline, now + 30)
        if now - last_report >= 10:
            last_report = now
            print(f"  t={time.time() - created:5.0f} s  barriers started {len(starts)}  released "
                  f"{len(exits) - failed}  failed {failed}", flush=True)
        time.sleep(0.25)

    # --- figures
    released = {pod: e for pod, e in exits.items() if e.get("code") == 0}
    failed = {pod: e for pod, e in exits.items() if e.get("code") != 0}
    result.update(started=len(starts), released=len(released), failed=len(failed))
    if failed:
        codes = sorted({e.get("code") for e in failed.values()})
        result["errors"].append(f"{len(failed)} barriers exited non-zero (codes {codes})")
    if starts:
        t_last = max(starts.values())
        result["t_last_start"] = t_last
        result["create_to_last_start"] = t_last - created
        result["start_spread"] = t_last - min(starts.values())
    if released and starts:
        exit_times = {pod: e.get("exit_t", e["t"]) for pod, e in released.items()}
        result["no_exit_t"] = sum(1 for e in released.values() if "exit_t" not in e)
        latencies = [t - result["t_last_start"] for t in exit_times.values()]
        result.update(p50=percentile(latencies, 50), p99=percentile(latencies, 99), max=max(latencies),
                      min=min(latencies))
        reap_lag = [e["t"] - e["exit_t"] for e in released.values() if "exit_t" in e]
        result["reap_lag_max"] = max(reap_lag) if reap_lag else None
        via, odd, own = {}, {}, []
        for pod, event in released.items():
            how, when, events = barrier_log(ctx["agent_dir"], event["uid"])
            via[how] = via.get(how, 0) + 1
            if when is not None:
                own.append(when - result["t_last_start"])
            for what in events:
                odd[what] = odd.get(what, 0) + 1
        result["via"] = via
        result["barrier_odd"] = odd
        if own:
            result["own"] = (percentile(own, 50), percentile(own, 99), max(own), len(own))
        if odd:
            print(f"  barrier logs: {odd} (another process on these addresses and port?)", flush=True)

    # --- the controller's view
    wait_until = time.monotonic() + 10
    release_lines = []
    while time.monotonic() < wait_until:
        release_lines = [line for line in controller.output().splitlines() if " event=release " in line]
        if release_lines:
            break
        time.sleep(0.5)
    output = controller.output()
    result["push_skipped"] = " event=push-skipped " in output
    if release_lines:
        # event=release is logged once the ConfigMap is written; the push
        # runs after it, off the controller's lock, and logs event=pushed.
        fields = logfmt(release_lines[-1])
        logged = mlog_time(release_lines[-1])
        pushed_lines = [line for line in output.splitlines() if " event=pushed " in line and " repush=0 " in line]
        if pushed_lines:
            pushed = logfmt(pushed_lines[-1])
            for key in ("pushed", "push_ms"):
                fields[key] = pushed.get(key, "-")
            for key in ("ok", "refused", "unreachable", "timeout", "pending"):
                fields["push_" + key] = pushed.get(key, "-")
            push_logged = mlog_time(pushed_lines[-1])
            if push_logged and "t_last_start" in result:
                result["pushed_after_last_start"] = push_logged - result["t_last_start"]
        result["controller"] = fields
        if logged and "t_last_start" in result:
            spent = int(fields.get("write_ms", 0)) / 1000
            result["decided_after_last_start"] = logged - spent - result["t_last_start"]
            result["logged_after_last_start"] = logged - result["t_last_start"]
        if len(release_lines) > 1:
            result["errors"].append(f"{len(release_lines)} release lines in the controller log (expected 1)")
    else:
        result["errors"].append("no event=release line in the controller log")
    if mode == "volume" and not result["push_skipped"]:
        result["errors"].append("volume mode: the controller did not log push-skipped")
    if mode == "push" and result["push_skipped"]:
        result["errors"].append("push mode: the controller logged push-skipped")

    # --- the recording: go on until every main container runs and the pod
    # stream has been quiet for a moment (the agent's last status writes).
    until = time.monotonic() + 120
    while time.monotonic() < until:
        absorb()
        if len(mains) >= len(released) and recorders["pods"].quiet_for() >= 3:
            break
        time.sleep(0.5)
    for kind, recorder in recorders.items():
        error = recorder.stop()
        run.recorders.remove(recorder)
        watch[kind] = {"lines": recorder.lines, "bytes": recorder.bytes,
                       "connections": recorder.connections, "path": str(recorder.out_path)}
        if error:
            result["errors"].append(f"recording {kind}: {error}")
    seen, first_seen = started_on_watch(recorders["pods"], args.pods)
    if seen and "t_last_start" in result:
        result["status_seen_after_last_start"] = seen - result["t_last_start"]
        if released:
            from_seen = [e.get("exit_t", e["t"]) - seen for e in released.values()]
            result["from_seen"] = (percentile(from_seen, 50), percentile(from_seen, 99), max(from_seen))
    start_by_uid = {e["uid"]: e["t"] for e in start_events.values()}
    lags = [first_seen[uid] - t for uid, t in start_by_uid.items() if uid in first_seen]
    if lags:
        result["status_lag"] = (percentile(lags, 50), percentile(lags, 99), max(lags))
    meta = dict(namespace=namespace, jobset=JOBSET_NAME, pod_count=args.pods, streams=watch,
                parallelism=args.parallelism, mode=mode, label_selector=JOBSET_LABEL,
                recorded_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                controller_args=["--namespace", namespace, "--push-port", str(args.push_port)],
                note="watch streams as sent by kube-apiserver v1.20.2 (one JSON event per line, bookmarks "
                     "included), each from the resourceVersion of a LIST taken before the JobSet was "
                     "created (that LIST was empty); <name>.times holds each line's receive time")
    (record_dir / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    if record:
        result["record"] = watch

    # --- delete the JobSet and its pods, so the next mode gets the nodes.
    result["agent_figures"] = proc_figures(run.agent.pid)
    result["controller_figures"] = proc_figures(controller.pid)
    stop_all([controller, jobset_proc], timeout=30)
    run.procs = [p for p in run.procs if p not in (controller, jobset_proc)]
    try:
        kube.delete(JOBSETS.format(namespace) + f"/{JOBSET_NAME}", body={"propagationPolicy": "Background"})
    except Exception as error:  # noqa: BLE001 - the namespace deletion removes it anyway
        print(f"  delete JobSet: {error}", flush=True)
    delete_namespace(kube, namespace)
    begun = time.monotonic()
    if wait_pods_gone(kube, namespace, args.cleanup_timeout):
        run.namespaces.remove(namespace)
        print(f"  deleted: no pod left after {time.monotonic() - begun:.0f} s", flush=True)
    return result


def fmt_seconds(value, digits=3):
    return "-" if value is None else f"{value:.{digits}f} s"


def print_table(results, args, nodes):
    modes = [r["mode"] for r in results]
    width = 20

    def row(label, values):
        print(f"  {label:<50}" + "".join(f"{v:>{width}}" for v in values))

    def get(result, key, how=fmt_seconds):
        value = result.get(key)
        return "-" if value is None else how(value)

    print(f"\nRelease latency: {args.pods} pods ({args.pods // args.parallelism} Jobs x {args.parallelism}) on "
          f"{nodes} fake nodes, kubelet volume sync {args.sync_period:.0f} s + up to "
          f"{args.sync_jitter * 100:.0f} %")
    print("  latency = barrier process exit - last barrier start (node agent events)")
    row("", modes)
    row("barriers released (exit 0)", [f"{r.get('released', 0)}/{r['pods']}" for r in results])
    row("barriers exited non-zero", [str(r.get("failed", 0)) for r in results])
    row("released via push / volume", [f"{r.get('via', {}).get('push', 0)} / {r.get('via', {}).get('volume', 0)}"
                                       for r in results])
    row("p50", [get(r, "p50") for r in results])
    row("p99", [get(r, "p99") for r in results])
    row("max", [get(r, "max") for r in results])
    row("min", [get(r, "min") for r in results])
    row("cross-check: barrier's own released log p50/p99/max",
        [get(r, "own", lambda v: "/".join(f"{x:.2f}" for x in v[:3])) for r in results])
    row("JobSet created -> last barrier start", [get(r, "create_to_last_start", lambda v: f"{v:.1f} s")
                                                 for r in results])
    row("first -> last barrier start", [get(r, "start_spread", lambda v: f"{v:.1f} s") for r in results])
    row("last start -> all started on the pod watch", [get(r, "status_seen_after_last_start") for r in results])
    row("barrier start -> on the watch p50/p99/max", [get(r, "status_lag", lambda v: "/".join(f"{x:.1f}" for x in v))
                                                      for r in results])
    row("all started on the watch -> exit p50/p99/max", [get(r, "from_seen", lambda v: "/".join(f"{x:.2f}" for x in v))
                                                         for r in results])
    print("  controller (its event=release and event=pushed lines):")
    row("  last start -> release decided (approx.)", [get(r, "decided_after_last_start") for r in results])
    row("  last start -> release written (event=release)", [get(r, "logged_after_last_start") for r in results])
    row("  last start -> push done (event=pushed)", [get(r, "pushed_after_last_start") for r in results])
    for key in ("write_ms", "push_ms", "pushed", "push_ok", "push_refused", "push_unreachable", "push_timeout",
                "push_pending", "spread_ms", "configmap", "started", "expected"):
        row(f"  {key}", [r.get("controller", {}).get(key, "-") for r in results])
    row("  push-skipped logged", ["yes" if r.get("push_skipped") else "no" for r in results])
    row("  controller peak RSS (VmHWM), whole process", [get(r, "controller_figures", lambda v: f"{v[0]:.1f} MB")
                                                         for r in results])
    row("  controller CPU", [get(r, "controller_figures", lambda v: f"{v[1]:.1f} s") for r in results])
    row("agent loop reap lag, max (exit -> reaped)", [get(r, "reap_lag_max") for r in results])
    for r in results:
        if r.get("no_exit_t"):
            print(f"  note: {r['mode']}: {r['no_exit_t']} exits without a pidfd time (reap time used)")
    push = next((r for r in results if r["mode"] == "push" and "p99" in r), None)
    if push:
        verdict = "met" if push["p99"] < GOAL_P99_PUSH else "missed"
        print(f"  goal p99 < {GOAL_P99_PUSH:.0f} s with push: {verdict} ({push['p99']:.3f} s); "
              f"volume only is bounded by the {args.sync_period:.0f}-"
              f"{args.sync_period * (1 + args.sync_jitter):.0f} s kubelet window")


def main():
    wall_begun = time.monotonic()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", help="default: start or reuse the local control plane (e2e/cluster/up.sh)")
    parser.add_argument("--shape", type=pathlib.Path, default=ROOT / "e2e" / "shapes" / "scale.yaml")
    parser.add_argument("--pods", type=int, default=5000, help="pods per JobSet (a multiple of --parallelism)")
    parser.add_argument("--parallelism", type=int, default=100, help="pods per child Job")
    parser.add_argument("--modes", default="push,volume", help="comma-separated, in order: push, volume")
    parser.add_argument("--sync-period", type=float, default=60.0, help="the node agent's (kubelet's) sync period")
    parser.add_argument("--sync-jitter", type=float, default=0.5, help="extra random fraction of the period")
    parser.add_argument("--barrier", type=pathlib.Path,
                        default=pathlib.Path(os.environ.get("MUSTER_BARRIER", ROOT / "bin" / "muster-barrier")),
                        help="barrier binary the node agent runs (env MUSTER_BARRIER)")
    parser.add_argument("--controller", type=pathlib.Path,
                        default=pathlib.Path(os.environ.get("MUSTER_CONTROLLER", ROOT / "bin" / "muster-controller")),
                        help="controller binary (env MUSTER_CONTROLLER)")
    parser.add_argument("--push-port", type=int, default=19443,
                        help="barriers listen and the controller pushes here; not the e2e tests' 9443, since "
                             "every node agent on a machine hands out the same loopback pod addresses")
    parser.add_argument("--barrier-timeout", type=int, default=900, help="the barrier's --timeout, seconds")
    parser.add_argument("--timeout", type=float, default=900, help="seconds for every barrier of a JobSet to start")
    parser.add_argument("--release-wait", type=float,
                        help="seconds after the last start for every release (default: sync window + 60)")
    parser.add_argument("--cleanup-timeout", type=float, default=300, help="seconds for a JobSet's pods to go")
    parser.add_argument("--record-dir", type=pathlib.Path,
                        help="where the push run's watch streams go (default: build/bench/watch-<pods>)")
    parser.add_argument("--no-record", action="store_true", help="do not record the watch streams")
    parser.add_argument("--work-dir", type=pathlib.Path, help="logs and the agent's files (default: a new /tmp dir)")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in ("push", "volume") for m in modes):
        parser.error("--modes: a comma-separated list of push and volume")
    if args.pods <= 0 or args.parallelism <= 0 or args.pods % args.parallelism:
        parser.error("--pods must be a positive multiple of --parallelism")
    for path in (args.barrier, args.controller):
        if not os.access(path, os.X_OK):
            parser.error(f"{path} is not executable: run `make` first")
    if args.release_wait is None:
        args.release_wait = args.sync_period * (1 + args.sync_jitter) + 60
    if args.record_dir is None:
        args.record_dir = ROOT / "build" / "bench" / f"watch-{args.pods}"
    record = not args.no_record and "push" in modes

    clean_up_on_sigterm()
    kubeconfig = cluster_kubeconfig(args.kubeconfig)
    kube = Kube(kubeconfig)
    work = args.work_dir or pathlib.Path(tempfile.mkdtemp(prefix="muster-bench-release-"))
    work.mkdir(parents=True, exist_ok=True)
    events = work / "events.jsonl"
    print(f"logs: {work}  (agent.log, controller-<mode>.log, jobset-<mode>.log, events.jsonl)", flush=True)
    print(f"controller {args.controller}, barrier {args.barrier}", flush=True)

    run = Run()
    results = []
    status = 0
    nodes = 0
    try:
        run.agent = start_standin(
            "node_agent.py", kubeconfig, "--shape", args.shape, "--work-dir", work / "agent", "--delete-nodes",
            "--lease-seconds", "20", "--sync-period", args.sync_period, "--sync-jitter", args.sync_jitter,
            "--events", events, "--barrier", args.barrier, log_path=work / "agent.log", name="node agent")
        nodes_list, seconds = wait_nodes_ready(kube, len(load_shape(args.shape)), 600,
                                               check=lambda: check_alive(run.agent))
        nodes = len(nodes_list)
        print(f"nodes: {nodes} Ready in {seconds:.1f} s", flush=True)
        ctx = {"kube": kube, "kubeconfig": kubeconfig, "work": work, "agent_dir": work / "agent"}
        tail = EventsTail(events)
        recorded = False
        for mode in modes:
            result = run_mode(mode, args, ctx, run, tail, record and mode == "push" and not recorded)
            recorded = recorded or "record" in result
            results.append(result)
            for error in result["errors"]:
                print(f"  FAILED: {mode}: {error}", flush=True)
            if result["errors"]:
                status = 1
        print_table(results, args, nodes)
        for result in results:
            if "record" in result:
                rec = result["record"]
                print(f"\nrecorded controller input ({result['mode']} run, namespace {result['namespace']}):")
                for kind in ("pods", "jobsets"):
                    if kind in rec:
                        print(f"  {rec[kind]['path']}: {rec[kind]['lines']} lines, {rec[kind]['bytes']:,} bytes "
                              f"({rec[kind]['bytes'] / 1e6:.1f} MB, {rec[kind]['connections']} watch request(s))")
                print(f"  {args.record_dir / 'meta.json'}")
        mb, cpu = results[-1]["agent_figures"] if results else (0, 0)
        print(f"\nnode agent: peak RSS {mb:.0f} MB, CPU {cpu:.1f} s")
    except Failed as error:
        print(f"FAILED: {error}", flush=True)
        status = 1
    except KeyboardInterrupt:
        print("\ninterrupted: cleaning up", flush=True)
        status = 130
    finally:
        for recorder in run.recorders:
            recorder.stop()
        stop_all(run.procs, timeout=30)
        for namespace in list(run.namespaces):
            delete_namespace(kube, namespace)
        try:
            for namespace in list(run.namespaces):
                wait_pods_gone(kube, namespace, args.cleanup_timeout)
        except (KeyboardInterrupt, Exception) as error:  # noqa: BLE001 - go on stopping the agent
            print(f"cleanup: {error!r}", flush=True)
        if run.agent:
            stop_all([run.agent], timeout=120)
        print(f"logs: {work}")
        print(f"wall time: {time.monotonic() - wall_begun:.0f} s", flush=True)
    if status == 0 and any(r["errors"] for r in results):
        status = 1
    sys.exit(status)


if __name__ == "__main__":
    main()
