"""A sweep grid value of the wrong type is refused when the file is read, naming its field."""

from __future__ import annotations

from pathlib import Path

import pytest

from routerlab.agents.errors import ConfigError
from routerlab.sweep import load_sweep


def _write(tmp: Path, values: str) -> Path:
    path = tmp / "sweep.yaml"
    path.write_text(
        "datasets: [builtin]\nlimit: 2\nlms: [scripted:basic]\n"
        f"routers:\n  - {{name: hybrid, grid: {{threshold: {values}}}}}\n"
    )
    return path


def test_mistyped_grid_value_is_refused_with_its_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_sweep(_write(tmp_path, "[0.5, abc]"))
    text = str(err.value)
    assert "routers[0].grid.threshold" in text
    assert "float" in text and "'abc'" in text


def test_well_typed_grid_loads(tmp_path: Path) -> None:
    spec = load_sweep(_write(tmp_path, "[0.5, 1]"))
    assert [args["threshold"] for _, args in spec.routers] == [0.5, 1]
