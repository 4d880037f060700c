"""`arguments.string_list`: the one check of a sequence-of-strings argument."""

from __future__ import annotations

import numpy as np
import pytest

from seahorse_t5x import arguments, errors


def test_sequences_of_strings_come_back_as_lists():
    assert arguments.string_list(("a cat", "a dog"), "articles") == ["a cat", "a dog"]
    assert arguments.string_list(np.array(["x", "yz"]), "articles") == ["x", "yz"]
    assert arguments.string_list((t for t in ["g"]), "key", "field name") == ["g"]
    assert arguments.string_list([], "articles") == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "an article",
            "`articles` is one string, not a sequence of texts: pass a list, e.g. ['an article']",
        ),
        (b"an article", "`articles` is bytes, not a sequence of texts"),
        (7, "`articles` must be a sequence of texts (a list of strings), got int"),
        (["a", None], "`articles`[1] is NoneType (None), not a string"),
        (["a", "b", float("nan")], "`articles`[2] is float (nan), not a string"),
        (["a", b"b"], "`articles`[1] is bytes (b'b'), not a string"),
    ],
)
def test_a_bare_string_or_an_item_that_is_not_text_is_one_line(value, message):
    with pytest.raises(errors.UserError) as caught:
        arguments.string_list(value, "articles")
    assert str(caught.value).startswith(message), str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_item_is_named_in_the_message():
    with pytest.raises(
        errors.UserError, match=r"^`key` is one string, not a sequence of field names"
    ):
        arguments.string_list("gem_id", "key", "field name")


def test_paths_come_back_as_a_list_and_one_bare_path_is_refused(tmp_path):
    assert arguments.path_list([tmp_path, "a.jsonl"], "paths") == [tmp_path, "a.jsonl"]
    for bare in ("a.jsonl", tmp_path):
        with pytest.raises(errors.UserError, match=r"^`paths` is one path, not a sequence"):
            arguments.path_list(bare, "paths")
    with pytest.raises(errors.UserError, match=r"^`paths`\[1\] is int \(3\), not a path"):
        arguments.path_list(["a.jsonl", 3], "paths")


def test_a_renamed_argument_takes_its_old_name_with_a_warning():
    names = ("benchmark", "rows_benchmark")
    with pytest.warns(FutureWarning, match=r"score_file\(benchmark=\.\.\.\) is deprecated"):
        assert arguments.renamed_argument(None, "frank", names, "score_file") == "frank"
    with pytest.warns(FutureWarning):  # both given: the new name wins
        assert arguments.renamed_argument("mface", "frank", names, "score_file") == "mface"
    assert arguments.renamed_argument("mface", None, names, "score_file") == "mface"
    assert arguments.renamed_argument(None, None, names, "score_file") is None
