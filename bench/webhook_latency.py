#!/usr/bin/python3
"""Latency of the admission webhook under load, over TLS with keep-alive.

Goal (issue): p99 under 2 ms at 2,000 AdmissionReviews/s, and the maximum
sustained rate, with the webhook on 2 cores.

What it does, in a new temporary directory:

 1. a CA and a serving certificate for IP:127.0.0.1: deploy/gen-certs.sh
    --out DIR --ip 127.0.0.1 when it exists, else openssl directly (ECDSA P-256,
    as gen-certs.sh's default);
 2. starts bin/muster-webhook --tls-cert-file DIR/tls.crt --tls-key-file
    DIR/tls.key --listen 127.0.0.1:PORT --threads 2 and waits for GET /readyz
    (HTTPS, verified against DIR/ca.crt);
 3. posts bench/webhook/admission-review.json (an AdmissionReview v1 CREATE of
    the KEP-498 Story 2 JobSet) once to /mutate and /validate and checks the
    answers: 200, an AdmissionReview whose response.uid is the request's;
 4. build/host/bench/webhook_load (bench/webhook_load.c: paced, latency
    counted from each request's scheduled time, so no coordinated omission,
    TLS verified) at --rate (2,000/s) for --duration (20 s) after --warmup
    (5 s), on /mutate then /validate, each response checked for the uid;
    --repeat N rounds of both (the goal is judged on the median p99). Every
    request's latency goes to DIR/samples-<route>-<round>.csv, and the
    requests over 2 ms are counted per 100-ms window: a few dense windows
    are bursts from elsewhere (other processes, the host), an even spread is
    the server;
 5. webhook_load --max on /mutate: steps of --max-step seconds from 1,000/s up
    (a step not held is run once more), then two bisections: the highest rate
    held (>= 98 % achieved, no failure, p99 from schedule <= 10 ms);
 6. wrk -t2 -c16 -d10s --latency -s bench/webhook/admission.lua on /mutate as
    a cross-check of the maximum (closed loop, and wrk verifies no
    certificate), when wrk is installed.

 7. with --pin-kubeconfig (default $MUSTER_KUBECONFIG, the local control
    plane): the pod route /pin at the same rate, on a pod of a 5,000-pod
    JobSet whose placement of record (40 runs, as 40 racks give) is a real
    ConfigMap in a namespace of its own; the webhook reads it through the
    API with --kubeconfig and caches it, as in the cluster.

Figures are printed with the machine (CPUs, model, kernel) and every
command; DIR/results.json has them all, DIR/webhook.log the webhook's log.

The load generator and the webhook share the machine. With --pin-cpus and at
least 3 CPUs, the webhook is pinned to CPUs 0-1 (the goal's 2 cores) and the
load generator and wrk to the others; with fewer CPUs nothing is pinned (the
kernel shares the cores between them) and the figures say so. Before
measuring, the script waits (at most --quiet-wait s) for two quiet seconds
(all CPUs under 10 % busy), and it prints the CPU that other processes took
during each run, the load generator's own CPU and the webhook's CPU per
request.

Exit status 1 when the webhook did not start or answer, or any request
failed (HTTP error, transport error, wrong answer, not sent); never because
a figure misses the goal ("goal met" / "goal missed" is printed).
"""

import argparse
import base64
import http.client
import json
import os
import pathlib
import platform
import re
import resource
import shlex
import shutil
import ssl
import subprocess
import statistics
import sys
import tempfile
import time

from benchlib import ROOT, Proc, clean_up_on_sigterm, free_port, proc_figures

sys.path.insert(0, str(ROOT / "e2e" / "standins"))
from kube import ApiError, Kube  # noqa: E402
import muster_api as api  # noqa: E402

GOAL_RATE = 2000
GOAL_P99_MS = 2.0
ROUTES = ("/mutate", "/validate")


class Failed(Exception):
    """The run cannot go on (the webhook did not start, answered wrongly...)."""


def cpu_times():
    """(busy, total) jiffies of all CPUs, from /proc/stat."""
    with open("/proc/stat") as handle:
        fields = [int(v) for v in handle.readline().split()[1:9]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def busy_between(before, after):
    busy, total = after[0] - before[0], after[1] - before[1]
    return busy / total if total else 0.0


def process_ticks(exclude):
    """{pid: utime+stime+cutime+cstime} of every process but `exclude`. Per
    process accounting is exact where /proc/stat's all-CPU figures are tick
    samples (in this VM they miss most of a load that wakes 2,000 times/s)."""
    ticks = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) in exclude:
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks[int(entry.name)] = sum(int(v) for v in fields[11:15])
    return ticks


def others_cpu(before, exclude):
    """CPU seconds of the other processes (kernel threads included) since the
    `before` snapshot; those that exited meanwhile unseen, unless reaped by a
    live parent."""
    after = process_ticks(exclude)
    ticks = sum(t - before.get(pid, 0) for pid, t in after.items() if t >= before.get(pid, 0))
    return ticks / os.sysconf("SC_CLK_TCK")


def wait_quiet(max_seconds):
    """Waits until all CPUs were under 10 % busy for two seconds in a row, at
    most max_seconds. Returns (seconds waited, busy fraction of the last second)."""
    quiet, waited, busy = 0, 0, 0.0
    while waited < max_seconds and quiet < 2:
        before = cpu_times()
        time.sleep(1)
        busy = busy_between(before, cpu_times())
        quiet = quiet + 1 if busy < 0.10 else 0
        waited += 1
    return waited, busy


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpus_usable": len(os.sched_getaffinity(0)), "model": model,
            "kernel": platform.release(), "python": platform.python_version()}


def run_quiet(argv, what):
    result = subprocess.run([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        raise Failed(f"{what} failed (exit {result.returncode}): {result.stdout.strip()[-2000:]}")
    return result.stdout


def make_certs(work):
    """DIR with ca.crt, tls.crt, tls.key for IP:127.0.0.1. Returns (dir, how)."""
    out = work / "certs"
    gen = ROOT / "deploy" / "gen-certs.sh"
    if gen.exists():
        run_quiet(["bash", gen, "--out", out, "--ip", "127.0.0.1"], "deploy/gen-certs.sh")
        how = "deploy/gen-certs.sh --out DIR --ip 127.0.0.1"
    else:
        out.mkdir(mode=0o700)
        ext = out / "serving.ext"
        ext.write_text("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                       "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n")
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        run_quiet(["openssl", "req", "-x509", *ec, "-keyout", out / "ca.key", "-out", out / "ca.crt", "-days", "2",
                   "-subj", "/CN=muster-bench-ca", "-addext", "basicConstraints=critical,CA:TRUE",
                   "-addext", "keyUsage=critical,keyCertSign,cRLSign"], "openssl (CA)")
        run_quiet(["openssl", "req", *ec, "-keyout", out / "tls.key", "-out", out / "tls.csr",
                   "-subj", "/CN=127.0.0.1"], "openssl (key)")
        run_quiet(["openssl", "x509", "-req", "-in", out / "tls.csr", "-CA", out / "ca.crt", "-CAkey", out / "ca.key",
                   "-CAcreateserial", "-out", out / "tls.crt", "-days", "2", "-sha256", "-extfile", ext],
                  "openssl (serving certificate)")
        how = "openssl, ECDSA P-256, SAN IP:127.0.0.1"
    for name in ("ca.crt", "tls.crt", "tls.key"):
        if not (out / name).exists():
            raise Failed(f"{out / name} missing after the certificates were made ({how})")
    return out, how


def https_request(port, context, method, path, body=None, timeout=5.0):
    """(status, body bytes) of one request on a new connection."""
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json", "Accept": "application/json, */*"} if body else {}
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def wait_ready(proc, port, context, timeout=15.0):
    """Seconds until GET /readyz answered 200; Failed if the webhook exits or never does."""
    begun = time.monotonic()
    last = "no answer"
    while time.monotonic() - begun < timeout:
        if not proc.alive():
            raise Failed(f"the webhook exited with code {proc.process.returncode}:\n{proc.output()[-3000:]}")
        try:
            status, body = https_request(port, context, "GET", "/readyz", timeout=1.0)
            if status == 200:
                return time.monotonic() - begun
            last = f"HTTP {status} {body[:200]!r}"
        except (OSError, http.client.HTTPException) as error:
            last = repr(error)
        time.sleep(0.05)
    raise Failed(f"GET /readyz not 200 within {timeout:.0f} s (last: {last}); log:\n{proc.output()[-3000:]}")


def probe(port, context, path, body, uid):
    """Checks one answer; returns a one-line description. Raises Failed."""
    status, data = https_request(port, context, "POST", path, body)
    if status != 200:
        raise Failed(f"POST {path}: HTTP {status}: {data[:500]!r}")
    try:
        review = json.loads(data)
    except ValueError as error:
        raise Failed(f"POST {path}: not JSON ({error}): {data[:500]!r}") from None
    response = review.get("response") or {}
    if review.get("kind") != "AdmissionReview" or response.get("uid") != uid:
        raise Failed(f"POST {path}: not an AdmissionReview answering uid {uid}: {data[:500]!r}")
    text = f"HTTP 200, {len(data)} bytes, allowed={response.get('allowed')}"
    if response.get("patch"):
        patch = json.loads(base64.b64decode(response["patch"]))
        text += f", {response.get('patchType')} of {len(patch)} operations"
    if response.get("status", {}).get("message"):
        text += f", message: {response['status']['message'][:200]}"
    return text


def show_phase(phase, connections):
    def dist(key):
        d = phase.get(key, {})
        return (f"p50 {d.get('p50', 0):.3f}  p90 {d.get('p90', 0):.3f}  p99 {d.get('p99', 0):.3f}  "
                f"p99.9 {d.get('p99_9', 0):.3f}  max {d.get('max', 0):.3f} ms")

    print(f"  {'requests':<28} {phase['scheduled']} scheduled at {phase['rate']:.0f}/s for {phase['duration']:.0f} s, "
          f"{phase['sent']} sent, {phase['ok']} ok (2xx, uid checked)")
    print(f"  {'failed':<28} {phase['failed']} (http {phase['http_errors']}, transport {phase['transport_errors']}, "
          f"wrong answer {phase['bad_bodies']}, not sent {phase['unsent']})")
    if phase.get("first_failure"):
        print(f"  {'first failure':<28} {phase['first_failure']}")
    print(f"  {'achieved rate':<28} {phase['achieved']:.1f} req/s")
    print(f"  {'latency from schedule':<28} {dist('latency_from_schedule_ms')}")
    print(f"  {'latency from send':<28} {dist('latency_from_send_ms')}")
    print(f"  {'send lag (generator)':<28} {dist('send_lag_ms')}")
    print(f"  {'connections opened':<28} {phase['connections_opened']} (at most {connections})")
    print(f"  {'load generator CPU':<28} {phase['cpu_seconds']:.2f} s ({phase['cpu_percent']:.0f} % of one core)")


def slow_windows(path, limit_ms):
    """From webhook_load --samples: how the requests slower than limit_ms
    (from schedule) spread over 100-ms windows of the schedule: a few bursts
    (another process, the host) or everywhere (the server)."""
    try:
        with open(path) as handle:
            next(handle)
            rows = [line.split(",") for line in handle]
    except (OSError, StopIteration):
        return None
    windows = {}
    last = 0.0
    for due, from_schedule, _ in rows:
        last = max(last, float(due))
        if float(from_schedule) > limit_ms:
            window = int(float(due) * 10)
            windows[window] = windows.get(window, 0) + 1
    worst = max(windows.items(), key=lambda item: item[1], default=(0, 0))
    return {"count": sum(windows.values()), "windows": len(windows), "of": int(last * 10) + 1,
            "worst": worst[1], "worst_at": worst[0] / 10}


def parse_wrk(text):
    """Requests/sec, latency percentiles (ms) and errors from wrk's output."""
    units = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}
    out = {"errors": 0}
    match = re.search(r"Requests/sec:\s+([\d.]+)", text)
    out["rps"] = float(match.group(1)) if match else None
    for pct, value, unit in re.findall(r"^\s+(50|75|90|99)%\s+([\d.]+)(us|ms|s|m)\s*$", text, re.M):
        out[f"p{pct}"] = float(value) * units[unit]
    match = re.search(r"(\d+) requests in", text)
    out["requests"] = int(match.group(1)) if match else None
    match = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    out["non_2xx"] = int(match.group(1)) if match else 0
    match = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    out["socket_errors"] = sum(int(v) for v in match.groups()) if match else 0
    out["errors"] = out["non_2xx"] + out["socket_errors"]
    return out


class Bench:
    """What the runs share: options, the webhook, the load command, the log."""

    def __init__(self, args, work, webhook, port, certs, load_prefix, ncpus):
        self.args, self.work, self.webhook, self.ncpus = args, work, webhook, ncpus
        self.base_url = f"https://127.0.0.1:{port}"
        self.load = [*load_prefix, args.load, "--cacert", certs / "ca.crt", "--body", args.body,
                     "--connections", str(args.connections), "--expect", args.uid, "--json"]
        self.pin_load = None  # set by PinSetup: the same with the pod review
        self.load_prefix = load_prefix
        self.log = open(work / "webhook_load.jsonl", "w")
        self.results = {}
        self.failed = False
        self.exclude = {os.getpid(), webhook.pid}  # the load tools are children: in our cutime

    def show_others(self, seconds, wall):
        """The CPU other processes took meanwhile: noise that the figures include."""
        print(f"  {'other processes':<28} {seconds:.2f} s CPU during the run "
              f"({100 * seconds / (wall * self.ncpus):.0f} % of the {self.ncpus} CPUs)")

    def run_load(self, extra, label, load=None):
        """Runs webhook_load --json with `extra`; returns its report, with
        others_cpu_seconds (every other process), wall_seconds and
        webhook_cpu_seconds added. Its progress lines (stderr) show as they come."""
        argv = [str(a) for a in [*(load or self.load), *extra]]
        print(f"\n== {label}\ncommand: {shlex.join(argv)}", flush=True)
        before, begun, webhook_before = process_ticks(self.exclude), time.monotonic(), proc_figures(self.webhook.pid)[1]
        result = subprocess.run(argv, stdout=subprocess.PIPE, text=True)
        others = others_cpu(before, self.exclude)
        self.log.write(f"# {label}\n{result.stdout}\n")
        try:
            report = json.loads(result.stdout)
        except ValueError:
            raise Failed(f"webhook_load exited {result.returncode} without a report: "
                         f"{result.stdout[-1000:]!r}") from None
        report.update(others_cpu_seconds=others, wall_seconds=time.monotonic() - begun,
                      webhook_cpu_seconds=proc_figures(self.webhook.pid)[1] - webhook_before, exit=result.returncode)
        return report

    def fixed_rate(self, route, round_number):
        args = self.args
        samples = self.work / f"samples{route.replace('/', '-')}-{round_number}.csv"
        label = f"{route}: {args.rate:.0f} req/s for {args.duration:g} s after {args.warmup:g} s"
        if args.repeat > 1:
            label += f" (round {round_number} of {args.repeat})"
        report = self.run_load(["--url", self.base_url + route, "--rate", f"{args.rate:g}", "--duration",
                                f"{args.duration:g}", "--warmup", f"{args.warmup:g}", "--samples", samples], label,
                               self.pin_load if route == "/pin" else None)
        self.results.setdefault(route, []).append(report)
        phase, warm = report["result"], report["warmup"]
        requests = phase["sent"] + warm["sent"]
        cpu = report["webhook_cpu_seconds"]
        show_phase(phase, args.connections)
        print(f"  {'connections, warm-up incl.':<28} {report['connections_opened_total']} for {requests} requests")
        print(f"  {'webhook CPU':<28} {cpu:.2f} s for {requests} requests "
              f"({1e6 * cpu / max(requests, 1):.0f} us per request, warm-up included)")
        self.show_others(report["others_cpu_seconds"], report["wall_seconds"])
        report["slow"] = slow_windows(samples, GOAL_P99_MS)
        if report["slow"]:
            slow = report["slow"]
            print(f"  {'over ' + format(GOAL_P99_MS, 'g') + ' ms from schedule':<28} {slow['count']} requests "
                  f"({100 * slow['count'] / max(phase['ok'], 1):.2f} %) in {slow['windows']} of "
                  f"{slow['of']} 100-ms windows; the worst window holds {slow['worst']} (at {slow['worst_at']:.1f} s)")
        if report["exit"] != 0 or phase["failed"] or warm["failed"]:
            self.failed = True
            print(f"  FAILED: {phase['failed'] + warm['failed']} requests failed (webhook_load exit {report['exit']})")

    def max_rate(self):
        args = self.args
        report = self.run_load(["--url", self.base_url + "/mutate", "--max", "--duration", f"{args.max_step:g}",
                                "--warmup", f"{args.warmup:g}"],
                               f"/mutate: maximum sustained rate (steps of {args.max_step:g} s)")
        self.results["max"] = report
        steps = report["steps"]
        top, first_not = report["max_sustained_rate"], report["first_not_held"]
        after = f" (not held at {first_not:.0f})" if first_not else ""
        print(f"  {'max sustained rate':<28} {top:.0f} req/s{after}")
        held = [s for s in steps if s.get("held") and s["rate"] == top]
        if held:
            print(f"  {'at that rate':<28} p50 {held[0]['latency_from_schedule_ms']['p50']:.3f}  "
                  f"p99 {held[0]['latency_from_schedule_ms']['p99']:.3f} ms from schedule, "
                  f"load generator {held[0]['cpu_percent']:.0f} % of one core")
        busiest = max((s["cpu_percent"] for s in steps), default=0)
        if busiest >= 90:
            print(f"  note: the load generator reached {busiest:.0f} % of one core: the maximum may be its own")
        self.show_others(report["others_cpu_seconds"], report["wall_seconds"])
        failed = sum(s["failed"] for s in steps) + report["warmup"]["failed"]
        if failed or report["exit"] != 0:
            self.failed = True
            print(f"  FAILED: {failed} requests failed during the ramp")

    def wrk(self, wrk):
        args = self.args
        argv = [str(a) for a in [*self.load_prefix, wrk, "-t2", f"-c{args.connections}", f"-d{args.wrk_seconds}s",
                                 "--latency", "-s", ROOT / "bench" / "webhook" / "admission.lua",
                                 f"{self.base_url}/mutate"]]
        print(f"\n== wrk cross-check (closed loop; wrk does not verify the certificate)\ncommand: {shlex.join(argv)}",
              flush=True)
        before, children = process_ticks(self.exclude), resource.getrusage(resource.RUSAGE_CHILDREN)
        webhook_before, begun = proc_figures(self.webhook.pid)[1], time.monotonic()
        result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, "ADMISSION_BODY": str(args.body)})
        others, wall = others_cpu(before, self.exclude), time.monotonic() - begun
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        figures = parse_wrk(result.stdout)
        figures.update(others_cpu_seconds=others, wall_seconds=wall,
                       webhook_cpu_seconds=proc_figures(self.webhook.pid)[1] - webhook_before,
                       wrk_cpu_seconds=after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime)
        self.log.write(f"# wrk\n{result.stdout}\n")
        self.results["wrk"] = figures
        if result.returncode != 0 or figures["rps"] is None:
            print(result.stdout)
            print(f"  FAILED: wrk exited {result.returncode}")
            self.failed = True
            return
        print(f"  {'requests/s':<28} {figures['rps']:.0f} ({figures['requests']} requests on "
              f"{args.connections} connections, as fast as it can)")
        print(f"  {'latency (closed loop)':<28} p50 {figures.get('p50', 0):.3f}  p90 {figures.get('p90', 0):.3f}  "
              f"p99 {figures.get('p99', 0):.3f} ms")
        print(f"  {'errors':<28} {figures['non_2xx']} non-2xx, {figures['socket_errors']} socket errors")
        print(f"  {'CPU':<28} wrk {figures['wrk_cpu_seconds']:.1f} s, webhook {figures['webhook_cpu_seconds']:.1f} s "
              f"({1e6 * figures['webhook_cpu_seconds'] / max(figures['requests'] or 1, 1):.0f} us per request)")
        self.show_others(others, wall)
        if figures["errors"]:
            self.failed = True
            print("  FAILED: wrk saw errors")

    def summary(self, info, placement):
        args = self.args
        print(f"\nsummary ({info['nproc']} CPUs, {info['model']}; {placement}):")
        met = True
        for route in ROUTES + (("/pin",) if self.results.get("/pin") else ()):
            rounds = self.results.get(route, [])
            if not rounds:
                met = False
                continue
            for report in rounds:
                phase = report["result"]
                sched, send = phase["latency_from_schedule_ms"], phase["latency_from_send_ms"]
                print(f"  {route:<10} {args.rate:.0f} req/s: p50 {sched['p50']:.3f} ms, p99 {sched['p99']:.3f} ms, "
                      f"p99.9 {sched['p99_9']:.3f} ms from schedule (p99 {send['p99']:.3f} ms from send), "
                      f"{phase['failed']} failed")
                met = met and phase["achieved"] >= 0.98 * args.rate and not phase["failed"]
            p99 = statistics.median(r["result"]["latency_from_schedule_ms"]["p99"] for r in rounds)
            if len(rounds) > 1:
                print(f"  {route:<10} median p99 of {len(rounds)} rounds: {p99:.3f} ms")
            met = met and p99 < GOAL_P99_MS
        if "max" in self.results:
            print(f"  max sustained rate on /mutate: {self.results['max']['max_sustained_rate']:.0f} req/s "
                  f"(paced, p99 <= 10 ms; the load generator on the same CPUs)")
        if self.results.get("wrk", {}).get("rps"):
            print(f"  wrk on /mutate: {self.results['wrk']['rps']:.0f} req/s (closed loop)")
        if args.rate == GOAL_RATE:
            what = "p99" if args.repeat == 1 else f"median p99 of {args.repeat} rounds"
            print(f"  goal {what} < {GOAL_P99_MS:g} ms at {GOAL_RATE} req/s: {'goal met' if met else 'goal missed'}")


class PinSetup:
    """A namespace with a placement record and a pod review for /pin."""

    PODS, RACKS = 5000, 40

    def __init__(self, kubeconfig, work):
        self.kube = Kube(kubeconfig)
        self.namespace = f"bench-pin-{os.getpid()}"
        self.kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": self.namespace}})
        per = self.PODS // self.RACKS
        runs = [[r * per, r * per + per - 1, f"block=b{r // 8},rack=r{r % 8}"] for r in range(self.RACKS)]
        # The record's JobSet, suspended (nothing runs): the webhook takes a
        # record only when its JobSet controls it, and the garbage collector
        # keeps it only while that JobSet exists.
        jobset = self.kube.create(f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{self.namespace}/jobsets", {
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "bench"},
            "spec": {"suspend": True, "replicatedJobs": [{"name": "workers", "template": {"spec": {"template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}]}})
        jobset_uid = jobset["metadata"]["uid"]
        record = {"uid": jobset_uid, "replicatedJobs": {"workers": [runs]}}
        self.kube.create(f"/api/v1/namespaces/{self.namespace}/configmaps", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                "name": "bench" + api.PLACEMENT_SUFFIX,
                "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "bench",
                                     "uid": jobset_uid, "controller": True}]},
            "data": {api.PLACEMENT_KEY: json.dumps(record, separators=(",", ":"))}})
        self.uid = "pin-bench-review-uid"
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "generateName": "bench-workers-0-", "namespace": self.namespace,
            "labels": {api.JOBSET_LABEL_NAME: "bench", api.JOBSET_LABEL_UID: jobset_uid,
                       api.JOBSET_LABEL_REPLICATED_JOB: "workers", api.JOBSET_LABEL_JOB_INDEX: "0",
                       api.LABEL_PLACEMENT: "true"},
            "annotations": {api.JOB_ANNOTATION_COMPLETION_INDEX: "2345"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
            "uid": self.uid, "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"}, "namespace": self.namespace,
            "operation": "CREATE", "userInfo": {"username": "system:serviceaccount:kube-system:job-controller"},
            "object": pod, "dryRun": False}}
        self.body = work / "pin-review.json"
        self.body_bytes = json.dumps(review).encode()
        self.body.write_bytes(self.body_bytes)

    def close(self):
        try:
            self.kube.delete(f"/api/v1/namespaces/{self.namespace}")
        except ApiError:
            pass


def placement_of(pin):
    """(webhook taskset list or None, load generator prefix, description)."""
    cpus = sorted(os.sched_getaffinity(0))
    if pin and len(cpus) >= 3:
        webhook_cpus = ",".join(str(c) for c in cpus[:2])
        load_cpus = ",".join(str(c) for c in cpus[2:])
        return webhook_cpus, ["taskset", "-c", load_cpus], \
            f"webhook pinned to CPUs {webhook_cpus}, load generator and wrk to CPUs {load_cpus}"
    if pin:
        return None, [], f"only {len(cpus)} CPUs: nothing pinned; the webhook and the load generator share them"
    return None, [], f"not pinned: the webhook and the load generator share the {len(cpus)} CPUs"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--webhook", type=pathlib.Path,
                        default=pathlib.Path(os.environ.get("MUSTER_WEBHOOK", ROOT / "bin" / "muster-webhook")),
                        help="the webhook binary (env MUSTER_WEBHOOK; default bin/muster-webhook)")
    parser.add_argument("--webhook-arg", action="append", default=[],
                        help="one more argument for the webhook (repeatable), e.g. --webhook-arg=--quiet")
    parser.add_argument("--load", type=pathlib.Path,
                        default=pathlib.Path(os.environ.get("MUSTER_WEBHOOK_LOAD",
                                                            ROOT / "build" / "host" / "bench" / "webhook_load")),
                        help="the load generator (env MUSTER_WEBHOOK_LOAD)")
    parser.add_argument("--body", type=pathlib.Path, default=ROOT / "bench" / "webhook" / "admission-review.json")
    parser.add_argument("--threads", type=int, default=2, help="the webhook's --threads")
    parser.add_argument("--rate", type=float, default=GOAL_RATE, help="requests/s of the fixed-rate runs")
    parser.add_argument("--duration", type=float, default=20, help="seconds of each fixed-rate run")
    parser.add_argument("--warmup", type=float, default=5, help="seconds before each measured run")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds of the fixed-rate runs (/mutate, /validate, /mutate...); the goal is "
                             "judged on the median p99")
    parser.add_argument("--connections", type=int, default=16, help="keep-alive connections at most")
    parser.add_argument("--max-step", type=float, default=5, help="seconds of each --max step")
    parser.add_argument("--no-max", action="store_true", help="skip the maximum rate")
    parser.add_argument("--wrk-seconds", type=int, default=10, help="the wrk cross-check's duration (0: skip it)")
    parser.add_argument("--pin-cpus", action="store_true",
                        help="with 3 CPUs or more: the webhook on CPUs 0-1, the load on the others")
    parser.add_argument("--quiet-wait", type=float, default=180,
                        help="seconds to wait at most for a quiet machine before measuring (0: do not wait)")
    parser.add_argument("--work-dir", type=pathlib.Path, help="certificates, logs, results (default: a new /tmp dir)")
    parser.add_argument("--pin-kubeconfig", default=os.environ.get("MUSTER_KUBECONFIG"),
                        help="a cluster for the /pin route's record (default $MUSTER_KUBECONFIG; none: /pin skipped)")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat: at least 1")
    if not os.access(args.webhook, os.X_OK):
        parser.error(f"{args.webhook} is not executable: run `make bin/muster-webhook` first")
    if not os.access(args.load, os.X_OK):
        parser.error(f"{args.load} is not executable: run `make build/host/bench/webhook_load` first")
    args.body_bytes = args.body.read_bytes()
    try:
        args.uid = json.loads(args.body_bytes)["request"]["uid"]
    except (ValueError, KeyError, TypeError):
        parser.error(f"{args.body}: not an AdmissionReview with request.uid")
    return args


def main():
    sys.stdout.reconfigure(line_buffering=True)  # in order with webhook_load's progress on stderr
    args = parse_args()

    clean_up_on_sigterm()
    work = args.work_dir or pathlib.Path(tempfile.mkdtemp(prefix="muster-bench-webhook-"))
    work.mkdir(parents=True, exist_ok=True)
    info = machine()
    webhook_cpus, load_prefix, placement = placement_of(args.pin_cpus)
    print(f"machine: {info['nproc']} CPUs ({info['cpus_usable']} usable), {info['model']}, Linux {info['kernel']}")
    print(f"webhook {args.webhook} --threads {args.threads}; load generator {args.load}")
    print(f"body {args.body} ({len(args.body_bytes)} bytes, uid {args.uid})")
    print(f"placement: {placement}")
    print(f"logs and results: {work}", flush=True)

    status, webhook, bench, pin = 0, None, None, None
    try:
        if args.pin_kubeconfig:
            pin = PinSetup(args.pin_kubeconfig, work)
            print(f"/pin: record {pin.namespace}/bench{api.PLACEMENT_SUFFIX} (5,000 pods in 40 runs); "
                  f"the webhook reads it with --kubeconfig {args.pin_kubeconfig}")
        else:
            print("/pin: skipped (no --pin-kubeconfig or $MUSTER_KUBECONFIG)")
        certs, how = make_certs(work)
        print(f"certificates: {certs} ({how})")
        context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
        port = free_port()
        argv = [args.webhook, "--tls-cert-file", certs / "tls.crt", "--tls-key-file", certs / "tls.key",
                "--listen", f"127.0.0.1:{port}", "--threads", str(args.threads), *args.webhook_arg]
        if pin:
            argv += ["--kubeconfig", args.pin_kubeconfig]
        if webhook_cpus:
            argv = ["taskset", "-c", webhook_cpus, *argv]
        print(f"webhook command: {shlex.join(str(a) for a in argv)}", flush=True)
        webhook = Proc(argv, work / "webhook.log", name="muster-webhook")
        print(f"ready after {wait_ready(webhook, port, context):.2f} s (GET /readyz 200)")
        for route in ROUTES:
            print(f"probe POST {route}: {probe(port, context, route, args.body_bytes, args.uid)}")
        if pin:
            answer = probe(port, context, "/pin", pin.body_bytes, pin.uid)
            print(f"probe POST /pin: {answer}")
            if "allowed=True" not in answer or "operations" not in answer:
                raise Failed(f"POST /pin did not pin the pod: {answer}")
        try:  # the apiserver calls <path>?timeout=10s
            answer, _ = https_request(port, context, "POST", "/mutate?timeout=10s", args.body_bytes)
            if answer != 200:
                print(f"  note: POST /mutate?timeout=10s (as the apiserver calls it) answered HTTP {answer}")
        except (OSError, http.client.HTTPException) as error:
            print(f"  note: POST /mutate?timeout=10s failed: {error!r}")
        if args.quiet_wait > 0:
            waited, busy = wait_quiet(args.quiet_wait)
            print(f"waited {waited} s for a quiet machine (all CPUs {100 * busy:.0f} % busy over the last second)")

        bench = Bench(args, work, webhook, port, certs, load_prefix, len(os.sched_getaffinity(0)))
        if pin:
            bench.pin_load = [*load_prefix, args.load, "--cacert", certs / "ca.crt", "--body", pin.body,
                              "--connections", str(args.connections), "--expect", pin.uid, "--json"]
        for round_number in range(1, args.repeat + 1):
            for route in ROUTES + (("/pin",) if pin else ()):
                bench.fixed_rate(route, round_number)
        if not args.no_max:
            bench.max_rate()
        wrk = shutil.which("wrk")
        if wrk and args.wrk_seconds > 0:
            bench.wrk(wrk)
        elif args.wrk_seconds > 0:
            print("\nwrk not installed: no cross-check")
        hwm, cpu = proc_figures(webhook.pid)
        print(f"\nwebhook: peak RSS {hwm:.1f} MB, {cpu:.1f} s CPU in all")
        bench.results["webhook"] = {"peak_rss_mb": hwm, "cpu_seconds": cpu}
        bench.summary(info, placement)
        status = 1 if bench.failed else 0
    except Failed as error:
        print(f"FAILED: {error}", flush=True)
        status = 1
    except KeyboardInterrupt:
        print("\ninterrupted", flush=True)
        status = 130
    finally:
        results = {"machine": info, "placement": placement, "args": sys.argv[1:]}
        if bench:
            bench.log.close()
            results["runs"] = bench.results
        if webhook:
            code = webhook.stop(timeout=10)
            results["webhook_exit"] = code
            if code != 0 and status == 0:
                print(f"FAILED: the webhook exited with code {code} on SIGTERM; log: {webhook.log_path}")
                status = 1
        if pin:
            pin.close()
        (work / "results.json").write_text(json.dumps(results, indent=1) + "\n")
        print(f"results: {work / 'results.json'}; webhook log: {work / 'webhook.log'}", flush=True)
    sys.exit(status)


if __name__ == "__main__":
    main()
