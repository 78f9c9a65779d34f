"""The Python SDK's own build backend (PEP 517, with PEP 660's editable install): a wheel and
an sdist made with the standard library alone, so `pip install ./sdk/python`, `pip wheel` and
scripts/sdk-pack work with no network and no setuptools, and the same files always give the
same archive bytes (sorted entries, fixed times, owners and modes; `SOURCE_DATE_EPOCH` sets
the time, 1980-01-01 by default).

The package's facts are read from pyproject.toml's [project] table (its plain string keys)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile
from typing import Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "dsh_sdk"
TAG = "py3-none-any"


def _project() -> Dict[str, str]:
    """[project]'s `key = "value"` lines, and `license = { text = "..." }`."""
    facts: Dict[str, str] = {}
    table = None
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        for line in f:
            header = re.match(r"\s*\[([^\]]+)\]\s*$", line)
            if header:
                table = header.group(1).strip()
                continue
            if table != "project":
                continue
            plain = re.match(r'\s*([A-Za-z-]+)\s*=\s*"([^"]*)"\s*$', line)
            if plain:
                facts[plain.group(1)] = plain.group(2)
            licence = re.match(r'\s*license\s*=\s*\{\s*text\s*=\s*"([^"]*)"\s*\}\s*$', line)
            if licence:
                facts["license"] = licence.group(1)
    for key in ("name", "version"):
        if key not in facts:
            raise ValueError(f"{HERE}/pyproject.toml: [project] has no {key}")
    return facts


def _stem(facts: Dict[str, str]) -> str:
    """The name as archives spell it (PEP 625, PEP 427): `dsh_sdk-0.1.0`."""
    return re.sub(r"[-_.]+", "_", facts["name"]).lower() + "-" + facts["version"]


def _metadata(facts: Dict[str, str]) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {facts['name']}", f"Version: {facts['version']}"]
    for key, field in (("description", "Summary"), ("license", "License"),
                       ("requires-python", "Requires-Python")):
        if key in facts:
            lines.append(f"{field}: {facts[key]}")
    lines.append("Description-Content-Type: text/markdown")
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return "\n".join(lines) + "\n\n" + readme


def _sources(*top: str) -> List[str]:
    """The files under `top` (relative to the SDK's folder), sorted, without caches."""
    found = []
    for root in top:
        for folder, dirs, files in os.walk(os.path.join(HERE, root)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in files:
                if not name.endswith((".pyc", ".pyo")):
                    found.append(os.path.relpath(os.path.join(folder, name), HERE))
    return sorted(found)


def _epoch() -> int:
    # Zip times start at 1980; an earlier SOURCE_DATE_EPOCH is taken as that.
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800)


def _read(path: str) -> bytes:
    with open(os.path.join(HERE, path), "rb") as f:
        return f.read()


def _wheel(directory: str, entries: List[Tuple[str, bytes]]) -> str:
    facts = _project()
    stem = _stem(facts)
    info = f"{stem}.dist-info"
    entries = list(entries) + [
        (f"{info}/METADATA", _metadata(facts).encode()),
        (f"{info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: dsh_sdk_build\n"
                           f"Root-Is-Purelib: true\nTag: {TAG}\n").encode()),
    ]
    record = []
    for name, data in entries:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    entries.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    filename = f"{stem}-{TAG}.whl"
    stamp = _time_tuple(_epoch())
    with zipfile.ZipFile(os.path.join(directory, filename), "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in entries:
            entry = zipfile.ZipInfo(name, stamp)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(entry, data)
    return filename


def _time_tuple(epoch: int) -> Tuple[int, int, int, int, int, int]:
    t = time.gmtime(epoch)
    return (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec)


def build_wheel(wheel_directory: str, config_settings: Optional[dict] = None,
                metadata_directory: Optional[str] = None) -> str:
    files = _sources(os.path.join("src", PACKAGE))
    return _wheel(wheel_directory, [(os.path.relpath(p, "src"), _read(p)) for p in files])


def build_editable(wheel_directory: str, config_settings: Optional[dict] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """A wheel whose one file puts the checkout's src/ on the path."""
    return _wheel(wheel_directory, [(f"{PACKAGE}.pth", (os.path.join(HERE, "src") + "\n").encode())])


def build_sdist(sdist_directory: str, config_settings: Optional[dict] = None) -> str:
    facts = _project()
    stem = _stem(facts)
    files = ["README.md", "pyproject.toml"] + _sources("build_backend", "src")
    entries = [(path, _read(path)) for path in files] + [("PKG-INFO", _metadata(facts).encode())]
    epoch = _epoch()
    body = io.BytesIO()
    with tarfile.open(fileobj=body, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path, data in sorted(entries):
            entry = tarfile.TarInfo(f"{stem}/{path}")
            entry.size, entry.mtime, entry.mode = len(data), epoch, 0o644
            entry.uid = entry.gid = 0
            entry.uname = entry.gname = ""
            tar.addfile(entry, io.BytesIO(data))
    filename = f"{stem}.tar.gz"
    with open(os.path.join(sdist_directory, filename), "wb") as out:
        with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as packed:
            packed.write(body.getvalue())
    return filename


def get_requires_for_build_wheel(config_settings: Optional[dict] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[dict] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[dict] = None) -> List[str]:
    return []
