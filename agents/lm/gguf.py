"""The tensors of a GGUF file, read from its header: what one forward pass of the model reads.

Decoding one token on a CPU is bound by memory bandwidth: every weight matrix is read once per
forward pass, whatever the number of tokens in the batch. The bytes a pass reads are the file's
tensor bytes, except the token-embedding table when the model has its own output matrix (then
only one embedding row per token is gathered); with tied embeddings (Qwen2.5's small models)
the table is the output matrix and is read whole.

Only the header is parsed (GGUF v2/v3: key-value metadata, then one record per tensor); a tensor's
bytes are the distance to the next tensor's data (padding to the alignment included, at most
``alignment - 1`` bytes each).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from routerlab.agents.errors import ModelAssetError

__all__ = ["GGUFTensors", "read_tensors"]

# value types of GGUF metadata and the struct format of the fixed-size ones
_FIXED = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


@dataclass(frozen=True)
class GGUFTensors:
    """Tensor sizes of one GGUF file.

    Attributes:
        path: The file.
        sizes: Bytes per tensor name.
    """

    path: Path
    sizes: dict[str, int]

    @property
    def total_bytes(self) -> int:
        """Bytes of all tensors."""
        return sum(self.sizes.values())

    @property
    def bytes_per_pass(self) -> int:
        """Bytes one forward pass reads (see the module docstring)."""
        untied = "output.weight" in self.sizes
        return self.total_bytes - (self.sizes.get("token_embd.weight", 0) if untied else 0)


def _read(f: BinaryIO, fmt: str) -> int | float | bool:
    size = struct.calcsize(fmt)
    raw = f.read(size)
    if len(raw) != size:
        raise EOFError("the header ends early")
    return struct.unpack(fmt, raw)[0]


def _string(f: BinaryIO) -> str:
    n = int(_read(f, "<Q"))
    return f.read(n).decode("utf-8", errors="replace")


def _skip_value(f: BinaryIO, vtype: int) -> int | None:
    """Read past one metadata value; return it when it is an integer (the alignment is one)."""
    if vtype in _FIXED:
        value = _read(f, _FIXED[vtype])
        return int(value) if isinstance(value, int) else None
    if vtype == _STRING:
        _string(f)
        return None
    if vtype == _ARRAY:
        item, n = int(_read(f, "<I")), int(_read(f, "<Q"))
        if item in _FIXED:
            f.seek(struct.calcsize(_FIXED[item]) * n, 1)
        else:
            for _ in range(n):
                _skip_value(f, item)
        return None
    raise ValueError(f"unknown metadata value type {vtype}")


def read_tensors(path: Path | str) -> GGUFTensors:
    """The tensors of the GGUF file ``path`` and their sizes.

    Raises:
        ModelAssetError: Not a GGUF file of version 2 or 3, or a header that cannot be read.
    """
    path = Path(path)
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"GGUF":
                raise ValueError("no GGUF magic bytes")
            version = int(_read(f, "<I"))
            if version not in (2, 3):
                raise ValueError(f"GGUF version {version}")
            n_tensors, n_kv = int(_read(f, "<Q")), int(_read(f, "<Q"))
            alignment = 32
            for _ in range(n_kv):
                key = _string(f)
                value = _skip_value(f, int(_read(f, "<I")))
                if key == "general.alignment" and value:
                    alignment = value
            offsets: dict[str, int] = {}
            for _ in range(n_tensors):
                name = _string(f)
                n_dims = int(_read(f, "<I"))
                f.seek(8 * n_dims + 4, 1)  # the dimensions and the element type
                offsets[name] = int(_read(f, "<Q"))
            data_start = -(-f.tell() // alignment) * alignment
            end = path.stat().st_size - data_start
    except (OSError, ValueError, EOFError, UnicodeDecodeError) as exc:
        raise ModelAssetError(
            f"cannot read the tensors of {path}",
            expected="a GGUF v2/v3 model file",
            found=str(exc)[:200],
            fix="pass a GGUF model (local:/path.gguf), or rerun scripts/setup.sh for the embedded ones",
        ) from None
    order = sorted(offsets, key=offsets.__getitem__)
    bounds = [offsets[n] for n in order] + [end]
    return GGUFTensors(path, {name: bounds[i + 1] - bounds[i] for i, name in enumerate(order)})
