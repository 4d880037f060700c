"""Checkpoints by Hub name: resolved from a real HF cache layout (no network), offline
errors, a local path winning, and the cached blobs checked against their hashes."""

from __future__ import annotations

import os
import types

import numpy as np
import pytest
from hub_fixtures import add_to_cache, blob_of
from mt5_fixtures import save_hf_tiny

from seahorse_t5x import errors
from seahorse_t5x.model import checkpoints, hub

REPO = "tiny-org/seahorse-tiny-q4"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tiny_hf")
    save_hf_tiny(directory, "safetensors", seed=3)
    return directory


@pytest.fixture
def hf_cache(tmp_path, monkeypatch, tiny_dir):
    cache = tmp_path / "hf_cache"
    snapshot = add_to_cache(cache, REPO, tiny_dir, commit=COMMIT)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    return cache, snapshot


def test_parse_name():
    assert hub.parse_name("google/seahorse-large-q4") == ("google/seahorse-large-q4", None)
    assert hub.parse_name("google/seahorse-xxl-q1@refs/pr/3") == (
        "google/seahorse-xxl-q1",
        "refs/pr/3",
    )
    for not_a_name in ("/abs/path", "./runs/q4", "a/b/c", "q4", "google/", "@x/y"):
        assert hub.parse_name(not_a_name) is None, not_a_name


def test_cached_name_is_the_snapshot_folder_offline(hf_cache):
    cache, snapshot = hf_cache
    assert hub.resolve(REPO) == snapshot
    assert hub.resolve(f"{REPO}@main") == snapshot
    assert hub.resolve(f"{REPO}@{COMMIT}") == snapshot
    assert checkpoints.detect_format(REPO) == ("hf", snapshot)


def test_hf_home_is_honoured(tmp_path, monkeypatch, tiny_dir):
    snapshot = add_to_cache(tmp_path / "home" / "hub", REPO, tiny_dir, commit=COMMIT)
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    assert hub.cache_dir() == tmp_path / "home" / "hub"
    assert hub.resolve(REPO) == snapshot


def test_scorer_by_name_equals_scorer_by_folder(hf_cache, tiny_dir):
    from seahorse_t5x.inference import scorer as scorer_lib

    articles = ["The council approved the budget.", "Rain flooded the town."]
    summaries = ["Budget approved.", "A flood."]
    by_name = scorer_lib.Scorer(REPO, vocab="demo", input_length=32)
    by_folder = scorer_lib.Scorer(tiny_dir, vocab="demo", input_length=32)
    assert by_name.checkpoint == hf_cache[1]
    np.testing.assert_array_equal(
        by_name.score(articles, summaries), by_folder.score(articles, summaries)
    )


def test_offline_without_a_cached_snapshot_is_one_line(hf_cache):
    with pytest.raises(errors.UserError) as raised:
        hub.resolve("tiny-org/not-cached@v2")
    message = str(raised.value)
    assert "\n" not in message
    assert "HF_HUB_OFFLINE is set" in message
    assert "`hf download tiny-org/not-cached --revision v2`" in message


def test_unknown_name_online_is_one_line(hf_cache, monkeypatch):
    import huggingface_hub
    from huggingface_hub import errors as hub_errors

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    response = types.SimpleNamespace(headers={}, request=None)

    def not_found(*args, **kwargs):
        raise hub_errors.RepositoryNotFoundError("404 Client Error", response=response)

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", not_found)
    with pytest.raises(errors.UserError) as raised:
        hub.resolve("tiny-org/no-such-model")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("tiny-org/no-such-model is not a local path, and no model")


def test_a_local_path_wins_over_a_name(hf_cache, tmp_path):
    local = tmp_path / REPO
    save_hf_tiny(local, "safetensors", seed=5)
    assert hub.resolve(REPO) == local.relative_to(tmp_path)
    assert hub.is_name(REPO) is False
    assert hub.is_name("tiny-org/other") is True


def test_a_flipped_byte_in_a_cached_blob_is_refused(hf_cache):
    _, snapshot = hf_cache
    blob = blob_of(snapshot, "model.safetensors")
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0x01
    blob.write_bytes(bytes(data))
    with pytest.raises(errors.UserError) as raised:
        checkpoints.load_checkpoint(REPO)
    message = str(raised.value)
    assert "\n" not in message
    assert str(snapshot / "model.safetensors") in message
    assert f"`hf download {REPO} --force-download`" in message


def test_the_stamp_spares_a_second_hashing(hf_cache):
    cache, snapshot = hf_cache
    files = {p.name for p in snapshot.iterdir()}
    assert {"config.json", "model.safetensors"} <= files
    assert hub.verify_cached_files(snapshot) == len(files)
    assert hub.verify_cached_files(snapshot) == 0
    stamp = cache / ("models--" + REPO.replace("/", "--")) / hub.STAMP_NAME
    assert stamp.is_file()
    # The stamp is keyed by size and modification time: a blob rewritten with both kept is
    # not hashed again (which shows the hashing is skipped) ...
    blob = blob_of(snapshot, "model.safetensors")
    info = blob.stat()
    data = bytearray(blob.read_bytes())
    data[-1] ^= 0xFF
    blob.write_bytes(bytes(data))
    os.utime(blob, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert hub.verify_cached_files(snapshot) == 0
    # ... and one whose modification time changed is hashed and refused.
    os.utime(blob, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
    with pytest.raises(errors.UserError, match="does not match the sha256"):
        hub.verify_cached_files(snapshot)


def test_a_changed_small_file_is_refused_by_its_git_hash(hf_cache):
    _, snapshot = hf_cache
    blob = blob_of(snapshot, "config.json")
    blob.write_text(blob.read_text().replace('"d_model"', '"d_model" ', 1))
    with pytest.raises(errors.UserError, match=r"config.json does not match the git-sha1"):
        hub.resolve(REPO)


def test_family_members():
    assert checkpoints.family_members("google/seahorse-large", (1, 4)) == {
        1: "google/seahorse-large-q1",
        4: "google/seahorse-large-q4",
    }
    assert checkpoints.family_members("google/seahorse-xxl@main")[6] == (
        "google/seahorse-xxl-q6@main"
    )
    assert checkpoints.family_members("google/mt5-small") is None
    assert checkpoints.family_members("google/seahorse-large-q4") is None
    assert checkpoints.question_of("google/seahorse-large-q4@main") == 4
    assert checkpoints.question_of("runs/seahorse_q2/") == 2


def test_local_family_folder(tmp_path, tiny_dir):
    import shutil

    for name in ("q1", "seahorse-tiny-q4"):
        shutil.copytree(tiny_dir, tmp_path / "family" / name)
    family = tmp_path / "family"
    assert checkpoints.family_members(family, (4, 1)) == {
        4: str(family / "seahorse-tiny-q4"),
        1: str(family / "q1"),
    }
    with pytest.raises(
        errors.UserError,
        match=r"not \[2, 3, 5, 6\]: add q2/, or score questions 1,4 only \(questions 1,4\)",
    ):
        checkpoints.family_members(family)
    assert checkpoints.family_members(family / "q1") is None


def test_without_a_network_the_cached_snapshot_is_used(hf_cache, monkeypatch):
    import httpx2
    import huggingface_hub

    monkeypatch.delenv("HF_HUB_OFFLINE")
    # Without the variable, the Hub's own setting is read: the one it took at its import,
    # which an earlier test may have made with HF_HUB_OFFLINE=1 set.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)

    def no_network(*args, **kwargs):
        raise httpx2.ConnectError("[Errno -2] Name or service not known")

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", no_network)
    monkeypatch.setattr(huggingface_hub.HfApi, "repo_info", no_network)
    assert hub.resolve(REPO) == hf_cache[1]
    with pytest.raises(errors.UserError) as raised:
        hub.resolve("tiny-org/not-cached")
    assert "(the Hub could not be reached and nothing is cached)" in str(raised.value)
