#!/usr/bin/env python3
"""Package a built datadiff binary as a Python wheel.

    cargo build --release --locked
    python3 packaging/build_wheel.py target/release/datadiff --out dist/
    python3 -m venv .venv && .venv/bin/pip install dist/datadiff_bin-*.whl
    .venv/bin/datadiff --version

The wheel holds nothing but the binary, as a script of the distribution `datadiff-bin`:
pip installs it as `<venv>/bin/datadiff`, so `datadiff` is on the PATH of every activated
virtual environment (PipelineWise's own lives in one), and `pip uninstall datadiff-bin`
removes it. The distribution is not `datadiff`, a different project on PyPI.

The tag is `py3-none-linux_<arch>`: any Python 3, no Python ABI, and this machine's
architecture. The binary links the C library and OpenSSL 3 (`libssl3`) dynamically, so the
wheel installs on machines with a C library at least as new as the build machine's and
OpenSSL 3 — build it on the oldest distribution you deploy to. (That is why the tag is not a
`manylinux` one: manylinux forbids linking OpenSSL.)

Only the standard library is used, so this runs without network access. The archive is
reproducible: fixed entry order and times (SOURCE_DATE_EPOCH when set).
"""

import argparse
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile

DISTRIBUTION = "datadiff-bin"
SUMMARY = "Prove, continuously and with evidence, that a PostgreSQL replica matches its source."


def fail(message):
    sys.exit(f"build_wheel.py: error: {message}")


def binary_version(binary):
    """The version `BINARY --version` prints on its first line (`datadiff 0.1.0`)."""
    try:
        output = subprocess.run([binary, "--version"], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as error:
        fail(f"{binary} --version did not run here: {error}")
    match = re.match(r"datadiff (\d+\.\d+\.\d+\S*)\n", output)
    if not match:
        fail(f"{binary} --version printed {output.splitlines()[:1]}, not `datadiff <version>`")
    return match.group(1)


def platform_tag():
    """`linux_x86_64` on a 64-bit x86 Linux: the wheel tag of this machine."""
    platform = sysconfig.get_platform()
    if not platform.startswith("linux-"):
        fail(f"only Linux binaries are packaged (this machine is {platform})")
    return re.sub(r"[^A-Za-z0-9]", "_", platform)


def record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"sha256={digest}"


def build(binary, out_dir, strip):
    version = binary_version(binary)
    tag = f"py3-none-{platform_tag()}"
    name = DISTRIBUTION.replace("-", "_")
    data = f"{name}-{version}.data"
    dist_info = f"{name}-{version}.dist-info"

    with tempfile.TemporaryDirectory() as scratch:
        program = os.path.join(scratch, "datadiff")
        shutil.copyfile(binary, program)
        if strip:
            # The release profile keeps line tables for debuggers; a wheel needs none.
            if shutil.which("strip") is None:
                fail("`strip` (binutils) is not installed: install it, or pass --no-strip")
            subprocess.run(["strip", program], check=True)
        with open(program, "rb") as file:
            program_bytes = file.read()

    metadata = (
        "Metadata-Version: 2.1\n"
        f"Name: {DISTRIBUTION}\n"
        f"Version: {version}\n"
        f"Summary: {SUMMARY}\n"
        "Home-page: https://github.com/datadiff/datadiff\n"
        "License: Apache-2.0\n"
        "Requires-Python: >=3\n"
        "\n"
        "The `datadiff` command line, packaged for Python virtual environments. "
        "See https://github.com/datadiff/datadiff for the documentation.\n"
    ).encode("utf-8")
    wheel = (
        "Wheel-Version: 1.0\n"
        "Generator: datadiff packaging/build_wheel.py\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {tag}\n"
    ).encode("utf-8")
    # (path in the archive, bytes, Unix mode)
    entries = [
        (f"{data}/scripts/datadiff", program_bytes, 0o755),
        (f"{dist_info}/METADATA", metadata, 0o644),
        (f"{dist_info}/WHEEL", wheel, 0o644),
    ]
    record_path = f"{dist_info}/RECORD"
    record = "".join(f"{path},{record_hash(content)},{len(content)}\n" for path, content, _ in entries)
    record += f"{record_path},,\n"
    entries.append((record_path, record.encode("utf-8"), 0o644))

    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))  # 1980-01-01, zip's earliest
    stamp = time.gmtime(max(epoch, 315532800))[:6]
    os.makedirs(out_dir, exist_ok=True)
    wheel_path = os.path.join(out_dir, f"{name}-{version}-{tag}.whl")
    partial = wheel_path + ".partial"
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, content, mode in entries:
            info = zipfile.ZipInfo(path, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o100000 | mode) << 16
            archive.writestr(info, content)
    os.replace(partial, wheel_path)
    return wheel_path


def main():
    parser = argparse.ArgumentParser(description="Package a built datadiff binary as a Python wheel.")
    parser.add_argument("binary", help="the datadiff binary (cargo build --release: target/release/datadiff)")
    parser.add_argument("--out", default="dist", help="the directory the wheel is written to (default: dist)")
    parser.add_argument("--no-strip", dest="strip", action="store_false", help="keep the binary's line tables")
    args = parser.parse_args()
    if not os.path.isfile(args.binary):
        fail(f"{args.binary} is not a file: build it first (cargo build --release --locked)")
    print(build(args.binary, args.out, args.strip))


if __name__ == "__main__":
    main()
