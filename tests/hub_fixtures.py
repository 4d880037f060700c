"""A real Hugging Face Hub cache layout built in a folder, as `huggingface_hub` writes it:

    HF_HUB_CACHE/models--ORG--NAME/blobs/<hash>          the bytes, named by their hash
    HF_HUB_CACHE/models--ORG--NAME/refs/main             the commit `main` points to
    HF_HUB_CACHE/models--ORG--NAME/snapshots/<commit>/F  relative symlink to ../../blobs/<hash>

LFS files (weights, the SentencePiece model) are named by the SHA-256 of their bytes; small
git files (config.json) by their git blob SHA-1, as on the Hub.
"""

from __future__ import annotations

import hashlib
import os
import pathlib

LFS_SUFFIXES = (".safetensors", ".bin", ".model")


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def add_to_cache(
    cache: pathlib.Path,
    repo: str,
    source: pathlib.Path,
    commit: str | None = None,
    ref: str = "main",
) -> pathlib.Path:
    """Puts the files of `source` into `cache` as snapshot `commit` of `repo`; returns the
    snapshot folder."""
    files = sorted(p for p in source.iterdir() if p.is_file())
    commit = (
        commit or hashlib.sha1(repo.encode() + b"".join(p.read_bytes() for p in files)).hexdigest()
    )
    repo_folder = cache / ("models--" + repo.replace("/", "--"))
    snapshot = repo_folder / "snapshots" / commit
    (repo_folder / "blobs").mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    (repo_folder / "refs").mkdir(exist_ok=True)
    (repo_folder / "refs" / ref).write_text(commit)
    for path in files:
        data = path.read_bytes()
        lfs = path.suffix in LFS_SUFFIXES
        blob = hashlib.sha256(data).hexdigest() if lfs else git_blob_sha1(data)
        (repo_folder / "blobs" / blob).write_bytes(data)
        link = snapshot / path.name
        if link.is_symlink():
            link.unlink()
        os.symlink(pathlib.Path("..", "..", "blobs", blob), link)
    return snapshot


def blob_of(snapshot: pathlib.Path, name: str) -> pathlib.Path:
    return (snapshot / name).resolve()
