"""Hub errors whose hint fits the situation: offline, no "set HF_HUB_OFFLINE=1"; a malformed
name is a spelling mistake, not a network one; a family missing from the cache is named
member by member (no network)."""

from __future__ import annotations

# huggingface_hub reads HF_HUB_OFFLINE once, at import: import it before a test sets it, so
# that later modules that unset it see the Hub's default.
import huggingface_hub.constants  # noqa: F401
import pytest
from hub_fixtures import add_to_cache
from mt5_fixtures import save_hf_tiny

from seahorse_t5x import errors
from seahorse_t5x.model import checkpoints, hub

FAMILY = "tiny-org/seahorse-tiny"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tiny_hf")
    save_hf_tiny(directory, "safetensors", seed=3)
    return directory


@pytest.fixture
def cache(tmp_path, monkeypatch):
    cache = tmp_path / "hf_cache"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    return cache


@pytest.mark.parametrize("offline", ["1", "0"])
@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("google/seahorse--large", "Cannot have -- or .. in repo_id: 'google/seahorse--large'."),
        ("google/seahorse..large", "Cannot have -- or .. in repo_id: 'google/seahorse..large'."),
    ],
)
def test_a_malformed_name_is_a_spelling_mistake_online_or_offline(
    cache, monkeypatch, offline, name, reason
):
    monkeypatch.setenv("HF_HUB_OFFLINE", offline)
    with pytest.raises(errors.UserError) as error:
        hub.resolve(name)
    assert str(error.value) == (
        f"{name} is not a local path, nor a valid Hub model name ({reason}): check the "
        "spelling, e.g. google/seahorse-large-q4"
    )


def test_offline_errors_never_suggest_setting_offline(cache, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("permission denied: refs/main")

    monkeypatch.setattr("huggingface_hub.snapshot_download", broken)
    with pytest.raises(errors.UserError) as error:
        hub.resolve("tiny-org/seahorse-tiny-q1")
    assert str(error.value) == (
        f"could not read tiny-org/seahorse-tiny-q1 from the HF cache {cache} (permission "
        "denied: refs/main; HF_HUB_OFFLINE is set, so the Hub is not asked): unset it to "
        "fetch the model again, or pass the checkpoint's folder"
    )
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(hub, "_weight_patterns", lambda repo, revision: None)
    with pytest.raises(errors.UserError, match=r"; retry, or set HF_HUB_OFFLINE=1 to use"):
        hub.resolve("tiny-org/seahorse-tiny-q1")


def test_offline_a_family_names_every_member_the_cache_lacks(cache, tiny_dir):
    # q2 and q5 are cached; the other four are not.
    snapshots = {
        q: add_to_cache(cache, f"{FAMILY}-q{q}", tiny_dir, commit=f"{q}" * 40) for q in (2, 5)
    }
    members = checkpoints.family_members(FAMILY, (1, 2, 3, 4, 5, 6))
    missing = [f"{FAMILY}-q{q}" for q in (1, 3, 4, 6)]
    with pytest.raises(errors.UserError) as error:
        checkpoints.resolve_all(list(members.values()))
    assert str(error.value) == (
        f"the HF cache {cache} holds no snapshot of 4 models (HF_HUB_OFFLINE is set): "
        f"{', '.join(missing)}; download them where the Hub is reachable with "
        + "; ".join(f"`hf download {name}`" for name in missing)
        + " (same HF_HUB_CACHE/HF_HOME), or pass the checkpoints' folders"
    )
    # The members cached resolve; one missing member alone keeps the one-model message.
    assert checkpoints.resolve_all([members[2], members[5]]) == [snapshots[2], snapshots[5]]
    with pytest.raises(errors.UserError) as error:
        checkpoints.resolve_all([members[2], f"{members[4]}@v1"])
    assert str(error.value) == (
        f"{FAMILY}-q4@v1 is not a local path, and the HF cache {cache} holds no snapshot of it "
        f"(HF_HUB_OFFLINE is set): download it where the Hub is reachable with `hf download "
        f"{FAMILY}-q4 --revision v1` (same HF_HUB_CACHE/HF_HOME), or pass the checkpoint's "
        "folder"
    )
