#!/usr/bin/python3
"""JobSet controller stand-in: upstream JobSet v0.12 plus the Job controller.

The local control plane (Kubernetes 1.20, e2e/cluster/) has neither the JobSet
controller nor a Job controller that knows Indexed Jobs (1.21+). This process
plays both, talking to the apiserver only through its API, so that a JobSet
created in an end-to-end test gets the Jobs, the headless Service and the pods
the real controllers would give it: same names, labels, annotations, owner
references, hostnames and pod template (copied exactly as admitted, so what a
mutating webhook injected into the template reaches every pod).

What it is not: a scheduler, a kubelet (something else moves pods through their
phases) or JobSet's webhooks (no validation; the defaults the JobSet webhook
would write into the spec are applied when the Jobs are built; exclusive
placement's pod affinities are left out). jobset_controller.md beside this file
lists precisely what is reproduced and what is not.

Structure: three list+watch streams (JobSets, Jobs and pods labelled
jobset.sigs.k8s.io/jobset-name) fill an in-memory cache and put the owning
JobSet's namespace/name on a deduplicating work queue. One worker reconciles
one JobSet at a time: first the Job controller's part for each of its current
Jobs (pods per completion index, Job status), then the JobSet controller's
part (restarts, success and failure policies, suspension, startup order,
JobSet status). Pod creations and deletions go to thread pools; the indexes
being created are remembered until the create returns, so a reconcile that
runs before the watch reports a new pod does not create it twice.
"""

import argparse
import calendar
import concurrent.futures
import copy
import hashlib
import heapq
import json
import os
import re
import signal
import sys
import threading
import time
from collections import deque

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kube import ApiError, Kube, now_rfc3339, start_watch  # noqa: E402
import muster_api as api  # noqa: E402

JOBSET_API = "/apis/jobset.x-k8s.io/v1alpha2"
JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"
CONTROLLER_NAME = "jobset.sigs.k8s.io/jobset-controller"

# Labels and annotations the JobSet controller puts on child Jobs and pods.
JOBSET_NAME = api.JOBSET_LABEL_NAME
JOBSET_UID = api.JOBSET_LABEL_UID
REPLICATED_JOB_NAME = api.JOBSET_LABEL_REPLICATED_JOB
REPLICATED_JOB_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
GLOBAL_REPLICAS = "jobset.sigs.k8s.io/global-replicas"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"
JOB_GLOBAL_INDEX = "jobset.sigs.k8s.io/job-global-index"
JOB_KEY = "jobset.sigs.k8s.io/job-key"
RESTART_ATTEMPT = api.JOBSET_LABEL_RESTART_ATTEMPT
GROUP_NAME = "jobset.sigs.k8s.io/group-name"
GROUP_REPLICAS = "jobset.sigs.k8s.io/group-replicas"
JOB_GROUP_INDEX = "jobset.sigs.k8s.io/job-group-index"
COORDINATOR = "jobset.sigs.k8s.io/coordinator"
EXCLUSIVE_TOPOLOGY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
NODE_SELECTOR_STRATEGY = "alpha.jobset.sigs.k8s.io/node-selector"
NAMESPACED_JOB = "alpha.jobset.sigs.k8s.io/namespaced-job"
NO_SCHEDULE_TAINT = "alpha.jobset.sigs.k8s.io/no-schedule"

# What the Job controller (and the Job API's defaulting) adds to pods.
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
JOB_LABELS = ("controller-uid", "job-name",
              "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name")
MAX_GENERATE_NAME = 58  # 63 minus the apiserver's 5 random characters

# Condition reasons and messages, as upstream writes them.
FAILED_JOBS = ("FailedJobs", "jobset failed due to one or more job failures")
REACHED_MAX_RESTARTS = ("ReachedMaxRestarts", "jobset failed due to reaching max number of restarts")
FAIL_JOBSET_ACTION = ("FailJobSetFailurePolicyAction", "applying FailJobSet failure policy action")
ALL_JOBS_COMPLETED = ("AllJobsCompleted", "jobset completed successfully")
SUSPENDED = ("SuspendedJobs", "jobset is suspended")
RESUMED = ("ResumeJobs", "jobset is resumed")
IN_ORDER_IN_PROGRESS = ("InOrderStartupPolicyInProgress", "in order startup policy is in progress")
IN_ORDER_COMPLETED = ("InOrderStartupPolicyCompleted", "in order startup policy has completed")
BACKOFF_LIMIT_EXCEEDED = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE_EXCEEDED = ("DeadlineExceeded", "Job was active longer than specified deadline")

POD_WORKERS = 16
API_WORKERS = 8
STATUS_MIN_INTERVAL = 1.0     # seconds between two count-only status writes of one Job
DELETE_RETRY_AFTER = 30.0     # a delete request not seen to take effect is sent again after this
LOCAL_INSERT_GRACE = 10.0     # a re-list does not drop objects we created this recently
TOMBSTONE_SECONDS = 600.0

LOG_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}
_log_threshold = LOG_LEVELS["info"]
_log_lock = threading.Lock()


def log(level, event, **fields):
    """One line per event: ts, component, level, event, then key=value fields."""
    if LOG_LEVELS[level] < _log_threshold:
        return
    parts = [f"ts={time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime())}",
             "component=jobset-controller", f"level={level}", f"event={event}"]
    for key, value in fields.items():
        if value is None:
            continue
        text = str(value)
        quote = not text or any(ch in text for ch in ' "=\n\t')
        parts.append(f"{key}={json.dumps(text) if quote else text}")
    with _log_lock:
        print(" ".join(parts), flush=True)


# ------------------------------------------------------------ small helpers

def meta(obj):
    return obj.get("metadata") or {}


def labels_of(obj):
    return meta(obj).get("labels") or {}


def key_of(obj):
    return f"{meta(obj).get('namespace', '')}/{meta(obj).get('name', '')}"


def resource_version(obj):
    try:
        return int(meta(obj).get("resourceVersion", "0"))
    except ValueError:
        return 0


def controller_uid(obj):
    for ref in meta(obj).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref.get("uid")
    return None


def parse_int(text):
    try:
        value = int(text)
    except (TypeError, ValueError):
        return None
    return value if value >= 0 else None


def parse_time(text):
    """RFC 3339 (as the apiserver writes it) to epoch seconds, or None."""
    try:
        return calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S"))
    except (TypeError, ValueError):
        return None


def owner_reference(obj, api_version, kind):
    return {"apiVersion": api_version, "kind": kind, "name": meta(obj)["name"],
            "uid": meta(obj)["uid"], "controller": True, "blockOwnerDeletion": True}


def sha1_hex(text):
    return hashlib.sha1(text.encode()).hexdigest()


def job_name(jobset_name, replicated_job_name, job_index):
    return f"{jobset_name}-{replicated_job_name}-{job_index}"


def pod_generate_name(job, index):
    """The Job controller's podGenerateNameWithIndex: <job>-<index>-, cut to fit."""
    suffix = f"-{index}-"
    prefix = job + suffix
    if len(prefix) > MAX_GENERATE_NAME:
        prefix = prefix[:MAX_GENERATE_NAME - len(suffix)] + suffix
    return prefix


def completion_index(pod):
    return parse_int((meta(pod).get("annotations") or {}).get(COMPLETION_INDEX))


def pod_phase(pod):
    return (pod.get("status") or {}).get("phase") or "Pending"


def pod_ready(pod):
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def container_restarts(pod):
    status = pod.get("status") or {}
    return sum(int(c.get("restartCount") or 0)
               for c in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []))


def job_finished(job):
    """'Complete', 'Failed' or '' (the condition that is True, as upstream JobFinished)."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return condition["type"]
    return ""


def job_condition(job, ctype):
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") == ctype and condition.get("status") == "True":
            return condition
    return None


# ------------------------------------------------------------ JobSet spec view

class ReplicatedJob:
    """One spec.replicatedJobs entry with the API defaults applied."""

    def __init__(self, raw):
        self.raw = raw
        self.name = raw.get("name", "")
        self.group = raw.get("groupName") or "default"
        self.replicas = int(raw.get("replicas", 1) if raw.get("replicas") is not None else 1)
        self.template = raw.get("template") or {}
        self.depends_on = raw.get("dependsOn") or []


class JobSetView:
    """A JobSet's spec, read once per reconcile, with the defaults the JobSet
    webhook and CRD would have written (the stand-in has no webhook)."""

    def __init__(self, js):
        self.js = js
        self.namespace = meta(js).get("namespace", "")
        self.name = meta(js).get("name", "")
        self.uid = meta(js).get("uid", "")
        self.annotations = meta(js).get("annotations") or {}
        spec = js.get("spec") or {}
        self.spec = spec
        self.rjobs = [ReplicatedJob(raw) for raw in spec.get("replicatedJobs") or []]
        network = spec.get("network") or {}
        self.dns_hostnames = network.get("enableDNSHostnames") is not False
        self.publish_not_ready = network.get("publishNotReadyAddresses") is not False
        self.subdomain = network.get("subdomain") or self.name
        self.suspend = bool(spec.get("suspend"))
        self.in_order = (spec.get("startupPolicy") or {}).get("startupPolicyOrder") == "InOrder"
        self.failure_policy = spec.get("failurePolicy")
        self.success_policy = spec.get("successPolicy") or {"operator": "All"}
        self.coordinator = spec.get("coordinator")
        self.global_replicas = sum(rj.replicas for rj in self.rjobs)

    @property
    def restart_strategy(self):
        return (self.failure_policy or {}).get("restartStrategy") or "Recreate"

    def global_index(self, rjob, job_index):
        total = 0
        for rj in self.rjobs:
            if rj.name == rjob.name:
                return total + job_index
            total += rj.replicas
        return 0

    def group_replicas(self, group):
        return sum(rj.replicas for rj in self.rjobs if rj.group == group)

    def group_index(self, rjob, job_index):
        total = 0
        for rj in self.rjobs:
            if rj.group != rjob.group:
                continue
            if rj.name == rjob.name:
                return total + job_index
            total += rj.replicas
        return 0

    def coordinator_endpoint(self):
        c = self.coordinator
        return (f"{self.name}-{c.get('replicatedJob', '')}-{int(c.get('jobIndex') or 0)}-"
                f"{int(c.get('podIndex') or 0)}.{self.subdomain}")


def label_and_annotate(obj_meta, view, rjob, job_index, restarts):
    """Upstream labelAndAnnotateObject: the same keys as labels and annotations."""
    name = job_name(view.name, rjob.name, job_index)
    values = {
        JOBSET_NAME: view.name,
        JOBSET_UID: view.uid,
        REPLICATED_JOB_NAME: rjob.name,
        RESTART_ATTEMPT: str(restarts),
        REPLICATED_JOB_REPLICAS: str(rjob.replicas),
        GLOBAL_REPLICAS: str(view.global_replicas),
        JOB_INDEX: str(job_index),
        JOB_KEY: sha1_hex(f"{view.namespace}/{name}"),
        JOB_GLOBAL_INDEX: str(view.global_index(rjob, job_index)),
        GROUP_NAME: rjob.group,
        GROUP_REPLICAS: str(view.group_replicas(rjob.group)),
        JOB_GROUP_INDEX: str(view.group_index(rjob, job_index)),
    }
    if view.coordinator:
        values[COORDINATOR] = view.coordinator_endpoint()
    labels = dict(obj_meta.get("labels") or {})
    annotations = dict(obj_meta.get("annotations") or {})
    labels.update(values)
    annotations.update(values)
    # Exclusive placement is only passed on as an annotation (the pod webhook acts on it).
    if EXCLUSIVE_TOPOLOGY in view.annotations:
        annotations[EXCLUSIVE_TOPOLOGY] = view.annotations[EXCLUSIVE_TOPOLOGY]
        if NODE_SELECTOR_STRATEGY in view.annotations:
            annotations[NODE_SELECTOR_STRATEGY] = view.annotations[NODE_SELECTOR_STRATEGY]
    template_annotations = meta(rjob.template).get("annotations") or {}
    if EXCLUSIVE_TOPOLOGY in template_annotations:
        annotations[EXCLUSIVE_TOPOLOGY] = template_annotations[EXCLUSIVE_TOPOLOGY]
        if NODE_SELECTOR_STRATEGY in template_annotations:
            annotations[NODE_SELECTOR_STRATEGY] = template_annotations[NODE_SELECTOR_STRATEGY]
    obj_meta["labels"] = labels
    obj_meta["annotations"] = annotations


def build_job(view, rjob, job_index, restarts):
    """Upstream constructJob, plus the JobSet webhook's defaults for the template."""
    template_meta = meta(rjob.template)
    name = job_name(view.name, rjob.name, job_index)
    spec = copy.deepcopy(rjob.template.get("spec") or {})
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": view.namespace,
            "labels": dict(template_meta.get("labels") or {}),
            "annotations": dict(template_meta.get("annotations") or {}),
            "ownerReferences": [owner_reference(view.js, JOBSET_API_VERSION, "JobSet")],
        },
        "spec": spec,
    }
    label_and_annotate(job["metadata"], view, rjob, job_index, restarts)
    pod_template = spec.setdefault("template", {})
    pod_meta = pod_template.setdefault("metadata", {})
    label_and_annotate(pod_meta, view, rjob, job_index, restarts)
    pod_spec = pod_template.setdefault("spec", {})
    # JobSet's defaulting webhook: Indexed completion mode, restartPolicy OnFailure.
    spec.setdefault("completionMode", "Indexed")
    if not pod_spec.get("restartPolicy"):
        pod_spec["restartPolicy"] = "OnFailure"
    if view.dns_hostnames:
        pod_spec["subdomain"] = view.subdomain
    annotations = job["metadata"]["annotations"]
    if EXCLUSIVE_TOPOLOGY in annotations and NODE_SELECTOR_STRATEGY in annotations:
        selector = pod_spec.setdefault("nodeSelector", {})
        selector[NAMESPACED_JOB] = f"{view.namespace}_{name}"
        pod_spec.setdefault("tolerations", []).append(
            {"key": NO_SCHEDULE_TAINT, "operator": "Exists", "effect": "NoSchedule"})
    # Kubernetes 1.20 drops spec.suspend (1.21+); the stand-in keeps it in memory.
    spec["suspend"] = view.suspend
    return job


def merge_resumed_template(template, update):
    """Upstream resumeJob: the replicated job's pod template labels,
    annotations and nodeSelector are merged over the Job's (the JobSet's
    values win, keys the JobSet dropped stay), tolerations and scheduling
    gates added where missing."""
    template_meta = template.setdefault("metadata", {})
    spec = template.setdefault("spec", {})
    for field, into in (("labels", template_meta), ("annotations", template_meta), ("nodeSelector", spec)):
        if update.get(field):
            into[field] = {**(into.get(field) or {}), **update[field]}
    for field in ("tolerations", "schedulingGates"):
        for item in update.get(field) or []:
            if item not in (spec.get(field) or []):
                spec.setdefault(field, []).append(item)


def build_pod(job, index, resumed=None):
    """What the Job controller creates for one completion index of an Indexed
    Job; `resumed` is what resumeJob merged into the Job's pod template (1.20
    keeps a Job's template immutable, so the stand-in holds it in memory)."""
    job_meta = meta(job)
    name, uid = job_meta["name"], job_meta["uid"]
    template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
    if resumed:
        merge_resumed_template(template, resumed)
    template_meta = template.get("metadata") or {}
    spec = template.get("spec") or {}
    for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        env = container.setdefault("env", [])
        if not any(var.get("name") == COMPLETION_INDEX_ENV for var in env):
            env.append({"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {
                "fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}}})
    labels = dict(template_meta.get("labels") or {})
    annotations = dict(template_meta.get("annotations") or {})
    # The Job API (1.27+) puts both label forms into the template; 1.20 only the short ones.
    for label, value in zip(JOB_LABELS, (uid, name, uid, name)):
        labels.setdefault(label, value)
    labels[COMPLETION_INDEX] = str(index)
    annotations[COMPLETION_INDEX] = str(index)
    spec["hostname"] = f"{name}-{index}"
    pod_meta = {
        "generateName": pod_generate_name(name, index),
        "namespace": job_meta.get("namespace", ""),
        "labels": labels,
        "annotations": annotations,
        "ownerReferences": [owner_reference(job, "batch/v1", "Job")],
    }
    if template_meta.get("finalizers"):
        pod_meta["finalizers"] = list(template_meta["finalizers"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


def set_condition(status, ctype, cstatus, reason_message):
    """Upstream updateCondition: returns True when status.conditions changed."""
    reason, message = reason_message
    conditions = status.setdefault("conditions", [])
    exclusive = {"StartupPolicyInProgress", "StartupPolicyCompleted"}
    found = changed = False
    for condition in conditions:
        if condition.get("type") == ctype:
            found = True
            if condition.get("status") != cstatus:
                condition.clear()
                condition.update(type=ctype, status=cstatus, reason=reason, message=message,
                                 lastTransitionTime=now_rfc3339())
                changed = True
        elif ({condition.get("type"), ctype} == exclusive and condition.get("status") == "True"
              and cstatus == "True"):
            condition["status"] = "False"
            changed = True
    if not found and cstatus == "True":
        conditions.append({"type": ctype, "status": cstatus, "reason": reason, "message": message,
                           "lastTransitionTime": now_rfc3339()})
        changed = True
    if not conditions:
        del status["conditions"]
    return changed


def jobset_finished(status):
    return any(c.get("type") in ("Completed", "Failed") and c.get("status") == "True"
               for c in status.get("conditions") or [])


# ------------------------------------------------------------ cache and queue

class Store:
    """Objects of one kind by uid, with secondary indexes.

    Updates are guarded by resourceVersion (a create or status-write response
    can arrive after the watch reported a newer version) and by tombstones (a
    response must not bring back an object the watch reported deleted)."""

    def __init__(self, index_funcs):
        self._lock = threading.Lock()
        self._objects = {}
        self._local = {}
        self._tombstones = {}            # uid -> when its delete was seen
        self._tombstone_order = deque()  # (when, uid), oldest first, to expire them
        self._index_funcs = index_funcs
        self._indexes = {name: {} for name in index_funcs}

    def _unindex(self, uid, obj):
        for name, func in self._index_funcs.items():
            for value in func(obj):
                bucket = self._indexes[name].get(value)
                if bucket is not None:
                    bucket.discard(uid)
                    if not bucket:
                        del self._indexes[name][value]

    def _index(self, uid, obj):
        for name, func in self._index_funcs.items():
            for value in func(obj):
                self._indexes[name].setdefault(value, set()).add(uid)

    def upsert(self, obj, local=False):
        uid = meta(obj).get("uid")
        if not uid:
            return False
        with self._lock:
            if uid in self._tombstones:
                return False
            old = self._objects.get(uid)
            if old is not None:
                if resource_version(old) > resource_version(obj):
                    return False
                self._unindex(uid, old)
            self._objects[uid] = obj
            self._index(uid, obj)
            if local:
                self._local[uid] = time.monotonic()
            else:
                self._local.pop(uid, None)
            return True

    def delete(self, obj):
        """Forgets the object and keeps its tombstone for TOMBSTONE_SECONDS.
        Expired tombstones go oldest first, so a delete costs the same however
        many are kept. Before, every delete past 1,000 tombstones rebuilt the
        whole set: deleting a 5,000-pod JobSet cost tens of CPU seconds, still
        running into the next round of the placement benchmark."""
        uid = meta(obj).get("uid")
        now = time.monotonic()
        with self._lock:
            self._remove(uid)
            self._tombstones[uid] = now
            self._tombstone_order.append((now, uid))
            horizon = now - TOMBSTONE_SECONDS
            while self._tombstone_order and self._tombstone_order[0][0] <= horizon:
                when, old = self._tombstone_order.popleft()
                if self._tombstones.get(old) == when:  # not deleted again since
                    del self._tombstones[old]

    def _remove(self, uid):
        old = self._objects.pop(uid, None)
        self._local.pop(uid, None)
        if old is not None:
            self._unindex(uid, old)
        return old

    def replace(self, items):
        """After a (re-)list: returns the objects that disappeared."""
        fresh = {meta(item).get("uid") for item in items}
        removed = []
        horizon = time.monotonic() - LOCAL_INSERT_GRACE
        with self._lock:
            for uid in list(self._objects):
                if uid not in fresh and self._local.get(uid, 0) < horizon:
                    removed.append(self._remove(uid))
        for item in items:
            self.upsert(item)
        return removed

    def by_index(self, name, value):
        with self._lock:
            return [self._objects[uid] for uid in self._indexes[name].get(value, ())]

    def get(self, uid):
        with self._lock:
            return self._objects.get(uid)

    def __len__(self):
        with self._lock:
            return len(self._objects)


class WorkQueue:
    """Keys to reconcile, each at most once in the queue and never processed
    twice at the same time (a key added while processed is re-queued when done).

    A delayed add is dropped when an earlier one for the key is pending: every
    reconcile schedules again whatever later wake-up it still needs."""

    def __init__(self):
        self._cond = threading.Condition()
        self._queue = deque()
        self._queued = set()
        self._processing = set()
        self._dirty = set()
        self._delayed = []
        self._scheduled = {}
        self._closed = False

    def add(self, key):
        with self._cond:
            if key in self._processing:
                self._dirty.add(key)
            elif key not in self._queued:
                self._queued.add(key)
                self._queue.append(key)
                self._cond.notify()

    def add_after(self, key, delay):
        when = time.monotonic() + max(delay, 0.0)
        with self._cond:
            pending = self._scheduled.get(key)
            if pending is not None and pending <= when:
                return
            self._scheduled[key] = when
            heapq.heappush(self._delayed, (when, key))
            self._cond.notify()

    def get(self):
        """The next key, or None once closed."""
        with self._cond:
            while True:
                if self._closed:
                    return None
                now = time.monotonic()
                while self._delayed and self._delayed[0][0] <= now:
                    when, key = heapq.heappop(self._delayed)
                    if self._scheduled.get(key) != when:
                        continue  # superseded by an earlier wake-up
                    del self._scheduled[key]
                    if key in self._processing:
                        self._dirty.add(key)
                    elif key not in self._queued:
                        self._queued.add(key)
                        self._queue.append(key)
                if self._queue:
                    key = self._queue.popleft()
                    self._queued.discard(key)
                    self._processing.add(key)
                    return key
                timeout = self._delayed[0][0] - now if self._delayed else None
                self._cond.wait(timeout)

    def done(self, key):
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._dirty.discard(key)
                self.add(key)

    def close(self):
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class JobSummary:
    """What the JobSet controller needs from one child Job after the Job controller's pass."""

    def __init__(self, job, finished, active, ready, succeeded, suspended):
        self.job = job
        self.finished = finished
        self.active = active
        self.ready = ready
        self.succeeded = succeeded
        self.suspended = suspended
        spec = job.get("spec") or {}
        parallelism = spec.get("parallelism")
        self.parallelism = 1 if parallelism is None else int(parallelism)
        completions = spec.get("completions")
        self.completions = self.parallelism if completions is None else int(completions)

    @property
    def rjob_name(self):
        return labels_of(self.job).get(REPLICATED_JOB_NAME, "")


class Conflict(Exception):
    """A write lost a race with another writer; reconcile again shortly."""


# ------------------------------------------------------------ the controller

class Controller:
    def __init__(self, kube, namespace=None, pod_workers=POD_WORKERS):
        self.kube = kube
        self.namespace = namespace
        self.stop = threading.Event()
        self.queue = WorkQueue()
        self.jobsets = Store({"name": lambda o: [key_of(o)]})
        self.jobs = Store({"jobset": lambda o: [self._jobset_key_of_child(o)]})
        self.pods = Store({"owner": lambda o: [controller_uid(o) or ""],
                           "jobset": lambda o: [self._jobset_key_of_child(o)]})
        self.pod_pool = concurrent.futures.ThreadPoolExecutor(pod_workers, "pod")
        self.api_pool = concurrent.futures.ThreadPoolExecutor(API_WORKERS, "api")
        self.lock = threading.Lock()
        self.inflight = {}          # job uid -> completion indexes being created
        self.deleting = {}          # uid -> time a delete was requested
        self.job_suspended = {}     # job uid -> bool (1.20 has no Job spec.suspend)
        self.job_resumed = {}       # job uid -> what resumeJob merged into its pod template
        self.services = set()       # JobSet uids whose headless Service exists
        self.status_written = {}    # job uid -> time of the last status write
        self.create_backoff = {}    # job uid -> (consecutive pod-create failures, retry time)
        self.failures = {}          # key -> consecutive reconcile failures
        self.synced = {kind: threading.Event() for kind in ("jobsets", "jobs", "pods")}

    @staticmethod
    def _jobset_key_of_child(obj):
        name = labels_of(obj).get(JOBSET_NAME)
        return f"{meta(obj).get('namespace', '')}/{name}" if name else ""

    def _path(self, prefix, resource, namespace=None):
        namespace = namespace or self.namespace
        if namespace:
            return f"{prefix}/namespaces/{namespace}/{resource}"
        return f"{prefix}/{resource}"

    # ---------------------------------------------------------------- watches

    def _handlers(self, kind, store, keys):
        def on_event(event_type, obj):
            if event_type == "DELETED":
                store.delete(obj)
                self._forget_uid(kind, meta(obj).get("uid"))
            else:
                store.upsert(obj)
            for key in keys(obj):
                if key:
                    self.queue.add(key)

        def on_relist(items):
            removed = store.replace(items)
            for obj in removed:
                self._forget_uid(kind, meta(obj).get("uid"))
            touched = set()
            for obj in list(items) + removed:
                touched.update(keys(obj))
            for key in touched:
                if key:
                    self.queue.add(key)
            log("debug", "listed", kind=kind, count=len(items), removed=len(removed))
            self.synced[kind].set()

        return on_event, on_relist

    def start_watches(self):
        selector = {"labelSelector": JOBSET_NAME}
        streams = [
            ("jobsets", self.jobsets, self._path(JOBSET_API, "jobsets"), None, lambda o: [key_of(o)]),
            ("jobs", self.jobs, self._path("/apis/batch/v1", "jobs"), selector,
             lambda o: [self._jobset_key_of_child(o)]),
            ("pods", self.pods, self._path("/api/v1", "pods"), selector,
             lambda o: [self._jobset_key_of_child(o)]),
        ]
        for kind, store, path, query, keys in streams:
            on_event, on_relist = self._handlers(kind, store, keys)
            start_watch(self.kube, path, on_event, self.stop, query=query, on_relist=on_relist,
                        name=f"watch-{kind}")

    # ---------------------------------------------------------------- main loop

    def run(self):
        self.start_watches()
        while not all(event.wait(0.2) for event in self.synced.values()):
            if self.stop.is_set():
                return
        log("info", "synced", namespace=self.namespace or "*", jobsets=len(self.jobsets),
            jobs=len(self.jobs), pods=len(self.pods))
        while True:
            key = self.queue.get()
            if key is None:
                return
            try:
                self.reconcile(key)
                self.failures.pop(key, None)
            except Conflict:
                self.queue.add_after(key, 0.1)
            except Exception as error:  # noqa: BLE001 - logged, retried with backoff
                count = self.failures.get(key, 0) + 1
                self.failures[key] = count
                delay = min(0.1 * 2 ** count, 10.0)
                log("error", "reconcile-failed", jobset=key, error=error, retryIn=f"{delay:.1f}s")
                self.queue.add_after(key, delay)
            finally:
                self.queue.done(key)

    def shutdown(self):
        self.stop.set()
        self.queue.close()
        self.pod_pool.shutdown(wait=False, cancel_futures=True)
        self.api_pool.shutdown(wait=False, cancel_futures=True)

    # ---------------------------------------------------------------- reconcile

    def _jobset(self, key):
        candidates = self.jobsets.by_index("name", key)
        return max(candidates, key=resource_version) if candidates else None

    def _forget(self, key):
        self.failures.pop(key, None)

    def _forget_uid(self, kind, uid):
        """Drops the in-memory state of an object the watch reported deleted."""
        self.deleting.pop(uid, None)
        if kind == "jobs":
            with self.lock:
                self.inflight.pop(uid, None)
                self.create_backoff.pop(uid, None)
            self.job_suspended.pop(uid, None)
            self.job_resumed.pop(uid, None)
            self.status_written.pop(uid, None)
        elif kind == "jobsets":
            self.services.discard(uid)

    def reconcile(self, key):
        js = self._jobset(key)
        if js is None:
            self._forget(key)
            return
        if meta(js).get("deletionTimestamp"):
            return
        view = JobSetView(js)
        managed_by = view.spec.get("managedBy")
        if managed_by and managed_by != CONTROLLER_NAME:
            log("debug", "skipped-managed-elsewhere", jobset=key, managedBy=managed_by)
            return
        status = copy.deepcopy(js.get("status") or {})
        restarts = int(status.get("restarts") or 0)
        status["restarts"] = restarts

        jobs = [job for job in self.jobs.by_index("jobset", key) if controller_uid(job) == view.uid]
        previous, current = [], []
        for job in jobs:
            attempt = parse_int(labels_of(job).get(RESTART_ATTEMPT))
            (previous if attempt is None or attempt < restarts else current).append(job)

        # The Job controller's part, for the Jobs of the current run (it starts
        # no pod once the JobSet has finished: its active Jobs are deleted).
        manage = not jobset_finished(status)
        summaries = [self.sync_job(key, view, job, manage) for job in current]
        active = [s for s in summaries if not s.finished]
        successful = [s for s in summaries if s.finished == "Complete"]
        failed = [s for s in summaries if s.finished == "Failed"]
        rjob_statuses = self.replicated_job_statuses(view, summaries)
        status["replicatedJobsStatus"] = rjob_statuses

        if jobset_finished(status):
            self.delete_jobs(key, [s.job for s in active])
            self.ttl_after_finished(key, view, status)
            self.write_jobset_status(key, js, status)
            return

        self.delete_jobs(key, previous)

        if failed:
            self.execute_failure_policy(key, view, status, failed)
            self.write_jobset_status(key, js, status)
            return

        if successful and self.success_policy_met(view, successful):
            set_condition(status, "Completed", "True", ALL_JOBS_COMPLETED)
            status["terminalState"] = "Completed"
            log("info", "jobset-completed", jobset=key, restarts=restarts)
            self.write_jobset_status(key, js, status)
            return

        if view.dns_hostnames:
            self.ensure_headless_service(key, view)

        self.reconcile_replicated_jobs(key, view, status, restarts, jobs, previous, rjob_statuses)

        if view.suspend:
            self.suspend_jobs(key, active)
            set_condition(status, "Suspended", "True", SUSPENDED)
        else:
            self.resume_jobs_if_necessary(key, view, status, active, rjob_statuses)
        self.write_jobset_status(key, js, status)

    # ------------------------------------------------------- Job controller part

    def sync_job(self, key, view, job, manage=True):
        """Indexed-Job semantics for one Job: pods per completion index, at most
        `parallelism` active, failures against backoffLimit, Job status."""
        job_meta = meta(job)
        uid, name = job_meta["uid"], job_meta["name"]
        suspended = self.job_suspended.get(uid, view.suspend)
        spec = job.get("spec") or {}
        parallelism = 1 if spec.get("parallelism") is None else int(spec["parallelism"])
        completions = parallelism if spec.get("completions") is None else int(spec["completions"])
        backoff_limit = 6 if spec.get("backoffLimit") is None else int(spec["backoffLimit"])
        restart_policy = (((spec.get("template") or {}).get("spec") or {}).get("restartPolicy"))

        # The in-flight indexes are read before the pods: a create that returns in
        # between has put its pod into the cache before leaving the in-flight set.
        with self.lock:
            inflight = set(self.inflight.get(uid, ()))
        succeeded, failed, active, active_restarts = set(), 0, [], 0
        for pod in self.pods.by_index("owner", uid):
            phase = pod_phase(pod)
            if phase == "Succeeded":
                index = completion_index(pod)
                if index is not None and index < completions:
                    succeeded.add(index)
            elif phase == "Failed":
                failed += 1
            elif meta(pod).get("deletionTimestamp") or self._delete_pending(pod):
                continue
            else:
                active.append(pod)
                active_restarts += container_restarts(pod)

        old_status = job.get("status") or {}
        status = copy.deepcopy(old_status)
        finished = job_finished(job)
        to_delete = []
        if job_meta.get("deletionTimestamp"):
            pass  # being deleted: the garbage collector removes its pods
        elif finished or suspended:
            to_delete = active
        else:
            status.setdefault("startTime", now_rfc3339())
            past_restarts = (restart_policy == "OnFailure" and active_restarts > 0
                             and (backoff_limit == 0 or active_restarts >= backoff_limit))
            deadline_left = None
            if spec.get("activeDeadlineSeconds") is not None:
                started = parse_time(status["startTime"]) or time.time()
                deadline_left = started + int(spec["activeDeadlineSeconds"]) - time.time()
            failure = None
            if failed > backoff_limit or past_restarts:
                failure = BACKOFF_LIMIT_EXCEEDED
            elif deadline_left is not None and deadline_left <= 0:
                failure = DEADLINE_EXCEEDED
            elif deadline_left is not None:
                self.queue.add_after(key, deadline_left)
            if failure:
                finished = "Failed"
                status.setdefault("conditions", []).append(self._job_condition("Failed", failure))
                to_delete = active
                log("info", "job-failed", jobset=key, job=name, reason=failure[0], failed=failed,
                    backoffLimit=backoff_limit, containerRestarts=active_restarts)
            elif len(succeeded) >= completions:
                finished = "Complete"
                status.setdefault("conditions", []).append(self._job_condition("Complete", None))
                status["completionTime"] = now_rfc3339()
                to_delete = active
                log("info", "job-completed", jobset=key, job=name, succeeded=len(succeeded))
            elif manage:
                to_delete = self._manage_indexes(key, job, active, inflight, succeeded, parallelism,
                                                 completions)

        if to_delete:
            self.delete_pods(key, to_delete, reason="job-finished" if finished else
                             ("job-suspended" if suspended else "surplus"))
        deleted = {meta(p)["uid"] for p in to_delete}
        active_left = [p for p in active if meta(p)["uid"] not in deleted]
        ready = sum(pod_ready(p) for p in active_left)
        counts = (("active", len(active_left)), ("succeeded", len(succeeded)), ("failed", failed))
        for field, value in counts:
            if value:
                status[field] = value
            else:
                status.pop(field, None)
        if status != old_status and not job_meta.get("deletionTimestamp"):
            urgent = status.get("conditions") != old_status.get("conditions")
            job = self.write_job_status(key, job, status, urgent) or job
        return JobSummary(job, finished, len(active_left), ready, len(succeeded), suspended)

    @staticmethod
    def _job_condition(ctype, reason_message):
        now = now_rfc3339()
        condition = {"type": ctype, "status": "True", "lastProbeTime": now, "lastTransitionTime": now}
        if reason_message:
            condition["reason"], condition["message"] = reason_message
        return condition

    def _delete_pending(self, obj):
        requested = self.deleting.get(meta(obj).get("uid"))
        return requested is not None and time.monotonic() - requested < DELETE_RETRY_AFTER

    def _manage_indexes(self, key, job, active, inflight, succeeded, parallelism, completions):
        """Creates pods for unstarted indexes; returns active pods to delete
        (duplicates, out-of-range or already-succeeded indexes, surplus)."""
        uid = meta(job)["uid"]
        surplus, by_index = [], {}
        for pod in sorted(active, key=lambda p: (meta(p).get("creationTimestamp", ""), meta(p)["name"])):
            index = completion_index(pod)
            if index is None or index >= completions or index in succeeded or index in by_index:
                surplus.append(pod)
            else:
                by_index[index] = pod
        want = min(parallelism, completions - len(succeeded))
        now = time.monotonic()
        with self.lock:
            _, retry_at = self.create_backoff.get(uid, (0, 0.0))
            backing_off = retry_at > now
            busy = set(by_index) | inflight
            missing = want - len(busy)
            start = []
            if missing > 0 and backing_off:
                self.queue.add_after(key, retry_at - now)
            elif missing > 0:
                for index in range(completions):
                    if len(start) == missing:
                        break
                    if index not in succeeded and index not in busy:
                        start.append(index)
                self.inflight.setdefault(uid, set()).update(start)
            elif missing < 0 and not inflight:
                # Parallelism went down: remove the highest indexes, as the Job controller does.
                for index in sorted(by_index, reverse=True)[:-missing]:
                    surplus.append(by_index[index])
        for index in start:
            self.pod_pool.submit(self._create_pod, key, job, index)
        return surplus

    def _create_pod(self, key, job, index):
        uid = meta(job)["uid"]
        try:
            if self.stop.is_set():
                return
            body = build_pod(job, index, self.job_resumed.get(uid))
            pod = self.kube.create(f"/api/v1/namespaces/{meta(job)['namespace']}/pods", body)
            self.pods.upsert(pod, local=True)
            with self.lock:
                self.create_backoff.pop(uid, None)
            log("info", "pod-created", jobset=key, job=meta(job)["name"], pod=meta(pod).get("name"),
                index=index)
        except Exception as error:  # noqa: BLE001 - retried with backoff by a later reconcile
            with self.lock:
                count = self.create_backoff.get(uid, (0, 0.0))[0] + 1
                delay = min(0.5 * 2 ** (count - 1), 10.0)
                self.create_backoff[uid] = (count, time.monotonic() + delay)
            log("error", "pod-create-failed", jobset=key, job=meta(job)["name"], index=index, error=error,
                retryIn=f"{delay:.1f}s")
            self.queue.add_after(key, delay)
        finally:
            with self.lock:
                indexes = self.inflight.get(uid)
                if indexes is not None:
                    indexes.discard(index)

    def delete_pods(self, key, pods, reason):
        now = time.monotonic()
        for pod in pods:
            pod_uid = meta(pod)["uid"]
            if self._delete_pending(pod):
                continue
            self.deleting[pod_uid] = now
            self.api_pool.submit(self._delete_pod, key, pod, reason)

    def _delete_pod(self, key, pod, reason):
        pod_meta = meta(pod)
        try:
            self.kube.delete(f"/api/v1/namespaces/{pod_meta['namespace']}/pods/{pod_meta['name']}",
                             body={"apiVersion": "v1", "kind": "DeleteOptions",
                                   "preconditions": {"uid": pod_meta["uid"]}},
                             ok=(200, 202, 404, 409))
            log("info", "pod-deleted", jobset=key, pod=pod_meta["name"], reason=reason)
        except Exception as error:  # noqa: BLE001 - retried after DELETE_RETRY_AFTER
            log("error", "pod-delete-failed", jobset=key, pod=pod_meta["name"], error=error)

    def write_job_status(self, key, job, status, urgent):
        """PUT to the Job's status subresource. Count-only changes are written at
        most once per STATUS_MIN_INTERVAL per Job; returns the new Job or None."""
        job_meta = meta(job)
        uid = job_meta["uid"]
        now = time.monotonic()
        last = self.status_written.get(uid, 0.0)
        if not urgent and now - last < STATUS_MIN_INTERVAL:
            self.queue.add_after(key, STATUS_MIN_INTERVAL - (now - last))
            return None
        body = dict(job)
        body["status"] = status
        try:
            updated = self.kube.put(
                f"/apis/batch/v1/namespaces/{job_meta['namespace']}/jobs/{job_meta['name']}/status", body)
        except ApiError as error:
            if error.status in (404, 409):
                raise Conflict() from error
            raise
        self.status_written[uid] = now
        self.jobs.upsert(updated, local=True)
        log("debug", "job-status", jobset=key, job=job_meta["name"], active=status.get("active", 0),
            succeeded=status.get("succeeded", 0), failed=status.get("failed", 0))
        return updated

    # ------------------------------------------------------- JobSet controller part

    @staticmethod
    def replicated_job_statuses(view, summaries):
        """Upstream calculateReplicatedJobStatuses, in spec order."""
        counts = {rj.name: {"ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
                  for rj in view.rjobs}
        for s in summaries:
            entry = counts.get(s.rjob_name)
            if entry is None:
                continue
            if s.finished == "Complete":
                entry["succeeded"] += 1
            elif s.finished == "Failed":
                entry["failed"] += 1
            else:
                if s.succeeded + s.ready >= min(s.parallelism, s.completions):
                    entry["ready"] += 1
                if s.active > 0:
                    entry["active"] += 1
                if s.suspended:
                    entry["suspended"] += 1
        return [dict(name=rj.name, **counts[rj.name]) for rj in view.rjobs]

    def execute_failure_policy(self, key, view, status, failed):
        first = self._first_failed(failed)
        policy = view.failure_policy
        if policy is None:
            self._fail(key, status, FAILED_JOBS, first)
            return
        rule, job = self._matching_rule(policy.get("rules") or [], failed)
        action = rule.get("action") if rule else "RestartJobSet"
        job = job or first
        if action in ("RestartJob", "RestartJobAndIgnoreMaxRestarts", "InPlaceRestart"):
            log("warning", "action-not-reproduced", jobset=key, action=action,
                meaning="restarting the whole JobSet instead")
            ignore_max = action.endswith("IgnoreMaxRestarts")
            action = "RestartJobSetAndIgnoreMaxRestarts" if ignore_max else "RestartJobSet"
        if action == "FailJobSet":
            self._fail(key, status, FAIL_JOBSET_ACTION, job)
        elif action == "RestartJobSetAndIgnoreMaxRestarts":
            self._restart(key, status, job, count_towards_max=False)
        else:
            max_restarts = int(policy.get("maxRestarts") or 0)
            if int(status.get("restartsCountTowardsMax") or 0) >= max_restarts:
                self._fail(key, status, REACHED_MAX_RESTARTS, job)
            else:
                self._restart(key, status, job, count_towards_max=True)

    @staticmethod
    def _first_failed(failed):
        def failure_time(summary):
            condition = job_condition(summary.job, "Failed") or {}
            return condition.get("lastTransitionTime") or ""
        return min(failed, key=failure_time).job

    @staticmethod
    def _matching_rule(rules, failed):
        """The first rule matching a failed Job, and the earliest failed Job it matches."""
        for rule in rules:
            reasons = rule.get("onJobFailureReasons") or []
            patterns = rule.get("onJobFailureMessagePatterns") or []
            targets = rule.get("targetReplicatedJobs") or []
            matched, matched_time = None, None
            for summary in failed:
                condition = job_condition(summary.job, "Failed")
                if condition is None:
                    continue
                if reasons and condition.get("reason") not in reasons:
                    continue
                if patterns and not any(re.search(p, condition.get("message") or "") for p in patterns):
                    continue
                if targets and summary.rjob_name not in targets:
                    continue
                when = condition.get("lastTransitionTime") or ""
                if matched is None or when < matched_time:
                    matched, matched_time = summary.job, when
            if matched is not None:
                return rule, matched
        return None, None

    @staticmethod
    def _fail(key, status, reason_message, job):
        reason, message = reason_message
        message = f"{message} (first failed job: {meta(job).get('name', '')})"
        set_condition(status, "Failed", "True", (reason, message))
        status["terminalState"] = "Failed"
        log("info", "jobset-failed", jobset=key, reason=reason, restarts=status.get("restarts", 0),
            firstFailedJob=meta(job).get("name"))

    @staticmethod
    def _restart(key, status, job, count_towards_max):
        status["restarts"] = int(status.get("restarts") or 0) + 1
        if count_towards_max:
            status["restartsCountTowardsMax"] = int(status.get("restartsCountTowardsMax") or 0) + 1
        log("info", "jobset-restarting", jobset=key, restarts=status["restarts"],
            restartsCountTowardsMax=status.get("restartsCountTowardsMax", 0),
            firstFailedJob=meta(job).get("name"))

    @staticmethod
    def success_policy_met(view, successful):
        policy = view.success_policy
        targets = policy.get("targetReplicatedJobs") or []
        matching = sum(1 for s in successful if not targets or s.rjob_name in targets)
        if policy.get("operator") == "Any":
            expected = 1
        else:
            expected = sum(rj.replicas for rj in view.rjobs if not targets or rj.name in targets)
        return matching >= expected

    def delete_jobs(self, key, jobs):
        """Foreground deletion, as upstream: the garbage collector deletes the
        pods (blockOwnerDeletion) before the Job itself disappears."""
        now = time.monotonic()
        futures = []
        for job in jobs:
            if meta(job).get("deletionTimestamp") or self._delete_pending(job):
                continue
            self.deleting[meta(job)["uid"]] = now
            path = f"/apis/batch/v1/namespaces/{meta(job)['namespace']}/jobs/{meta(job)['name']}"
            body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground",
                    "preconditions": {"uid": meta(job)["uid"]}}
            futures.append((job, self.api_pool.submit(self.kube.delete, path, body, (200, 202, 404, 409))))
        for job, future in futures:
            try:
                response = future.result()
                if meta(response).get("uid") == meta(job)["uid"]:
                    self.jobs.upsert(response, local=True)
                log("info", "job-deleted", jobset=key, job=meta(job)["name"],
                    restartAttempt=labels_of(job).get(RESTART_ATTEMPT))
            except Exception as error:  # noqa: BLE001
                self.deleting.pop(meta(job)["uid"], None)
                raise error

    def ttl_after_finished(self, key, view, status):
        ttl = view.spec.get("ttlSecondsAfterFinished")
        if ttl is None:
            return
        finished_at = None
        for condition in status.get("conditions") or []:
            if condition.get("type") in ("Completed", "Failed") and condition.get("status") == "True":
                finished_at = parse_time(condition.get("lastTransitionTime"))
        if finished_at is None:
            return
        remaining = finished_at + int(ttl) - time.time()
        if remaining > 0:
            self.queue.add_after(key, remaining)
            return
        self.kube.delete(f"{JOBSET_API}/namespaces/{view.namespace}/jobsets/{view.name}",
                         body={"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground",
                               "preconditions": {"uid": view.uid}}, ok=(200, 202, 404, 409))
        log("info", "jobset-deleted-ttl", jobset=key, ttlSecondsAfterFinished=ttl)

    def ensure_headless_service(self, key, view):
        if view.uid in self.services:
            return
        service = {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": view.subdomain, "namespace": view.namespace,
                         "ownerReferences": [owner_reference(view.js, JOBSET_API_VERSION, "JobSet")]},
            "spec": {"clusterIP": "None", "selector": {JOBSET_NAME: view.name},
                     "publishNotReadyAddresses": view.publish_not_ready},
        }
        try:
            self.kube.create(f"/api/v1/namespaces/{view.namespace}/services", service)
            log("info", "service-created", jobset=key, service=view.subdomain)
        except ApiError as error:
            if error.status != 409:
                raise
        self.services.add(view.uid)

    def reconcile_replicated_jobs(self, key, view, status, restarts, jobs, previous, rjob_statuses):
        """Upstream reconcileReplicatedJobs: creates the missing Jobs of the
        current run, honouring dependsOn, InOrder and BlockingRecreate."""
        blocking = view.restart_strategy == "BlockingRecreate" and (
            previous or self._old_pods_remain(key, view.uid, restarts))
        existing = {meta(job)["name"] for job in jobs}
        replicas = {}
        to_create = []
        in_progress = False
        for rjob in view.rjobs:
            replicas[rjob.name] = rjob.replicas
            rjob_status = next(s for s in rjob_statuses if s["name"] == rjob.name)
            if not self._dependencies_reached(rjob, replicas, rjob_statuses):
                continue
            if not view.suspend and view.in_order and self._all_started(rjob.replicas, rjob_status):
                continue
            if not blocking:
                for index in range(rjob.replicas):
                    if job_name(view.name, rjob.name, index) not in existing:
                        to_create.append(build_job(view, rjob, index, restarts))
            if not view.suspend and view.in_order:
                in_progress = True
                break
        if in_progress:
            set_condition(status, "StartupPolicyInProgress", "True", IN_ORDER_IN_PROGRESS)
        elif not view.suspend and view.in_order:
            set_condition(status, "StartupPolicyCompleted", "True", IN_ORDER_COMPLETED)
        if to_create:
            self.create_jobs(key, view, to_create)

    def _old_pods_remain(self, key, uid, restarts):
        for pod in self.pods.by_index("jobset", key):
            pod_labels = labels_of(pod)
            attempt = parse_int(pod_labels.get(RESTART_ATTEMPT))
            if pod_labels.get(JOBSET_UID) == uid and (attempt is None or attempt < restarts):
                return True
        return False

    @staticmethod
    def _all_started(replicas, rjob_status):
        return replicas == rjob_status["failed"] + rjob_status["ready"] + rjob_status["succeeded"]

    @staticmethod
    def _dependencies_reached(rjob, replicas, rjob_statuses):
        for dependency in rjob.depends_on:
            name = dependency.get("name")
            actual = next((s for s in rjob_statuses if s["name"] == name), None)
            if actual is None:
                return False
            wanted = replicas.get(name, 0)
            if dependency.get("status") == "Complete":
                if actual["succeeded"] != wanted:
                    return False
            elif actual["failed"] + actual["ready"] + actual["succeeded"] != wanted:
                return False
        return True

    def create_jobs(self, key, view, bodies):
        path = f"/apis/batch/v1/namespaces/{view.namespace}/jobs"
        futures = [(body, self.api_pool.submit(self.kube.create, path, body)) for body in bodies]
        first_error = None
        created = False
        for body, future in futures:
            try:
                job = future.result()
            except ApiError as error:
                if error.status == 409:
                    continue  # it exists; the watch brings it
                log("error", "job-create-failed", jobset=key, job=meta(body)["name"], error=error)
                first_error = first_error or error
                continue
            self.job_suspended[meta(job)["uid"]] = view.suspend
            self.jobs.upsert(job, local=True)
            created = True
            log("info", "job-created", jobset=key, job=meta(job)["name"],
                restartAttempt=labels_of(job).get(RESTART_ATTEMPT), suspended=view.suspend)
        if created:
            self.queue.add(key)  # the Job controller's part runs for the new Jobs
        # Refused creates (an admission webhook's denial) are retried with the
        # reconcile's backoff, as upstream's rate-limited requeue does, not at once.
        if first_error is not None:
            raise first_error

    def suspend_jobs(self, key, active):
        changed = False
        for summary in active:
            uid = meta(summary.job)["uid"]
            if not self.job_suspended.get(uid, False):
                self.job_suspended[uid] = True
                changed = True
                log("info", "job-suspended", jobset=key, job=meta(summary.job)["name"])
        if changed:
            self.queue.add(key)

    def resume_jobs_if_necessary(self, key, view, status, active, rjob_statuses):
        by_rjob = {}
        for summary in active:
            by_rjob.setdefault(summary.rjob_name, []).append(summary)
        replicas = {}
        changed = False
        for rjob in view.rjobs:
            replicas[rjob.name] = rjob.replicas
            rjob_status = next(s for s in rjob_statuses if s["name"] == rjob.name)
            if not self._dependencies_reached(rjob, replicas, rjob_statuses):
                continue
            if view.in_order and self._all_started(rjob.replicas, rjob_status):
                continue
            for summary in by_rjob.get(rjob.name, []):
                uid = meta(summary.job)["uid"]
                if self.job_suspended.get(uid, view.suspend):
                    self.job_suspended[uid] = False
                    pod_template = (rjob.template.get("spec") or {}).get("template") or {}
                    template_spec = pod_template.get("spec") or {}
                    self.job_resumed[uid] = copy.deepcopy({
                        "labels": meta(pod_template).get("labels") or {},
                        "annotations": meta(pod_template).get("annotations") or {},
                        "nodeSelector": template_spec.get("nodeSelector") or {},
                        "tolerations": template_spec.get("tolerations") or [],
                        "schedulingGates": template_spec.get("schedulingGates") or []})
                    changed = True
                    log("info", "job-resumed", jobset=key, job=meta(summary.job)["name"])
            if view.in_order:
                set_condition(status, "StartupPolicyInProgress", "True", IN_ORDER_IN_PROGRESS)
                break
        else:
            set_condition(status, "Suspended", "False", RESUMED)
        if changed:
            self.queue.add(key)

    def write_jobset_status(self, key, js, status):
        """PUT to the JobSet's status subresource when the status changed."""
        old = js.get("status") or {}
        if not status.get("restartsCountTowardsMax"):
            status.pop("restartsCountTowardsMax", None)
        if not status.get("conditions"):
            status.pop("conditions", None)
        if status == old:
            return
        body = dict(js)
        body["status"] = status
        try:
            updated = self.kube.put(
                f"{JOBSET_API}/namespaces/{meta(js)['namespace']}/jobsets/{meta(js)['name']}/status", body)
        except ApiError as error:
            if error.status in (404, 409):
                raise Conflict() from error
            raise
        self.jobsets.upsert(updated, local=True)
        log("debug", "jobset-status", jobset=key, restarts=status.get("restarts"),
            terminalState=status.get("terminalState"),
            replicatedJobs=",".join(f"{s['name']}:ready={s['ready']}/active={s['active']}/"
                                    f"succeeded={s['succeeded']}/failed={s['failed']}"
                                    for s in status.get("replicatedJobsStatus") or []))


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Stand-in for the JobSet controller (v0.12) and the Indexed-Job controller.")
    parser.add_argument("--kubeconfig", required=True, help="admin kubeconfig of the cluster")
    parser.add_argument("--namespace", help="watch only this namespace (default: all)")
    parser.add_argument("--log-level", default="info", choices=sorted(LOG_LEVELS, key=LOG_LEVELS.get))
    parser.add_argument("--pod-workers", type=int, default=POD_WORKERS,
                        help="pods created at once, over all Jobs (kube-controller-manager's Job "
                             "controller: 5 Jobs at once, each in batches of 1, 2, 4, ... pods)")
    args = parser.parse_args(argv)
    if args.pod_workers < 1:
        parser.error("--pod-workers must be at least 1")

    global _log_threshold
    _log_threshold = LOG_LEVELS[args.log_level]

    controller = Controller(Kube(args.kubeconfig, pool_size=args.pod_workers + API_WORKERS + 8), args.namespace,
                            pod_workers=args.pod_workers)

    def on_signal(signum, _frame):
        log("info", "stopping", signal=signal.Signals(signum).name)
        controller.shutdown()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log("info", "started", namespace=args.namespace or "*", podWorkers=args.pod_workers)
    controller.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
