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
        "seahorse_t5x.vocab.vocabulary_path": _function_parameters(
            t5x.ROOT / "seahorse_t5x" / "vocab.py", "vocabulary_path"
        ),
        "seahorse_t5x.vocab.demo_vocab_path": _function_parameters(
            t5x.ROOT / "seahorse_t5x" / "vocab.py", "demo_vocab_path"
        ),
        # Referenced, not configured: a feature converter class T5X instantiates.
        "seahorse_t5x.packing.FirstFitPackingConverter": (),
        "seahorse_t5x.tasks.seahorse.data_dir": _function_parameters(
            t5x.ROOT / "tasks" / "seahorse.py", "data_dir"
        ),
    }


def test_t5x_gin_layout_is_complete():
    names = {p.relative_to(t5x.GIN_DIR).as_posix() for p in T5X_GIN}
    assert {f"models/mt5_{s}.gin" for s in t5x.SIZES} <= names
    assert {"runs/finetune.gin", "runs/eval.gin", "runs/infer_score.gin"} <= names
    # Fine-tuning experiments; the ICE inference gins are checked in test_ice_gins.py.
    experiments = {n for n in names if n.startswith("experiments/") and "/ice_" not in n}
    expected = {f"experiments/seahorse_q{q}_{s}.gin" for q in range(1, 7) for s in t5x.SIZES}
    expected |= {
        f"experiments/{kind}_{s}.gin"
        for kind in ("seahorse_all", "xnli", "nli_mixture")
        for s in t5x.SIZES
    }
    assert experiments == expected
    assert len(experiments) == 45


@pytest.mark.parametrize("path", ALL_GIN, ids=lambda p: p.relative_to(t5x.GIN_DIR).as_posix())
def test_gin_syntax(path):
    parsed = t5x.statements(path)
    assert parsed, f"{path} holds no statement"


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
