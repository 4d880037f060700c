"""Checkpoints named on the Hugging Face Hub, resolved into the user's HF cache and checked.

    resolve("google/seahorse-large-q4")        -> ~/.cache/huggingface/hub/
                                                   models--google--seahorse-large-q4/snapshots/<commit>
    resolve("google/seahorse-large-q4@v1.0")   -> the snapshot of that revision
    resolve("runs/q4")                          -> runs/q4 when that folder exists

A local path always wins over a name. A name `ORG/NAME[@REVISION]` is fetched with
`huggingface_hub.snapshot_download` into the HF cache (`HF_HUB_CACHE`, else `HF_HOME/hub`,
else `~/.cache/huggingface/hub`), only the files a checkpoint needs (config, vocabulary,
safetensors weights; `pytorch_model.bin` only when the model has no safetensors), with the
Hub's progress bars. With `HF_HUB_OFFLINE=1` only the cache is read; a cached snapshot
works offline, a missing one is one line saying what to do.

Files of the HF cache are checked against the hash the Hub recorded for them: the cache
keeps each file as `blobs/<hash>` (the SHA-256 of an LFS file's bytes, the git SHA-1 of a
small file) linked from `snapshots/<commit>/`. A blob is hashed the first time it is used;
a stamp in the repository's cache folder (`.seahorse_t5x_verified.json`: blob name -> size
and modification time) spares later runs from hashing 52 GB again. A mismatch is one
`UserError` naming the file and the command that downloads it again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pathlib
import re
import sys

from seahorse_t5x import errors, fileio

ENV_OFFLINE = "HF_HUB_OFFLINE"
ENV_HUB_CACHE = "HF_HUB_CACHE"
ENV_HF_HOME = "HF_HOME"

# `ORG/NAME` or `ORG/NAME@REVISION` (a branch, tag or commit), as the Hub spells repo ids.
_NAME = re.compile(
    r"^(?P<repo>[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*)"
    r"(?:@(?P<revision>[A-Za-z0-9_./-]+))?$"
)
# The files of an HF mT5 checkpoint that scoring reads.
CHECKPOINT_FILES = ("config.json", "spiece.model", "*.safetensors", "*.safetensors.index.json")
TORCH_FILES = ("pytorch_model.bin", "pytorch_model.bin.index.json", "pytorch_model-*.bin")
# In the repository's cache folder: blob name -> [size, mtime_ns] of the blobs checked.
STAMP_NAME = ".seahorse_t5x_verified.json"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_GIT_SHA1 = re.compile(r"^[0-9a-f]{40}$")
# Blobs at least this large are hashed with a progress bar.
_PROGRESS_BYTES = 256 << 20
_BLOCK = 16 << 20

log = logging.getLogger(__name__)


def parse_name(text: str) -> tuple[str, str | None] | None:
    """(repo id, revision or None) for `ORG/NAME[@REVISION]`; None for anything else.

    >>> parse_name("google/seahorse-large-q4@main")
    ('google/seahorse-large-q4', 'main')
    """
    match = _NAME.match(str(text))
    if match is None:
        return None
    return match["repo"], match["revision"]


def format_name(repo: str, revision: str | None) -> str:
    return repo if revision is None else f"{repo}@{revision}"


def cache_dir() -> pathlib.Path:
    """The HF cache folder as the Hub's own tools find it, read from the environment now."""
    if os.environ.get(ENV_HUB_CACHE):
        return pathlib.Path(os.environ[ENV_HUB_CACHE]).expanduser()
    if os.environ.get(ENV_HF_HOME):
        return pathlib.Path(os.environ[ENV_HF_HOME]).expanduser() / "hub"
    from huggingface_hub import constants

    return pathlib.Path(constants.HF_HUB_CACHE)


def offline() -> bool:
    """Whether `HF_HUB_OFFLINE` is set (read now, as the Hub's tools read it at import)."""
    value = os.environ.get(ENV_OFFLINE)
    if value is not None:
        return value.strip().upper() in ("1", "ON", "YES", "TRUE")
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def is_name(checkpoint: str | os.PathLike) -> bool:
    """Whether `checkpoint` stands for a Hub model: no such local path, and a repo id."""
    return not pathlib.Path(checkpoint).exists() and parse_name(str(checkpoint)) is not None


def resolve(checkpoint: str | os.PathLike) -> pathlib.Path:
    """The local folder of a checkpoint path or Hub name, its cached files checked.

    A path that exists is returned as it is (files it links from the HF cache are checked);
    a name is fetched into the HF cache (or found there offline). Anything else comes back
    as a path, for the loader to report as not found.

    Raises:
      UserError: offline without a cached snapshot, an unknown name or revision, a failed
        download, or a cached file whose bytes do not match the Hub's hash.
    """
    path = pathlib.Path(checkpoint)
    if path.exists():
        verify_cached_files(path)
        return path
    parsed = parse_name(str(checkpoint))
    if parsed is None:
        return path
    snapshot = download(*parsed)
    verify_cached_files(snapshot)
    return snapshot


def _weight_patterns(repo: str, revision: str | None) -> list[str]:
    """The files to fetch: safetensors weights when the model has them, else PyTorch's.

    When the Hub cannot be reached, every weight file is allowed: the download then finds
    what the cache holds, as `snapshot_download` does without a network.
    """
    from huggingface_hub import HfApi
    from huggingface_hub import errors as hub_errors

    try:
        info = HfApi().model_info(repo, revision=revision)
    except (
        hub_errors.RepositoryNotFoundError,
        hub_errors.RevisionNotFoundError,
        hub_errors.GatedRepoError,
    ):
        raise
    except Exception as e:  # noqa: BLE001 - httpx connection errors, HTTP 5xx, timeouts
        log.info("cannot list the files of %s on the Hub (%s); trying the cache", repo, e)
        return list(CHECKPOINT_FILES + TORCH_FILES)
    files = [sibling.rfilename for sibling in info.siblings or []]
    if any(f.endswith(".safetensors") for f in files):
        return list(CHECKPOINT_FILES)
    return list(CHECKPOINT_FILES + TORCH_FILES)


def download(repo: str, revision: str | None = None) -> pathlib.Path:
    """The snapshot folder of `repo` at `revision` in the HF cache, fetched when not there.

    Raises:
      UserError: one line saying what went wrong and what to do.
    """
    import huggingface_hub
    from huggingface_hub import errors as hub_errors

    name = format_name(repo, revision)
    cache = cache_dir()
    is_offline = offline()
    try:
        patterns = None if is_offline else _weight_patterns(repo, revision)
        folder = huggingface_hub.snapshot_download(
            repo,
            revision=revision,
            cache_dir=cache,
            local_files_only=is_offline,
            allow_patterns=patterns,
        )
    except hub_errors.LocalEntryNotFoundError:
        raise not_cached_error([name], is_offline) from None
    except hub_errors.HFValidationError as e:
        reason = " ".join(str(e).split())
        raise errors.UserError(
            f"{name} is not a local path, nor a valid Hub model name ({reason}): check the "
            "spelling, e.g. google/seahorse-large-q4"
        ) from None
    except hub_errors.RevisionNotFoundError:
        raise errors.UserError(
            f"{repo} has no revision {revision!r} on the Hub: name a branch, tag or commit "
            "it has, or leave out @REVISION for its main branch"
        ) from None
    except (hub_errors.RepositoryNotFoundError, hub_errors.GatedRepoError) as e:
        gated = isinstance(e, hub_errors.GatedRepoError)
        raise errors.UserError(
            f"{name} is not a local path, and "
            + (
                "the Hub model is gated: accept its terms on huggingface.co and log in with "
                "`hf auth login`"
                if gated
                else "no model of that name is on the Hub (or it is private: log in with "
                "`hf auth login`): check the spelling, e.g. google/seahorse-large-q4"
            )
        ) from None
    except Exception as e:  # noqa: BLE001 - HTTP errors, httpx connection errors, OSError
        reason = " ".join(str(e).split())[:200] or type(e).__name__
        if is_offline:
            raise errors.UserError(
                f"could not read {name} from the HF cache {cache} ({reason}; {ENV_OFFLINE} is "
                "set, so the Hub is not asked): unset it to fetch the model again, or pass "
                "the checkpoint's folder"
            ) from None
        raise errors.UserError(
            f"could not fetch {name} from the Hub ({reason}); retry, or set {ENV_OFFLINE}=1 "
            "to use a cached snapshot"
        ) from None
    return pathlib.Path(folder)


def not_cached_error(names: list[str], is_offline: bool) -> errors.UserError:
    """One line for Hub names the HF cache holds no snapshot of (every one named), with the
    `hf download` commands that fetch them."""
    why = (
        f"{ENV_OFFLINE} is set"
        if is_offline
        else "the Hub could not be reached and nothing is cached"
    )

    def command(name: str) -> str:
        repo, _, revision = name.partition("@")
        return f"`hf download {repo}{' --revision ' + revision if revision else ''}`"

    if len(names) == 1:
        return errors.UserError(
            f"{names[0]} is not a local path, and the HF cache {cache_dir()} holds no "
            f"snapshot of it ({why}): download it where the Hub is reachable with "
            f"{command(names[0])} (same HF_HUB_CACHE/HF_HOME), or pass the checkpoint's folder"
        )
    return errors.UserError(
        f"the HF cache {cache_dir()} holds no snapshot of {len(names)} models ({why}): "
        f"{', '.join(names)}; download them where the Hub is reachable with "
        f"{'; '.join(command(name) for name in names)} (same HF_HUB_CACHE/HF_HOME), or pass "
        "the checkpoints' folders"
    )


def is_cached(name: str) -> bool:
    """Whether the HF cache holds a snapshot of the Hub name `ORG/NAME[@REVISION]` (nothing
    is fetched)."""
    import huggingface_hub
    from huggingface_hub import errors as hub_errors

    parsed = parse_name(name)
    if parsed is None:
        return False
    try:
        huggingface_hub.snapshot_download(
            parsed[0], revision=parsed[1], cache_dir=cache_dir(), local_files_only=True
        )
    except hub_errors.LocalEntryNotFoundError:
        return False
    except Exception:  # noqa: BLE001 - a malformed name: `download` reports it
        return True
    return True


def resolve_all(checkpoints: list[str | os.PathLike]) -> list[pathlib.Path]:
    """`resolve` for each checkpoint; offline, the Hub names the cache lacks are named all at
    once (e.g. every member of a family) rather than the first alone.

    Raises:
      UserError: as `resolve`.
    """
    if offline():
        missing = [str(c) for c in checkpoints if is_name(c) and not is_cached(str(c))]
        if len(missing) > 1:
            raise not_cached_error(missing, True)
    return [resolve(checkpoint) for checkpoint in checkpoints]


# --------------------------------------------------------------------------------- checking


def _repo_of(repo_folder: pathlib.Path) -> str:
    # `models--ORG--NAME` -> `ORG/NAME`.
    return repo_folder.name.removeprefix("models--").replace("--", "/")


def _git_blob_sha1(path: pathlib.Path, size: int) -> str:
    digest = hashlib.sha1(f"blob {size}\0".encode(), usedforsecurity=False)
    with open(path, "rb") as f:
        while block := f.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _sha256(path: pathlib.Path, size: int, label: str) -> str:
    from tqdm import tqdm

    digest = hashlib.sha256()
    with (
        open(path, "rb") as f,
        tqdm(
            total=size,
            unit="B",
            unit_scale=True,
            desc=f"checking {label}",
            file=sys.stderr,
            disable=size < _PROGRESS_BYTES,
        ) as bar,
    ):
        while block := f.read(_BLOCK):
            digest.update(block)
            bar.update(len(block))
    return digest.hexdigest()


def blob_hash(path: pathlib.Path, kind: str, label: str = "") -> str:
    """The hash of a blob's bytes as the Hub names it: `sha256` or `git-sha1`."""
    size = path.stat().st_size
    return (
        _sha256(path, size, label or path.name) if kind == "sha256" else _git_blob_sha1(path, size)
    )


def _read_stamp(stamp: pathlib.Path) -> dict[str, list[int]]:
    try:
        content = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return content if isinstance(content, dict) else {}


def cached_blobs(directory: pathlib.Path) -> list[tuple[pathlib.Path, pathlib.Path, str]]:
    """(file as the user sees it, blob, hash kind) for the files under `directory` that
    link to a hash-named blob of an HF cache."""
    found = []
    files = [directory] if directory.is_file() else sorted(directory.rglob("*"))
    for file in files:
        if not file.is_symlink() or not file.is_file():
            continue
        blob = file.resolve()
        if blob.parent.name != "blobs":
            continue
        if _SHA256.match(blob.name):
            found.append((file, blob, "sha256"))
        elif _GIT_SHA1.match(blob.name):
            found.append((file, blob, "git-sha1"))
    return found


def verify_cached_files(directory: str | os.PathLike) -> int:
    """Checks the files under `directory` that come from an HF cache against their blob names.

    Returns:
      The number of blobs hashed now (those stamped as checked before are skipped).

    Raises:
      UserError: naming the file whose bytes do not match and how to download it again.
    """
    hashed = 0
    stamps: dict[pathlib.Path, dict[str, list[int]]] = {}
    for file, blob, kind in cached_blobs(pathlib.Path(directory)):
        repo_folder = blob.parent.parent
        stamp_path = repo_folder / STAMP_NAME
        stamp = stamps.setdefault(stamp_path, _read_stamp(stamp_path))
        info = blob.stat()
        seen = [info.st_size, info.st_mtime_ns]
        if stamp.get(blob.name) == seen:
            continue
        found = blob_hash(blob, kind, file.name)
        hashed += 1
        if found != blob.name:
            repo = _repo_of(repo_folder)
            raise errors.UserError(
                f"{file} does not match the {kind} the Hub recorded for it ({blob.name[:12]}..., "
                f"found {found[:12]}...): the cached copy is damaged; download it again with "
                f"`hf download {repo} --force-download`"
            )
        stamp[blob.name] = seen
        try:
            fileio.atomic_write_text(stamp_path, json.dumps(stamp, indent=1, sort_keys=True))
        except OSError as e:  # a read-only cache: checked again next time
            log.warning("cannot record the checked blobs in %s (%s)", stamp_path, e)
    return hashed
