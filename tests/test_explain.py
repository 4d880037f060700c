"""`explain_file` and `seahorse-t5x explain` (`inference/explain.py`)."""

from __future__ import annotations

import json
import pathlib

import pytest
import test_decoding

import seahorse_t5x
from seahorse_t5x import cli, errors
from seahorse_t5x.formats import error_analysis, vocab
from seahorse_t5x.inference import explain, loading

ONE_ERROR = error_analysis.render_analysis(
    [
        error_analysis.ExplainedError(
            "on Monday", "Fact Consistency", "The article says Friday.", "Major", 4.0
        )
    ]
)
NO_ERROR = error_analysis.render_analysis([])
NOT_AN_ANALYSIS = "the bridge is nice"


class _ScriptedGenerator:
    """Writes the texts given, in turn, for each prompt: the job around the model is what
    these tests hold (prompts, parsing, rows, resume); the model's decoding is held by
    tests/test_decoding.py and tests/test_generation.py."""

    def __init__(self, texts: list[str], input_length: int = 512) -> None:
        self.vocab = vocab.get_vocabulary("demo")
        self.input_length = input_length
        self.texts = texts
        self.prompts: list[list[int]] = []
        self.num_beams: list[int] = []

    def generate_ids(self, prompts, num_beams=1):
        self.num_beams.append(num_beams)
        out = []
        for prompt in prompts:
            self.prompts.append(list(prompt))
            out.append(list(self.vocab.encode(self.texts[len(self.prompts) - 1])))
        return out


def _pairs(path: pathlib.Path, rows: list[dict]) -> pathlib.Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _metric_instruct_rows(n: int) -> list[dict]:
    return [
        {
            "task": "summarization",
            "instruction": "Summarize the news article.",
            "input_context": f"The mayor opened the new bridge on Friday. Story {i}.",
            "hypo_output": "The mayor opened a bridge on Monday.",
            "errors": ONE_ERROR if i % 2 else NO_ERROR,
            "id": f"item-{i}",
        }
        for i in range(n)
    ]


@pytest.fixture
def scripted(monkeypatch):
    def install(texts, input_length=512):
        generator = _ScriptedGenerator(texts, input_length)
        monkeypatch.setattr(loading, "load_generator", lambda *a, **k: generator)
        return generator

    return install


def test_rows_carry_text_errors_and_score_and_unparsed_rows_a_null_score(tmp_path, scripted):
    texts = [ONE_ERROR, NOT_AN_ANALYSIS, NO_ERROR]
    scripted(texts)
    pairs = _pairs(
        tmp_path / "pairs.jsonl",
        [{"id": i, "article": "A bridge opened on Friday.", "summary": "It opened."} for i in range(3)],
    )  # fmt: skip
    result = seahorse_t5x.explain_file("ckpt", pairs, tmp_path / "out.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [0, 1, 2]
    assert [r["score"] for r in rows] == [-4.0, None, 0.0]
    assert rows[0]["errors"] == [
        {
            "location": "on Monday",
            "aspect": "Fact Consistency",
            "explanation": "The article says Friday.",
            "severity": "Major",
            "score_reduction": 4.0,
        }
    ]
    assert rows[1]["errors"] is None and rows[1]["parse_error"]
    assert (result.rows, result.parsed, result.unparsed) == (3, 2, 1)
    assert result.problems == [f"{pairs}:2: {rows[1]['parse_error']}"]


def test_the_source_is_cut_to_fit_and_the_output_never(tmp_path, scripted):
    generator = scripted([NO_ERROR] * 2, input_length=420)
    long_article = " ".join(f"word{i}" for i in range(400))
    summary = "The bridge opened on Friday after ten years."
    pairs = _pairs(
        tmp_path / "pairs.jsonl",
        [{"article": long_article, "summary": summary}, {"article": "Short.", "summary": summary}],
    )
    result = seahorse_t5x.explain_file("ckpt", pairs, tmp_path / "out.jsonl")
    assert result.cut_sources == 1
    long_prompt, short_prompt = generator.prompts
    assert len(long_prompt) == 420 and long_prompt[-1] == 1
    decoded = generator.vocab.decode(long_prompt)
    assert summary in decoded and "word0 word1" in decoded and "word399" not in decoded
    assert decoded.rstrip().endswith(
        "Your evaluation output \u2047"
    )  # the demo vocabulary has no colon
    assert len(short_prompt) < 420
    # The tasks' prompt (TIGERScore's released one, no task type), as the model was trained.
    expected = error_analysis.render_prompt(explain.SUMMARY_INSTRUCTION, "Short.", summary)
    assert short_prompt == list(generator.vocab.encode(expected)) + [1]


def test_with_a_metric_truths_become_graded_score_file_rows(tmp_path, scripted):
    from seahorse_t5x.data import scorefiles

    rows = _metric_instruct_rows(4)
    scripted([NO_ERROR, ONE_ERROR, ONE_ERROR, NOT_AN_ANALYSIS])
    source = _pairs(tmp_path / "metric_instruct.jsonl", rows)
    out = tmp_path / "scores" / "explainer.jsonl"
    seahorse_t5x.explain_file("ckpt", source, out, metric="explainer")
    frame = scorefiles.read_score_files([out])
    assert list(frame["label"]) == [0.0, -4.0, 0.0, -4.0]
    assert list(frame["summary"]) == ["The mayor opened a bridge on Monday."] * 4
    assert list(frame["score"].fillna(99.0)) == [0.0, -4.0, -4.0, 99.0]
    assert set(frame["benchmark"]) == {"explanations"} and set(frame["question"]) == {"overall"}
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [len(r["true_errors"]) for r in written] == [0, 1, 0, 1]
    assert written[1]["true_errors"][0]["location"] == "on Monday"


def test_resume_continues_whole_chunks_and_a_finished_output_of_another_input_is_refused(
    tmp_path, scripted
):
    rows = _metric_instruct_rows(6)
    source = _pairs(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    scripted([ONE_ERROR] * 6)
    whole = seahorse_t5x.explain_file("ckpt", source, out, chunk_size=2)
    expected = out.read_text()
    # An interrupted run: two whole chunks and half a row written.
    partial = out.with_name(out.name + ".partial")
    partial.write_text("".join(expected.splitlines(keepends=True)[:4]) + '{"half')
    run = json.loads(out.with_name(out.name + ".run.json").read_text())["columns"][0]
    out.with_name(out.name + ".partial.run.json").write_text(json.dumps(run))
    out.unlink()
    generator = scripted([ONE_ERROR] * 2)
    resumed = seahorse_t5x.explain_file("ckpt", source, out, chunk_size=2, resume=True)
    assert resumed.resumed_after == 4 and resumed.rows == 2 and len(generator.prompts) == 2
    assert out.read_text() == expected and whole.rows == 6
    # Finished: the same run is complete; another input is refused; overwrite wins.
    assert seahorse_t5x.explain_file(
        "ckpt", source, out, chunk_size=2, resume=True
    ).already_complete
    other = _pairs(tmp_path / "other.jsonl", rows[:3])
    with pytest.raises(errors.UserError, match="another input"):
        seahorse_t5x.explain_file("ckpt", other, out, chunk_size=2, resume=True)
    scripted([NO_ERROR] * 3)
    again = seahorse_t5x.explain_file("ckpt", other, out, resume=True, overwrite=True)
    assert again.rows == 3 and not again.already_complete
    assert [json.loads(r)["score"] for r in out.read_text().splitlines()] == [0.0] * 3


def test_bad_rows_and_paths_are_one_line_errors(tmp_path, scripted):
    scripted([NO_ERROR])
    bad = _pairs(tmp_path / "bad.jsonl", [{"article": "x", "summary": "y"}, {"article": "x"}])
    with pytest.raises(errors.DataError, match=r"bad.jsonl:2.*summary"):
        seahorse_t5x.explain_file("ckpt", bad, tmp_path / "out.jsonl")
    rows = _metric_instruct_rows(1)
    rows[0]["errors"] = ONE_ERROR.replace("Severity 1: Major", "Severity 1: Huge")
    wrong = _pairs(tmp_path / "wrong.jsonl", rows)
    with pytest.raises(errors.DataError, match=r"wrong.jsonl:1.*severity"):
        seahorse_t5x.explain_file("ckpt", wrong, tmp_path / "out.jsonl")
    with pytest.raises(errors.UserError, match="is a folder"):
        seahorse_t5x.explain_file("ckpt", tmp_path, tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


def test_the_command_prints_counts_and_the_unparsed_lines(tmp_path, scripted, capsys):
    scripted([ONE_ERROR, NOT_AN_ANALYSIS])
    pairs = _pairs(
        tmp_path / "pairs.jsonl",
        [{"article": "A bridge opened.", "summary": "It opened."}] * 2,
    )
    code = cli.main(
        ["explain", "--checkpoint", "ckpt", "--input", str(pairs), "--output", str(tmp_path / "o.jsonl")]
    )  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0
    assert "explained 2 rows (1 parsed, 1 did not parse and have a null score" in printed
    assert f"did not parse: {pairs}:2:" in printed


def test_a_real_tiny_model_explains_end_to_end(tmp_path):
    """An untrained model's text does not parse: every row is counted, none scored 0."""
    model = test_decoding._hf_model_writing_text()
    model.save_pretrained(tmp_path / "hf")
    pairs = _pairs(tmp_path / "pairs.jsonl", [{"article": "A b c.", "summary": "A b."}] * 3)
    result = seahorse_t5x.explain_file(
        tmp_path / "hf", pairs, tmp_path / "out.jsonl", vocab="demo", input_length=512,
        max_output_length=8, dtype="float32",
    )  # fmt: skip
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert (result.parsed, result.unparsed) == (0, 3)
    assert all(r["score"] is None and r["explanation"] for r in rows)


def test_beams_reach_the_generator_and_a_run_resumes_only_with_its_count(
    tmp_path, scripted, capsys
):
    source = _pairs(tmp_path / "in.jsonl", _metric_instruct_rows(3))
    out = tmp_path / "out.jsonl"
    with pytest.raises(errors.UserError, match="num_beams must be a positive integer, got 0"):
        seahorse_t5x.explain_file("ckpt", source, out, num_beams=0)
    assert not out.exists()
    generator = scripted([ONE_ERROR] * 3)
    seahorse_t5x.explain_file("ckpt", source, out, num_beams=3, chunk_size=2)
    assert generator.num_beams == [3, 3]
    fingerprint = json.loads(out.with_name(out.name + ".run.json").read_text())
    assert fingerprint["columns"][0]["num_beams"] == 3
    # The same run is complete; a greedy one over it is another run.
    assert seahorse_t5x.explain_file(
        "ckpt", source, out, num_beams=3, chunk_size=2, resume=True
    ).already_complete
    with pytest.raises(errors.UserError):
        seahorse_t5x.explain_file("ckpt", source, out, chunk_size=2, resume=True)
    generator = scripted([ONE_ERROR] * 3)
    code = cli.main(
        ["explain", "--checkpoint", "ckpt", "--input", str(source), "--output",
         str(tmp_path / "cli.jsonl"), "--num_beams", "2"]
    )  # fmt: skip
    assert code == 0 and generator.num_beams == [2]
    greedy = json.loads((tmp_path / "cli.jsonl.run.json").read_text())["columns"][0]
    assert greedy["num_beams"] == 2
    scripted([ONE_ERROR] * 3)
    seahorse_t5x.explain_file("ckpt", source, tmp_path / "greedy.jsonl")
    record = json.loads((tmp_path / "greedy.jsonl.run.json").read_text())["columns"][0]
    assert "num_beams" not in record


def test_a_real_tiny_model_explains_with_beams_as_its_generator_does(tmp_path):
    model = test_decoding._hf_model_writing_text()
    model.save_pretrained(tmp_path / "hf")
    rows = [{"article": f"A b c {i}.", "summary": "A b."} for i in range(3)]
    pairs = _pairs(tmp_path / "pairs.jsonl", rows)
    options = dict(vocab="demo", input_length=512, max_output_length=8, dtype="float32")
    seahorse_t5x.explain_file(
        tmp_path / "hf", pairs, tmp_path / "out.jsonl", num_beams=2, **options
    )
    explained = [
        json.loads(r)["explanation"] for r in (tmp_path / "out.jsonl").read_text().splitlines()
    ]
    generator = loading.load_generator(tmp_path / "hf", **options)
    items = explain.read_inputs(pairs)
    prompts = [explain.encode_prompt(generator.vocab, item, 512)[0] for item in items]
    beams = [generator.vocab.decode(ids) for ids in generator.generate_ids(prompts, num_beams=2)]
    assert [explain.Explanation.of(text).text for text in beams] == explained
