"""Every gin file under gin/ parses with gin's parser; T5X's files are also checked against
the T5X names in tests/gin_t5x_testing.py (T5X is not installable here; gin/smoke is T5X's
too). The local runner's files (gin/local, gin/test) are parsed with their configurables by
the runner's tests."""

from __future__ import annotations

import ast
import pathlib

import pytest
from gin import config_parser

from tests import gin_t5x_testing as t5x

ALL_GIN = sorted(t5x.GIN_DIR.rglob("*.gin"))
T5X_GIN = sorted(p for d in t5x.T5X_GIN_DIRS for p in (t5x.GIN_DIR / d).glob("*.gin"))
LOCAL_GIN = sorted(p for p in ALL_GIN if p not in T5X_GIN)
# T5X's own gins the project's files may include: the facts of gin_t5x_testing, and the
# T5.1.1 model gins under the Flan-T5 model gins.
T5X_KNOWN_INCLUDES = {*t5x.T5X_GINS, *(f"t5x/examples/t5/t5_1_1/{s}.gin" for s in t5x.SIZES)}


def _function_parameters(path: pathlib.Path, name: str) -> tuple[str, ...]:
    """Parameter names of a module-level function, read from source (importing the tasks
    module would load TensorFlow for one signature)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return tuple(a.arg for a in node.args.args + node.args.kwonlyargs)
    raise AssertionError(f"{path} defines no function {name}")


def _project_configurables() -> dict[str, tuple[str, ...]]:
    return {
        "seahorse_t5x.formats.vocab.vocabulary_path": _function_parameters(
            t5x.ROOT / "seahorse_t5x" / "formats" / "vocab.py", "vocabulary_path"
        ),
        "seahorse_t5x.formats.vocab.demo_vocab_path": _function_parameters(
            t5x.ROOT / "seahorse_t5x" / "formats" / "vocab.py", "demo_vocab_path"
        ),
        "seahorse_t5x.formats.vocab.demo_explanations_vocab_path": _function_parameters(
            t5x.ROOT / "seahorse_t5x" / "formats" / "vocab.py", "demo_explanations_vocab_path"
        ),
        "seahorse_t5x.tasks.explanations.metric_instruct_files": _function_parameters(
            t5x.ROOT / "tasks" / "explanations.py", "metric_instruct_files"
        ),
        # Referenced, not configured: a feature converter class T5X instantiates.
        "seahorse_t5x.tasks.packing.FirstFitPackingConverter": (),
        "seahorse_t5x.tasks.seahorse.data_dir": _function_parameters(
            t5x.ROOT / "tasks" / "seahorse.py", "data_dir"
        ),
        "seahorse_t5x.model.t5x_models.label_scoring_model": _function_parameters(
            t5x.ROOT / "seahorse_t5x" / "model" / "t5x_models.py", "label_scoring_model"
        ),
        "seahorse_t5x.formats.ice_format.answer_words": _function_parameters(
            t5x.ROOT / "seahorse_t5x" / "formats" / "ice_format.py", "answer_words"
        ),
        "seahorse_t5x.tasks.distillation.distillation_task": _function_parameters(
            t5x.ROOT / "tasks" / "distillation.py", "distillation_task"
        ),
    }


def test_t5x_gin_layout_is_complete():
    names = {p.relative_to(t5x.ROOT).as_posix() for p in T5X_GIN}
    assert {f"seahorse_t5x/gin/models/mt5_{s}.gin" for s in t5x.SIZES} <= names
    assert {
        "seahorse_t5x/gin/runs/finetune.gin",
        "seahorse_t5x/gin/runs/eval.gin",
        "seahorse_t5x/gin/runs/infer_score.gin",
        "seahorse_t5x/gin/runs/finetune_explain.gin",
        "seahorse_t5x/gin/runs/infer_explain.gin",
        "seahorse_t5x/gin/runs/greedy_decoding.gin",
    } <= names
    every_experiment = {n for n in names if n.startswith("seahorse_t5x/gin/experiments/")}
    # The ICE inference gins (test_ice_gins.py) and the explainable metric's fine-tuning
    # (test_explain_gins.py): one per model family and size.
    ice = {n for n in every_experiment if "/ice_" in n}
    explain = {n for n in every_experiment if "/explain_" in n}
    assert explain == {
        f"seahorse_t5x/gin/experiments/explain_{family}_{s}.gin"
        for family in ("mt5", "flan_t5")
        for s in t5x.SIZES
    }
    assert len(ice) == len(explain) == 10
    # The SEAHORSE metrics and their baselines, fine-tuned.
    experiments = every_experiment - ice - explain
    expected = {
        f"seahorse_t5x/gin/experiments/seahorse_q{q}_{s}.gin"
        for q in range(1, 7)
        for s in t5x.SIZES
    }
    expected |= {
        f"seahorse_t5x/gin/experiments/{kind}_{s}.gin"
        for kind in ("seahorse_all", "xnli", "nli_mixture")
        for s in t5x.SIZES
    }
    # Distillation: a Base student of an XXL teacher (docs/distillation.md).
    expected.add("seahorse_t5x/gin/experiments/distill_q4_xxl_to_base.gin")
    assert experiments == expected
    assert len(experiments) == 46
    assert len(every_experiment) == 66


_UNCHECKED = object()  # a value mixing literals with macros or references


def _strip_comment(line: str) -> str:
    """`line` without its `# ...` comment (a `#` inside a quoted string is kept)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#":
            return line[:i].rstrip()
    return line.rstrip()


def _depth(text: str) -> int:
    """Open brackets left in `text` (quoted strings skipped)."""
    depth, quote = 0, None
    for char in text:
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
    return depth


def _value(text: str):
    """A binding's value as `t5x.statements` gives it: `%M` and `@f`/`@f()` as tagged tuples,
    Python literals evaluated; anything else `_UNCHECKED`."""
    if text.startswith("%"):
        return ("%", text[1:])
    if text.startswith("@"):
        return ("@", text[1:].removesuffix("()"), text.endswith("()"))
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return _UNCHECKED


def _text_statements(path: pathlib.Path) -> list[tuple]:
    """What a gin file says, read line by line without gin: imports, includes, blocks and
    bindings, in order (a block's indented lines bind its selector)."""
    logical: list[tuple[bool, str]] = []  # (indented, text) with continuation lines joined
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = _strip_comment(raw)
        if logical and _depth(logical[-1][1]) > 0:
            logical[-1] = (logical[-1][0], logical[-1][1] + " " + line.strip())
        elif line.strip():
            logical.append((line[0].isspace(), line.strip()))
    found: list[tuple] = []
    block = None
    for indented, text in logical:
        words = text.split()
        if not indented:
            block = None
        if words[0] == "from" and words[2] == "import":
            alias = words[5] if len(words) == 6 else None
            found.append(("import", f"{words[1]}.{words[3]}", alias))
        elif words[0] == "import":
            found.append(("import", words[1], words[3] if len(words) == 4 else None))
        elif words[0] == "include":
            found.append(("include", ast.literal_eval(text[len("include") :].strip())))
        elif text.endswith(":") and not indented:
            scope, _, selector = text[:-1].rpartition("/")
            block = (scope, selector)
            found.append(("block", scope, selector))
        else:
            name, _, value = (part.strip() for part in text.partition("="))
            if indented:
                assert block is not None, f"{path}: indented binding outside a block: {text}"
                scope, selector, arg = (*block, name)
            else:
                scope, _, key = name.rpartition("/")
                selector, _, arg = key.rpartition(".") if key[0].islower() else ("", "", key)
                selector, arg = (selector, arg) if selector else (key, "")
            found.append(("bind", scope, selector, arg, _value(value)))
    return found


def _gin_statements(path: pathlib.Path) -> list[tuple]:
    """gin's parse of the same file in the form of `_text_statements`."""
    found = []
    for statement in t5x.statements(path):
        if isinstance(statement, config_parser.ImportStatement):
            found.append(("import", statement.module, statement.alias))
        elif isinstance(statement, config_parser.IncludeStatement):
            found.append(("include", statement.filename))
        elif isinstance(statement, config_parser.BlockDeclaration):
            found.append(("block", statement.scope, statement.selector))
        else:
            key = (statement.scope, statement.selector, statement.arg_name)
            found.append(("bind", *key, statement.value))
    return found


@pytest.mark.parametrize("path", ALL_GIN, ids=lambda p: p.relative_to(t5x.GIN_DIR).as_posix())
def test_gin_syntax(path):
    # gin's parser and a plain line-by-line reading agree on every import, include and
    # binding (scope, selector, parameter and, where it is a literal, macro or reference,
    # the value): nothing in the file is skipped, misread or bound to another name.
    from_text = _text_statements(path)
    from_gin = _gin_statements(path)
    assert len(from_gin) == len(from_text) > 0
    for ours, gins in zip(from_text, from_gin, strict=True):
        if ours[-1] is _UNCHECKED:
            ours, gins = ours[:-1], gins[:-1]
        assert ours == gins, path
    if path.name.startswith("distill_"):
        # A distillation experiment: its teacher's size, then the student's experiment gin.
        includes = [s[1] for s in from_text if s[0] == "include"]
        student = path.stem.rsplit("_to_", 1)[1]
        question = path.stem.split("_")[1]
        assert includes == [f"seahorse_t5x/gin/experiments/seahorse_{question}_{student}.gin"]
    elif path.parent.name == "experiments" and path.name.startswith("explain_"):
        # The explainable metric: its family's model gin of that size, then its run gin.
        model = path.stem.removeprefix("explain_")
        includes = [s[1] for s in from_text if s[0] == "include"]
        assert includes == [
            f"seahorse_t5x/gin/models/{model}.gin",
            "seahorse_t5x/gin/runs/finetune_explain.gin",
        ]
    elif path.parent.name == "experiments" and not path.name.startswith("ice_"):
        # Fine-tuning experiments include their size's mT5 gin and the run gin, then name
        # their task (`xnli_*` trains on the translate-train mixture).
        task, size = path.stem.rsplit("_", 1)
        includes = [s[1] for s in from_text if s[0] == "include"]
        assert includes == [
            f"seahorse_t5x/gin/models/mt5_{size}.gin",
            "seahorse_t5x/gin/runs/finetune.gin",
        ]
        macros = {s[2]: s[4] for s in from_text if s[0] == "bind" and not s[3]}
        assert macros["MIXTURE_OR_TASK_NAME"].startswith(task)


def test_t5x_gins_bind_only_known_configurables_and_parameters():
    known = {**t5x.T5X_CONFIGURABLES, **_project_configurables()}
    problems = []
    for path in T5X_GIN:
        aliases = {}
        for statement in t5x.statements(path):
            if isinstance(statement, config_parser.ImportStatement):
                short = statement.alias or (
                    statement.module.rsplit(".", 1)[1] if statement.is_from else statement.module
                )
                aliases[short] = statement.module
            elif isinstance(statement, config_parser.IncludeStatement):
                name = statement.filename
                if name not in T5X_KNOWN_INCLUDES and not (t5x.ROOT / name).is_file():
                    problems.append(f"{path.name}: unknown include {name}")
            elif isinstance(statement, config_parser.BindingStatement) and statement.arg_name:
                head, _, rest = statement.selector.partition(".")
                if head not in aliases:
                    problems.append(f"{path.name}: {statement.selector} has no import")
                    continue
                full = f"{aliases[head]}.{rest}"
                if full not in known:
                    problems.append(f"{path.name}: unknown configurable {full}")
                elif statement.arg_name not in known[full]:
                    problems.append(f"{path.name}: {full} has no parameter {statement.arg_name}")
            if isinstance(statement, config_parser.BindingStatement):
                value = statement.value
                if isinstance(value, tuple) and value[:1] == ("@",):
                    ref = value[1].rpartition("/")[2]
                    head, _, rest = ref.partition(".")
                    full = f"{aliases.get(head, head)}.{rest}"
                    if full not in known and full != "t5x.checkpoints.SaveBestCheckpointer":
                        problems.append(f"{path.name}: unknown reference @{ref}")
    assert problems == []


def test_every_t5x_gin_uses_dynamic_registration():
    for path in T5X_GIN:
        imports = [
            s.module for s in t5x.statements(path) if isinstance(s, config_parser.ImportStatement)
        ]
        if imports:
            assert imports[0] == "__gin__.dynamic_registration", path
