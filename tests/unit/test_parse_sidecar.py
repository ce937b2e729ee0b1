"""The parse sidecar (`<ledger>.cache.json`): a cache of the engine's last write, never a source of truth."""

from __future__ import annotations

from pathlib import Path

from engine.store.file import FileStore
from tests.conftest import ARTICLE


def _written(tmp_path: Path) -> FileStore:
    path = tmp_path / "ledger.yaml"
    path.write_text(ARTICLE, encoding="utf-8")
    store = FileStore(str(path))
    store.transact(lambda ledger: setattr(ledger.targets["db-19"], "next_action", "check it"))
    return store


def test_a_new_reader_takes_the_engine_write_from_the_sidecar(tmp_path):
    """After an engine write, a fresh store reads the same ledger through the sidecar."""
    store = _written(tmp_path)
    assert Path(store.parse_cache_path).exists()
    fresh = FileStore(store.path)
    key = fresh.snapshot().digest
    assert fresh._read_sidecar(key, Path(store.path).read_bytes()) is not None
    assert fresh.read().targets["db-19"].next_action == "check it"
    assert fresh.read().targets["db-18"].checkpoint == "0/9A3F2C10"


def test_a_hand_edit_is_read_from_the_file_not_the_sidecar(tmp_path):
    """Edit the YAML by hand: the sidecar's hash no longer matches and the file wins."""
    store = _written(tmp_path)
    path = Path(store.path)
    path.write_text(path.read_text().replace("check it", "edited in vim"), encoding="utf-8")
    fresh = FileStore(store.path)
    assert fresh._read_sidecar(fresh.snapshot().digest, path.read_bytes()) is None
    assert fresh.read().targets["db-19"].next_action == "edited in vim"


def test_a_damaged_sidecar_is_ignored(tmp_path):
    """A torn or foreign sidecar costs a parse, never a wrong ledger or an error."""
    store = _written(tmp_path)
    side = Path(store.parse_cache_path)
    key = side.read_bytes().split(b"\n", 1)[0]
    side.write_bytes(key + b"\n{not json")
    assert FileStore(store.path).read().targets["db-19"].next_action == "check it"
    side.write_bytes(key + b'\n{"v": 1, "data": {"task": "forged", "targets": {}}, "header": "", "lines": 5}')
    assert FileStore(store.path).read().task == "pg14-to-pg16-fleet-upgrade"
