"""`make images` (images/images.sh, images/oci_image.py): reproducible OCI
archives with exactly the files each image needs, and the Dockerfile's
staging step (--rootfs) giving the same files. No cluster needed; the real
nodes' tests (test_real_nodes.py) run these images."""

import json
import os
import subprocess
import tarfile

from conftest import ROOT

IMAGES_SH = ROOT / "images" / "images.sh"


def build(out, tag="test"):
    env = dict(os.environ, MUSTER_IMAGE_TAG=tag)
    subprocess.run(["bash", str(IMAGES_SH), str(out)], check=True, capture_output=True, env=env, timeout=300)
    return {line.split()[1]: line.split()[2] for line in (out / "images.txt").read_text().splitlines()}


def layer_files(archive):
    """{path: (type, mode)} of the one layer of an image archive, and its config."""
    with tarfile.open(archive) as outer:
        index = json.load(outer.extractfile("index.json"))
        manifest = json.load(outer.extractfile("blobs/sha256/" + index["manifests"][0]["digest"].split(":")[1]))
        config = json.load(outer.extractfile("blobs/sha256/" + manifest["config"]["digest"].split(":")[1]))
        assert len(manifest["layers"]) == 1
        layer = outer.extractfile("blobs/sha256/" + manifest["layers"][0]["digest"].split(":")[1])
        with tarfile.open(fileobj=layer, mode="r:gz") as inner:
            files = {m.name: (m.type, m.mode, m.uid, m.gid, m.mtime) for m in inner.getmembers()}
    return files, config


def test_images_are_reproducible_and_hold_only_what_they_need(tmp_path):
    first = build(tmp_path / "a")
    second = build(tmp_path / "b")
    assert first == second, "two runs gave different digests"
    assert sorted(r.split("/")[-1] for r in first) == ["busybox:1", "muster-barrier:test", "muster-controller:test",
                                                "muster-webhook:test", "pause:1"]

    barrier, config = layer_files(tmp_path / "a" / "muster-barrier.tar")
    assert set(barrier) == {"muster-barrier"}
    assert config["config"]["User"] == "65532:65532" and config["config"]["Entrypoint"] == ["/muster-barrier"]
    assert all(f[2:] == (0, 0, 0) for f in barrier.values())

    for program in ("muster-webhook", "muster-controller"):
        files, config = layer_files(tmp_path / "a" / f"{program}.tar")
        assert config["config"]["User"] == "65532:65532"
        assert "bin/sh" not in files and "usr/bin/sh" not in files, "a shell in the image"
        ldd = subprocess.run(["ldd", str(ROOT / "bin" / program)], capture_output=True, text=True).stdout
        wanted = {part.lstrip("/") for line in ldd.splitlines() for part in line.split() if part.startswith("/")}
        regular = {name for name, f in files.items() if f[0] == tarfile.REGTYPE}
        assert regular == wanted | {"usr/local/bin/muster", "etc/ssl/certs/ca-certificates.crt", "etc/passwd",
                                    "etc/group"}, program
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
    assert not (tmp_path / "y.tar").exists()


def test_the_barrier_dockerfile_builds_the_image_make_images_writes(tmp_path):
    """initbarrier/Dockerfile, built without a daemon by buildah (FROM
    scratch: nothing to pull), holds the same one file, byte for byte, with
    the same mode and owner, and runs the same way (user, entrypoint) as
    the barrier image `make images` writes."""
    build(tmp_path / "a")
    store = ["buildah", "--root", str(tmp_path / "root"), "--runroot", str(tmp_path / "run"),
             "--storage-driver", "vfs"]
    subprocess.run(store + ["bud", "--isolation", "chroot", "--pull-never", "-f", "initbarrier/Dockerfile",
                            "-t", "localhost/muster-barrier:dockerfile", "."],
                   cwd=ROOT, check=True, capture_output=True, timeout=120)
    built = tmp_path / "dockerfile.tar"
    subprocess.run(store + ["push", "localhost/muster-barrier:dockerfile",
                            f"oci-archive:{built}:muster-barrier:dockerfile"], check=True, capture_output=True,
                   timeout=120)
    ours, our_config = layer_files(tmp_path / "a" / "muster-barrier.tar")
    theirs, their_config = layer_files(built)
    def kept(files):  # type, permission bits (Go's tar writes the file type bits too), owner
        return {k: (v[0], v[1] & 0o7777, v[2], v[3]) for k, v in files.items()}
    assert kept(theirs) == kept(ours)
    for key in ("User", "Entrypoint"):
        assert their_config["config"][key] == our_config["config"][key], key
    assert layer_bytes(built, "muster-barrier") == layer_bytes(tmp_path / "a" / "muster-barrier.tar",
                                                               "muster-barrier")


def layer_bytes(archive, name):
    """The content of file `name` in the one layer of an image archive."""
    with tarfile.open(archive) as outer:
        index = json.load(outer.extractfile("index.json"))
        manifest = json.load(outer.extractfile("blobs/sha256/" + index["manifests"][0]["digest"].split(":")[1]))
        layer = outer.extractfile("blobs/sha256/" + manifest["layers"][0]["digest"].split(":")[1])
        with tarfile.open(fileobj=layer, mode="r:*") as inner:
            return inner.extractfile(name).read()
