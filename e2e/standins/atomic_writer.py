"""Kubelet's AtomicWriter, for the node agent's ConfigMap volumes.

The same steps as pkg/volume/util/atomic_writer.go (and as the C test helper
testing/atomic_writer.c, which the barrier's own tests use):

1. read the `..data` link to find the current timestamped directory;
2. find user-visible keys that the new payload drops;
3. stop if every file already holds the same bytes and nothing is dropped;
4. write the payload into a new `..YYYY_MM_DD_HH_MM_SS.<random>` directory;
5. symlink `..data_tmp` to it and rename() that over `..data`;
6. create `<key> -> ..data/<key>` for new keys (after the rename, as current
   kubelets do);
7. remove dropped user-visible links, then the old timestamped directory.
"""

import os
import shutil
import tempfile
import time


def write(target_dir, payload):
    """Projects payload ({key: str}) into target_dir. Returns True if it wrote."""
    data_link = os.path.join(target_dir, "..data")
    try:
        old_ts = os.readlink(data_link)
    except FileNotFoundError:
        old_ts = ""
    old_ts_path = os.path.join(target_dir, old_ts) if old_ts else ""

    dropped = []
    if old_ts:
        existing = [name for name in os.listdir(old_ts_path) if not name.startswith(".")]
        dropped = [name for name in existing if name not in payload]
        unchanged = all(_same(os.path.join(old_ts_path, key), value) for key, value in payload.items())
        if unchanged and not dropped:
            return False

    stamp = time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime())
    ts_dir = tempfile.mkdtemp(prefix=stamp, dir=target_dir)
    os.chmod(ts_dir, 0o755)
    for key, value in payload.items():
        path = os.path.join(ts_dir, key)
        with open(path, "w") as handle:
            handle.write(value)
        os.chmod(path, 0o644)

    tmp_link = os.path.join(target_dir, "..data_tmp")
    try:
        os.unlink(tmp_link)
    except FileNotFoundError:
        pass
    os.symlink(os.path.basename(ts_dir), tmp_link)
    os.rename(tmp_link, data_link)

    for key in payload:
        link = os.path.join(target_dir, key)
        if not os.path.islink(link):
            os.symlink(os.path.join("..data", key), link)
    for key in dropped:
        try:
            os.unlink(os.path.join(target_dir, key))
        except FileNotFoundError:
            pass
    if old_ts:
        shutil.rmtree(old_ts_path, ignore_errors=True)
    return True


def _same(path, value):
    try:
        with open(path) as handle:
            return handle.read() == value
    except FileNotFoundError:
        return False
