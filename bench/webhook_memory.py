#!/usr/bin/python3
"""The webhook's memory and time under the largest admission inputs an
apiserver can send (issue 16 §1; `make bench-webhook-memory`, in `make bench`).

No cluster: a CA and a serving certificate from deploy/gen-certs.sh, then,
for each input, a fresh bin/muster-webhook (default flags: 8 threads) on
127.0.0.1, the input POSTed to /mutate over TLS (verified), and from
/proc/PID/status its peak RSS (VmHWM) and its RSS a second after the answer
(memory given back or not). Inputs, each an AdmissionReview CREATE of a
JobSet with spec.groupSchedulingConfig (so the whole mutation runs):

  baseline        bench/webhook/admission-review.json (a 3-job JobSet)
  args-3mib       one container with about a million empty args (3 MiB,
                  the apiserver's request limit)
  args-3mib-x4    the same, 4 at once (the default thread count)
  objects-4mib    4 MiB of {} items in a list (the webhook's body limit)
  rjobs-10k       10,000 replicated jobs, all in the gang
  args-at-limit-x4  the largest review accepted (ADMISSION_VALUES_MAX
                  values), 4 at once
  args-small-x4   the largest review not "large" (ADMISSION_VALUES_LARGE),
                  4 at once

Prints one line per input: HTTP status, the answer's message (if denied),
seconds to answer, peak and after-RSS in MB; then the largest peak against
the goal (64 MB). Exit status 0 when every input was answered (any status),
1 when one was not (a crash or a hang).
"""

import argparse
import concurrent.futures
import http.client
import json
import pathlib
import shutil
import ssl
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from benchlib import Proc, clean_up_on_sigterm, free_port  # noqa: E402

GOAL_MB = 64
MIB = 1024 * 1024
VALUES_MAX, VALUES_LARGE = 262144, 16384  # webhook/admission.h ADMISSION_VALUES_MAX, _LARGE


def json_values(body):
    """The JSON values of a body: containers, scalars (keys are not values)."""
    def count(x):
        if isinstance(x, dict):
            return 1 + sum(count(v) for v in x.values())
        if isinstance(x, list):
            return 1 + sum(count(v) for v in x)
        return 1
    return count(json.loads(body))


def review(jobset, uid="5d1c9f6e-1111-4c1e-9a55-000000000001"):
    return json.dumps({
        "kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
        "request": {"uid": uid,
                    "kind": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"},
                    "resource": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "resource": "jobsets"},
                    "name": jobset["metadata"]["name"], "namespace": "default", "operation": "CREATE",
                    "userInfo": {"username": "bench"}, "object": jobset}},
        separators=(",", ":")).encode()


def jobset(replicated_jobs, container=None):
    """A JobSet of `replicated_jobs` one-pod replicated jobs, every one in
    the gang (no targetReplicatedJobs: all of them)."""
    container = container or {"name": "c", "image": "busybox"}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "big", "namespace": "default", "uid": "b3f1c2d4-0000-4f80-9c1d-2e3f4a5b6c7d"},
            "spec": {"groupSchedulingConfig": {"timeoutAfterSeconds": 300},
                     "replicatedJobs": [{"name": f"w{i}", "replicas": 1, "template": {"spec": {
                         "parallelism": 1, "completions": 1,
                         "template": {"spec": {"containers": [container]}}}}}
                         for i in range(replicated_jobs)]}}


def sized(limit, build, measure=len):
    """build(n) grown to the largest n whose measure(body) stays within `limit`."""
    lo, hi = 1, 1
    while measure(build(hi)) <= limit:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if measure(build(mid)) <= limit:
            lo = mid
        else:
            hi = mid
    return build(lo)


def inputs():
    yield "baseline", [(ROOT / "bench" / "webhook" / "admission-review.json").read_bytes()]
    args = sized(3 * MIB - 4096, lambda n: review(jobset(1, {"name": "c", "image": "busybox", "args": [""] * n})))
    yield "args-3mib", [args]
    yield "args-3mib-x4", [args] * 4
    objects = sized(4 * MIB - 4096, lambda n: review(jobset(1, {"name": "c", "image": "busybox",
                                                                "env": [{}] * n})))
    yield "objects-4mib", [objects]
    yield "rjobs-10k", [review(jobset(10000))]
    # The largest accepted, 4 at once (admitted one at a time), and the
    # largest "small" ones, 4 at once (in parallel).
    def with_args(n):
        return review(jobset(1, {"name": "c", "image": "busybox", "args": [""] * n}))
    yield "args-at-limit-x4", [sized(VALUES_MAX, with_args, json_values)] * 4
    yield "args-small-x4", [sized(VALUES_LARGE, with_args, json_values)] * 4


def status_kb(pid, key):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def post(port, context, body, timeout):
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=timeout)
    try:
        conn.request("POST", "/mutate?timeout=10s", body=body, headers={"Content-Type": "application/json"})
        answer = conn.getresponse()
        data = answer.read()
        message = ""
        try:
            response = json.loads(data).get("response") or {}
            if not response.get("allowed", True):
                message = (response.get("status") or {}).get("message", "")
            elif response.get("patch"):
                message = f"allowed, patch {len(response['patch']) * 3 // 4} bytes"
        except ValueError:
            message = data[:160].decode(errors="replace")
        return answer.status, message
    finally:
        conn.close()


def wait_ready(port, context, proc, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc.alive():
            raise SystemExit(f"muster-webhook exited: {proc.output()[-2000:]}")
        try:
            conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=1)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("muster-webhook not ready in 20 s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--webhook", type=pathlib.Path, default=ROOT / "bin" / "muster-webhook")
    parser.add_argument("--timeout", type=float, default=60, help="seconds for one answer at most")
    args = parser.parse_args()
    clean_up_on_sigterm()
    work = pathlib.Path(tempfile.mkdtemp(prefix="muster-bench-webhook-memory-"))
    failed = 0
    peaks = []
    try:
        subprocess.run(["bash", str(ROOT / "deploy" / "gen-certs.sh"), "--out", str(work / "certs"),
                        "--ip", "127.0.0.1"], check=True, capture_output=True)
        context = ssl.create_default_context(cafile=str(work / "certs" / "ca.crt"))
        print(f"command: /usr/bin/python3 bench/webhook_memory.py  (webhook {args.webhook}, default flags)")
        print(f"{'input':<14} {'bodies':>6} {'MiB':>5} {'HTTP':>5} {'seconds':>8} {'peak MB':>8} {'after MB':>9}  answer")
        for name, bodies in inputs():
            port = free_port()
            proc = Proc([args.webhook, "--tls-cert-file", work / "certs" / "tls.crt", "--tls-key-file",
                         work / "certs" / "tls.key", "--listen", f"127.0.0.1:{port}", "--metrics-addr", "0"],
                        work / f"webhook-{name}.log", name="muster-webhook")
            try:
                wait_ready(port, context, proc)
                began = time.monotonic()
                with concurrent.futures.ThreadPoolExecutor(len(bodies)) as pool:
                    answers = list(pool.map(lambda b: post(port, context, b, args.timeout), bodies))
                seconds = time.monotonic() - began
                time.sleep(1)
                peak, after = status_kb(proc.pid, "VmHWM") / 1024, status_kb(proc.pid, "VmRSS") / 1024
                peaks.append((peak, name))
                status, message = answers[0]
                print(f"{name:<14} {len(bodies):>6} {len(bodies[0]) / MIB:>5.2f} {status:>5} {seconds:>8.2f} "
                      f"{peak:>8.1f} {after:>9.1f}  {message[:150]}", flush=True)
            except (OSError, http.client.HTTPException) as error:
                failed += 1
                print(f"{name:<14} no answer: {error!r}; webhook alive: {proc.alive()}", flush=True)
            finally:
                proc.terminate()
                proc.wait(10)
        top, which = max(peaks) if peaks else (0, "")
        print(f"largest peak RSS: {top:.1f} MB ({which}); goal < {GOAL_MB} MB: "
              f"{'met' if top < GOAL_MB else 'NOT met'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
