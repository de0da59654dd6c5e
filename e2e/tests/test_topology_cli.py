"""bin/muster-topology, the real binary, on files as kubectl writes them: the
placement with a nodeSelector per pod (every level's label, or the hostname
for HyperNodes), a refusal (exit 1), bad input (exit 2 naming the file).
No cluster is needed: the placement core is pure."""

import json
import subprocess

import pytest
import yaml

from conftest import ROOT
import muster_api as api  # noqa: E402

CLI = ROOT / "bin" / "muster-topology"
LEVELS = "block,rack,kubernetes.io/hostname"


def nodes(path):
    """2 blocks x 2 racks x 2 hosts of 4 CPU; rack names repeat across blocks."""
    items = [{"metadata": {"name": f"n-{b}-{r}-{h}",
                           "labels": {"block": f"b{b}", "rack": f"r{r}", "kubernetes.io/hostname": f"n-{b}-{r}-{h}"}},
              "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}}
             for b in range(2) for r in range(2) for h in range(2)]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def jobset(path, pods, instance_level, whole_level=None, replicas=2, podset_level=None):
    """Two child Jobs of `pods` pods, each in one domain of instance_level
    (Kueue's slices of one Job's size), or, with podset_level, all of them in
    one domain of that level (Kueue's podset-required-topology)."""
    metadata = {"name": "train"}
    if whole_level:
        metadata["annotations"] = {api.ANNOTATION_TOPOLOGY_PREFERRED: whole_level}
    annotations = ({api.KUEUE_ANNOTATION_REQUIRED: podset_level} if podset_level else
                   {api.KUEUE_ANNOTATION_SLICE: instance_level, api.KUEUE_ANNOTATION_SLICE_SIZE: str(pods)})
    path.write_text(yaml.safe_dump({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": metadata,
                                    "spec": {"replicatedJobs": [{"name": "workers", "replicas": replicas, "template": {"spec": {
                                        "parallelism": pods, "completions": pods, "template": {
                                            "metadata": {"annotations": annotations},
                                            "spec": {"containers": [{"name": "c", "resources": {
                                                "requests": {"cpu": "1"}}}]}}}}}]}}))
    return path


def run(*args):
    result = subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, timeout=60)
    print(result.stdout[-4000:], result.stderr[-2000:])
    return result


def pod_lines(stdout):
    lines = stdout.split("pods (replicated job, job index, completion index -> domain, nodeSelector, node):\n", 1)[1]
    return [line.split() for line in lines.splitlines() if line.startswith("  ")]


def test_levels_placement_names_every_level_in_the_selector(tmp_path):
    result = run("--nodes", nodes(tmp_path / "nodes.json"), "--levels", LEVELS,
                 "--jobset", jobset(tmp_path / "js.yaml", 6, "rack", "block"))
    assert result.returncode == 0
    pods = pod_lines(result.stdout)
    assert len(pods) == 12
    for job in ("0", "1"):
        mine = [p for p in pods if p[1] == job]
        assert [p[2] for p in mine] == [str(i) for i in range(6)]  # every completion index, in order
        racks = {p[3].rsplit("/", 1)[0] for p in mine}
        assert len(racks) == 1, racks  # rack required per instance
        block, rack = next(iter(racks)).split("/")
        for p in mine:
            selector = dict(kv.split("=") for kv in p[4].split(","))
            assert selector["block"] == block and selector["rack"] == rack  # the tuple, not the rack alone
            assert selector["kubernetes.io/hostname"] == p[3].rsplit("/", 1)[1]
    # Block preferred for the whole JobSet: both instances in one block.
    assert len({p[3].split("/")[0] for p in pods}) == 1
    assert "(nodeSelector block=" in result.stdout


def test_hypernode_placement_selects_hostnames(tmp_path):
    hypernodes = tmp_path / "hn.yaml"
    hypernodes.write_text(yaml.safe_dump_all([
        {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "s0"},
         "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "^n-0-"}}}]}},
        {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "s1"},
         "spec": {"tier": 1, "members": [{"type": "Node",
                                          "selector": {"labelMatch": {"matchLabels": {"block": "b1"}}}}]}}]))
    result = run("--nodes", nodes(tmp_path / "nodes.json"), "--hypernodes", hypernodes,
                 "--jobset", jobset(tmp_path / "js.yaml", 10, "tier 1"))
    assert result.returncode == 0
    pods = pod_lines(result.stdout)
    assert len(pods) == 20
    for job in ("0", "1"):
        mine = [p for p in pods if p[1] == job]
        assert len({p[3].split("/")[0] for p in mine}) == 1  # one tier-1 HyperNode per instance
        for p in mine:
            key, host = p[4].split("=")
            assert key == "kubernetes.io/hostname" and host.startswith("n-")
            assert p[3].split("/")[0] == ("s0" if host.startswith("n-0-") else "s1")


def test_podset_required_puts_every_replica_in_one_domain(tmp_path):
    """Kueue's meaning: podset-required-topology on a replicated job's pod
    template holds all pods of all its replicas in one domain."""
    result = run("--nodes", nodes(tmp_path / "nodes.json"), "--levels", LEVELS,
                 "--jobset", jobset(tmp_path / "js.yaml", 3, None, podset_level="rack"))
    assert result.returncode == 0
    pods = pod_lines(result.stdout)
    assert sorted((p[1], p[2]) for p in pods) == [(str(j), str(c)) for j in range(2) for c in range(3)]
    assert len({p[3].rsplit("/", 1)[0] for p in pods}) == 1  # both Jobs in one rack
    # 2 x 6 pods do not fit one rack of 8, though each Job alone would.
    result = run("--nodes", nodes(tmp_path / "nodes.json"), "--levels", LEVELS,
                 "--jobset", jobset(tmp_path / "js.yaml", 6, None, podset_level="rack"))
    assert result.returncode == 1
    assert "refused: rack: at most 8 of 12 pods fit in any one domain (replicated job workers, its 2 jobs as one)" \
        in result.stdout


def test_refusal_says_how_much_fits_and_exits_1(tmp_path):
    result = run("--nodes", nodes(tmp_path / "nodes.json"), "--levels", LEVELS,
                 "--jobset", jobset(tmp_path / "js.yaml", 9, "rack"))
    assert result.returncode == 1
    # A Job of 9 pods is a slice that needs one rack: no rack holds 9.
    assert ("refused: at most 0 of 18 pods fit in whole slices of 9 in the cluster "
            "(replicated job workers, its 2 jobs as one; a slice in one rack)") in result.stdout


def test_bad_input_exits_2_naming_the_file(tmp_path):
    bad = tmp_path / "nodes.json"
    bad.write_text('{"kind": "List", "items": [{"metadata": {"name": "x"}, "status": {"allocatable": {"cpu": "lots"}}}]}')
    result = run("--nodes", bad, "--levels", LEVELS, "--jobset", jobset(tmp_path / "js.yaml", 2, "rack"))
    assert result.returncode == 2
    assert "nodes.json" in result.stderr and "lots" in result.stderr
    assert run("--nodes", bad).returncode == 2  # usage


def test_help_and_json_output(tmp_path):
    result = run("--help")
    assert result.returncode == 0 and "--output text|json" in result.stdout and "exit status" in result.stdout
    result = run("--nodes", nodes(tmp_path / "nodes.json"), "--levels", LEVELS, "--output", "json",
                 "--jobset", jobset(tmp_path / "js.yaml", 3, "rack"))
    assert result.returncode == 0
    out = json.loads(result.stdout)
    assert out["placed"] is True and out["jobset"] == "train" and out["excluded"] == []
    assert len(out["pods"]) == 6
    for pod in out["pods"]:
        assert pod["node"] == pod["domain"].rsplit("/", 1)[1]  # the node chosen, under its domain
        assert f"kubernetes.io/hostname={pod['node']}" in pod["nodeSelector"]
    # A refusal in JSON: exit 1, the reason in the object.
    result = run("--nodes", nodes(tmp_path / "nodes.json"), "--levels", LEVELS, "--output", "json",
                 "--jobset", jobset(tmp_path / "js.yaml", 9, "rack"))
    assert result.returncode == 1
    out = json.loads(result.stdout)
    assert out["placed"] is False and "a slice in one rack" in out["refusal"] and out["pods"] == []
    assert run("--nodes", "x", "--output", "xml").returncode == 2


def test_inputs_without_a_placeable_node_are_bad_input(tmp_path):
    """No node, no node in the topology, a HyperNode without members, deep or
    trailing content: exit 2 with the reason, never a refusal (exit 1)."""
    js = jobset(tmp_path / "js.yaml", 2, "rack")
    empty = tmp_path / "empty.json"
    empty.write_text('{"kind": "List", "items": []}')
    result = run("--nodes", empty, "--levels", LEVELS, "--jobset", js)
    assert result.returncode == 2 and "no Node in the input" in result.stderr
    result = run("--nodes", nodes(tmp_path / "nodes.json"), "--levels", "zone", "--jobset", js)
    assert result.returncode == 2 and "none of the 8 nodes is in the topology" in result.stderr
    hollow = tmp_path / "hn.yaml"
    hollow.write_text(yaml.safe_dump({"kind": "HyperNode", "metadata": {"name": "s0"}, "spec": {"tier": 1}}))
    result = run("--nodes", nodes(tmp_path / "nodes.json"), "--hypernodes", hollow, "--jobset", js)
    assert result.returncode == 2 and "(s0): spec.members: missing or empty" in result.stderr
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    result = run("--nodes", deep, "--levels", LEVELS, "--jobset", js)
    assert result.returncode == 2 and "nested deeper than 64 levels (at byte 64)" in result.stderr
    two = tmp_path / "two.json"
    two.write_text('{"kind": "List", "items": []}\n{"kind": "Node"}\n')
    result = run("--nodes", two, "--levels", LEVELS, "--jobset", js)
    assert result.returncode == 2 and "more content after the JSON document, at byte 30" in result.stderr


def test_a_large_tree_is_summarized_per_level(tmp_path):
    path = tmp_path / "big.json"
    items = [{"metadata": {"name": f"n{i}", "labels": {"block": f"b{i // 100}", "rack": f"r{i // 10}"}},
              "status": {"allocatable": {"cpu": "4", "pods": "110"}}} for i in range(1000)]
    path.write_text(json.dumps({"kind": "List", "items": items}))
    result = run("--nodes", path, "--levels", "block,rack", "--jobset", jobset(tmp_path / "js.yaml", 3, "rack"))
    assert result.returncode == 0
    assert "levels (11 of 1111 domains shown; --depth all shows every one):" in result.stdout
    assert "  rack: 100 domains, free pods of workers from 40 to 40" in result.stdout  # free before placing
    assert "  nodes: 1000 domains, free pods of workers from 4 to 4" in result.stdout
    full = run("--nodes", path, "--levels", "block,rack", "--depth", "all",
               "--jobset", jobset(tmp_path / "js.yaml", 3, "rack"))
    assert full.stdout.count("(node) n") == 1000


def test_exclusive_topology_gives_each_job_a_domain_alone(tmp_path):
    """Upstream JobSet's alpha.jobset.sigs.k8s.io/exclusive-topology, on the
    JobSet and overridden on a replicated job's Job template."""
    def exclusive_jobset(workers):
        path = tmp_path / "ex.yaml"
        pod = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
        path.write_text(yaml.safe_dump({
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "ex", "annotations": {api.JOBSET_ANNOTATION_EXCLUSIVE_TOPOLOGY: "rack"}},
            "spec": {"replicatedJobs": [
                {"name": "workers", "replicas": workers, "template": {"spec": {"parallelism": 2, "template": pod}}},
                {"name": "driver", "template": {
                    "metadata": {"annotations": {api.JOBSET_ANNOTATION_EXCLUSIVE_TOPOLOGY: "block"}},
                    "spec": {"template": pod}}}]}}))
        return path

    result = run("--nodes", nodes(tmp_path / "nodes.json"), "--levels", LEVELS, "--jobset", exclusive_jobset(2))
    assert result.returncode == 0
    pods = pod_lines(result.stdout)
    workers = {p[1]: p[3].rsplit("/", 1)[0] for p in pods if p[0] == "workers"}
    driver = {p[3].split("/")[0] for p in pods if p[0] == "driver"}
    assert len(set(workers.values())) == 2  # one rack each
    assert driver.isdisjoint({rack.split("/")[0] for rack in workers.values()})  # a block of its own
    # Three racks of workers leave no block free for the driver.
    result = run("--nodes", nodes(tmp_path / "nodes.json"), "--levels", LEVELS, "--jobset", exclusive_jobset(3))
    assert result.returncode == 1
    assert ("refused: block: at most 0 of 1 pods fit in any one domain (replicated job driver, job 0; "
            "exclusive: a block holding pods of another Job is not taken)") in result.stdout


def test_jobset_constraint_holds_the_replicated_jobs_it_names(tmp_path):
    """muster.dev/topology-required on the JobSet holds every replicated job,
    or only those muster.dev/topology-replicated-jobs names."""
    def two_jobs(covered=None):
        path = tmp_path / "js.yaml"
        pod = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
        annotations = {api.ANNOTATION_TOPOLOGY_REQUIRED: "block"}
        if covered:
            annotations[api.ANNOTATION_TOPOLOGY_REPLICATED_JOBS] = covered
        path.write_text(yaml.safe_dump({
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "two", "annotations": annotations},
            "spec": {"replicatedJobs": [
                {"name": "workers", "replicas": 2, "template": {"spec": {"parallelism": 6, "template": pod}}},
                {"name": "driver", "template": {"spec": {"parallelism": 5, "template": pod}}}]}}))
        return path

    # 12 + 5 pods, blocks of 16: not in one block.
    result = run("--nodes", nodes(tmp_path / "nodes.json"), "--levels", LEVELS, "--jobset", two_jobs())
    assert result.returncode == 1 and "refused: block: no one domain holds the whole JobSet (17 pods" in result.stdout
    result = run("--nodes", nodes(tmp_path / "nodes.json"), "--levels", LEVELS, "--jobset", two_jobs("workers"))
    assert result.returncode == 0
    pods = pod_lines(result.stdout)
    assert len({p[3].split("/")[0] for p in pods if p[0] == "workers"}) == 1  # the workers in one block
    assert len(pods) == 17
    result = run("--nodes", nodes(tmp_path / "nodes.json"), "--levels", LEVELS, "--jobset", two_jobs("workers, ps"))
    assert result.returncode == 2 and '"ps" is not a replicated job of this JobSet' in result.stderr


def test_slices_above_the_required_level_are_bad_input(tmp_path):
    """As Kueue: a slice level above the PodSet's required level is an error
    (exit 2), not a refusal."""
    path = tmp_path / "js.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "bad"},
        "spec": {"replicatedJobs": [{"name": "w", "replicas": 2, "template": {"spec": {
            "parallelism": 2, "template": {
                "metadata": {"annotations": {api.KUEUE_ANNOTATION_REQUIRED: "rack",
                                             api.KUEUE_ANNOTATION_SLICE: "block",
                                             api.KUEUE_ANNOTATION_SLICE_SIZE: "2"}},
                "spec": {"containers": [{"name": "c"}]}}}}}]}}))
    result = run("--nodes", nodes(tmp_path / "nodes.json"), "--levels", LEVELS, "--jobset", path)
    assert result.returncode == 2
    assert "the slice topology block is above the topology rack of the replicated job" in result.stderr



CASES = ROOT / "topology" / "placement-cases"


def run_case(name, *extra):
    """A case of ../shared/placement-cases, copied into topology/placement-cases:
    its command, run in its folder (the first word is the CLI)."""
    folder = CASES / name
    argv = (folder / "cmd.txt").read_text().split()
    assert argv[0] == "muster-topology", argv
    if "--output" in argv and "--output" in extra:
        del argv[argv.index("--output"):argv.index("--output") + 2]
    return subprocess.run([str(CLI), *argv[1:], *extra], cwd=folder, capture_output=True, text=True)


def test_case_r6_slice_layers_of_size_1_are_placed_as_kueue_accepts_them():
    """R6: podset-slice-required-topology-constraints [{rack,1},{hostname,1}]
    (sizes that divide their parent, as Kueue validates) was refused, exit 1,
    "inner slices need outer slices": a request check reported as a refusal.
    A layer of size 1 asks nothing (a pod is on one node); it is placed."""
    done = run_case("R6-refused-outer-slice-size-1")
    assert done.returncode == 0, done.stdout + done.stderr
    answer = json.loads(done.stdout)
    assert answer["placed"] is True and len(answer["pods"]) == 1, answer


def test_case_k1_a_group_with_slices_is_placed_as_kueues_table_places_it():
    """K1: podset-group-name with slices was refused ("Kueue forbids it"),
    exit 2; Kueue's scheduler places such PodSets (its test table's "find
    topology assignment for sliced grouped podsets"). The leader and the 8
    workers share one rack, the workers two by two on a host."""
    done = run_case("K1-kueue-table-group-with-slices-rejected", "--output", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    answer = json.loads(done.stdout)
    assert answer["placed"] is True, answer
    racks = {p["domain"].split("/")[0] for p in answer["pods"]}
    assert len(racks) == 1 and len(answer["pods"]) == 9, answer["pods"]
    per_host = {}
    for p in answer["pods"]:
        if p["replicatedJob"] == "workers":
            per_host[p["domain"]] = per_host.get(p["domain"], 0) + 1
    assert sum(per_host.values()) == 8 and all(n % 2 == 0 for n in per_host.values()), per_host


def test_cases_r1_r2_a_hard_tier_never_takes_a_node_listed_directly_in_a_higher_one():
    """R1: 1-pod Volcano partitions under a hard highestTierAllowed 1 were put
    on hs0x-2, a Node listed directly in tier-2 s0; R2: a JobSet held to tier
    2 was put on hc0x-6, directly in tier-3 c0. Such a Node is in no HyperNode
    of the lower tier: every pod must be inside one (tier-1 HyperNodes are
    l*, tier-2 ones s*)."""
    for name, inside in (("R1-invalid-hn-partition-size1-on-bare-node", "l"),
                         ("R2-invalid-hn-jobset-tier-on-bare-node", "s")):
        done = run_case(name)
        assert done.returncode == 0, (name, done.stdout + done.stderr)
        answer = json.loads(done.stdout)
        assert answer["placed"] is True and answer["pods"], (name, answer)
        for pod in answer["pods"]:
            assert any(part.startswith(inside) for part in pod["domain"].split("/")), (name, pod)


def test_case_r4_a_tier_1_hypernode_under_a_tier_3_one_is_within_a_limit_of_tier_2():
    """R4: 3 Jobs of 1 pod under a hard highestTierAllowed 2 were refused
    ("tier 2: at most 0 of 1 pods fit in any one domain"): only tier-2 s3 (2
    free) was considered, not the tier-1 HyperNodes l1 and l5 that hang
    directly under tier-3 ones. Volcano: the highest tier a job may cross; a
    tier-1 HyperNode is within it whatever its parent's tier. Every pod is
    placed inside a HyperNode of tier 1 or 2 (l* or s*)."""
    done = run_case("R4-false-refusal-hn-skipped-tier-highestTierAllowed")
    assert done.returncode == 0, done.stdout + done.stderr
    answer = json.loads(done.stdout)
    assert answer["placed"] is True and len(answer["pods"]) == 3, answer
    for pod in answer["pods"]:
        assert any(part[0] in "ls" for part in pod["domain"].split("/")), pod


def test_a_request_the_placement_cannot_take_is_bad_input_not_a_refusal(tmp_path):
    """R6's second half: a request problem (two replicated jobs of one
    podset-group-name with different levels, one preferred, one required)
    exits 2, bad input, never 1, the cluster's refusal."""
    def job(name, annotation):
        return {"name": name, "replicas": 1, "template": {"spec": {
            "parallelism": 2, "completions": 2, "template": {
                "metadata": {"annotations": {annotation: "rack", api.KUEUE_ANNOTATION_GROUP: "g"}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}}}
    body = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "train"},
            "spec": {"replicatedJobs": [job("a", api.KUEUE_ANNOTATION_PREFERRED),
                                        job("b", api.KUEUE_ANNOTATION_REQUIRED)]}}
    (tmp_path / "js.yaml").write_text(yaml.safe_dump(body))
    result = run("--nodes", nodes(tmp_path / "nodes.json"), "--levels", LEVELS, "--jobset", tmp_path / "js.yaml")
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "request: co-placed replicated jobs a and b need equal replicas and an equal topology constraint" \
        in result.stdout + result.stderr


def quantity(text):
    """A Kubernetes quantity as the cases write them (m, Mi, Gi, plain)."""
    for suffix, scale in (("m", 0.001), ("Ki", 2 ** 10), ("Mi", 2 ** 20), ("Gi", 2 ** 30)):
        if text.endswith(suffix):
            return float(text[:-len(suffix)]) * scale
    return float(text)


def check_capacity(folder, answer):
    """Every placed pod on a node with room: cpu, memory and pods per node,
    with what the case's running pods use, never above allocatable."""
    nodes = {n["metadata"]["name"]: n for n in json.loads((folder / "nodes.json").read_text())["items"]}
    free = {name: {r: quantity(v) for r, v in n["status"]["allocatable"].items()} for name, n in nodes.items()}
    for pod in json.loads((folder / "pods.json").read_text())["items"]:
        left = free[pod["spec"]["nodeName"]]
        left["pods"] = left.get("pods", 110) - 1
        for c in pod["spec"]["containers"]:
            for r, v in c["resources"]["requests"].items():
                left[r] = left.get(r, 0) - quantity(v)
    jobset = json.loads((folder / "jobset.json").read_text())
    requests = {rj["name"]: rj["template"]["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
                for rj in jobset["spec"]["replicatedJobs"]}
    for pod in answer["pods"]:
        if "node" not in pod:
            continue
        left = free[pod["node"]]
        left["pods"] = left.get("pods", 110) - 1
        for r, v in requests[pod["replicatedJob"]].items():
            left[r] = left.get(r, 0) - quantity(v)
    for name, left in free.items():
        assert all(v >= 0 for v in left.values()), (name, left)


def placed_case(name):
    done = run_case(name)
    assert done.returncode == 0, (name, done.stdout + done.stderr)
    answer = json.loads(done.stdout)
    assert answer["placed"] is True, answer
    assert all("node" in pod for pod in answer["pods"]), answer  # every pod, no partition left out
    check_capacity(CASES / name, answer)
    return answer


def test_case_r3_an_exclusive_job_under_a_deeper_jobset_level_is_placed(tmp_path):
    """R3: one Job, exclusive per block (its Job template), the JobSet held to
    one rack: refused ("rack: no one domain holds the whole JobSet"), since
    the search refused every JobSet domain deeper than an exclusive level.
    One Job alone in a rack of an empty block keeps both; it is placed. With
    two Jobs no cluster can keep both (one rack holds both, each wants its
    block alone): a request problem, exit 2, with the cause."""
    answer = placed_case("R3-false-refusal-exclusive-under-deeper-jobset-level")
    assert [p["domain"] for p in answer["pods"]] == ["z0/b1/r2/n0122"], answer
    folder = tmp_path / "two"
    subprocess.run(["cp", "-r", str(CASES / "R3-false-refusal-exclusive-under-deeper-jobset-level"), str(folder)],
                   check=True)
    jobset = json.loads((folder / "jobset.json").read_text())
    jobset["spec"]["replicatedJobs"][0]["replicas"] = 2
    (folder / "jobset.json").write_text(json.dumps(jobset))
    argv = (folder / "cmd.txt").read_text().split()
    done = subprocess.run([str(CLI), *argv[1:]], cwd=folder, capture_output=True, text=True)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "request: replicated job rj0 is exclusive per block" in done.stdout + done.stderr
    assert "puts all 2 of its Jobs in one rack" in done.stdout + done.stderr


def test_case_r5_a_later_slice_gets_the_node_another_spread_leaves_whole():
    """R5: rj0 (3 pods, Volcano hard tier 3 = one block) took n1010 first and
    rj2's hostname slice of 4 found no node ("at most 0 of 4 pods fit in
    whole slices of 4"): the search did not try another spread inside the
    domain. rj2's 4 pods on n1010, rj0 in block b0 around them."""
    answer = placed_case("R5-false-refusal-one-shape-search-within-domain")
    rj2 = [p for p in answer["pods"] if p["replicatedJob"] == "rj2"]
    rj0 = [p for p in answer["pods"] if p["replicatedJob"] == "rj0"]
    assert len(rj2) == 4 and {p["node"] for p in rj2} == {"n1010"}, rj2
    assert len(rj0) == 3 and {p["domain"].split("/")[1] for p in rj0} == {"b0"}, rj0


def test_case_r7_every_partition_is_placed_when_a_full_placement_exists():
    """R7: "rj0-1: 1 of 2 pods placed (minPartitions)" though all 7 pods fit
    (leaf l2 has room for 6, l1 for 1): the full pass did not try another
    spread, so the reduced pass ran. Every pod placed inside spine s0 (hard
    highestTierAllowed 2), rj1's 3 pods in one leaf (its slice)."""
    answer = placed_case("R7-partial-when-full-fits-one-shape-hn")
    assert len(answer["pods"]) == 7, answer
    assert all(p["domain"].startswith("s0/") for p in answer["pods"]), answer
    assert len({p["domain"] for p in answer["pods"] if p["replicatedJob"] == "rj1"}) == 1, answer


def test_case_d1_mixed_shapes_with_slices_are_packed_exactly():
    """D1 (once a documented limit): mixed pod shapes with slices were refused
    ("at most 1 of 2 pods fit in the cluster") though an exact packing
    exists; the node-level search now covers slices. All 7 pods placed."""
    answer = placed_case("D1-documented-limit-mixed-shapes-refusal")
    assert len(answer["pods"]) == 7, answer


def test_case_d2_no_partition_is_left_out_when_all_fit():
    """D2 (once a documented limit): "rj1-0: 1 of 2 pods placed
    (minPartitions)" though every partition fits. Every pod placed, rj1's
    two partitions each on one host (hard highestTierAllowed 1)."""
    done = run_case("D2-documented-limit-partial-when-full-fits", "--output", "text")
    assert done.returncode == 0 and "(not placed)" not in done.stdout and "minPartitions" not in done.stdout, \
        done.stdout + done.stderr
    answer = placed_case("D2-documented-limit-partial-when-full-fits")
    assert len(answer["pods"]) == 5, answer


def test_a_job_places_min_of_parallelism_and_completions_pods(tmp_path):
    """L4: a Job's PodSet count is its parallelism capped by its completions
    (Kueue's batch Job podset count); the CLI places that many pods per Job,
    whichever of the two is smaller, and refuses neither."""
    for parallelism, completions, expect in ((3, 2, 2), (2, 5, 2), (4, 4, 4)):
        body = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "train"},
                "spec": {"replicatedJobs": [{"name": "w", "replicas": 2, "template": {"spec": {
                    "parallelism": parallelism, "completions": completions, "completionMode": "Indexed",
                    "template": {
                        "metadata": {"annotations": {api.KUEUE_ANNOTATION_SLICE: "rack",
                                                     api.KUEUE_ANNOTATION_SLICE_SIZE: str(expect)}},
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}}}]}}
        (tmp_path / "js.yaml").write_text(yaml.safe_dump(body))
        result = run("--nodes", nodes(tmp_path / "nodes.json"), "--levels", LEVELS, "--jobset", tmp_path / "js.yaml",
                     "--output", "json")
        assert result.returncode == 0, (parallelism, completions, result.stdout, result.stderr)
        pods = json.loads(result.stdout)["pods"]
        for job in (0, 1):
            mine = sorted(p["completionIndex"] for p in pods if p["jobIndex"] == job)
            assert mine == list(range(expect)), (parallelism, completions, pods)


# Kueue's balanced placement (TASBalancedPlacement): cases of its scheduler
# test table (pkg/cache/scheduler/tas_cache_test.go, "balanced placement; ...")
# and of its KEP's table, the GPU count of each host as its CPUs; the pods
# per host must be Kueue's expected assignment exactly.
KUEUE_3 = "block,rack,kubernetes.io/hostname"
KUEUE_4 = "block,subblock,rack,kubernetes.io/hostname"
BALANCED = [
    # name, levels, hosts (label values top down, GPUs), pods, preferred, slice (size, level), Kueue's answer
    ("basic", KUEUE_3, [("b1/r1/x1", 15), ("b1/r2/x2", 15)], 25, "rack", None, {"x1": 13, "x2": 12}),
    ("select optimal set of domains", KUEUE_3, [("b1/r1/x1", 15), ("b1/r1/x2", 13), ("b1/r1/x3", 10)], 23,
     "rack", None, {"x1": 12, "x2": 11}),
    ("select optimal set of domains; with slices", KUEUE_3,
     [("b1/r1/x1", 20), ("b1/r1/x2", 15), ("b1/r1/x3", 10)], 25, "rack", (5, "kubernetes.io/hostname"),
     {"x2": 15, "x3": 10}),
    ("select correct block", KUEUE_3, [("b1/r1/x1", 20), ("b1/r1/x2", 10), ("b2/r2/x3", 15), ("b2/r2/x4", 15)],
     22, "rack", None, {"x3": 11, "x4": 11}),
    ("KEP table: the request fits one rack", KUEUE_3,
     [("b1/r1/x1", 20), ("b1/r1/x2", 10), ("b2/r2/x3", 15), ("b2/r2/x4", 15)], 20, "rack", None, {"x1": 20}),
    ("cannot chose domains from different blocks", KUEUE_3,
     [("b1/r1/x1", 14), ("b1/r1/x2", 11), ("b2/r2/x3", 15), ("b2/r2/x4", 10)], 25, "rack", None,
     {"x1": 14, "x2": 11}),
    ("select correct block; prefer blocks with single rack; with slices", KUEUE_3,
     [("b1/r1/x1", 15), ("b1/r2/x2", 15), ("b1/r3/x3", 15), ("b1/r3/x4", 15)], 25, "rack",
     (5, "kubernetes.io/hostname"), {"x3": 15, "x4": 10}),
    ("four level topology; slice two levels below balanced level", KUEUE_4,
     [("b1/sb1/r1/x1", 18), ("b1/sb1/r2/x2", 8), ("b1/sb2/r3/x3", 15), ("b1/sb2/r4/x4", 9),
      ("b1/sb2/r4/x5", 7)], 20, "subblock", (2, "kubernetes.io/hostname"), {"x3": 10, "x4": 8, "x5": 2}),
    ("four level topology; slice one level below balanced level", KUEUE_4,
     [("b1/sb1/r1/x1", 18), ("b1/sb1/r2/x2", 8), ("b1/sb2/r3/x3", 15), ("b1/sb2/r4/x4", 9),
      ("b1/sb2/r4/x5", 7)], 20, "subblock", (2, "rack"), {"x3": 10, "x4": 3, "x5": 7}),
    ("four level topology; balance on rack level; slice not on the lowest level", KUEUE_4,
     [("b1/sb1/r1/x1", 18), ("b1/sb1/r2/x2", 8), ("b1/sb2/r3/x3", 15), ("b1/sb2/r4/x4", 15)], 20, "subblock",
     (2, "rack"), {"x3": 10, "x4": 10}),
    ("three level topology; balance on the same level as slice", KUEUE_3,
     [("b1/r1/x1", 15), ("b1/r1/x2", 13), ("b1/r1/x3", 10), ("b1/r2/x4", 20), ("b1/r2/x5", 8)], 22,
     "kubernetes.io/hostname", (2, "kubernetes.io/hostname"), {"x2": 12, "x3": 10}),
    ("three level topology; balance on the lowest level", KUEUE_3,
     [("b1/r1/x1", 20), ("b1/r1/x2", 8), ("b1/r2/x3", 15), ("b1/r2/x4", 13), ("b1/r2/x5", 10)], 22,
     "kubernetes.io/hostname", None, {"x3": 11, "x4": 11}),
    ("prioritize (using entropy) balanced domains; second rack wins", KUEUE_3,
     [("b1/r1/x1", 10), ("b1/r1/x2", 5), ("b1/r2/x3", 5), ("b1/r2/x4", 5), ("b1/r2/x5", 5)], 15, "rack", None,
     {"x3": 5, "x4": 5, "x5": 5}),
    ("prioritize (using entropy) balanced domains; first rack wins", KUEUE_3,
     [("b1/r1/x1", 8), ("b1/r1/x2", 8), ("b1/r1/x3", 8), ("b1/r2/x4", 16), ("b1/r2/x5", 8)], 24, "rack", None,
     {"x1": 8, "x2": 8, "x3": 8}),
    ("two level topology; balance on the highest level", "rack,kubernetes.io/hostname",
     [("r1/x1", 21), ("r1/x2", 9), ("r2/x3", 11), ("r2/x4", 10), ("r2/x5", 10)], 23, "rack", None,
     {"x1": 12, "x3": 11}),
    ("select correct block taking into account pruning", KUEUE_3,
     [("b1/r1/x1", 5), ("b1/r1/x2", 5), ("b1/r2/x3", 5), ("b1/r2/x4", 5), ("b2/r3/x5", 10), ("b2/r3/x6", 4),
      ("b2/r3/x7", 4), ("b2/r3/x8", 4), ("b2/r4/x9", 5), ("b2/r5/x10", 5)], 20, "rack", None,
     {"x1": 5, "x2": 5, "x3": 5, "x4": 5}),
]


def balanced_run(tmp_path, levels, hosts, count, preferred, slices, balanced, layers=None):
    """Pods per host of `count` pods preferring `preferred`; `slices` is
    (size, level) of one layer, `layers` [(level, size), ...] of several."""
    names = levels.split(",")
    items = [{"metadata": {"name": path.rsplit("/", 1)[1], "labels": dict(zip(names, path.split("/")))},
              "status": {"allocatable": {"cpu": str(gpus), "memory": "64Gi", "pods": "110"}}}
             for path, gpus in hosts]
    (tmp_path / "nodes.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    annotations = {api.KUEUE_ANNOTATION_PREFERRED: preferred}
    if slices:
        annotations[api.KUEUE_ANNOTATION_SLICE_SIZE] = str(slices[0])
        annotations[api.KUEUE_ANNOTATION_SLICE] = slices[1]
    if layers:
        annotations[api.KUEUE_ANNOTATION_SLICE_CONSTRAINTS] = json.dumps(
            [{"topology": level, "size": size} for level, size in layers])
    metadata = {"name": "train"}
    if balanced is not None:
        metadata["annotations"] = {api.ANNOTATION_TOPOLOGY_BALANCED: balanced}
    (tmp_path / "js.yaml").write_text(yaml.safe_dump({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": metadata,
        "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {
            "parallelism": count, "completions": count, "template": {
                "metadata": {"annotations": annotations},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}}}]}}))
    result = run("--nodes", tmp_path / "nodes.json", "--levels", levels, "--jobset", tmp_path / "js.yaml",
                 "--output", "json")
    if result.returncode != 0:
        return result
    per_host = {}
    for pod in json.loads(result.stdout)["pods"]:
        host = pod["domain"].rsplit("/", 1)[-1]
        per_host[host] = per_host.get(host, 0) + 1
    return per_host


def test_balanced_placement_gives_kueues_assignment_in_each_case_of_its_table(tmp_path):
    for name, levels, hosts, count, preferred, slices, want in BALANCED:
        got = balanced_run(tmp_path, levels, hosts, count, preferred, slices, "true")
        assert got == want, (name, got)


def test_balanced_placement_of_two_slice_layers_follows_kueues_code(tmp_path):
    """Slices of 4 per rack, of 2 per host, 16 pods preferring a block
    (no case of Kueue's table has both; traced through its code: the hosts
    counted in whole inner slices, b0/r0's 3 + 5 as 2 + 4, one slice; two
    racks of 3 slices give T = 2; b0/r0 pruned below it; 2 slices in b0/r1
    and in b1/r0, each 6 + 2 over its hosts). Without the annotation the
    packed placement, b0 whole."""
    hosts = [("b0/r0/h1", 3), ("b0/r0/h2", 5), ("b0/r1/h3", 6), ("b0/r1/h4", 6),
             ("b1/r0/h5", 6), ("b1/r0/h6", 6)]
    layers = [("rack", 4), ("kubernetes.io/hostname", 2)]
    got = balanced_run(tmp_path, KUEUE_3, hosts, 16, "block", None, "true", layers)
    assert got == {"h3": 6, "h4": 2, "h5": 6, "h6": 2}, got
    packed = balanced_run(tmp_path, KUEUE_3, hosts, 16, "block", None, None, layers)
    assert set(packed) <= {"h1", "h2", "h3", "h4"} and sum(packed.values()) == 16, packed


def test_balanced_placement_is_opt_in(tmp_path):
    """Without the annotation, or with "false", the placement packs as
    before: 25 pods on two hosts of 15 are 15 + 10, not Kueue's balanced 13 + 12."""
    hosts = [("b1/r1/x1", 15), ("b1/r2/x2", 15)]
    for balanced in (None, "false"):
        assert balanced_run(tmp_path, KUEUE_3, hosts, 25, "rack", None, balanced) == {"x1": 15, "x2": 10}
    result = balanced_run(tmp_path, KUEUE_3, hosts, 25, "rack", None, "yes")
    assert result.returncode == 2
    assert f'{api.ANNOTATION_TOPOLOGY_BALANCED}: "yes" is not "true" or "false"' in result.stdout + result.stderr


# Kueue's preferred node affinity (TASRespectNodeAffinityPreferred): the
# cases of its scheduler test table (kubernetes-sigs/kueue,
# pkg/cache/scheduler/tas_cache_test.go, TestFindTopologyAssignments, the
# eleven whose pod template has preferredDuringSchedulingIgnoredDuringExecution),
# nodes, pods and expected assignment as Kueue's table has them.
RACK, BLOCK, ZONE = "cloud.com/topology-rack", "cloud.com/topology-block", "cloud.com/topology-zone"
SWITCH, HOST = "cloud.com/topology-switch", "kubernetes.io/hostname"


def host(name, cpu, **labels):
    """A node of Kueue's table with `cpu` CPUs; its hostname label is its name."""
    return {"name": name, "labels": labels, "allocatable": {"cpu": str(cpu), "pods": "10"}}


def term(weight, key, *values):
    return {"weight": weight, "preference": {"matchExpressions": [{"key": key, "operator": "In",
                                                                   "values": list(values)}]}}


def podset(name, count, annotations, requests=None, preferred=None, required=None):
    return {"name": name, "count": count, "annotations": annotations, "requests": requests or {"cpu": "1"},
            "preferred": preferred, "required": required}


FLAT_5 = [host("node-1-pref-2", 2, type="preferred"), host("node-2-pref-1", 1, type="preferred"),
          host("node-3-nonpref-2", 2)]
FLAT_2X2 = [host("node-1-pref-2", 2, type="preferred"), host("node-2-pref-1", 1, type="preferred"),
            host("node-3-nonpref-2a", 2), host("node-4-nonpref-2b", 2), host("node-5-nonpref-1", 1)]
PREFER_TYPE = [term(10, "type", "preferred")]
WEST = [term(10, "region", "us-west")]
SLICE_HOST_2 = {api.KUEUE_ANNOTATION_SLICE: HOST, api.KUEUE_ANNOTATION_SLICE_SIZE: "2"}
LWS = {api.KUEUE_ANNOTATION_PREFERRED: ZONE, api.KUEUE_ANNOTATION_SLICE: HOST, api.KUEUE_ANNOTATION_SLICE_SIZE: "1",
       api.KUEUE_ANNOTATION_GROUP: "llm-group"}
GPU_NODE = {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "8", "pods": "10"}
PREFERRED_AFFINITY = [
    # Kueue's test name, levels, nodes, pod sets, Kueue's assignment per pod set
    ("with preferred affinity", [RACK, HOST],
     [host("node-preferred", 1, **{RACK: "rack-preferred", "region": "us-west"}),
      host("node-other", 1, **{RACK: "rack-other", "region": "us-east"})],
     [podset("main", 1, {api.KUEUE_ANNOTATION_PREFERRED: RACK}, preferred=WEST)],
     {"main": {"node-preferred": 1}}),
    ("with required and preferred affinity", [RACK, HOST],
     [host("node-preferred", 1, **{RACK: "rack-preferred", "region": "us-west", "zone": "us"}),
      host("node-other", 1, **{RACK: "rack-other", "region": "us-east", "zone": "us"}),
      host("node-excluded", 1, **{RACK: "rack-excluded", "region": "us-west", "zone": "eu"})],
     [podset("main", 1, {api.KUEUE_ANNOTATION_PREFERRED: RACK}, preferred=WEST,
             required={"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In",
                                                                    "values": ["us"]}]}]})],
     {"main": {"node-preferred": 1}}),
    ("with multiple preferred affinities", [BLOCK, RACK, HOST],
     [host("node-a", 1, **{BLOCK: "b1", RACK: "r1"}), host("node-b", 1, **{BLOCK: "b1", RACK: "r2"}),
      host("node-c", 1, **{BLOCK: "b2", RACK: "r1"})],
     [podset("main", 1, {api.KUEUE_ANNOTATION_PREFERRED: RACK},
             preferred=[term(10, BLOCK, "b1"), term(100, RACK, "r1")])],
     {"main": {"node-a": 1}}),
    ("affinity takes precedence over best fit", [HOST],
     [host("node-better-fit", 8, region="us-east"), host("node-has-affinity", 2, region="us-west")],
     [podset("main", 1, {api.KUEUE_ANNOTATION_PREFERRED: HOST}, preferred=WEST)],
     {"main": {"node-has-affinity": 1}}),
    ("affinity ordering with required topology level chooses secondary domain if primary is too small",
     [RACK, HOST],
     [host("node-preferred-small", 2, **{RACK: "rack-preferred", "region": "us-west"}),
      host("node-secondary-large-1", 4, **{RACK: "rack-secondary", "region": "us-east"}),
      host("node-secondary-large-2", 4, **{RACK: "rack-secondary", "region": "us-east"})],
     [podset("main", 4, {api.KUEUE_ANNOTATION_REQUIRED: RACK}, preferred=WEST)],
     {"main": {"node-secondary-large-1": 4}}),
    ("affinity ordering with preferred inner topology level bubbles up to parent level to avoid splitting "
     "across parent domains", [RACK, SWITCH, HOST],
     [host("node-preferred-small", 2, **{RACK: "r1", SWITCH: "s1", "region": "us-west"}),
      host("node-secondary-large", 4, **{RACK: "r1", SWITCH: "s2", "region": "us-east"})],
     [podset("main", 4, {api.KUEUE_ANNOTATION_PREFERRED: SWITCH}, preferred=WEST)],
     {"main": {"node-preferred-small": 2, "node-secondary-large": 2}}),
    ("flat topology, preferred mode, size 5 pods x 1", [HOST], FLAT_5 + [host("node-4-nonpref-1", 1)],
     [podset("main", 5, {api.KUEUE_ANNOTATION_PREFERRED: HOST}, preferred=PREFER_TYPE)],
     {"main": {"node-1-pref-2": 2, "node-2-pref-1": 1, "node-3-nonpref-2": 2}}),
    ("flat topology, unconstrained mode, size 5 pods x 1", [HOST],
     FLAT_5 + [host("node-4-nonpref-1a", 1), host("node-5-nonpref-1b", 1)],
     [podset("main", 5, {api.KUEUE_ANNOTATION_UNCONSTRAINED: "true"}, preferred=PREFER_TYPE)],
     {"main": {"node-1-pref-2": 2, "node-2-pref-1": 1, "node-4-nonpref-1a": 1, "node-5-nonpref-1b": 1}}),
    ("flat topology, preferred mode, size 2 pods x 2", [HOST], FLAT_2X2,
     [podset("main", 4, {api.KUEUE_ANNOTATION_PREFERRED: HOST, **SLICE_HOST_2}, preferred=PREFER_TYPE)],
     {"main": {"node-1-pref-2": 2, "node-3-nonpref-2a": 2}}),
    ("flat topology, unconstrained mode, size 2 pods x 2", [HOST], FLAT_2X2,
     [podset("main", 4, {api.KUEUE_ANNOTATION_UNCONSTRAINED: "true", **SLICE_HOST_2}, preferred=PREFER_TYPE)],
     {"main": {"node-1-pref-2": 2, "node-3-nonpref-2a": 2}}),
    ("LWS with leader and workers; preferred affinity on workers; leader cannot fit on preferred zone",
     [ZONE, HOST],
     [{"name": "us-west-1", "labels": {ZONE: "us-west"}, "allocatable": GPU_NODE},
      {"name": "us-west-2", "labels": {ZONE: "us-west"}, "allocatable": GPU_NODE},
      {"name": "us-east-1", "labels": {ZONE: "us-east"},
       "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "10"}}],
     [podset("leader", 1, LWS, {"cpu": "16", "memory": "64Gi"}),
      podset("workers", 2, LWS, {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": "8"},
             preferred=[term(10, ZONE, "us-west")])],
     {"leader": {"us-east-1": 1}, "workers": {"us-west-1": 1, "us-west-2": 1}}),
]


def affinity_run(tmp_path, levels, hosts, podsets):
    """The placement of Kueue's pod sets (each a replicated job of one Job
    of `count` pods), as pods per node per pod set."""
    items = [{"metadata": {"name": h["name"], "labels": {**h["labels"], HOST: h["name"]}},
              "status": {"allocatable": h["allocatable"]}} for h in hosts]
    (tmp_path / "nodes.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    jobs = []
    for ps in podsets:
        spec = {"containers": [{"name": "c", "resources": {"requests": ps["requests"]}}]}
        affinity = {}
        if ps["preferred"]:
            affinity["preferredDuringSchedulingIgnoredDuringExecution"] = ps["preferred"]
        if ps["required"]:
            affinity["requiredDuringSchedulingIgnoredDuringExecution"] = ps["required"]
        if affinity:
            spec["affinity"] = {"nodeAffinity": affinity}
        jobs.append({"name": ps["name"], "replicas": 1, "template": {"spec": {
            "parallelism": ps["count"], "completions": ps["count"], "template": {
                "metadata": {"annotations": ps["annotations"]}, "spec": spec}}}})
    (tmp_path / "js.yaml").write_text(yaml.safe_dump({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "train"},
        "spec": {"replicatedJobs": jobs}}))
    result = run("--nodes", tmp_path / "nodes.json", "--levels", ",".join(levels), "--jobset", tmp_path / "js.yaml",
                 "--output", "json")
    if result.returncode != 0:
        return result.stdout + result.stderr
    placed = {}
    for pod in json.loads(result.stdout)["pods"]:
        per_node = placed.setdefault(pod["replicatedJob"], {})
        per_node[pod["node"]] = per_node.get(pod["node"], 0) + 1
    return placed


@pytest.mark.parametrize("name, levels, hosts, podsets, want", PREFERRED_AFFINITY,
                         ids=[case[0] for case in PREFERRED_AFFINITY])
def test_preferred_node_affinity_gives_kueues_assignment(tmp_path, name, levels, hosts, podsets, want):
    assert affinity_run(tmp_path, levels, hosts, podsets) == want, name


def test_preferred_node_affinity_weights_are_checked(tmp_path):
    """A weight outside 1 to 100 (the API server's range) is bad input, exit 2, naming the field."""
    hosts = [host("n1", 1)]
    for weight, words in ((0, "weight: 0 (1 to 100)"), (101, "weight")):
        result = affinity_run(tmp_path, [HOST], hosts, [podset("main", 1, {}, preferred=[term(weight, "a", "b")])])
        assert isinstance(result, str) and words in result, result
        assert "preferredDuringSchedulingIgnoredDuringExecution[0].weight" in result


# Kueue's balanced cases with a leader: a leader PodSet of one pod and the
# workers in one podset-group-name (Kueue places them as one request with
# one leader); the pods per host of each, as Kueue's table expects them.
# The leader's slice topology (hostname, no size) of the table is left out:
# Kueue's webhook asks for a size with it, and Kueue's group placement reads
# the workers' topology request only.
BALANCED_LEADER = [
    # name, hosts, leader GPUs, workers, worker slices, preferred, Kueue's leader and workers
    ("leader worker set", [("b1/r1/x1", 20), ("b1/r1/x2", 15), ("b1/r1/x3", 12)], 1, 25,
     (5, "kubernetes.io/hostname"), "rack", {"x3": 1}, {"x2": 15, "x3": 10}),
    ("should not prune domain", [("b1/r1/x1", 6), ("b1/r1/x2", 5)], 1, 10, None, "rack", {"x1": 1},
     {"x1": 5, "x2": 5}),
    ("leader worker set does not reserve leader space on every node", [("b1/r1/x1", 7), ("b1/r1/x2", 5)], 1, 10,
     None, "rack", {"x1": 1}, {"x1": 5, "x2": 5}),
    ("fallback to BestFit when leader worker set cannot meet threshold",
     [("b1/r1/x1", 3), ("b1/r2/x2", 3), ("b1/r3/x3", 8), ("b2/r1/x4", 11)], 5, 7, None, "block", {"x3": 1},
     {"x1": 3, "x2": 1, "x3": 3}),
]


def balanced_leader_run(tmp_path, hosts, leader_gpus, workers, slices, preferred):
    names = KUEUE_3.split(",")
    items = [{"metadata": {"name": path.rsplit("/", 1)[1], "labels": dict(zip(names, path.split("/")))},
              "status": {"allocatable": {"cpu": str(gpus), "memory": "64Gi", "pods": "110"}}}
             for path, gpus in hosts]
    (tmp_path / "nodes.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))

    def job(name, count, cpu, annotations):
        annotations = {api.KUEUE_ANNOTATION_PREFERRED: preferred, api.KUEUE_ANNOTATION_GROUP: "sameGroup",
                       **annotations}
        return {"name": name, "replicas": 1, "template": {"spec": {
            "parallelism": count, "completions": count, "template": {
                "metadata": {"annotations": annotations},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}}}

    worker_annotations = {}
    if slices:
        worker_annotations = {api.KUEUE_ANNOTATION_SLICE_SIZE: str(slices[0]), api.KUEUE_ANNOTATION_SLICE: slices[1]}
    (tmp_path / "js.yaml").write_text(yaml.safe_dump({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "train", "annotations": {api.ANNOTATION_TOPOLOGY_BALANCED: "true"}},
        "spec": {"replicatedJobs": [
            job("leader", 1, leader_gpus, {}),
            job("workers", workers, 1, worker_annotations)]}}))
    result = run("--nodes", tmp_path / "nodes.json", "--levels", KUEUE_3, "--jobset", tmp_path / "js.yaml",
                 "--output", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    per_host = {"leader": {}, "workers": {}}
    for pod in json.loads(result.stdout)["pods"]:
        host = pod["domain"].rsplit("/", 1)[-1]
        mine = per_host[pod["replicatedJob"]]
        mine[host] = mine.get(host, 0) + 1
    return per_host


def test_balanced_placement_with_a_leader_gives_kueues_assignment_in_each_case_of_its_table(tmp_path):
    wrong = []
    for name, hosts, leader_gpus, workers, slices, preferred, leader, want in BALANCED_LEADER:
        got = balanced_leader_run(tmp_path, hosts, leader_gpus, workers, slices, preferred)
        if got != {"leader": leader, "workers": want}:
            wrong.append((name, got))
    assert not wrong, wrong


def test_a_jobset_preferring_a_rack_no_rack_holds_stays_in_one_block(tmp_path):
    """A JobSet-wide preferred level that no domain meets is met as Kueue
    meets a preferred level: the level nearest it that holds the JobSet.
    Three replicated jobs of one one-pod Job each (three PodSets) prefer a
    block, the JobSet a rack; no rack holds 3, block b1 holds 4 (1 + 1 and
    2 + 0). muster used to keep Kueue's own placement of the Jobs (n1 in b0,
    n4 and n5 in b1), since neither met the rack; now all three stay in b1."""
    free = [0, 1, 0, 0, 1, 1, 2, 0]
    items = [{"metadata": {"name": f"n{i}", "labels": {"block": f"b{i // 4}", "rack": f"b{i // 4}r{i // 2 % 2}",
                                                      "kubernetes.io/hostname": f"n{i}"}},
              "status": {"allocatable": {"cpu": str(cpu), "memory": "64Gi", "pods": "110"}}}
             for i, cpu in enumerate(free)]
    (tmp_path / "nodes.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    (tmp_path / "js.yaml").write_text(yaml.safe_dump({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "train", "annotations": {api.ANNOTATION_TOPOLOGY_PREFERRED: "rack"}},
        "spec": {"replicatedJobs": [{"name": name, "replicas": 1, "template": {"spec": {
            "parallelism": 1, "completions": 1, "template": {
                "metadata": {"annotations": {api.KUEUE_ANNOTATION_PREFERRED: "block"}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}}}
            for name in ("a", "b", "c")]}}))
    result = run("--nodes", tmp_path / "nodes.json", "--levels", LEVELS, "--jobset", tmp_path / "js.yaml",
                 "--output", "json")
    assert result.returncode == 0
    domains = [pod["domain"] for pod in json.loads(result.stdout)["pods"]]
    assert len(domains) == 3 and all(d.startswith("b1/") for d in domains), domains
