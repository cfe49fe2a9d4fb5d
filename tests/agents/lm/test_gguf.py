"""The GGUF header reader: tensor sizes from a file written here, the embedded models, bad files."""

from __future__ import annotations

import struct

import pytest

from routerlab.agents.errors import ModelAssetError
from routerlab.agents.lm.assets import model_path
from routerlab.agents.lm.gguf import read_tensors


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack("<Q", len(raw)) + raw


def _gguf(tensors: dict[str, int], *, untied: bool, alignment: int = 32) -> bytes:
    """A GGUF v3 file: metadata of every value kind the reader skips, then tensors of the given sizes."""
    kv = [
        _string("general.name") + struct.pack("<I", 8) + _string("tiny"),
        _string("general.alignment") + struct.pack("<I", 4) + struct.pack("<I", alignment),
        _string("tiny.ratio") + struct.pack("<I", 6) + struct.pack("<f", 0.5),
        _string("tokenizer.tokens") + struct.pack("<IIQ", 9, 8, 2) + _string("a") + _string("bc"),
        _string("tokenizer.scores") + struct.pack("<IIQ", 9, 6, 3) + struct.pack("<3f", 1, 2, 3),
    ]
    names = dict(tensors)
    if untied:
        names["output.weight"] = names["token_embd.weight"]
    infos, offset = [], 0
    for name, size in names.items():
        infos.append(_string(name) + struct.pack("<I", 1) + struct.pack("<Q", size) + struct.pack("<I", 0))
        infos[-1] += struct.pack("<Q", offset)
        offset += -(-size // alignment) * alignment
    head = b"GGUF" + struct.pack("<IQQ", 3, len(names), len(kv)) + b"".join(kv) + b"".join(infos)
    head += b"\0" * (-len(head) % alignment)
    return head + b"\1" * offset


@pytest.mark.parametrize("untied", [False, True])
def test_tensor_sizes_and_the_bytes_a_pass_reads(tmp_path, untied):
    path = tmp_path / "tiny.gguf"
    path.write_bytes(
        _gguf({"token_embd.weight": 640, "blk.0.attn_q.weight": 96, "blk.0.ffn_up.weight": 64}, untied=untied)
    )
    got = read_tensors(path)
    assert got.sizes["token_embd.weight"] == 640 and got.sizes["blk.0.attn_q.weight"] == 96
    # with its own output matrix a pass gathers embedding rows only; tied, the table is read whole
    assert got.bytes_per_pass == (96 + 64 + 640 if untied else 640 + 96 + 64)
    assert got.total_bytes == 640 + 96 + 64 + (640 if untied else 0)


def test_the_embedded_models_tensors_fill_their_files():
    for name in ("0.5b", "1.5b"):
        path = model_path(name)
        got = read_tensors(path)
        assert 0 < path.stat().st_size - got.total_bytes < 16 << 20  # the rest is the header
        assert got.bytes_per_pass < got.total_bytes  # untied: the embedding table is gathered


def test_a_file_that_is_not_gguf_is_refused_with_a_fix(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGML" + b"\0" * 64)
    with pytest.raises(ModelAssetError, match="cannot read the tensors") as err:
        read_tensors(bad)
    assert "magic" in err.value.found
    short = tmp_path / "short.gguf"
    short.write_bytes(_gguf({"token_embd.weight": 64}, untied=False)[:30])
    with pytest.raises(ModelAssetError):
        read_tensors(short)
