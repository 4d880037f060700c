"""Every command over bad inputs and file-system faults: exit code 2, one line on stderr that
names the file or flag, no traceback, and nothing under the final output name.

Each case builds its bad input in a fresh folder and returns the command line, a piece of
text the error line must hold (the file, line or flag), and the outputs that must not
appear. The commands run in this process (`cli.main`), so any exception other than the
handled ones fails the test with its traceback.
"""

import errno
import json
import os
import pathlib
import shutil
import struct

import gin
import jax
import numpy as np
import pytest

from seahorse_t5x import cli
from seahorse_t5x.data import demo_data, prepare
from seahorse_t5x.model import checkpoints, configs, hf_checkpoints, mt5

SPLIT_SIZES = {"train": 40, "validation": 10, "test": 24}
TASK = "seahorse_q4_score"


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    """Valid inputs every case starts from (bad cases copy and damage them)."""
    base = tmp_path_factory.mktemp("inputs")
    written = demo_data.write_demo_dataset(str(base / "demo"), split_sizes=SPLIT_SIZES)
    prepared = base / "prepared"
    prepare.prepare(written["seahorse_dir"], [written["articles"]], str(prepared), log=None)
    test_rows = [json.loads(line) for line in (prepared / "test.jsonl").open(encoding="utf-8")]
    scores = base / "scores.jsonl"
    scores.write_text(
        "".join(
            json.dumps(
                {
                    "metric": "m",
                    "benchmark": "seahorse",
                    "question": 1,
                    "label": row["q1"],
                    "score": 0.5,
                    "gem_id": row["gem_id"],
                    "system": row["system"],
                }
            )
            + "\n"
            for row in test_rows
            if row["q1"] is not None
        ),
        encoding="utf-8",
    )
    config = configs.get_config("tiny", vocab_size=64)
    params = mt5.unbox(mt5.init_params(config, jax.random.PRNGKey(0)))
    hf_checkpoints.save_hf(base / "hf", config, params)
    return {
        "seahorse_dir": pathlib.Path(written["seahorse_dir"]),
        "articles": pathlib.Path(written["articles"]),
        "prepared": prepared,
        "scores": scores,
        "hf": base / "hf",
        "config": config,
        "params": params,
        "q4_rows": sum(row["q4"] is not None for row in test_rows),
    }


# ---------------------------------------------------------------------------- builders


def _copy_seahorse(ctx, tmp, damage=None, split="train"):
    folder = tmp / "seahorse_data"
    shutil.copytree(ctx["seahorse_dir"], folder)
    if damage is not None:
        path = folder / f"{split}.tsv"
        path.write_bytes(damage(path.read_bytes()))
    return folder


def _prepare(ctx, tmp, seahorse=None, articles=None, *extra):
    out = tmp / "out"
    argv = [
        "prepare",
        "--seahorse_dir",
        str(seahorse or ctx["seahorse_dir"]),
        "--articles",
        str(articles or ctx["articles"]),
        "--output_dir",
        str(out),
        *extra,
    ]
    return argv, [out / "train.jsonl", out / prepare.REPORT_NAME]


def _second_line(data: bytes, new: bytes) -> bytes:
    lines = data.split(b"\n")
    lines[1] = new
    return b"\n".join(lines)


def _articles(tmp, content: bytes, name="articles.jsonl"):
    path = tmp / name
    path.write_bytes(content)
    return path


def _number_article(ctx) -> bytes:
    """The articles file with its first (wanted) article replaced by a number."""
    lines = ctx["articles"].read_bytes().splitlines(keepends=True)
    record = json.loads(lines[0])
    record["article"] = 12345
    return json.dumps(record).encode() + b"\n" + b"".join(lines[1:])


def _prepare_case(build_seahorse=None, build_articles=None, extra=(), names=""):
    def case(ctx, tmp):
        seahorse = build_seahorse(ctx, tmp) if build_seahorse else None
        articles = build_articles(ctx, tmp) if build_articles else None
        argv, outputs = _prepare(ctx, tmp, seahorse, articles, *extra)
        return argv, names.format(tmp=tmp), outputs

    return case


def _report(tmp, *inputs, extra=()):
    out = tmp / "report"
    argv = ["report", *inputs, "--output_dir", str(out), "--no_plots", "--bootstrap", "0"]
    return [*argv, *extra], [out / "report.json", out / "tables.md"]


def _score_file(tmp, rows_or_bytes, name="s.jsonl"):
    path = tmp / name
    if isinstance(rows_or_bytes, bytes):
        path.write_bytes(rows_or_bytes)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows_or_bytes), encoding="utf-8")
    return path


def _row(**overrides):
    row = {"metric": "m", "benchmark": "seahorse", "question": 4, "label": 1, "score": 0.5}
    row.update({"gem_id": "xsum-test-1", "system": "t5_base", **overrides})
    return row


def _report_scores_case(content, names):
    def case(ctx, tmp):
        path = _score_file(tmp, content)
        argv, outputs = _report(tmp, "--scores", str(path))
        return argv, names.format(path=path), outputs

    return case


def _copy_prepared(ctx, tmp, damage):
    folder = tmp / "prepared"
    shutil.copytree(ctx["prepared"], folder)
    path = folder / "test.jsonl"
    rows = [json.loads(line) for line in path.open(encoding="utf-8")]
    damage(rows[2])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def _baselines(ctx, tmp, data_dir=None, extra=(), vocab="demo"):
    out = tmp / "baselines"
    argv = [
        "baselines",
        "--data_dir",
        str(data_dir or ctx["prepared"]),
        "--output_dir",
        str(out),
        "--vocab",
        vocab,
        *extra,
    ]
    return argv, [out / "majority.seahorse.test.jsonl", out / "rouge_l.seahorse.test.jsonl"]


def _t5x(ctx, tmp, infer, extra=(), output=None):
    output = output or tmp / "q4.jsonl"
    argv = ["t5x-scores", "--infer_output", str(infer), "--task", TASK]
    argv += ["--data_dir", str(ctx["prepared"]), "--split", "test", "--output", str(output)]
    argv += ["--metric", "q4_t5x", *extra]
    return argv, [output] if not output.is_dir() else []


def _train(tmp, *extra, model_dir=None):
    model_dir = model_dir or tmp / "run"
    argv = ["train", "--gin_file", "test/tiny.gin", f"--gin.MODEL_DIR={model_dir}"]
    return [*argv, *extra], [model_dir]  # a failed run leaves no MODEL_DIR it created


def _evaluate(ctx, tmp, checkpoint):
    out = tmp / "eval"
    argv = ["evaluate", "--checkpoint", str(checkpoint), "--tasks", TASK, "--output_dir", str(out)]
    return [*argv, "--data_dir", str(ctx["prepared"])], [out]


def _safetensors_parts(path):
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + length]), data[8 + length :]


def _safetensors_write(path, header, body):
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + body)


def _hf_case(damage, names):
    def case(ctx, tmp):
        folder = tmp / "hf"
        shutil.copytree(ctx["hf"], folder)
        damage(ctx, folder)
        argv, outputs = _evaluate(ctx, tmp, folder)
        return argv, names.format(folder=folder), outputs

    return case


def _truncate(ctx, folder):
    path = folder / "model.safetensors"
    path.write_bytes(path.read_bytes()[:5000])


def _huge_header(ctx, folder):
    path = folder / "model.safetensors"
    path.write_bytes(b"\xff" * 8 + path.read_bytes()[8:])


def _short_body(ctx, folder):
    path = folder / "model.safetensors"
    header, body = _safetensors_parts(path)
    _safetensors_write(path, header, body[:-64])  # the last tensor's offsets pass the end


def _no_dtype(ctx, folder):
    path = folder / "model.safetensors"
    header, body = _safetensors_parts(path)
    name = next(k for k in header if k != "__metadata__")
    del header[name]["dtype"]
    _safetensors_write(path, header, body)


def _config_not_json(ctx, folder):
    (folder / "config.json").write_text("{'d_model': 8,", encoding="utf-8")


def _config_wrong_type(ctx, folder):
    path = folder / "config.json"
    config = json.loads(path.read_text())
    config["d_model"] = "eight"
    path.write_text(json.dumps(config))


def _config_float_layers(ctx, folder):
    path = folder / "config.json"
    config = json.loads(path.read_text())
    config["num_layers"] = 2.5
    path.write_text(json.dumps(config))


def _garbage_bin(ctx, folder):
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(b"PK\x03\x04 this is no checkpoint" * 10)


def _nan_weights(ctx, folder):
    # A model the demo vocabulary fits (evaluate refuses a larger vocabulary first).
    config = ctx["config"].replace(vocab_size=3072)
    params = jax.tree.map(np.array, mt5.unbox(mt5.init_params(config, jax.random.PRNGKey(0))))
    params["decoder"]["decoder_norm"]["scale"][3] = np.nan
    shutil.rmtree(folder)
    hf_checkpoints.save_hf(folder, config, params)


def _flipped_orbax(ctx, tmp):
    step = checkpoints.save_params(tmp / "export", ctx["config"], ctx["params"])
    meta_file = step / "meta" / "metadata"
    meta = json.loads(meta_file.read_text())
    meta["model_config"]["num_heads"] = meta["model_config"]["num_heads"] ^ 1 or 1
    meta_file.write_text(json.dumps(meta))
    argv, outputs = _evaluate(ctx, tmp, step)
    return argv, f"checkpoint {step} is damaged", outputs


# ---------------------------------------------------------------------------- the table

_GOOD_PAIR = b'{"article": "A cat sat on the mat.", "summary": "A cat sat."}\n'


def _score_case(content, names, name="pairs.jsonl", output=None, extra=(), damage=None):
    """`score` over `content` (None: no input file, or a folder for a `name` ending in `/`)
    with the tiny HF model, the output path prepared as `output` says: a folder, an old
    file, a partial run, a partial run of other settings to resume, or a finished output of
    another input to resume."""

    def case(ctx, tmp):
        pairs = tmp / name
        if content is not None:
            pairs.write_bytes(content)
        elif name.endswith("/"):  # a folder given as the input
            pairs.mkdir()
        model = ctx["hf"]
        if damage is not None:
            model = tmp / "hf"
            shutil.copytree(ctx["hf"], model)
            damage(ctx, model)
        out = tmp / "scores.jsonl"
        argv = ["score", "--checkpoint", str(model), "--input", str(pairs), "--output", str(out)]
        argv += ["--vocab", "demo", "--no_compilation_cache", *extra]
        if output == "folder":
            out.mkdir()
        elif output == "old":
            out.write_text("old\n")
        elif output == "partial":
            (tmp / "scores.jsonl.partial").write_text("")
        elif output == "finished":
            out.write_text("old\n")
            record = {"input": "/elsewhere/pairs.jsonl", "input_bytes": 1, "input_sha256": "0"}
            (tmp / "scores.jsonl.run.json").write_text(json.dumps({"columns": [record]}))
            argv += ["--resume"]
        elif output == "resume":
            (tmp / "scores.jsonl.partial").write_text("")
            (tmp / "scores.jsonl.partial.run.json").write_text(json.dumps({"chunk_size": 1}))
            argv += ["--resume"]
        finals = [] if output in ("folder", "old", "finished") else [out]
        return argv, names.format(input=pairs, output=out), finals

    return case


CASES = {
    # prepare
    "prepare/missing_seahorse_dir": lambda ctx, tmp: (
        _prepare(ctx, tmp, tmp / "nowhere")[0],
        f"SEAHORSE folder not found: {tmp / 'nowhere'}",
        [],
    ),
    "prepare/tsv_bad_header": _prepare_case(
        lambda ctx, tmp: _copy_seahorse(ctx, tmp, lambda b: b"gem_id\tsummary\n" + b),
        names="{tmp}/seahorse_data/train.tsv:1: header lacks column(s)",
    ),
    "prepare/tsv_invalid_utf8_strict": _prepare_case(
        lambda ctx, tmp: _copy_seahorse(
            ctx, tmp, lambda b: _second_line(b, b.split(b"\n")[1].replace(b"\t", b"\xff\t", 1))
        ),
        extra=("--strict",),
        names="{tmp}/seahorse_data/train.tsv:2: invalid UTF-8 (byte 0xff",
    ),
    "prepare/tsv_utf16": _prepare_case(
        lambda ctx, tmp: _copy_seahorse(ctx, tmp, lambda b: b.decode().encode("utf-16")),
        names="{tmp}/seahorse_data/train.tsv:1: the file is UTF-16",
    ),
    "prepare/tsv_bad_row_strict": _prepare_case(
        lambda ctx, tmp: _copy_seahorse(
            ctx, tmp, lambda b: _second_line(b, b"only\tthree\tfields")
        ),
        extra=("--strict",),
        names="{tmp}/seahorse_data/train.tsv:2: expected 10 tab-separated fields",
    ),
    "prepare/articles_invalid_utf8_strict": _prepare_case(
        build_articles=lambda ctx, tmp: _articles(
            tmp, ctx["articles"].read_bytes() + b'{"gem_id": "x", "article": "\xc3("}\n'
        ),
        extra=("--strict",),
        names="{tmp}/articles.jsonl:",
    ),
    "prepare/articles_bad_json_strict": _prepare_case(
        build_articles=lambda ctx, tmp: _articles(tmp, b'{"gem_id": "a", "article": \n'),
        extra=("--strict",),
        names="{tmp}/articles.jsonl:1: not valid JSON",
    ),
    "prepare/articles_number_strict": _prepare_case(
        build_articles=lambda ctx, tmp: _articles(tmp, _number_article(ctx)),
        extra=("--strict",),
        names="{tmp}/articles.jsonl:1: field 'article' is int, expected text",
    ),
    "prepare/articles_missing": _prepare_case(
        build_articles=lambda ctx, tmp: tmp / "no_articles.jsonl",
        names="article source not found: {tmp}/no_articles.jsonl",
    ),
    "prepare/articles_wrong_kind": _prepare_case(
        build_articles=lambda ctx, tmp: _articles(tmp, b"text", name="articles.txt"),
        names="article source {tmp}/articles.txt is neither .parquet nor .jsonl",
    ),
    "prepare/articles_garbage_parquet": _prepare_case(
        build_articles=lambda ctx, tmp: _articles(tmp, b"PAR1 garbage", name="a.parquet"),
        names="{tmp}/a.parquet: not a readable Parquet file",
    ),
    "prepare/output_is_a_file": lambda ctx, tmp: (
        [*_prepare(ctx, tmp)[0][:-1], str(_articles(tmp, b"x", name="taken"))],
        f"--output_dir {tmp / 'taken'} is a file; expected a folder",
        [],
    ),
    "prepare/output_under_a_file": lambda ctx, tmp: (
        [*_prepare(ctx, tmp)[0][:-1], str(_articles(tmp, b"x", name="taken") / "out")],
        f"{tmp / 'taken'} is a file, not a folder",
        [],
    ),
    "prepare/output_not_writable": lambda ctx, tmp: (
        [*_prepare(ctx, tmp)[0][:-1], "/sys/seahorse_prepared"],
        "--output_dir /sys/seahorse_prepared: Permission denied",
        [pathlib.Path("/sys/seahorse_prepared")],
    ),
    "prepare/full_disk": lambda ctx, tmp: (
        _prepare(ctx, tmp)[0],
        f"cannot write {tmp / 'out' / 'train.jsonl'}: No space left on device",
        _prepare(ctx, tmp)[1],
    ),
    # demo-data
    "demo-data/output_is_a_file": lambda ctx, tmp: (
        ["demo-data", "--output_dir", str(_articles(tmp, b"x", name="taken"))],
        f"--output_dir {tmp / 'taken'} is a file",
        [],
    ),
    "demo-data/output_not_writable": lambda ctx, tmp: (
        ["demo-data", "--output_dir", "/sys/seahorse_demo"],
        "/sys/seahorse_demo: Permission denied",
        [],
    ),
    "demo-data/full_disk": lambda ctx, tmp: (
        ["demo-data", "--output_dir", str(tmp / "demo")],
        f"cannot write {tmp / 'demo' / 'seahorse_data' / 'train.tsv'}: No space left on device",
        [tmp / "demo" / "seahorse_data" / "train.tsv", tmp / "demo" / "articles.jsonl"],
    ),
    "demo-data/bad_seed": lambda ctx, tmp: (
        ["demo-data", "--output_dir", str(tmp / "demo"), "--seed", "zero"],
        "--seed: invalid int value: 'zero'",
        [tmp / "demo"],
    ),
    # report
    "report/missing_score_file": lambda ctx, tmp: (
        _report(tmp, "--scores", str(tmp / "none.jsonl"))[0],
        f"score file not found: {tmp / 'none.jsonl'}",
        _report(tmp)[1],
    ),
    "report/not_json": _report_scores_case(b'{"metric": "m"}\nnot json\n', "{path}:1"),
    "report/invalid_utf8": _report_scores_case(
        json.dumps(_row()).encode() + b'\n{"metric": "\xe9"}\n', "{path}:2: invalid UTF-8"
    ),
    "report/label_not_binary": _report_scores_case(
        [_row(label=0.5)], "{path}:1 field 'label': seahorse labels are 0 (No) or 1 (Yes)"
    ),
    "report/label_two": _report_scores_case(
        [_row(), _row(gem_id="xsum-test-2", label=2)], "{path}:2 field 'label'"
    ),
    "report/question_seven": _report_scores_case(
        [_row(question=7)], "{path}:1 field 'question': SEAHORSE questions are 1..6"
    ),
    "report/missing_score": _report_scores_case(
        [{k: v for k, v in _row().items() if k != "score"}],
        "{path}:1 field 'score': required field is missing",
    ),
    "report/duplicate_in_one_file": _report_scores_case(
        [_row(), _row(system="mt5_small"), _row(score=0.1)], "{path}:3: metric 'm'"
    ),
    "report/duplicate_across_files": lambda ctx, tmp: (
        _report(
            tmp, "--scores", str(ctx["scores"]), str(_score_file(tmp, ctx["scores"].read_bytes()))
        )[0],
        f"{tmp / 's.jsonl'}:1: metric 'm', benchmark 'seahorse', question 1",
        _report(tmp)[1],
    ),
    "report/dataset_label": lambda ctx, tmp: (
        _report(tmp, "--data_dir", str(_copy_prepared(ctx, tmp, lambda r: r.update(q1=2))))[0],
        f"{tmp / 'prepared' / 'test.jsonl'}:3 field 'q1': expected 1 (Yes), 0 (No) or null",
        _report(tmp)[1],
    ),
    "report/dataset_language": lambda ctx, tmp: (
        _report(
            tmp, "--data_dir", str(_copy_prepared(ctx, tmp, lambda r: r.update(language="xx")))
        )[0],
        f"{tmp / 'prepared' / 'test.jsonl'}:3 field 'language'",
        _report(tmp)[1],
    ),
    "report/duplicates_tsv_invalid_utf8": lambda ctx, tmp: (
        _report(
            tmp,
            "--data_dir",
            str(ctx["prepared"]),
            "--duplicates",
            str(_articles(tmp, b"gem_id\tworker_lang\n\xff\tde\n", name="dups.tsv")),
        )[0],
        f"{tmp / 'dups.tsv'}:2: invalid UTF-8",
        _report(tmp)[1],
    ),
    "report/output_is_a_file": lambda ctx, tmp: (
        [
            "report",
            "--scores",
            str(ctx["scores"]),
            "--output_dir",
            str(_articles(tmp, b"x", name="f")),
        ],
        f"--output_dir {tmp / 'f'} is a file",
        [],
    ),
    "report/full_disk": lambda ctx, tmp: (
        _report(tmp, "--scores", str(ctx["scores"]))[0],
        f"cannot write {tmp / 'report' / 'tables.md'}: No space left on device",
        _report(tmp)[1],
    ),
    "report/negative_bootstrap": lambda ctx, tmp: (
        _report(tmp, "--scores", str(ctx["scores"]))[0][:-2] + ["--bootstrap", "-1"],
        "--bootstrap must be >= 0",
        _report(tmp)[1],
    ),
    "report/unknown_by_field": lambda ctx, tmp: (
        _report(tmp, "--scores", str(ctx["scores"]), extra=("--by", "colour"))[0],
        "--by field 'colour'",
        _report(tmp)[1],
    ),
    # baselines
    "baselines/missing_split": lambda ctx, tmp: (
        _baselines(ctx, tmp, data_dir=tmp)[0],
        f"split file not found: {tmp / 'test.jsonl'}",
        _baselines(ctx, tmp)[1],
    ),
    "baselines/label_text": lambda ctx, tmp: (
        _baselines(ctx, tmp, _copy_prepared(ctx, tmp, lambda r: r.update(q2="yes")))[0],
        f"{tmp / 'prepared' / 'test.jsonl'}:3 field 'q2'",
        _baselines(ctx, tmp)[1],
    ),
    "baselines/label_bool": lambda ctx, tmp: (
        _baselines(ctx, tmp, _copy_prepared(ctx, tmp, lambda r: r.update(q3=True)))[0],
        f"{tmp / 'prepared' / 'test.jsonl'}:3 field 'q3'",
        _baselines(ctx, tmp)[1],
    ),
    "baselines/vocab_not_sentencepiece": lambda ctx, tmp: (
        _baselines(ctx, tmp, vocab=str(_articles(tmp, b"\x00" * 99, name="v.model")))[0],
        f"{tmp / 'v.model'} is not a SentencePiece model",
        _baselines(ctx, tmp)[1],
    ),
    "baselines/vocab_missing": lambda ctx, tmp: (
        _baselines(ctx, tmp, vocab=str(tmp / "none.model"))[0],
        f"SentencePiece model not found: {tmp / 'none.model'}",
        _baselines(ctx, tmp)[1],
    ),
    "baselines/output_is_a_file": lambda ctx, tmp: (
        [*_baselines(ctx, tmp)[0][:3], "--output_dir", str(_articles(tmp, b"x", name="f"))],
        f"--output_dir {tmp / 'f'} is a file",
        [],
    ),
    "baselines/unknown_baseline": lambda ctx, tmp: (
        _baselines(ctx, tmp, extra=("--baselines", "bleu"))[0],
        "--baselines 'bleu'",
        _baselines(ctx, tmp)[1],
    ),
    # t5x-scores
    "t5x-scores/no_inputs_to_check": lambda ctx, tmp: (
        _t5x(ctx, tmp, _score_file(tmp, [{"score": -1.0}] * ctx["q4_rows"]))[0],
        f"{tmp / 's.jsonl'}:1 field 'inputs.inputs_pretokenized': missing",
        [tmp / "q4.jsonl"],
    ),
    "t5x-scores/invalid_utf8": lambda ctx, tmp: (
        _t5x(ctx, tmp, _score_file(tmp, b'{"score": -1.0, "x": "\xff"}\n'))[0],
        f"{tmp / 's.jsonl'}:1: invalid UTF-8",
        [tmp / "q4.jsonl"],
    ),
    "t5x-scores/bad_json": lambda ctx, tmp: (
        _t5x(ctx, tmp, _score_file(tmp, b'{"score": -1.0}\n{"score": \n'))[0],
        f"{tmp / 's.jsonl'}:2: not valid JSON",
        [tmp / "q4.jsonl"],
    ),
    "t5x-scores/predict_mode_output": lambda ctx, tmp: (
        _t5x(ctx, tmp, _score_file(tmp, [{"prediction": "1"}]))[0],
        f"{tmp / 's.jsonl'}:1 field 'score': expected a number",
        [tmp / "q4.jsonl"],
    ),
    "t5x-scores/count_mismatch": lambda ctx, tmp: (
        _t5x(ctx, tmp, _score_file(tmp, [{"score": -1.0}]))[0],
        "the infer output has 1 examples",
        [tmp / "q4.jsonl"],
    ),
    "t5x-scores/bad_task": lambda ctx, tmp: (
        _t5x(ctx, tmp, ctx["scores"])[0][:4]
        + ["seahorse_q9_score"]
        + _t5x(ctx, tmp, ctx["scores"])[0][5:],
        "--task 'seahorse_q9_score'",
        [tmp / "q4.jsonl"],
    ),
    "t5x-scores/output_is_a_folder": lambda ctx, tmp: (
        _t5x(ctx, tmp, ctx["scores"], output=tmp)[0],
        f"--output {tmp} is a folder",
        [],
    ),
    "t5x-scores/missing_shard": lambda ctx, tmp: (
        _t5x(ctx, tmp, _score_file(tmp, [{"score": 1.0}], name="x.jsonl-00000-of-00002"))[0],
        "shards [1] of 2 are missing",
        [tmp / "q4.jsonl"],
    ),
    # train
    "train/mistyped_macro_flag": lambda ctx, tmp: (
        _train(tmp, "--gin.MIXTURE_OR_TASK=seahorse_all")[0],
        "unknown gin macro flag --gin.MIXTURE_OR_TASK; did you mean --gin.MIXTURE_OR_TASK_NAME?",
        _train(tmp)[1],
    ),
    "train/unread_macro_binding": lambda ctx, tmp: (
        _train(tmp, "--gin.MIXTURE_OR_TASK_NAME=seahorse_all", "--gin_bindings", "TRAIN_STESP = 9")[
            0
        ],
        "gin macro TRAIN_STESP is set but no gin binding reads %TRAIN_STESP; did you mean TRAIN_STEPS?",
        _train(tmp)[1],
    ),
    "train/missing_gin_file": lambda ctx, tmp: (
        ["train", "--gin_file", str(tmp / "none.gin")],
        f"{tmp / 'none.gin'}",
        [],
    ),
    "train/gin_syntax_error": lambda ctx, tmp: (
        ["train", "--gin_file", str(_articles(tmp, b"TRAIN_STEPS = = 3\n", name="bad.gin"))],
        "gin: ",
        [],
    ),
    "train/model_dir_is_a_file": lambda ctx, tmp: (
        _train(
            tmp, "--gin.MIXTURE_OR_TASK_NAME=seahorse_all", model_dir=_articles(tmp, b"x", name="f")
        )[0],
        f"--gin.MODEL_DIR {tmp / 'f'} is a file; expected a folder",
        [],
    ),
    "train/bad_value_inside_gin_call": lambda ctx, tmp: (
        _train(tmp, "--gin.MIXTURE_OR_TASK_NAME=seahorse_all", "--gin.TRAIN_STEPS=0")[0],
        "train_steps must be a positive int, got 0",
        _train(tmp)[1],
    ),
    "train/input_length_too_short": lambda ctx, tmp: (
        _train(
            tmp,
            "--gin.MIXTURE_OR_TASK_NAME=seahorse_all",
            "--gin.TASK_FEATURE_LENGTHS={'inputs': 1, 'targets': 4}",
        )[0],
        "TASK_FEATURE_LENGTHS['inputs'] must be at least 2 (one token and the EOS), got 1",
        _train(tmp)[1],
    ),
    "train/unknown_task": lambda ctx, tmp: (
        _train(tmp, "--gin.MIXTURE_OR_TASK_NAME=seahorse_q44")[0],
        "no SeqIO task or mixture named 'seahorse_q44'",
        _train(tmp)[1],
    ),
    "train/required_macro_unset": lambda ctx, tmp: (
        _train(tmp)[0],
        "MIXTURE_OR_TASK_NAME",
        _train(tmp)[1],
    ),
    # evaluate with a corrupt checkpoint
    "evaluate/missing_checkpoint": lambda ctx, tmp: (
        _evaluate(ctx, tmp, tmp / "none")[0],
        f"--checkpoint {tmp / 'none'} does not exist",
        _evaluate(ctx, tmp, tmp)[1],
    ),
    "evaluate/max_examples_zero": lambda ctx, tmp: (
        [*_evaluate(ctx, tmp, ctx["hf"])[0], "--max_examples", "0"],
        "argument --max_examples: expected an integer of at least 1, got 0",
        _evaluate(ctx, tmp, ctx["hf"])[1],
    ),
    "evaluate/max_examples_negative": lambda ctx, tmp: (
        [*_evaluate(ctx, tmp, ctx["hf"])[0], "--max_examples", "-3"],
        "argument --max_examples: expected an integer of at least 1, got -3",
        _evaluate(ctx, tmp, ctx["hf"])[1],
    ),
    "evaluate/truncated_safetensors": _hf_case(
        _truncate, "{folder}/model.safetensors is not a valid safetensors file"
    ),
    "evaluate/safetensors_huge_header": _hf_case(
        _huge_header, "{folder}/model.safetensors is not a valid safetensors file"
    ),
    "evaluate/safetensors_offsets_past_end": _hf_case(
        _short_body, "{folder}/model.safetensors is not a valid safetensors file"
    ),
    "evaluate/safetensors_missing_dtype": _hf_case(
        _no_dtype, "{folder}/model.safetensors is not a valid safetensors file"
    ),
    "evaluate/config_not_json": _hf_case(
        _config_not_json, "{folder}/config.json:1: config.json is not JSON"
    ),
    "evaluate/config_wrong_type": _hf_case(
        _config_wrong_type, "{folder}/config.json field 'd_model': expected a positive integer"
    ),
    "evaluate/config_float_layers": _hf_case(
        _config_float_layers, "{folder}/config.json field 'num_layers'"
    ),
    "evaluate/garbage_pytorch_bin": _hf_case(
        _garbage_bin, "{folder}/pytorch_model.bin is not a readable PyTorch checkpoint"
    ),
    "evaluate/nan_weights": _hf_case(
        _nan_weights, "decoder/decoder_norm/scale holds 1 NaN or infinite value(s)"
    ),
    "evaluate/flipped_orbax_meta": _flipped_orbax,
    "evaluate/input_length_too_short": lambda ctx, tmp: (
        [*_evaluate(ctx, tmp, ctx["hf"])[0], "--input_length", "1"],
        "--input_length must be at least 2 (one token and the EOS), got 1",
        _evaluate(ctx, tmp, ctx["hf"])[1],
    ),
    "evaluate/vocabulary_larger_than_the_model": lambda ctx, tmp: (
        _evaluate(ctx, tmp, ctx["hf"])[0],
        "the vocabulary has 3000 ids but the model only 64",
        _evaluate(ctx, tmp, ctx["hf"])[1],
    ),
    "score/missing_input": _score_case(None, "cannot read {input}: No such file or directory"),
    "score/input_is_a_folder": _score_case(
        None, "cannot read {input}: it is a folder; expected a file", name="pairs/"
    ),
    "score/resume_over_another_input": _score_case(
        _GOOD_PAIR,
        "{output} was written from another input (/elsewhere/pairs.jsonl), not {input}; pass "
        "--overwrite to score it afresh",
        output="finished",
    ),
    "score/bad_json_row": _score_case(
        _GOOD_PAIR + b"{not json\n", "{input}: 1 bad rows (line 2: not valid JSON"
    ),
    "score/invalid_utf8_row": _score_case(
        _GOOD_PAIR + b'{"article": "caf\xe9", "summary": "x"}\n',
        "{input}: 1 bad rows (line 2: not valid UTF-8)",
    ),
    "score/missing_summary": _score_case(
        _GOOD_PAIR + b'{"article": "a"}\n', "line 2: missing field 'summary'"
    ),
    "score/summary_not_text": _score_case(
        b'{"article": "a", "summary": 7}\n', "line 1: field 'summary' must be a string"
    ),
    "score/utf16_input": _score_case(
        "article,summary\na,b\n".encode("utf-16"), "is UTF-16", name="pairs.csv"
    ),
    "score/output_is_a_folder": _score_case(
        _GOOD_PAIR, "--output {output} is a folder", output="folder"
    ),
    "score/output_exists": _score_case(_GOOD_PAIR, "exists; pass --overwrite", output="old"),
    "score/partial_output_left": _score_case(
        _GOOD_PAIR, "interrupted run left {output}.partial", output="partial"
    ),
    "score/resume_with_other_settings": _score_case(
        _GOOD_PAIR, "partial was written with other settings (batch_size,", output="resume"
    ),
    "score/bad_mesh": _score_case(_GOOD_PAIR, "--mesh 'data=x'", extra=("--mesh", "data=x")),
    "score/bad_label_words": _score_case(
        _GOOD_PAIR, "answer words must be two", extra=("--label_words", "Yes")
    ),
    "score/chunk_size_zero": _score_case(
        _GOOD_PAIR, "--chunk_size must be at least 1", extra=("--chunk_size", "0")
    ),
    "score/truncated_checkpoint": _score_case(
        _GOOD_PAIR, "model.safetensors is not a valid safetensors file", damage=_truncate
    ),
    "score/input_length_too_short": _score_case(
        _GOOD_PAIR,
        "--input_length must be at least 2 (one token and the EOS), got 1",
        extra=("--input_length", "1"),
    ),
    "score/vocabulary_larger_than_the_model": _score_case(
        _GOOD_PAIR, "the vocabulary has 3000 ids but the model only 64"
    ),
}

_FULL_DISK = {"prepare/full_disk", "demo-data/full_disk", "report/full_disk"}


def test_the_table_is_wide():
    commands = {name.split("/")[0] for name in CASES}
    assert len(CASES) >= 40
    assert commands == {
        "prepare",
        "demo-data",
        "report",
        "baselines",
        "t5x-scores",
        "train",
        "evaluate",
        "score",
    }


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_one_line_and_publishes_nothing(name, ctx, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SEAHORSE_VOCAB", "demo")
    argv, names, outputs = CASES[name](ctx, tmp_path)
    if name in _FULL_DISK:

        def full(fd):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(os, "fsync", full)
    capsys.readouterr()
    try:
        with pytest.raises(SystemExit) if _is_usage_error(name) else _no_exit():
            code = cli.main(argv)
    finally:
        gin.clear_config()
    err = capsys.readouterr().err
    if _is_usage_error(name):
        code = 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith(f"seahorse-t5x {argv[0]}: error: "), lines[0]
    assert names in lines[0], lines[0]
    for output in outputs:
        assert not output.exists(), f"{output} was written"
    leftovers = [p for p in tmp_path.rglob("*.tmp") if p.is_file()]
    assert leftovers == []


def _is_usage_error(name: str) -> bool:
    return name in {
        "demo-data/bad_seed",
        "train/mistyped_macro_flag",
        "evaluate/max_examples_zero",
        "evaluate/max_examples_negative",
    }


class _no_exit:
    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False


def test_verbose_adds_the_traceback_after_the_line(tmp_path, capsys):
    argv = ["report", "--scores", str(tmp_path / "none.jsonl"), "--output_dir", str(tmp_path)]
    assert cli.main([*argv, "--verbose"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert (
        lines[0] == f"seahorse-t5x report: error: score file not found: {tmp_path / 'none.jsonl'}"
    )
    assert lines[1] == "Traceback (most recent call last):"


def test_gin_lookups_print_no_path_not_found_lines(caplog):
    from seahorse_t5x.runner import gin_config

    caplog.set_level("DEBUG")
    try:
        gin_config.parse(["test/tiny.gin"], ["MODEL_DIR = '/tmp/x'"], finalize=False)
        assert gin_config.unread_macros() == []
    finally:
        gin.clear_config()
    assert not [r for r in caplog.records if "Path not found" in r.getMessage()]


def test_undecodable_input_read_outside_fileio_is_still_one_line():
    try:
        b"gem_id\nx\xff\n".decode("utf-8")
    except UnicodeDecodeError as e:
        line = cli.one_line(e)
    assert line == (
        "an input file is not UTF-8 text (byte 0xff at byte 9 of the block read); "
        "expected UTF-8 (--verbose shows where)"
    )
    assert cli.one_line(OSError(errno.EROFS, "Read-only file system", "/ro/x")) == (
        "/ro/x: Read-only file system"
    )
