#!/usr/bin/python3
"""The webhook's memory under a /pin flood of forged large placement records
(issue 34 §2; in `make bench-webhook`).

On the local control plane, a tenant's namespace holds RECORDS ConfigMaps
`f<i>-placement`, each a placement record of about 900 KiB (the most a
record may hold) of distinct runs, forged to pass every check a tenant can
pass: its owner reference names the tenant's JobSet `f<i>` and its uid, controller
true (the tenant made that JobSet: a suspended one, so that the garbage
collector keeps the ConfigMap), and the pods sent to /pin carry those labels. bin/muster-webhook
(default flags, --kubeconfig) is then sent CONCURRENCY streams of pod
reviews for those JobSets in turn for SECONDS, directly over TLS (as the
apiserver would send them), and its peak RSS (VmHWM) is read. Before the
cache had a byte bound, each such record grew the webhook by about 10 MB:
26 of them passed the Deployment's 256 MiB limit.

Prints the answers by kind, the cache's bound, and the peak against the goal
(64 MB). Exit 0 when every review was answered (any answer), 1 otherwise.
"""

import argparse
import concurrent.futures
import http.client
import json
import pathlib
import ssl
import subprocess
import sys
import tempfile
import time
import shutil

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from benchlib import JOBSETS, ApiError, Kube, Proc, clean_up_on_sigterm, cluster_kubeconfig, create_namespace, delete_namespace, free_port  # noqa: E402
import muster_api as api  # noqa: E402

GOAL_MB = 64
RECORD_BYTES = 900 * 1024
NAMESPACE = "muster-bench-pin-memory"


def forged_record(i, uid):
    """About RECORD_BYTES of runs, each a pod of its own node."""
    runs, size, k = [], 60, 0
    while size < RECORD_BYTES - 80:
        run = f'[{k},{k},"kubernetes.io/hostname=forged-node-{i}-{k}"]'
        runs.append(run)
        size += len(run) + 1
        k += 1
    return '{"uid":"%s","attempt":0,"replicatedJobs":{"w":[[%s]]}}' % (uid, ",".join(runs)), k


def review(i, uid, index):
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"f{i}-w-0-{index}", "namespace": NAMESPACE,
                        "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
                        "labels": {api.LABEL_PLACEMENT: "true", api.JOBSET_LABEL_NAME: f"f{i}",
                                   api.JOBSET_LABEL_UID: uid, api.JOBSET_LABEL_REPLICATED_JOB: "w",
                                   api.JOBSET_LABEL_JOB_INDEX: "0"}},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": f"r-{i}-{index}", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                                   "resource": {"group": "", "version": "v1", "resource": "pods"},
                                   "namespace": NAMESPACE, "operation": "CREATE", "userInfo": {"username": "tenant"},
                                   "object": pod}}).encode()


def status_kb(pid, key):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig")
    parser.add_argument("--webhook", type=pathlib.Path, default=ROOT / "bin" / "muster-webhook")
    parser.add_argument("--records", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    clean_up_on_sigterm()
    kubeconfig = cluster_kubeconfig(args.kubeconfig)
    kube = Kube(kubeconfig)
    work = pathlib.Path(tempfile.mkdtemp(prefix="muster-bench-pin-memory-"))
    delete_namespace(kube, NAMESPACE)
    for _ in range(120):
        try:
            kube.get(f"/api/v1/namespaces/{NAMESPACE}")
            time.sleep(1)
        except ApiError:
            break
    create_namespace(kube, NAMESPACE)
    proc = None
    answers, failed = {}, 0
    try:
        print(f"command: /usr/bin/python3 bench/pin_memory.py --records {args.records} --seconds {args.seconds:g} "
              f"--concurrency {args.concurrency}", flush=True)
        runs, uids = 0, []
        for i in range(args.records):
            # A JobSet of the tenant's own (suspended: nothing runs), so that
            # the garbage collector keeps the ConfigMap it "owns".
            jobset = kube.create(JOBSETS.format(NAMESPACE), {
                "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": f"f{i}"},
                "spec": {"suspend": True, "replicatedJobs": [{"name": "w", "template": {"spec": {"template": {
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}]}})
            uids.append(jobset["metadata"]["uid"])
            text, runs = forged_record(i, uids[i])
            kube.create(f"/api/v1/namespaces/{NAMESPACE}/configmaps", {
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": f"f{i}{api.PLACEMENT_SUFFIX}", "ownerReferences": [
                    {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": f"f{i}", "uid": uids[i],
                     "controller": True}]},
                "data": {api.PLACEMENT_KEY: text}})
        print(f"forged records: {args.records} of {len(text) / 1024:.0f} KiB, {runs} runs each", flush=True)
        subprocess.run(["bash", str(ROOT / "deploy" / "gen-certs.sh"), "--out", str(work / "certs"),
                        "--ip", "127.0.0.1"], check=True, capture_output=True)
        context = ssl.create_default_context(cafile=str(work / "certs" / "ca.crt"))
        port = free_port()
        proc = Proc([args.webhook, "--tls-cert-file", work / "certs" / "tls.crt", "--tls-key-file",
                     work / "certs" / "tls.key", "--listen", f"127.0.0.1:{port}", "--kubeconfig", kubeconfig,
                     "--quiet"], work / "webhook.log", name="muster-webhook")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=5)
                conn.request("GET", "/readyz")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.2)
        start_kb = status_kb(proc.pid, "VmRSS")
        stop_at = time.monotonic() + args.seconds

        def stream(worker):
            nonlocal failed
            conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
            n = worker
            while time.monotonic() < stop_at:
                i = n % args.records
                try:
                    conn.request("POST", "/pin", body=review(i, uids[i], n % 1000),
                                 headers={"Content-Type": "application/json"})
                    body = json.loads(conn.getresponse().read())
                    response = body["response"]
                    kind = "pinned" if response.get("allowed") else \
                        response.get("status", {}).get("message", "")[:60]
                    answers[kind] = answers.get(kind, 0) + 1
                except (OSError, http.client.HTTPException, ValueError) as error:
                    failed += 1
                    print(f"no answer: {error!r}", flush=True)
                    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
                n += args.concurrency
        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
            list(pool.map(stream, range(args.concurrency)))
        peak = status_kb(proc.pid, "VmHWM") / 1024
        after = status_kb(proc.pid, "VmRSS") / 1024
        for kind, count in sorted(answers.items(), key=lambda kv: -kv[1]):
            print(f"  {count:>7}  {kind}", flush=True)
        print(f"webhook RSS at start {start_kb / 1024:.1f} MB, peak {peak:.1f} MB, after {after:.1f} MB; "
              f"cache bound 16 MiB of records (RECORD_CACHE_BYTES_MAX)")
        print(f"pin flood of forged large records: peak RSS {peak:.1f} MB; goal < {GOAL_MB} MB: "
              f"{'met' if peak < GOAL_MB else 'NOT met'}", flush=True)
        if not proc.alive():
            failed += 1
            print(proc.output()[-3000:])
    finally:
        if proc:
            proc.stop()
        delete_namespace(kube, NAMESPACE)
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
