"""`make images` (images/images.sh, images/oci_image.py): reproducible OCI
archives with exactly the files each image needs, muster's three as image
indexes of an amd64 and an arm64 image, and the Dockerfile's staging step
(--rootfs) giving the same files. No cluster needed; the real nodes' tests
(test_real_nodes.py) run these images."""

import hashlib
import json
import os
import subprocess
import tarfile

import pytest
from conftest import ROOT

IMAGES_SH = ROOT / "images" / "images.sh"
MUSTER_IMAGES = ("muster-barrier", "muster-webhook", "muster-controller")
INDEX_TYPE = "application/vnd.oci.image.index.v1+json"
MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
# What `file` says of each platform's ELF files.
ELF_MACHINE = {"amd64": "x86-64", "arm64": "ARM aarch64"}


def build(out, tag="test"):
    env = dict(os.environ, MUSTER_IMAGE_TAG=tag)
    subprocess.run(["bash", str(IMAGES_SH), str(out)], check=True, capture_output=True, env=env, timeout=300)
    return {line.split()[1]: line.split()[2] for line in (out / "images.txt").read_text().splitlines()}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One `images.sh` run shared by this file's tests: (its folder, its
    images.txt as {reference: digest})."""
    out = tmp_path_factory.mktemp("images") / "a"
    return out, build(out)


def blob(outer, descriptor):
    return outer.extractfile("blobs/sha256/" + descriptor["digest"].split(":")[1]).read()


def platform_manifests(archive):
    """{architecture: manifest descriptor} of an archive: its image index's
    entries, or its one manifest (amd64) when index.json names a manifest."""
    with tarfile.open(archive) as outer:
        (top,) = json.load(outer.extractfile("index.json"))["manifests"]
        if top["mediaType"] == MANIFEST_TYPE:
            return {"amd64": top}
        assert top["mediaType"] == INDEX_TYPE
        index = json.loads(blob(outer, top))
        return {m["platform"]["architecture"]: m for m in index["manifests"]}


def layer_files(archive, architecture="amd64"):
    """{path: (type, mode)} of the one layer of an image archive's image for
    architecture, and its config."""
    descriptor = platform_manifests(archive)[architecture]
    with tarfile.open(archive) as outer:
        manifest = json.loads(blob(outer, descriptor))
        config = json.loads(blob(outer, manifest["config"]))
        assert len(manifest["layers"]) == 1
        layer = outer.extractfile("blobs/sha256/" + manifest["layers"][0]["digest"].split(":")[1])
        with tarfile.open(fileobj=layer, mode="r:gz") as inner:
            files = {m.name: (m.type, m.mode, m.uid, m.gid, m.mtime) for m in inner.getmembers()}
    return files, config


def extract_layer(archive, architecture, into):
    """The regular files of an image's layer, written under into."""
    descriptor = platform_manifests(archive)[architecture]
    with tarfile.open(archive) as outer:
        manifest = json.loads(blob(outer, descriptor))
        layer = outer.extractfile("blobs/sha256/" + manifest["layers"][0]["digest"].split(":")[1])
        with tarfile.open(fileobj=layer, mode="r:gz") as inner:
            for member in inner.getmembers():
                if member.isfile():
                    path = into / member.name
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(inner.extractfile(member).read())
    return into


def loader_list(program, architecture):
    """The paths the program's loader lists (ldd; the arm64 loader under
    qemu-user for arm64)."""
    if architecture == "amd64":
        command = ["ldd", str(ROOT / "bin" / program)]
    else:
        command = ["qemu-aarch64-static", "/lib/ld-linux-aarch64.so.1", "--list", str(ROOT / "bin" / "arm64" / program)]
    listed = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return {part.lstrip("/") for line in listed.splitlines() for part in line.split() if part.startswith("/")}


def test_images_are_reproducible_and_hold_only_what_they_need(tmp_path, built):
    first = built[1]
    second = build(tmp_path / "b")
    assert first == second, "two runs gave different digests"
    assert sorted(r.split("/")[-1] for r in first) == ["busybox:1", "muster-barrier:test", "muster-controller:test",
                                                "muster-webhook:test", "pause:1"]

    for architecture in ("amd64", "arm64"):
        barrier, config = layer_files(built[0] / "muster-barrier.tar", architecture)
        assert set(barrier) == {"muster-barrier"}
        assert config["config"]["User"] == "65532:65532" and config["config"]["Entrypoint"] == ["/muster-barrier"]
        assert all(f[2:] == (0, 0, 0) for f in barrier.values())

    for program in ("muster-webhook", "muster-controller"):
        for architecture in ("amd64", "arm64"):
            files, config = layer_files(built[0] / f"{program}.tar", architecture)
            assert config["config"]["User"] == "65532:65532"
            assert "bin/sh" not in files and "usr/bin/sh" not in files, "a shell in the image"
            regular = {name for name, f in files.items() if f[0] == tarfile.REGTYPE}
            assert regular == loader_list(program, architecture) | {
                "usr/local/bin/muster", "etc/ssl/certs/ca-certificates.crt", "etc/passwd", "etc/group"}, program
        files, config = layer_files(built[0] / f"{program}.tar")
        regular = {name for name, f in files.items() if f[0] == tarfile.REGTYPE}
        # The Dockerfile's stage: the same files.
        rootfs = tmp_path / f"rootfs-{program}"
        subprocess.run(["bash", str(IMAGES_SH), "--rootfs", program, str(rootfs)], check=True, capture_output=True)
        staged = {str(p.relative_to(rootfs)) for p in rootfs.rglob("*") if p.is_file() and not p.is_symlink()}
        assert staged == regular, program


def test_images_sh_refuses_what_it_cannot_do(tmp_path):
    done = subprocess.run(["bash", str(IMAGES_SH), "--rootfs", "muster-barrier", str(tmp_path / "x")],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "PROGRAM is muster-webhook or muster-controller" in done.stderr
    done = subprocess.run(["python3", str(ROOT / "images" / "oci_image.py"), "--out", str(tmp_path / "y.tar"),
                           "--name", "x/y:1", "--file", "/etc/hostname:/../escape"], capture_output=True, text=True)
    assert done.returncode != 0 and "not a path inside the image" in done.stderr
    for platforms, words in ((["--platform", "linux/amd64", "--platform", "linux/amd64"], "given twice"),
                             (["--platform", "arm64"], "expected OS/ARCH"),
                             (["--platform", "linux/arm64", "--out", str(tmp_path / "z.tar")],
                              "--out goes before the first --platform")):
        done = subprocess.run(["python3", str(ROOT / "images" / "oci_image.py"), "--out", str(tmp_path / "y.tar"),
                               "--name", "x/y:1"] + platforms, capture_output=True, text=True)
        assert done.returncode != 0 and words in done.stderr, (platforms, done.stderr)
    assert not (tmp_path / "y.tar").exists() and not (tmp_path / "z.tar").exists()


def test_the_barrier_dockerfile_builds_the_image_make_images_writes(tmp_path, built):
    """initbarrier/Dockerfile, built without a daemon by buildah (FROM
    scratch: nothing to pull), holds the same one file, byte for byte, with
    the same mode and owner, and runs the same way (user, entrypoint) as
    the barrier image `make images` writes."""
    store = ["buildah", "--root", str(tmp_path / "root"), "--runroot", str(tmp_path / "run"),
             "--storage-driver", "vfs"]
    subprocess.run(store + ["bud", "--isolation", "chroot", "--pull-never", "-f", "initbarrier/Dockerfile",
                            "-t", "localhost/muster-barrier:dockerfile", "."],
                   cwd=ROOT, check=True, capture_output=True, timeout=120)
    dockerfile = tmp_path / "dockerfile.tar"
    subprocess.run(store + ["push", "localhost/muster-barrier:dockerfile",
                            f"oci-archive:{dockerfile}:muster-barrier:dockerfile"], check=True, capture_output=True,
                   timeout=120)
    ours, our_config = layer_files(built[0] / "muster-barrier.tar")  # amd64, as the Dockerfile
    theirs, their_config = layer_files(dockerfile)
    def kept(files):  # type, permission bits (Go's tar writes the file type bits too), owner
        return {k: (v[0], v[1] & 0o7777, v[2], v[3]) for k, v in files.items()}
    assert kept(theirs) == kept(ours)
    for key in ("User", "Entrypoint"):
        assert their_config["config"][key] == our_config["config"][key], key
    assert layer_bytes(dockerfile, "muster-barrier") == layer_bytes(built[0] / "muster-barrier.tar",
                                                               "muster-barrier")


def layer_bytes(archive, name):
    """The content of file `name` in the one layer of an image archive (its
    amd64 image)."""
    descriptor = platform_manifests(archive)["amd64"]
    with tarfile.open(archive) as outer:
        manifest = json.loads(blob(outer, descriptor))
        layer = outer.extractfile("blobs/sha256/" + manifest["layers"][0]["digest"].split(":")[1])
        with tarfile.open(fileobj=layer, mode="r:*") as inner:
            return inner.extractfile(name).read()


def test_muster_images_are_indexes_of_an_amd64_and_an_arm64_image(tmp_path, built):
    """muster's three archives name an image index of two manifests, each
    with its platform and a config of that architecture; every ELF file of
    each image is of its machine (`file`), the arm64 barrier static and
    within its 128 KiB; pause and busybox stay one amd64 image. (The index's
    digest covers its manifests' digests: the test above shows two runs give
    the same.)"""
    out, digests = built
    for program in MUSTER_IMAGES:
        archive = out / f"{program}.tar"
        manifests = platform_manifests(archive)
        assert sorted(manifests) == ["amd64", "arm64"], program
        assert all(m["platform"] == {"architecture": a, "os": "linux"} for a, m in manifests.items())
        with tarfile.open(archive) as outer:
            (top,) = json.load(outer.extractfile("index.json"))["manifests"]
        ref = next(r for r in digests if r.split("/")[-1].startswith(program + ":"))
        assert top["digest"] == digests[ref], "images.txt lists the index's digest"
        for architecture in ("amd64", "arm64"):
            _, config = layer_files(archive, architecture)
            assert (config["architecture"], config["os"]) == (architecture, "linux")
            root = extract_layer(archive, architecture, tmp_path / f"{program}-{architecture}")
            described = subprocess.run(["file", "-b", "-L"] + sorted(str(p) for p in root.rglob("*") if p.is_file()),
                                       capture_output=True, text=True, check=True).stdout.splitlines()
            elves = [d for d in described if d.startswith("ELF")]
            assert elves and all(ELF_MACHINE[architecture] in d for d in elves), (program, architecture, described)
    barrier = tmp_path / "muster-barrier-arm64" / "muster-barrier"
    described = subprocess.run(["file", "-b", str(barrier)], capture_output=True, text=True).stdout
    assert "ARM aarch64" in described and "statically linked" in described, described
    assert barrier.stat().st_size <= 128 * 1024, barrier.stat().st_size
    for test_image in ("pause", "busybox"):
        assert sorted(platform_manifests(out / f"{test_image}.tar")) == ["amd64"]


def test_skopeo_copies_the_index_whole_with_its_digests(tmp_path, built):
    """The README's push, to an OCI layout instead of a registry: `skopeo
    copy --all --preserve-digests` keeps the index digest images.txt lists,
    and either platform's image is found in it."""
    out, digests = built
    for program in MUSTER_IMAGES:
        ref = next(r for r in digests if r.split("/")[-1].startswith(program + ":"))
        layout = f"oci:{tmp_path / 'copied'}:{program}"
        subprocess.run(["skopeo", "copy", "-q", "--all", "--preserve-digests",
                        f"oci-archive:{out / program}.tar", layout],
                       check=True, capture_output=True, timeout=120)
        raw = subprocess.run(["skopeo", "inspect", "--raw", layout], check=True, capture_output=True).stdout
        assert "sha256:" + hashlib.sha256(raw).hexdigest() == digests[ref], program
        for architecture in ("amd64", "arm64"):
            seen = json.loads(subprocess.run(["skopeo", "inspect", "--override-arch", architecture, layout],
                                             check=True, capture_output=True).stdout)
            assert seen["Architecture"] == architecture, (program, seen)


def test_pin_images_pins_each_index(tmp_path, built):
    """deploy/pin-images.sh on the images.txt `make images` wrote: the
    overlay runs the webhook, the controller and the barrier by the digest
    of their index (both platforms), as each archive's index.json names it."""
    out, _ = built
    subprocess.run(["bash", "deploy/pin-images.sh", "--registry", "registry.example.com/muster",
                    "--out", str(tmp_path / "release"), "--images", str(out / "images.txt")],
                   cwd=ROOT, check=True, capture_output=True)
    overlay = (tmp_path / "release" / "kustomization.yaml").read_text()
    for program in MUSTER_IMAGES:
        with tarfile.open(out / f"{program}.tar") as outer:
            (top,) = json.load(outer.extractfile("index.json"))["manifests"]
        assert top["mediaType"] == INDEX_TYPE, program
        if program == "muster-barrier":
            assert f"value: registry.example.com/muster/muster-barrier@{top['digest']}" in overlay
        else:
            assert f"newName: registry.example.com/muster/{program}\n    digest: {top['digest']}" in overlay, program
