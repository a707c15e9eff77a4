import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def examples():
    return ROOT / "examples"


@pytest.fixture
def data():
    return ROOT / "tests" / "data"


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Each test gets its own cache directory (results and JIT), never the user's."""
    monkeypatch.setenv("MUGRAPH_CACHE_DIR", str(tmp_path / "cache"))
    yield
