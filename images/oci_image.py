#!/usr/bin/env python3
"""oci_image.py - writes a one-layer OCI image archive, reproducibly, for one
platform or several (an image index).

muster's images are a handful of files each (a static binary; or a binary,
the shared libraries it is linked against, a CA bundle and a passwd entry),
so they are written directly instead of by a build daemon:

    oci_image.py --out build/images/muster-barrier.tar \
        --name ghcr.io/muster-dev/muster-barrier:dev --user 65532:65532 \
        --entrypoint /muster-barrier --file bin/muster-barrier:/muster-barrier

With --platform, the options after each `--platform OS/ARCH` make that
platform's image, and those before the first one are shared by all (the
user, the entrypoint, the CA bundle...); the archive then holds an image
index listing one manifest per platform, each with its `platform`, and the
printed digest is the index's:

    oci_image.py --out build/images/muster-barrier.tar --name REF \
        --user 65532:65532 --entrypoint /muster-barrier \
        --platform linux/amd64 --file bin/muster-barrier:/muster-barrier \
        --platform linux/arm64 --file bin/arm64/muster-barrier:/muster-barrier

Without --platform the image is linux/amd64 and the archive's index.json
points at its manifest directly.

The output is an OCI image layout in a tar (`oci-layout`, `index.json`,
`blobs/sha256/...`), the form `ctr images import`, `skopeo copy
oci-archive:...` and `podman load` read. The image's name is in the index
twice: `io.containerd.image.name` (containerd takes it as is) and
`org.opencontainers.image.ref.name` (skopeo and podman).

Reproducible: the same input files (bytes and modes) and arguments give the
same bytes, so the same digests (of each manifest and of the index). Every tar entry is owned by 0:0 with time 0,
entries are sorted, parent directories are added (mode 0755), gzip carries no
name or time, and the config has no creation time or history. Only the
content and the permission bits of each input file are read, never its
owner or times.

Options:
  --out PATH            the archive to write (replaced atomically)
  --name REF            the image reference, e.g. ghcr.io/muster-dev/x:v1
  --file SRC:DST[:MODE] a file: host path SRC at image path DST; MODE in
                        octal (default: SRC's permission bits)
  --symlink DST:TARGET  a symbolic link
  --dir DST[:MODE]      an empty directory (default mode 0755)
  --text DST:MODE:TEXT  a file with the given content (\\n for newlines)
  --user UID:GID        the user the image runs as
  --entrypoint PATH     the entrypoint; repeat for its fixed arguments
  --cmd ARG             default arguments; repeatable
  --env K=V             an environment variable; repeatable
  --label K=V           an image label; repeatable
  --platform OS/ARCH    starts a platform's own options (above)
  --digest-only         print the digest and write nothing
  --rootfs-dir DIR      instead of an archive, write the layer's files into
                        DIR (the Dockerfile's build stage, so that the image
                        a daemon builds has the same files); one platform
It prints the manifest's digest, or with --platform the index's
(sha256:...), on success.
"""

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import stat
import sys
import tarfile

LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
INDEX_TYPE = "application/vnd.oci.image.index.v1+json"


class Entry:
    """One thing in the layer: a file (data), a directory or a symlink."""

    def __init__(self, path, kind, mode, data=b"", target=""):
        self.path, self.kind, self.mode, self.data, self.target = path, kind, mode, data, target


def clean_path(path):
    """An absolute image path as the tar's relative name, refusing escapes."""
    if not path.startswith("/"):
        raise SystemExit(f"oci_image: image path {path!r} must be absolute")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise SystemExit(f"oci_image: image path {path!r} is not a path inside the image")
    return "/".join(parts)


def parse_entries(args):
    entries = {}

    def add(entry):
        if entry.path in entries:
            raise SystemExit(f"oci_image: /{entry.path} is given twice")
        entries[entry.path] = entry

    for spec in args.file:
        fields = spec.split(":")
        if len(fields) not in (2, 3):
            raise SystemExit(f"oci_image: --file {spec!r}: expected SRC:DST[:MODE]")
        src, dst = fields[0], clean_path(fields[1])
        try:
            with open(src, "rb") as f:
                data = f.read()
            mode = int(fields[2], 8) if len(fields) == 3 else stat.S_IMODE(os.stat(src).st_mode)
        except OSError as e:
            raise SystemExit(f"oci_image: --file {spec!r}: {e.strerror}: {src}")
        add(Entry(dst, "file", mode, data=data))
    for spec in args.text:
        dst, mode, text = spec.split(":", 2)
        add(Entry(clean_path(dst), "file", int(mode, 8), data=text.replace("\\n", "\n").encode()))
    for spec in args.symlink:
        dst, target = spec.split(":", 1)
        add(Entry(clean_path(dst), "symlink", 0o777, target=target))
    for spec in args.dir:
        dst, _, mode = spec.partition(":")
        add(Entry(clean_path(dst), "dir", int(mode or "755", 8)))
    # Parent directories, so every path has its chain (mode 0755).
    for path in list(entries):
        parts = path.split("/")
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            if parent in entries and entries[parent].kind != "dir":
                raise SystemExit(f"oci_image: /{parent} is a file and a directory")
            entries.setdefault(parent, Entry(parent, "dir", 0o755))
    return [entries[p] for p in sorted(entries)]


def layer_tar(entries):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for e in entries:
            info = tarfile.TarInfo(e.path)
            info.mode, info.mtime, info.uid, info.gid, info.uname, info.gname = e.mode, 0, 0, 0, "", ""
            if e.kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif e.kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, e.target
                tar.addfile(info)
            else:
                info.size = len(e.data)
                tar.addfile(info, io.BytesIO(e.data))
    return out.getvalue()


def gzip_bytes(data):
    out = io.BytesIO()
    # No file name, time 0: the same bytes for the same input.
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, compresslevel=9, mtime=0) as f:
        f.write(data)
    return out.getvalue()


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def build_image(args, platform):
    """One platform's image: (its manifest's bytes, its blobs)."""
    entries = parse_entries(args)
    tar = layer_tar(entries)
    layer = gzip_bytes(tar)
    os_name, architecture = platform
    config = {"architecture": architecture, "os": os_name,
              "config": {"Env": args.env or ["PATH=/usr/local/bin:/usr/bin:/bin"], "WorkingDir": "/"},
              "rootfs": {"type": "layers", "diff_ids": [digest(tar)]}}
    if args.user:
        config["config"]["User"] = args.user
    if args.entrypoint:
        config["config"]["Entrypoint"] = args.entrypoint
    if args.cmd:
        config["config"]["Cmd"] = args.cmd
    if args.label:
        config["config"]["Labels"] = dict(label.split("=", 1) for label in args.label)
    config_bytes = canonical(config)
    manifest = {"schemaVersion": 2, "mediaType": MANIFEST_TYPE,
                "config": {"mediaType": CONFIG_TYPE, "digest": digest(config_bytes), "size": len(config_bytes)},
                "layers": [{"mediaType": LAYER_TYPE, "digest": digest(layer), "size": len(layer)}]}
    manifest_bytes = canonical(manifest)
    return manifest_bytes, [layer, config_bytes, manifest_bytes]


def build(name, images):
    """The archive's files for [(platform, args)]: with platform None, one
    amd64 image whose manifest index.json names; otherwise an image index of
    every platform's manifest, which index.json names. Returns (the digest
    index.json names, files)."""
    blobs = []
    if images[0][0] is None:
        top_bytes, blobs = build_image(images[0][1], ("linux", "amd64"))
        top_type = MANIFEST_TYPE
    else:
        manifests = []
        for platform, args in images:
            manifest_bytes, image_blobs = build_image(args, platform)
            blobs += image_blobs
            manifests.append({"mediaType": MANIFEST_TYPE, "digest": digest(manifest_bytes),
                              "size": len(manifest_bytes),
                              "platform": {"architecture": platform[1], "os": platform[0]}})
        top_bytes = canonical({"schemaVersion": 2, "mediaType": INDEX_TYPE, "manifests": manifests})
        top_type = INDEX_TYPE
        blobs.append(top_bytes)
    index = {"schemaVersion": 2, "mediaType": INDEX_TYPE,
             "manifests": [{"mediaType": top_type, "digest": digest(top_bytes), "size": len(top_bytes),
                            "annotations": {"io.containerd.image.name": name,
                                            "org.opencontainers.image.ref.name": name}}]}
    files = {"oci-layout": canonical({"imageLayoutVersion": "1.0.0"}), "index.json": canonical(index)}
    for blob in blobs:  # two platforms may share a blob (e.g. the same config)
        files["blobs/sha256/" + digest(blob).split(":", 1)[1]] = blob
    return digest(top_bytes), sorted(files.items())


def write_archive(path, files):
    tmp = path + ".tmp"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(tmp, "wb") as raw, tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = sorted({"/".join(name.split("/")[:i]) for name, _ in files for i in range(1, name.count("/") + 1)})
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(info)
        for name, data in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    os.replace(tmp, path)


def write_rootfs(directory, entries):
    """The layer's entries as files under directory (owners left to the
    Dockerfile's COPY, which makes them root's, as in the archive)."""
    root = os.path.abspath(directory)
    for e in entries:
        path = os.path.join(root, e.path)
        if e.kind == "dir":
            os.makedirs(path, exist_ok=True)
            os.chmod(path, e.mode)
        elif e.kind == "symlink":
            if os.path.lexists(path):
                os.unlink(path)
            os.symlink(e.target, path)
        else:
            with open(path, "wb") as f:
                f.write(e.data)
            os.chmod(path, e.mode)


def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--out")
    p.add_argument("--name")
    p.add_argument("--file", action="append", default=[])
    p.add_argument("--symlink", action="append", default=[])
    p.add_argument("--dir", action="append", default=[])
    p.add_argument("--text", action="append", default=[])
    p.add_argument("--user")
    p.add_argument("--entrypoint", action="append")
    p.add_argument("--cmd", action="append")
    p.add_argument("--env", action="append")
    p.add_argument("--label", action="append")
    p.add_argument("--digest-only", action="store_true")
    p.add_argument("--rootfs-dir")
    return p


PLATFORM = re.compile(r"([a-z0-9]+)/([a-z0-9]+)")


def split_platforms(argv):
    """argv as (the shared options, [(platform, its options)]), split at
    each `--platform OS/ARCH`."""
    shared, platforms, current = [], [], None
    words = iter(argv)
    for word in words:
        if word != "--platform":
            (shared if current is None else current).append(word)
            continue
        value = next(words, "")
        match = PLATFORM.fullmatch(value)
        if not match:
            raise SystemExit(f"oci_image: --platform {value!r}: expected OS/ARCH, e.g. linux/arm64")
        if any(platform == match.groups() for platform, _ in platforms):
            raise SystemExit(f"oci_image: --platform {value} is given twice")
        current = []
        platforms.append((match.groups(), current))
    return shared, platforms


def main(argv):
    p = parser()
    shared, platforms = split_platforms(argv)
    args = p.parse_args(shared)
    if not args.name:
        p.error("--name is required")
    images = [(None, args)]
    if platforms:
        if args.rootfs_dir:
            p.error("--rootfs-dir writes one platform's files: no --platform")
        images = []
        for platform, own in platforms:
            platform_args = p.parse_args(shared + own)
            for option in ("out", "name", "digest_only", "rootfs_dir"):
                if getattr(platform_args, option) != getattr(args, option):
                    p.error(f"--{option.replace('_', '-')} goes before the first --platform")
            images.append((platform, platform_args))
    if args.rootfs_dir:
        write_rootfs(args.rootfs_dir, parse_entries(args))
        return
    if not args.digest_only and not args.out:
        p.error("--out is required")
    top_digest, files = build(args.name, images)
    if not args.digest_only:
        write_archive(args.out, files)
    print(top_digest)


if __name__ == "__main__":
    main(sys.argv[1:])
